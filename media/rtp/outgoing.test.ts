import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { OWN_SOURCE, OutgoingStream } from './outgoing'

const seeded = (...values: number[]) => {
  let i = 0
  return () => values[i++ % values.length]!
}

describe('outgoing stream: one SSRC, continuous numbering across sources', () => {
  test('within one source, spacing is kept: gaps, reordering and silence pass through', () => {
    const out = new OutgoingStream(seeded(0xabcd, 1000, 50000))
    expect(out.ssrc).toBe(0xabcd)
    const seen: [number, number][] = []
    for (const [seq, ts] of [
      [10, 0],
      [11, 160],
      [13, 480],
      [12, 320],
      [14, 8000],
    ] as const) {
      out.map(7, seq, ts, 0, false)
      seen.push([out.sequence, out.timestamp])
    }
    expect(seen).toEqual([
      [1000, 50000],
      [1001, 50160],
      [1003, 50480],
      [1002, 50320],
      [1004, 58000],
    ])
  })

  test('a new source continues from the last packet: next sequence, timestamp advanced by elapsed time, marker set', () => {
    const out = new OutgoingStream(seeded(1, 65535, 0xffff_ff00))
    out.map(7, 500, 123, 0, false)
    expect([out.sequence, out.timestamp, out.marker]).toEqual([65535, 0xffff_ff00, true])
    out.map(7, 501, 283, 20, false)
    expect(out.marker).toBe(false)
    out.map(OWN_SOURCE, 0, 0, 1020, false) // a second later, hold music starts
    expect([out.sequence, out.timestamp, out.marker]).toEqual([1, (0xffff_ff00 + 160 + 8000) >>> 0, true])
  })

  test('a late packet does not drag the continuation point back; breakSource forces a new stretch', () => {
    const out = new OutgoingStream(seeded(1, 100, 1000))
    out.map(7, 10, 1600, 0, false)
    out.map(7, 12, 1920, 40, false)
    out.map(7, 11, 1760, 41, false)
    out.breakSource()
    out.map(7, 13, 2080, 60, false)
    expect([out.sequence, out.timestamp, out.marker]).toEqual([103, 1000 + 320 + 160, true])
  })

  test('for any sequence of sources, the first packet after a switch is one on from the highest sequence sent', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ source: fc.integer({ min: -1, max: 3 }), seq: fc.integer({ min: 0, max: 0xffff }), ts: fc.integer({ min: 0, max: 0xffff_ffff }) }),
          {
            minLength: 1,
            maxLength: 50,
          },
        ),
        (packets) => {
          const out = new OutgoingStream()
          let highest: number | undefined
          let source: number | undefined
          let now = 0
          for (const p of packets) {
            out.map(p.source, p.seq, p.ts, (now += 20), false)
            if (highest !== undefined && p.source !== source) expect((out.sequence - highest) & 0xffff).toBe(1)
            if (p.source !== source) expect(out.marker).toBe(true)
            source = p.source
            if (highest === undefined || ((out.sequence - highest) & 0xffff) < 0x8000) highest = out.sequence
            expect(out.ssrc).toBe(out.ssrc >>> 0)
          }
        },
      ),
    )
  })
})
