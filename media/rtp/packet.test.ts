import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { buildRtp, createHeaderView, isRtcp, parseRtp, readRtpHeader, type RtpPacket, writeRtpHeader } from './packet'

const u32 = fc.integer({ min: 0, max: 0xffff_ffff })

const packetArb: fc.Arbitrary<RtpPacket> = fc.record({
  marker: fc.boolean(),
  payloadType: fc.integer({ min: 0, max: 127 }),
  sequence: fc.integer({ min: 0, max: 0xffff }),
  timestamp: u32,
  ssrc: u32,
  csrc: fc.array(u32, { maxLength: 15 }),
  extension: fc.option(
    fc.record({
      profile: fc.integer({ min: 0, max: 0xffff }),
      data: fc.integer({ min: 0, max: 8 }).chain((words) => fc.uint8Array({ minLength: words * 4, maxLength: words * 4 })),
    }),
    { nil: undefined },
  ),
  payload: fc.uint8Array({ maxLength: 200 }),
  padding: fc.integer({ min: 0, max: 255 }),
})

describe('RTP packets (RFC 3550 §5.1)', () => {
  test('a known PCMU packet parses field by field', () => {
    const bytes = new Uint8Array([0x80, 0x80, 0x12, 0x34, 0, 0, 0x01, 0x40, 0xde, 0xad, 0xbe, 0xef, 0xff, 0x7f])
    expect(parseRtp(bytes)).toEqual({
      marker: true,
      payloadType: 0,
      sequence: 0x1234,
      timestamp: 320,
      ssrc: 0xdeadbeef,
      csrc: [],
      payload: new Uint8Array([0xff, 0x7f]),
      padding: 0,
    })
  })

  test('build then parse gives back the same packet', () => {
    fc.assert(
      fc.property(packetArb, (p) => {
        const parsed = parseRtp(buildRtp(p))
        const expected: RtpPacket = { ...p }
        if (expected.extension === undefined) delete expected.extension
        expect(parsed).toEqual(expected)
      }),
    )
  })

  test('the hot-path view agrees with the full parse', () => {
    fc.assert(
      fc.property(packetArb, (p) => {
        const bytes = buildRtp(p)
        const view = createHeaderView()
        expect(readRtpHeader(bytes, view)).toBe(true)
        expect(bytes.subarray(view.payloadOffset, view.payloadEnd)).toEqual(p.payload)
        expect([view.marker, view.payloadType, view.sequence, view.timestamp, view.ssrc]).toEqual([p.marker, p.payloadType, p.sequence, p.timestamp, p.ssrc])
      }),
    )
  })

  test('random bytes never throw: a packet or undefined', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const p = parseRtp(bytes)
        if (p) expect(buildRtp(p).length).toBe(bytes.length)
        readRtpHeader(bytes, createHeaderView())
      }),
      { numRuns: 2000 },
    )
  })

  test('garbage is undefined: short, wrong version, CSRCs or extension past the end, bad padding', () => {
    expect(parseRtp(new Uint8Array(11).fill(0x80))).toBeUndefined()
    expect(parseRtp(new Uint8Array([0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]))).toBeUndefined()
    expect(parseRtp(new Uint8Array([0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]))).toBeUndefined()
    expect(parseRtp(new Uint8Array([0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xbe, 0xde, 0, 1]))).toBeUndefined()
    expect(parseRtp(new Uint8Array([0xa0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]))).toBeUndefined()
    expect(parseRtp(new Uint8Array([0xa0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 14]))).toBeUndefined()
  })

  test('fields that do not fit are refused when building', () => {
    expect(() => buildRtp({ payloadType: 128, sequence: 0, timestamp: 0, ssrc: 0, payload: new Uint8Array() })).toThrow(RangeError)
    expect(() => buildRtp({ payloadType: 0, sequence: 65536, timestamp: 0, ssrc: 0, payload: new Uint8Array() })).toThrow(RangeError)
    expect(() => buildRtp({ payloadType: 0, sequence: 0, timestamp: 0, ssrc: 0, payload: new Uint8Array(), csrc: Array(16).fill(1) })).toThrow(RangeError)
  })

  test('an in-place header rewrite keeps CSRCs, extension and payload', () => {
    const bytes = buildRtp({ payloadType: 8, sequence: 1, timestamp: 2, ssrc: 3, csrc: [9], payload: new Uint8Array([1, 2, 3]), padding: 4 })
    writeRtpHeader(bytes, true, 0, 65535, 0xffff_fffe, 0x1234_5678)
    expect(parseRtp(bytes)).toMatchObject({ marker: true, payloadType: 0, sequence: 65535, timestamp: 0xffff_fffe, ssrc: 0x1234_5678, csrc: [9], padding: 4 })
  })

  test('RTCP multiplexed on the RTP port is recognised (RFC 5761)', () => {
    expect(isRtcp(new Uint8Array([0x80, 200, 0, 6]))).toBe(true)
    expect(isRtcp(new Uint8Array([0x80, 0x80, 0, 6]))).toBe(false)
  })
})
