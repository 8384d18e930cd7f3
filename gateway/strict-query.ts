/**
 * Query strings read strictly, before the schema's own check coerces them.
 *
 * The schema check converts text to numbers the way JavaScript does, so
 * `limit=0x10`, `limit=1e2` and `limit= 5` passed as 16, 100 and 5, and a parameter
 * given twice (`limit=1&limit=100`) was quietly read once. A careful client never
 * sends those, and a careless one deserves to hear it: a number parameter takes
 * decimal digits only, a parameter that is not a list is given at most once, and a
 * date must exist on the calendar (`2026-02-30` does not).
 */
import type { TSchema } from '@sinclair/typebox'
import type { FieldDetails } from '../src/errors'

type S = TSchema & Record<string, unknown>

const DECIMAL_INTEGER = /^-?(0|[1-9]\d*)$/
const DECIMAL_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?$/
const LEADING_DATE = /^(\d{4})-(\d{2})-(\d{2})(?![\d])/

/** The schema's non-null branches (Nullable and Optional wrap the same schema). */
const branches = (s: S): S[] => (s.anyOf ? (s.anyOf as S[]).filter((b) => b.type !== 'null') : [s])
// Elysia's t.Integer and t.Number accept their text form as a string branch with a numeric format.
const integerBranch = (k: S) => k.type === 'integer' || (k.type === 'string' && k.format === 'integer')
const numberBranch = (k: S) => integerBranch(k) || k.type === 'number' || (k.type === 'string' && k.format === 'numeric')
const textBranch = (k: S) => k.type === 'string' && !numberBranch(k)

/** Whether YYYY-MM-DD names a day that exists (no 30 February, no month 13). */
export function isCalendarDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false
  const d = new Date(Date.UTC(year, month - 1, day))
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day
}

/** The reason a text that starts with a date is not one, if it is not. */
export function calendarDateProblem(text: string): string | undefined {
  const m = LEADING_DATE.exec(text)
  if (!m) return undefined
  return isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3])) ? undefined : `${m[0]} is not a date on the calendar`
}

/** Field-level problems of a query string against the route's query schema; empty when there are none. */
export function strictQueryProblems(params: URLSearchParams, schema: TSchema | undefined): FieldDetails {
  const details: FieldDetails = {}
  const properties = (schema as S | undefined)?.properties as Record<string, S> | undefined
  if (!properties) return details
  for (const name of new Set(params.keys())) {
    const property = properties[name]
    if (!property) continue // unknown parameters are the schema check's to refuse
    const kinds = branches(property)
    const values = params.getAll(name)
    if (values.length > 1 && !kinds.some((k) => k.type === 'array')) {
      details[name] = 'is given more than once; give it once'
      continue
    }
    for (const value of values) {
      if (kinds.length > 0 && kinds.every(integerBranch)) {
        if (!DECIMAL_INTEGER.test(value)) details[name] = 'must be an integer in decimal digits'
      } else if (kinds.length > 0 && kinds.every(numberBranch)) {
        if (!DECIMAL_NUMBER.test(value)) details[name] = 'must be a number in decimal digits'
      } else if (kinds.some(textBranch)) {
        const problem = calendarDateProblem(value)
        if (problem) details[name] = problem
      }
    }
  }
  return details
}
