import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import {
  ALAW_DECODE,
  ALAW_ENCODE,
  ALAW_TO_ULAW,
  alawToUlaw,
  decodeG711,
  encodeG711,
  PCMA,
  PCMU,
  transcodeInPlace,
  ULAW_DECODE,
  ULAW_ENCODE,
  ULAW_TO_ALAW,
  ulawToAlaw,
} from './g711'

const sample = fc.integer({ min: -32768, max: 32767 })
/** Within one quantisation step of G.711's 8-bit logarithmic scale: about 1/16 of the value, and a few units near zero. */
const withinStep = (got: number, want: number) => Math.abs(got - want) <= Math.abs(want) / 16 + 16

describe('G.711 (ITU-T G.711)', () => {
  test('known code points: µ-law 0xFF and 0x7F are ±0, A-law 0xD5 is 8, the extremes', () => {
    expect(ULAW_DECODE[0xff]).toBe(0)
    expect(ULAW_DECODE[0x7f]).toBe(0)
    expect(ULAW_DECODE[0x80]).toBe(32124)
    expect(ULAW_DECODE[0x00]).toBe(-32124)
    expect(ALAW_DECODE[0xd5]).toBe(8)
    expect(ALAW_DECODE[0x55]).toBe(-8)
    expect(ALAW_DECODE[0xaa]).toBe(32256)
    expect(ALAW_DECODE[0x2a]).toBe(-32256)
    expect(ULAW_ENCODE[0]).toBe(0xff)
    expect(ALAW_ENCODE[0]).toBe(0xd5)
    expect(ULAW_ENCODE[32767]).toBe(0x80)
    expect(ULAW_ENCODE[-32768 & 0xffff]).toBe(0x00)
  })

  test('every code encodes back to itself after decoding (µ-law -0 becomes +0)', () => {
    for (let c = 0; c < 256; c++) {
      expect(ALAW_ENCODE[ALAW_DECODE[c]! & 0xffff]).toBe(c)
      if (c !== 0x7f) expect(ULAW_ENCODE[ULAW_DECODE[c]! & 0xffff]).toBe(c)
    }
  })

  test('decoding is odd-symmetric: the sign bit alone flips the sign', () => {
    for (let c = 0; c < 128; c++) {
      expect(ULAW_DECODE[c]! + ULAW_DECODE[c | 0x80]!).toBe(0)
      expect(ALAW_DECODE[c]! + ALAW_DECODE[c | 0x80]!).toBe(0)
    }
  })

  test('encode then decode stays within one quantisation step, for every 16-bit sample in range', () => {
    for (let x = -32124; x <= 32124; x++) {
      expect(withinStep(ULAW_DECODE[ULAW_ENCODE[x & 0xffff]!]!, x)).toBe(true)
      expect(withinStep(ALAW_DECODE[ALAW_ENCODE[x & 0xffff]!]!, x)).toBe(true)
    }
  })

  test('encoding is monotonic: a louder sample never decodes quieter', () => {
    fc.assert(
      fc.property(sample, sample, (x, y) => {
        const [lo, hi] = x <= y ? [x, y] : [y, x]
        for (const [enc, dec] of [
          [ULAW_ENCODE, ULAW_DECODE],
          [ALAW_ENCODE, ALAW_DECODE],
        ] as const) {
          expect(dec[enc[lo & 0xffff]!]!).toBeLessThanOrEqual(dec[enc[hi & 0xffff]!]!)
        }
      }),
    )
  })

  test('µ-law ↔ A-law transcoding preserves the sound within a step, and both directions agree', () => {
    for (let c = 0; c < 256; c++) {
      expect(withinStep(ALAW_DECODE[ULAW_TO_ALAW[c]!]!, ULAW_DECODE[c]!)).toBe(true)
      expect(withinStep(ULAW_DECODE[ALAW_TO_ULAW[c]!]!, ALAW_DECODE[c]!)).toBe(true)
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 320 }), (codes) => {
        const inPlace = codes.slice()
        transcodeInPlace(inPlace, ULAW_TO_ALAW)
        const throughLinear = Array.from(codes, (c) => ALAW_ENCODE[ULAW_DECODE[c]! & 0xffff]!)
        expect(Array.from(inPlace)).toEqual(throughLinear)
        expect(Array.from(ulawToAlaw(codes))).toEqual(throughLinear)
        expect(Array.from(alawToUlaw(codes))).toEqual(Array.from(codes, (c) => ULAW_ENCODE[ALAW_DECODE[c]! & 0xffff]!))
      }),
    )
  })

  test('array encode/decode round trip within a step', () => {
    fc.assert(
      fc.property(fc.array(sample, { maxLength: 320 }), fc.constantFrom(PCMU, PCMA), (xs, pt) => {
        const pcm = Int16Array.from(xs)
        const back = decodeG711(pt, encodeG711(pt, pcm))
        for (let i = 0; i < pcm.length; i++) {
          const x = Math.max(-32124, Math.min(32124, pcm[i]!))
          expect(withinStep(back[i]!, x)).toBe(true)
        }
      }),
    )
  })
})
