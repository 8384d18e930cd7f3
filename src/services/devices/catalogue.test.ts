/** MAC addresses: every accepted spelling of one address normalises to the same 12 uppercase hex digits; group addresses never do. */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import type { ApiError } from '../../errors'
import { normaliseMac, PHONE_MODELS, phoneModel } from './catalogue'

const unicast = fc.uint8Array({ minLength: 6, maxLength: 6 }).filter((b) => (b[0]! & 1) === 0 && b.some((x) => x !== 0))
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')

describe('normaliseMac', () => {
  test('plain, colon, dash and dotted spellings in any case give the same stored form', () => {
    fc.assert(
      fc.property(unicast, fc.boolean(), (bytes, upper) => {
        const h = upper ? hex(bytes).toUpperCase() : hex(bytes)
        const spellings = [h, h.match(/../g)!.join(':'), h.match(/../g)!.join('-'), h.match(/..../g)!.join('.')]
        for (const s of spellings) expect(normaliseMac(s)).toBe(hex(bytes).toUpperCase())
      }),
      { numRuns: 200 },
    )
  })

  test('group (multicast, broadcast) addresses and all zeros are refused', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 6, maxLength: 6 }), (bytes) => {
        bytes[0] = bytes[0]! | 1
        expect(normaliseMac(hex(bytes))).toBeUndefined()
      }),
      { numRuns: 100 },
    )
    expect(normaliseMac('000000000000')).toBeUndefined()
  })

  test('anything else is refused', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (s) => {
        const out = normaliseMac(s)
        if (out !== undefined) expect(out).toMatch(/^[0-9A-F]{12}$/)
      }),
      { numRuns: 300 },
    )
    for (const s of ['00:15:65:AA:BB', '00:15-65:AA:BB:CC', '0015.65AA.BBCC.', 'GG1565AABBCC']) expect(normaliseMac(s)).toBeUndefined()
  })
})

describe('phoneModel', () => {
  test('finds every catalogue model by any case and spacing, and refuses it as another type', () => {
    for (const m of PHONE_MODELS) {
      expect(phoneModel(m.vendor.toUpperCase(), m.model.toLowerCase().replace(' ', '-'), m.type)).toBe(m)
      const other = m.type === 'deskphone' ? 'dect_base' : 'deskphone'
      expect(() => phoneModel(m.vendor, m.model, other)).toThrow()
    }
  })

  test('an unknown vendor or model is unsupported_vendor naming the field', () => {
    const err = (f: () => unknown) => {
      try {
        f()
      } catch (e) {
        return e as ApiError
      }
      throw new Error('no error')
    }
    expect(err(() => phoneModel('cisco', 'x', 'deskphone'))).toMatchObject({ status: 400, code: 'unsupported_vendor', details: { vendor: expect.any(String) } })
    expect(err(() => phoneModel('polycom', 'VVX 999', 'deskphone'))).toMatchObject({
      status: 400,
      code: 'unsupported_vendor',
      details: { model: expect.any(String) },
    })
  })
})
