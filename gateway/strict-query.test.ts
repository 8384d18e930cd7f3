import { describe, expect, test } from 'bun:test'
import { Type as T } from '@sinclair/typebox'
import fc from 'fast-check'
import { calendarDateProblem, isCalendarDate, strictQueryProblems } from './strict-query'

const schema = T.Object({
  limit: T.Optional(T.Integer({ minimum: 1 })),
  // how Elysia's t.Integer reads in a query: its text form is a string branch
  page_size: T.Optional(T.Union([T.String({ format: 'integer' }), T.Integer()])),
  ratio: T.Optional(T.Number()),
  from_date: T.Optional(T.String()),
  'expand[]': T.Optional(T.Array(T.String())),
})
const problems = (qs: string) => strictQueryProblems(new URLSearchParams(qs), schema)

describe('strict query strings', () => {
  test('numbers in decimal digits only', () => {
    expect(problems('limit=10')).toEqual({})
    for (const bad of ['0x10', '1e2', ' 5', '5 ', '+5', '05', '1.0', '', 'Infinity', '1_000']) {
      expect(problems(`limit=${encodeURIComponent(bad)}`)).toEqual({ limit: 'must be an integer in decimal digits' })
    }
    expect(problems('page_size=0x10')).toEqual({ page_size: 'must be an integer in decimal digits' })
    expect(problems('page_size=16')).toEqual({})
    expect(problems('ratio=0.5')).toEqual({})
    expect(problems('ratio=5e-1')).toEqual({ ratio: 'must be a number in decimal digits' })
  })

  test('a scalar given twice is refused; a list may repeat', () => {
    expect(problems('limit=1&limit=100')).toEqual({ limit: 'is given more than once; give it once' })
    expect(problems('expand[]=a&expand[]=b')).toEqual({})
  })

  test('dates must exist; unknown parameters are left to the schema check', () => {
    expect(problems('from_date=2026-02-28')).toEqual({})
    expect(problems('from_date=2028-02-29T10:00:00Z')).toEqual({})
    expect(problems('from_date=2026-02-30')).toEqual({ from_date: '2026-02-30 is not a date on the calendar' })
    expect(problems('from_date=2026-13-01')).toEqual({ from_date: '2026-13-01 is not a date on the calendar' })
    expect(problems('whatever=0x10')).toEqual({})
  })

  test('property: a calendar date is valid exactly when the day is within its month', () => {
    const daysIn = (y: number, m: number) => [31, (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 9999 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }), (y, m, d) => {
        const valid = m >= 1 && m <= 12 && d >= 1 && d <= daysIn(y, m)
        expect(isCalendarDate(y, m, d)).toBe(valid)
        const text = `${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`
        expect(calendarDateProblem(text) === undefined).toBe(valid)
      }),
      { numRuns: 2000 },
    )
  })
})
