/**
 * DTMF as RFC 4733 telephone events, and turning a stream of them into key presses.
 *
 * One key press is one event: every packet of it carries the same RTP timestamp (the
 * event's start), its duration grows, and the final packet (E bit) is usually sent
 * three times. So a press is recognised by its (timestamp, event) pair, reported once,
 * at its first packet — an IVR can react before the key is released, and a press whose
 * early packets were lost is still reported from its end packets.
 */

export type DtmfDigit = '0' | '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9' | '*' | '#' | 'A' | 'B' | 'C' | 'D'

/** RFC 4733 §3.2: events 0-9, then * (10), # (11), A-D (12-15). */
const DIGITS = '0123456789*#ABCD'

export function eventToDigit(event: number): DtmfDigit | undefined {
  return event >= 0 && event < 16 ? (DIGITS[event] as DtmfDigit) : undefined
}

export function digitToEvent(digit: string): number | undefined {
  const i = DIGITS.indexOf(digit.toUpperCase())
  return digit.length === 1 && i >= 0 ? i : undefined
}

export interface TelephoneEvent {
  event: number
  end: boolean
  /** Power level in -dBm0, 0..63 (so 10 means -10 dBm0). */
  volume: number
  /** In RTP timestamp units since the event's timestamp. */
  duration: number
}

export const TELEPHONE_EVENT_BYTES = 4

/** The payload's first event, or undefined when it is too short. */
export function parseTelephoneEvent(payload: Uint8Array, offset = 0, end = payload.length): TelephoneEvent | undefined {
  if (end - offset < TELEPHONE_EVENT_BYTES || offset < 0 || end > payload.length) return undefined
  const b1 = payload[offset + 1]!
  return { event: payload[offset]!, end: (b1 & 0x80) !== 0, volume: b1 & 0x3f, duration: (payload[offset + 2]! << 8) | payload[offset + 3]! }
}

export function buildTelephoneEvent(e: TelephoneEvent): Uint8Array {
  if (
    ![e.event, e.volume, e.duration].every(Number.isInteger) ||
    e.event < 0 ||
    e.event > 255 ||
    e.volume < 0 ||
    e.volume > 63 ||
    e.duration < 0 ||
    e.duration > 0xffff
  ) {
    throw new RangeError('telephone event fields out of range')
  }
  return new Uint8Array([e.event, (e.end ? 0x80 : 0) | e.volume, e.duration >> 8, e.duration & 0xff])
}

export interface DtmfDetector {
  /**
   * Feed one telephone-event payload with its packet's RTP timestamp; returns the
   * digit when this packet starts a new key press, otherwise undefined.
   */
  push(timestamp: number, payload: Uint8Array, offset?: number, end?: number): DtmfDigit | undefined
  reset(): void
}

/** Enough remembered presses that a late retransmitted end packet is not taken for a new press. */
const REMEMBERED = 4

export function createDtmfDetector(): DtmfDetector {
  const timestamps = new Float64Array(REMEMBERED).fill(-1)
  const events = new Int16Array(REMEMBERED).fill(-1)
  let newest = 0
  let lastEnded = true
  let lastDuration = 0

  return {
    push(timestamp, payload, offset = 0, end = payload.length) {
      if (end - offset < TELEPHONE_EVENT_BYTES || end > payload.length) return undefined
      const event = payload[offset]!
      const ended = (payload[offset + 1]! & 0x80) !== 0
      const duration = (payload[offset + 2]! << 8) | payload[offset + 3]!
      const digit = eventToDigit(event)
      if (digit === undefined) return undefined
      for (let i = 0; i < REMEMBERED; i++) {
        if (timestamps[i] === timestamp && events[i] === event) {
          if (i === newest) {
            lastEnded ||= ended
            lastDuration = duration
          }
          return undefined
        }
      }
      // RFC 4733 §2.5.1.3: a key held past the 16-bit duration continues under a new
      // timestamp without an end packet in between; that is the same press.
      const continues = !lastEnded && events[newest] === event && lastDuration === 0xffff
      newest = (newest + 1) % REMEMBERED
      timestamps[newest] = timestamp
      events[newest] = event
      lastEnded = ended
      lastDuration = duration
      return continues ? undefined : digit
    },
    reset() {
      timestamps.fill(-1)
      events.fill(-1)
      lastEnded = true
      lastDuration = 0
    },
  }
}

export interface DigitSequence {
  /** Feed one digit; true when it completes the pattern (matching then starts afresh). */
  push(digit: string, at?: number): boolean
  reset(): void
}

export interface DigitSequenceOptions {
  /** Forget a partial match when the next digit comes later than this many ms (needs `at` on push). */
  interDigitMs?: number
}

/**
 * Watch for a key sequence such as `*7` (which toggles recording): the digits must
 * arrive consecutively; any other digit in between starts the match over, though it may
 * itself begin the pattern (`**7` matches `*7`).
 */
export function createDigitSequence(pattern: string, options: DigitSequenceOptions = {}): DigitSequence {
  const want = pattern.toUpperCase()
  if (want.length === 0 || [...want].some((d) => digitToEvent(d) === undefined)) throw new RangeError(`not a DTMF digit sequence: "${pattern}"`)
  let recent = ''
  let lastAt: number | undefined
  return {
    push(digit, at) {
      if (options.interDigitMs !== undefined && at !== undefined && lastAt !== undefined && at - lastAt > options.interDigitMs) recent = ''
      lastAt = at
      recent = (recent + digit.toUpperCase()).slice(-want.length)
      if (recent !== want) return false
      recent = ''
      return true
    },
    reset() {
      recent = ''
      lastAt = undefined
    },
  }
}
