/**
 * Error codes are stable API (spec, Errors and Versioning 2): every code the service
 * answers with is one of STABLE_CODES, which the OpenAPI document lists. The type
 * system holds the throw sites to it (ApiError, notFound, conflict... take a
 * StableCode), so a code missing from the list does not compile: `npm run typecheck`
 * (run by .ci/run) fails on the lines below if that guarantee is ever loosened.
 */
import { describe, expect, test } from 'bun:test'
import { ApiError, conflict, notFound, STABLE_CODES, type StableCode } from './errors'

describe('stable error codes', () => {
  test('a code missing from STABLE_CODES does not compile', () => {
    // @ts-expect-error: not a stable code
    const e1 = conflict('Something clashed.', 'a_code_nobody_listed')
    // @ts-expect-error: no wibble_not_found in the list
    const e2 = notFound('wibble', 'x')
    // @ts-expect-error: not a stable code
    const e3 = new ApiError(400, 'Bad.', 'made_up_on_the_spot')
    for (const e of [e1, e2, e3]) expect(e).toBeInstanceOf(ApiError)
  })

  test('each code has one error status, and the not-found codes are 404', () => {
    for (const [code, { status }] of Object.entries(STABLE_CODES) as [StableCode, { status: number }][]) {
      expect({ code, error: status >= 400 && status < 600 }).toEqual({ code, error: true })
      if (code.endsWith('_not_found')) expect({ code, status }).toEqual({ code, status: 404 })
    }
    expect(notFound('call', 'call_x').toBody()).toEqual({ error: 'No such call: call_x', code: 'call_not_found' })
  })
})
