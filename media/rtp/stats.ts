/**
 * Receive statistics of one RTP stream, as RFC 3550 defines them: the extended highest
 * sequence number (A.1), packets expected and lost (A.3), interarrival jitter (§6.4.1,
 * A.8), and from loss and jitter an estimated MOS (a simplified ITU-T G.107 E-model).
 */

export interface ReceiveStats {
  packetsReceived: number
  /** From the extended highest sequence number: what the sender has sent so far. */
  packetsExpected: number
  /** Expected minus received, never below 0 (duplicates can make the difference negative). */
  packetsLost: number
  /** packetsLost / packetsExpected, 0..1. */
  lossFraction: number
  jitterMs: number
  /** Extended highest sequence number received (cycles × 65536 + sequence) of the current source. */
  highestSequence: number
  /** E-model transmission rating, 0..100. */
  rFactor: number
  /** Estimated mean opinion score, 1..4.5. */
  mos: number
}

export interface StreamStats {
  /**
   * Count one packet. `jitter` false leaves the jitter estimate alone: telephone-event
   * packets repeat their event's start timestamp, which would read as jitter.
   */
  add(sequence: number, timestamp: number, arrivalMs: number, jitter?: boolean): void
  snapshot(): ReceiveStats
}

/** RFC 3550 A.1: a forward jump below this is loss; a larger one is a restarted or new source. */
const MAX_DROPOUT = 3000
/** ... and a backward step up to this is a late packet. */
const MAX_MISORDER = 100
const SEQ_MOD = 0x10000

export function createStreamStats(clockRate = 8000): StreamStats {
  const unitsPerMs = clockRate / 1000
  let started = false
  let baseSeq = 0
  let maxSeq = 0
  let cycles = 0
  let badSeq = -1
  let received = 0
  // Earlier sources (after a restart) still count towards the leg's totals.
  let receivedBefore = 0
  let expectedBefore = 0
  let jitter = 0 // in timestamp units, as RFC 3550 keeps it
  let lastArrival = Number.NaN
  let lastTimestamp = 0

  const restart = (seq: number) => {
    if (started) {
      receivedBefore += received
      expectedBefore += cycles + maxSeq - baseSeq + 1
    }
    started = true
    baseSeq = seq
    maxSeq = seq
    cycles = 0
    badSeq = -1
    received = 0
    lastArrival = Number.NaN
  }

  return {
    add(seq, timestamp, arrivalMs, withJitter = true) {
      if (!started) restart(seq)
      else {
        const delta = (seq - maxSeq) & 0xffff
        if (delta < MAX_DROPOUT) {
          if (seq < maxSeq) cycles += SEQ_MOD
          maxSeq = seq
        } else if (delta <= SEQ_MOD - MAX_MISORDER) {
          // Two packets in sequence after a big jump mean the sender really moved on.
          if (seq !== badSeq) {
            badSeq = (seq + 1) & 0xffff
            return
          }
          restart(seq)
        }
      }
      received++
      if (!withJitter) return
      if (!Number.isNaN(lastArrival)) {
        // Differences rather than absolute transit times, so a timestamp wrap costs nothing.
        const d = (arrivalMs - lastArrival) * unitsPerMs - ((timestamp - lastTimestamp) | 0)
        jitter += (Math.abs(d) - jitter) / 16
      }
      lastArrival = arrivalMs
      lastTimestamp = timestamp
    },
    snapshot() {
      const expected = expectedBefore + (started ? cycles + maxSeq - baseSeq + 1 : 0)
      const got = receivedBefore + received
      const lost = Math.max(0, expected - got)
      const lossFraction = expected > 0 ? lost / expected : 0
      const jitterMs = jitter / unitsPerMs
      const rFactor = eModelR(lossFraction, jitterMs)
      return {
        packetsReceived: got,
        packetsExpected: expected,
        packetsLost: lost,
        lossFraction,
        jitterMs,
        highestSequence: started ? cycles + maxSeq : 0,
        rFactor,
        mos: mosFromR(rFactor),
      }
    },
  }
}

/** G.113 Appendix I: packet-loss robustness of G.711 with packet loss concealment, random loss. */
const G711_BPL = 25.1
/** G.711 has no coding impairment. */
const G711_IE = 0
/** Default R0 − Is of G.107 with all other parameters at their defaults. */
const R_DEFAULT = 93.2

/**
 * Simplified ITU-T G.107 E-model for G.711:
 *
 *   R = 93.2 − Id − Ie_eff
 *   Ie_eff = Ie + (95 − Ie) · Ppl / (Ppl + Bpl)       Ie = 0, Bpl = 25.1, Ppl = loss in %
 *   Id = 0.024·d + 0.11·(d − 177.3)·H(d − 177.3)      H = step function
 *   d  = one-way delay in ms, estimated as 20 (packetisation) + 2 × jitter (the jitter
 *        buffer a phone needs) + `networkDelayMs` (unknown without RTCP round trips: 0)
 */
export function eModelR(lossFraction: number, jitterMs: number, networkDelayMs = 0): number {
  const ppl = Math.min(100, Math.max(0, lossFraction * 100))
  const ieEff = G711_IE + ((95 - G711_IE) * ppl) / (ppl + G711_BPL)
  const d = 20 + 2 * jitterMs + networkDelayMs
  const id = 0.024 * d + (d > 177.3 ? 0.11 * (d - 177.3) : 0)
  return Math.min(100, Math.max(0, R_DEFAULT - id - ieEff))
}

/** G.107 Annex B: R to MOS (conversational quality, estimated). */
export function mosFromR(r: number): number {
  if (r <= 0) return 1
  if (r >= 100) return 4.5
  // The cubic dips just below 1 for R under about 6.5; the scale starts at 1.
  return Math.max(1, 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6)
}
