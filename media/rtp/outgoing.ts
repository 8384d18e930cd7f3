/**
 * What a leg sends is one RTP stream with one SSRC for the whole call, whoever is
 * behind it: the other party, a second other party after a transfer, hold music, a
 * greeting. A phone that sees a new SSRC or a jump in sequence or timestamp may reset
 * its jitter buffer, drop packets as "old" or click, so the B2BUA renumbers.
 *
 * The rule: packets of one source keep their own spacing (a fixed offset is added to
 * sequence and timestamp, so the receiver still sees the source's loss, reordering and
 * silence gaps); when the source changes, the new offsets make its first packet follow
 * on from the last one sent — the next sequence number, and a timestamp advanced by the
 * real time elapsed (at least one 20 ms frame) — with the marker bit set.
 */

/** Source keys other than an inbound SSRC (which is 0..2^32-1). */
export const NO_SOURCE = -2
export const OWN_SOURCE = -1

const FRAME_SAMPLES = 160

export class OutgoingStream {
  readonly ssrc: number
  /** The header fields of the packet last passed to `map`. */
  sequence = 0
  timestamp = 0
  marker = false
  private source = NO_SOURCE
  private seqOffset = 0
  private tsOffset = 0
  private sentAny = false
  private lastSeq = 0
  private lastTs = 0
  private lastAt = 0
  private readonly unitsPerMs: number

  constructor(random: () => number = randomUint32, clockRate = 8000) {
    this.ssrc = random() >>> 0
    // RFC 3550 §5.1: random initial sequence and timestamp.
    this.lastSeq = random() & 0xffff
    this.lastTs = random() >>> 0
    this.unitsPerMs = clockRate / 1000
  }

  /** Make the next packet start a new stretch, even from the same source key. */
  breakSource(): void {
    this.source = NO_SOURCE
  }

  /** Renumber one packet of `source`; the results are in `sequence`, `timestamp` and `marker`. */
  map(source: number, sequence: number, timestamp: number, now: number, marker: boolean): void {
    let rebased = false
    if (source !== this.source) {
      const elapsed = this.sentAny ? Math.max(FRAME_SAMPLES, Math.round((now - this.lastAt) * this.unitsPerMs)) : 0
      const nextSeq = this.sentAny ? (this.lastSeq + 1) & 0xffff : this.lastSeq
      this.seqOffset = (nextSeq - sequence) & 0xffff
      this.tsOffset = (this.lastTs + elapsed - timestamp) >>> 0
      this.source = source
      rebased = true
    }
    const seq = (sequence + this.seqOffset) & 0xffff
    const ts = (timestamp + this.tsOffset) >>> 0
    // Only move forward: a late packet must not drag the continuation point back.
    if (!this.sentAny || ((seq - this.lastSeq) & 0xffff) < 0x8000) this.lastSeq = seq
    if (!this.sentAny || ((ts - this.lastTs) | 0) >= 0) {
      this.lastTs = ts
      this.lastAt = now
    }
    this.sentAny = true
    this.sequence = seq
    this.timestamp = ts
    this.marker = marker || rebased
  }
}

function randomUint32(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0]!
}
