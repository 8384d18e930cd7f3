import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createStreamStats, eModelR, mosFromR } from './stats'

/** Packet n of a 20 ms stream: sequence and timestamp from a start, arriving on time plus `late` ms. */
function feed(stats: ReturnType<typeof createStreamStats>, ns: number[], startSeq = 0, late: (n: number) => number = () => 0) {
  for (const n of ns) stats.add((startSeq + n) & 0xffff, (1000 + n * 160) >>> 0, n * 20 + late(n))
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i)

describe('receive statistics (RFC 3550 A.1, A.3, §6.4.1)', () => {
  test('in order and on time: nothing lost, no jitter, top MOS for G.711', () => {
    const s = createStreamStats()
    feed(s, range(0, 100))
    const r = s.snapshot()
    expect(r).toMatchObject({ packetsReceived: 100, packetsExpected: 100, packetsLost: 0, lossFraction: 0, jitterMs: 0, highestSequence: 99 })
    expect(r.mos).toBeGreaterThan(4.3)
  })

  test('lost packets: expected comes from the highest sequence, lost is the difference', () => {
    const s = createStreamStats()
    feed(
      s,
      range(0, 100).filter((n) => n % 10 !== 3),
    )
    expect(s.snapshot()).toMatchObject({ packetsReceived: 90, packetsExpected: 100, packetsLost: 10, lossFraction: 0.1 })
  })

  test('reordered packets are neither lost nor a wrap', () => {
    const s = createStreamStats()
    feed(s, [0, 1, 3, 2, 4, 6, 5, 7])
    expect(s.snapshot()).toMatchObject({ packetsReceived: 8, packetsExpected: 8, packetsLost: 0, highestSequence: 7 })
  })

  test('the sequence wraps at 65535 into the next cycle', () => {
    const s = createStreamStats()
    feed(s, range(0, 40), 65520)
    expect(s.snapshot()).toMatchObject({ packetsReceived: 40, packetsExpected: 40, packetsLost: 0, highestSequence: 65536 + 23 })
  })

  test('loss across the wrap, and a late packet from before the wrap', () => {
    const s = createStreamStats()
    feed(s, [0, 1, 2, 5, 6, 7, 4], 65533)
    expect(s.snapshot()).toMatchObject({ packetsReceived: 7, packetsExpected: 8, packetsLost: 1, highestSequence: 65536 + 4 })
  })

  test('a new source (big sequence jump, twice in a row) restarts counting without losing the totals', () => {
    const s = createStreamStats()
    feed(s, range(0, 10))
    feed(s, range(0, 10), 30000)
    expect(s.snapshot()).toMatchObject({ packetsReceived: 19, packetsExpected: 19, packetsLost: 0 })
  })

  test('a single stray packet far away does not count as a restart', () => {
    const s = createStreamStats()
    feed(s, range(0, 10))
    s.add(40000, 0, 210)
    feed(s, range(10, 20))
    expect(s.snapshot()).toMatchObject({ packetsReceived: 20, packetsExpected: 20, highestSequence: 19 })
  })

  test('jitter: alternating 0/10 ms lateness converges on the RFC 3550 estimate of 10 ms', () => {
    const s = createStreamStats()
    feed(s, range(0, 500), 0, (n) => (n % 2) * 10)
    expect(s.snapshot().jitterMs).toBeCloseTo(10, 1)
  })

  test('jitter is unaffected by a timestamp wrap', () => {
    const s = createStreamStats()
    for (let n = 0; n < 50; n++) s.add(n, (0xffff_ff00 + n * 160) >>> 0, n * 20)
    expect(s.snapshot().jitterMs).toBe(0)
  })

  test('packets flagged as not for jitter (telephone events) count but do not move jitter', () => {
    const s = createStreamStats()
    for (let n = 0; n < 10; n++) s.add(n, 5000, n * 50, false)
    expect(s.snapshot()).toMatchObject({ packetsReceived: 10, jitterMs: 0 })
  })

  test('E-model: MOS falls with loss and with jitter, within 1..4.5', () => {
    expect(mosFromR(eModelR(0, 0))).toBeCloseTo(4.4, 2)
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 500, noNaN: true }),
        (l1, l2, j) => {
          const [lo, hi] = l1 <= l2 ? [l1, l2] : [l2, l1]
          const mos = mosFromR(eModelR(lo, j))
          expect(mos).toBeGreaterThanOrEqual(1)
          expect(mos).toBeLessThanOrEqual(4.5)
          expect(mosFromR(eModelR(hi, j))).toBeLessThanOrEqual(mos + 1e-9)
          expect(mosFromR(eModelR(lo, j + 50))).toBeLessThanOrEqual(mos + 1e-9)
        },
      ),
    )
    expect(mosFromR(eModelR(0.05, 0))).toBeLessThan(4)
  })
})
