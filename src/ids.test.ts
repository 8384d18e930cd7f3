import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { decodeTime, ulid } from 'ulid'
import { idKind, monotonicUlids, newId } from './ids'

const ULID = /^[0-9abcdefghjkmnpqrstvwxyz]{26}$/

describe('ids', () => {
  test('a type prefix and a lowercase ULID, whose time the ulid package reads back', () => {
    const before = Date.now()
    const id = newId('call')
    expect(id.startsWith('call_')).toBe(true)
    expect(id.slice(5)).toMatch(ULID)
    expect(idKind(id)).toBe('call')
    const at = decodeTime(id.slice(5).toUpperCase())
    expect(at).toBeGreaterThanOrEqual(before)
    expect(at).toBeLessThanOrEqual(Date.now())
  })

  test('the time part is the ulid package’s, lowercased', () => {
    fc.assert(
      // From 1: the package takes a time of 0 for none given, and uses the clock.
      fc.property(fc.integer({ min: 1, max: 2 ** 48 - 1 }), (t) => {
        const id = monotonicUlids()(t)
        expect(id.slice(0, 10)).toBe(ulid(t).slice(0, 10).toLowerCase())
        expect(decodeTime(id.toUpperCase())).toBe(t)
      }),
      { numRuns: 50 },
    )
  })

  test('property: strictly increasing whatever the clock does (same millisecond, a step back), the time never going back', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 2, maxLength: 200 }), (steps) => {
        const next = monotonicUlids()
        let now = Date.now()
        let previous = next(now)
        for (const step of steps) {
          now += step
          const id = next(now)
          expect(id).toMatch(ULID)
          expect(id > previous).toBe(true)
          expect(decodeTime(id.toUpperCase())).toBeGreaterThanOrEqual(decodeTime(previous.toUpperCase()))
          previous = id
        }
      }),
      { numRuns: 100 },
    )
  })

  test('a new millisecond draws a new random part', () => {
    const next = monotonicUlids()
    const t = Date.now()
    const a = next(t)
    const b = next(t + 1)
    expect(a.slice(10)).not.toBe(b.slice(10))
  })
})
