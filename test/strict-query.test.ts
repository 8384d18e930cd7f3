/**
 * Query strings over HTTP: decimal integers only, a scalar parameter once, and dates
 * that exist (issue: the black-box probe saw `limit=0x10`, `1e2`, `" 5"` and
 * `limit=1&limit=100` accepted, and 2026-02-30 read as 2 March).
 */
import { describe, expect, test } from 'bun:test'
import { startTestService } from './support/service'

const t = await startTestService()
const a = await t.account()
const c = { key: a.key, account: a.id }

describe('strict query strings', () => {
  test('limit in decimal digits only: 0x10, 1e2 and " 5" are 400 naming limit', async () => {
    expect((await t.call('GET', '/v1/users?limit=16', c)).status).toBe(200)
    for (const bad of ['0x10', '1e2', '%205', '1.0']) {
      const r = await t.call<any>('GET', `/v1/users?limit=${bad}`, c)
      expect({ bad, status: r.status, code: r.body.code }).toEqual({ bad, status: 400, code: 'validation_error' })
      expect(r.body.details.limit).toBe('must be an integer in decimal digits')
    }
  })

  test('a parameter given twice is 400; expand[] may repeat', async () => {
    const r = await t.call<any>('GET', '/v1/users?limit=1&limit=100', c)
    expect(r.status).toBe(400)
    expect(r.body.details).toEqual({ limit: 'is given more than once; give it once' })
    expect((await t.call('GET', '/v1/calls?expand[]=recording&expand[]=recording', c)).status).toBe(200)
  })

  test('impossible dates are 400, real ones pass', async () => {
    const bad = await t.call<any>('GET', '/v1/calls?from_date=2026-02-30', c)
    expect(bad.status).toBe(400)
    expect(bad.body.details.from_date).toContain('not a date on the calendar')
    const badTime = await t.call<any>('GET', '/v1/audit-logs?created_after=2026-02-30T00:00:00Z', c)
    expect(badTime.status).toBe(400)
    expect(badTime.body.details.created_after).toContain('not a date on the calendar')
    expect((await t.call('GET', '/v1/calls?from_date=2028-02-29', c)).status).toBe(200)
  })

  test('nothing is checked before the caller is known: no credentials is 401, not 400', async () => {
    expect((await t.call('GET', '/v1/users?limit=0x10')).status).toBe(401)
  })
})
