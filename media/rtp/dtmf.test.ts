import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { buildTelephoneEvent, createDigitSequence, createDtmfDetector, type DtmfDigit, digitToEvent, eventToDigit, parseTelephoneEvent } from './dtmf'

/** The packets a phone sends for one key press (RFC 4733 §2.5.1): updates every 50 ms, then the end packet three times. */
function press(digit: string, durationMs = 120): { timestamp: number; payload: Uint8Array }[] {
  const event = digitToEvent(digit)!
  const out: { event: number; end: boolean; volume: number; duration: number }[] = []
  for (let ms = 0; ms < durationMs; ms += 50) out.push({ event, end: false, volume: 10, duration: ms * 8 })
  for (let i = 0; i < 3; i++) out.push({ event, end: true, volume: 10, duration: durationMs * 8 })
  return out.map((e) => ({ timestamp: 0, payload: buildTelephoneEvent(e) }))
}

function keyPresses(digits: string, startTs = 1000): { timestamp: number; payload: Uint8Array }[] {
  return [...digits].flatMap((d, i) => press(d).map((p) => ({ ...p, timestamp: (startTs + i * 4000) >>> 0 })))
}

describe('RFC 4733 telephone-event payload', () => {
  test('known bytes: # with the end bit, volume 10, duration 800', () => {
    expect(parseTelephoneEvent(new Uint8Array([11, 0x8a, 0x03, 0x20]))).toEqual({ event: 11, end: true, volume: 10, duration: 800 })
    expect(parseTelephoneEvent(new Uint8Array([11, 0x8a, 0x03]))).toBeUndefined()
  })

  test('build then parse round trip', () => {
    fc.assert(
      fc.property(
        fc.record({
          event: fc.integer({ min: 0, max: 255 }),
          end: fc.boolean(),
          volume: fc.integer({ min: 0, max: 63 }),
          duration: fc.integer({ min: 0, max: 0xffff }),
        }),
        (e) => {
          expect(parseTelephoneEvent(buildTelephoneEvent(e))).toEqual(e)
        },
      ),
    )
  })

  test('events 0-15 are 0-9 * # A-D, both ways', () => {
    expect([...Array(16).keys()].map((e) => eventToDigit(e)).join('')).toBe('0123456789*#ABCD')
    expect(eventToDigit(16)).toBeUndefined()
    expect(digitToEvent('#')).toBe(11)
    expect(digitToEvent('d')).toBe(15)
    expect(digitToEvent('x')).toBeUndefined()
  })
})

describe('DTMF detector: one digit per key press', () => {
  const detect = (packets: { timestamp: number; payload: Uint8Array }[]) => {
    const d = createDtmfDetector()
    return packets.map((p) => d.push(p.timestamp, p.payload)).filter((x) => x !== undefined)
  }

  test('updates and three end packets are one digit each', () => {
    expect(detect(keyPresses('1*#9D'))).toEqual(['1', '*', '#', '9', 'D'])
  })

  test('the same key pressed twice is two digits (a new timestamp each time)', () => {
    expect(detect(keyPresses('77'))).toEqual(['7', '7'])
  })

  test('a press whose first packets were lost is reported from its end packets', () => {
    expect(detect(keyPresses('5').filter((_, i) => i >= 3))).toEqual(['5'])
  })

  test('a late retransmitted end packet of the previous press is not a new press', () => {
    const packets = keyPresses('12')
    const lateEnd = packets[4]!
    expect(detect([...packets.slice(0, 4), ...packets.slice(6), lateEnd])).toEqual(['1', '2'])
  })

  test('a key held past the 16-bit duration continues under a new timestamp: still one press', () => {
    const e = (duration: number, end = false) => buildTelephoneEvent({ event: 3, end, volume: 10, duration })
    expect(
      detect([
        { timestamp: 0, payload: e(1000) },
        { timestamp: 0, payload: e(0xffff) },
        { timestamp: 0xffff, payload: e(400) },
        { timestamp: 0xffff, payload: e(800, true) },
      ]),
    ).toEqual(['3'])
  })

  test('any mix of digits, with duplicated and dropped packets, yields exactly the digits pressed', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...'0123456789*#ABCD'), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 0xffff_ffff }),
        fc.infiniteStream(fc.integer({ min: 0, max: 9 })),
        (digits, startTs, noise) => {
          const packets = keyPresses(digits.join(''), startTs).flatMap((p, i, all) => {
            const last = i + 1 === all.length || all[i + 1]!.timestamp !== p.timestamp
            const n = noise.next().value
            // Lose an update now and then, never every end packet of a press.
            if (n === 0 && !last) return []
            return n === 1 ? [p, p] : [p]
          })
          expect(detect(packets)).toEqual(digits as DtmfDigit[])
        },
      ),
    )
  })
})

describe('digit sequences: *7 toggles recording', () => {
  test('matches when the digits arrive in order, once per completion', () => {
    const s = createDigitSequence('*7')
    expect(['1', '*', '7', '7', '*', '*', '7'].map((d) => s.push(d))).toEqual([false, false, true, false, false, false, true])
  })

  test('another digit in between breaks the match', () => {
    const s = createDigitSequence('*7')
    expect(['*', '3', '7'].map((d) => s.push(d))).toEqual([false, false, false])
  })

  test('a pause longer than the inter-digit limit forgets the partial match', () => {
    const s = createDigitSequence('*7', { interDigitMs: 3000 })
    expect(s.push('*', 0)).toBe(false)
    expect(s.push('7', 5000)).toBe(false)
    expect(s.push('*', 6000)).toBe(false)
    expect(s.push('7', 7000)).toBe(true)
  })

  test('a pattern that is not DTMF is refused', () => {
    expect(() => createDigitSequence('*x')).toThrow(RangeError)
    expect(() => createDigitSequence('')).toThrow(RangeError)
  })
})
