/**
 * Audit logs (spec "Audit Logs"): every mutation attempt is recorded with its actor,
 * credential kind, event (the operationId), resource, outcome, ip and request id;
 * GET /v1/audit-logs filters them within one account, and
 * GET /v1/admin/users/{admin_user} resolves an actor that is a person.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { startTestService } from './support/service'

const clock = manualClock('2026-05-04T08:00:00.000Z')
const t = await startTestService({}, { clock })

interface Entry {
  id: string
  object: string
  account: string | null
  event: string
  resource: string | null
  actor: string
  credential: string
  outcome: 'success' | 'failure'
  status_code: number
  ip_address: string | null
  request_id: string
  created_at: string
}

async function setup() {
  const a = await t.account()
  return { ...a, k: { key: a.key, account: a.id } }
}

async function logs(k: { key: string; account: string }, query = ''): Promise<Entry[]> {
  const r = await t.call('GET', `/v1/audit-logs?limit=100${query ? `&${query}` : ''}`, k)
  expect(r.status).toBe(200)
  expect(r.body.object).toBe('list')
  return r.body.data
}

const ids = (entries: Entry[]) => entries.map((e) => e.request_id)

const byRequest = async (k: { key: string; account: string }, requestId: string | null) => {
  const found = await logs(k, `request_id=${requestId}`)
  expect(found).toHaveLength(1)
  return found[0]!
}

describe('every mutation is recorded', () => {
  test('a success records actor, credential kind, event (operationId), resource, outcome, ip and the X-Request-Id', async () => {
    const a = await setup()
    const r = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'rec@example.com' } })
    expect(r.status).toBe(200)
    const requestId = r.headers.get('x-request-id')
    const e = await byRequest(a.k, requestId)
    expect(e).toMatchObject({
      object: 'audit_log',
      account: a.id,
      event: 'createUser',
      resource: r.body.id,
      credential: 'secret_key',
      outcome: 'success',
      status_code: 200,
      ip_address: '127.0.0.1',
      request_id: requestId,
    })
    expect(e.actor).toMatch(/^key_/)
    expect(e.id).toMatch(/^audit_/)
    expect(e.created_at).toBe(clock.now().toISOString())
  })

  test('update and delete are recorded under their own operationIds with the resource acted on', async () => {
    const a = await setup()
    const user = (await t.call('POST', '/v1/users', { ...a.k, body: { email: 'ud@example.com' } })).body
    const upd = await t.call('POST', `/v1/users/${user.id}`, { ...a.k, body: { name: 'New' } })
    const del = await t.call('DELETE', `/v1/users/${user.id}`, a.k)
    expect(await byRequest(a.k, upd.headers.get('x-request-id'))).toMatchObject({ event: 'updateUser', resource: user.id, outcome: 'success' })
    expect(await byRequest(a.k, del.headers.get('x-request-id'))).toMatchObject({ event: 'deleteUser', resource: user.id, outcome: 'success' })
  })

  test('creating the account is in the new account’s own trail', async () => {
    const a = await setup()
    const created = await logs(a.k, 'event=createAccount')
    expect(created).toHaveLength(1)
    expect(created[0]).toMatchObject({ resource: a.id, account: a.id, outcome: 'success', credential: 'secret_key' })
  })

  test('reads are not recorded', async () => {
    const a = await setup()
    const before = (await logs(a.k)).length
    await t.call('GET', '/v1/users', a.k)
    await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect((await logs(a.k)).length).toBe(before)
  })

  test('an account session is recorded as credential account_session, the session as actor', async () => {
    const a = await setup()
    const s = await t.call('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id, components: { account_onboarding: { enabled: true } } } })
    expect(s.status).toBe(200)
    const r = await t.call('POST', '/v1/users', { key: s.body.client_secret, body: { email: 'bysession@example.com' } })
    expect(r.status).toBe(200)
    const e = await byRequest(a.k, r.headers.get('x-request-id'))
    expect(e).toMatchObject({ credential: 'account_session', event: 'createUser', outcome: 'success', resource: r.body.id })
    expect(e.actor).toMatch(/^acss_/)
    // Minting the session was itself a mutation of the platform key.
    expect(await byRequest(a.k, s.headers.get('x-request-id'))).toMatchObject({ event: 'createAccountSession', credential: 'secret_key', resource: e.actor })
  })
})

describe('failed mutations are recorded as failures', () => {
  test('a 409 conflict', async () => {
    const a = await setup()
    await t.call('POST', '/v1/users', { ...a.k, body: { email: 'same@example.com' } })
    const r = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'same@example.com' } })
    expect(r.status).toBe(409)
    expect(await byRequest(a.k, r.headers.get('x-request-id'))).toMatchObject({ event: 'createUser', outcome: 'failure', status_code: 409, resource: null })
  })

  test('a validation error, malformed JSON and a 404', async () => {
    const a = await setup()
    const invalid = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'not-an-email' } })
    expect(invalid.status).toBe(400)
    expect(await byRequest(a.k, invalid.headers.get('x-request-id'))).toMatchObject({ event: 'createUser', outcome: 'failure', status_code: 400 })
    const broken = await t.call('POST', '/v1/users', { ...a.k, rawBody: '{', headers: { 'content-type': 'application/json' } })
    expect(broken.status).toBe(400)
    expect(broken.body.code).toBe('invalid_json')
    const missing = await t.call('DELETE', '/v1/users/usr_missing', a.k)
    expect(missing.status).toBe(404)
    expect(await byRequest(a.k, missing.headers.get('x-request-id'))).toMatchObject({ event: 'deleteUser', outcome: 'failure', status_code: 404 })
  })

  test('a user token refused a mutation is recorded in its account’s trail, with the user as actor', async () => {
    const a = await setup()
    const user = (await t.call('POST', '/v1/users', { ...a.k, body: { email: 'person@example.com', name: 'Pat Person' } })).body
    const session = await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user: user.id } })
    expect(session.status).toBe(200)
    const r = await t.call('POST', '/v1/users', { key: session.body.client_secret, body: { email: 'sneaky@example.com' } })
    expect(r.status).toBe(403)
    const e = await byRequest(a.k, r.headers.get('x-request-id'))
    expect(e).toMatchObject({ actor: user.id, credential: 'user_session', outcome: 'failure', status_code: 403, event: 'createUser', account: a.id })
    // The person behind that actor.
    const who = await t.call('GET', `/v1/admin/users/${e.actor}`, a.k)
    expect(who.status).toBe(200)
    expect(who.body).toMatchObject({ id: user.id, object: 'admin_user', account: a.id, name: 'Pat Person', email: 'person@example.com' })
  })
})

describe('GET /v1/audit-logs filters', () => {
  /** Five recorded attempts, one simulated minute apart, by two credentials. */
  async function history() {
    const a = await setup()
    const s = await t.call('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id, components: { account_onboarding: { enabled: true } } } })
    const sessionKey = s.body.client_secret as string
    const start = clock.now().getTime()
    const step = async (f: () => Promise<{ headers: Headers; body: any; status: number }>) => {
      clock.advance(60_000)
      const r = await f()
      return { r, at: clock.now().getTime(), requestId: r.headers.get('x-request-id')! }
    }
    const u1 = await step(() => t.call('POST', '/v1/users', { ...a.k, body: { email: 'one@example.com' } }))
    const u2 = await step(() => t.call('POST', '/v1/users', { key: sessionKey, body: { email: 'two@example.com' } }))
    const dup = await step(() => t.call('POST', '/v1/users', { ...a.k, body: { email: 'one@example.com' } }))
    const upd = await step(() => t.call('POST', `/v1/users/${u1.r.body.id}`, { ...a.k, body: { name: 'Renamed' } }))
    const del = await step(() => t.call('DELETE', `/v1/users/${u2.r.body.id}`, { key: sessionKey }))
    const keyActor = (await byRequest(a.k, u1.requestId)).actor
    const sessionActor = (await byRequest(a.k, u2.requestId)).actor
    return { a, start, u1, u2, dup, upd, del, keyActor, sessionActor }
  }

  test('unfiltered: every attempt, newest first', async () => {
    const h = await history()
    const all = await logs(h.a.k, `created_after=${new Date(h.start + 1).toISOString()}`)
    expect(ids(all)).toEqual([h.del, h.upd, h.dup, h.u2, h.u1].map((x) => x.requestId))
  })

  test('event', async () => {
    const h = await history()
    expect(ids(await logs(h.a.k, 'event=createUser'))).toEqual([h.dup, h.u2, h.u1].map((x) => x.requestId))
    expect(ids(await logs(h.a.k, 'event=deleteUser'))).toEqual([h.del.requestId])
    expect(await logs(h.a.k, 'event=noSuchOperation')).toHaveLength(0)
  })

  test('resource', async () => {
    const h = await history()
    expect(ids(await logs(h.a.k, `resource=${h.u1.r.body.id}`))).toEqual([h.upd, h.u1].map((x) => x.requestId))
    expect(ids(await logs(h.a.k, `resource=${h.u2.r.body.id}`))).toEqual([h.del, h.u2].map((x) => x.requestId))
  })

  test('actor', async () => {
    const h = await history()
    expect(ids(await logs(h.a.k, `actor=${h.sessionActor}`))).toEqual([h.del, h.u2].map((x) => x.requestId))
    const byKey = await logs(h.a.k, `actor=${h.keyActor}&created_after=${new Date(h.start + 1).toISOString()}`)
    expect(ids(byKey)).toEqual([h.upd, h.dup, h.u1].map((x) => x.requestId))
  })

  test('outcome', async () => {
    const h = await history()
    expect(ids(await logs(h.a.k, 'outcome=failure'))).toEqual([h.dup.requestId])
    const ok = await logs(h.a.k, 'outcome=success')
    expect(ok.every((e) => e.outcome === 'success')).toBe(true)
    expect(ids(ok)).not.toContain(h.dup.requestId)
    const bad = await t.call('GET', '/v1/audit-logs?outcome=partial', h.a.k)
    expect(bad.status).toBe(400)
    expect(bad.body.details.outcome).toBeString()
  })

  test('ip_address', async () => {
    const h = await history()
    const local = await logs(h.a.k, 'ip_address=127.0.0.1')
    expect(local.length).toBeGreaterThanOrEqual(6)
    expect(local.every((e) => e.ip_address === '127.0.0.1')).toBe(true)
    expect(await logs(h.a.k, 'ip_address=10.0.0.1')).toHaveLength(0)
  })

  test('request_id', async () => {
    const h = await history()
    expect(ids(await logs(h.a.k, `request_id=${h.upd.requestId}`))).toEqual([h.upd.requestId])
    expect(await logs(h.a.k, 'request_id=req_unknown')).toHaveLength(0)
  })

  test('created_after and created_before (inclusive bounds, ISO 8601)', async () => {
    const h = await history()
    const iso = (ms: number) => new Date(ms).toISOString()
    expect(ids(await logs(h.a.k, `created_after=${iso(h.dup.at)}`))).toEqual([h.del, h.upd, h.dup].map((x) => x.requestId))
    expect(ids(await logs(h.a.k, `created_after=${iso(h.dup.at + 1)}`))).toEqual([h.del, h.upd].map((x) => x.requestId))
    expect(ids(await logs(h.a.k, `created_after=${iso(h.start + 1)}&created_before=${iso(h.u2.at)}`))).toEqual([h.u2, h.u1].map((x) => x.requestId))
    expect(ids(await logs(h.a.k, `created_after=${iso(h.u2.at - 30_000)}&created_before=${iso(h.upd.at - 30_000)}`))).toEqual(
      [h.dup, h.u2].map((x) => x.requestId),
    )
    expect(await logs(h.a.k, `created_after=${iso(h.del.at + 1)}`)).toHaveLength(0)
    // An offset form of the same instant means the same instant.
    const plusTwo = new Date(h.dup.at + 2 * 3600_000).toISOString().replace('Z', '+02:00')
    expect(ids(await logs(h.a.k, `created_after=${encodeURIComponent(plusTwo)}`))).toEqual([h.del, h.upd, h.dup].map((x) => x.requestId))
  })

  test('filters combine', async () => {
    const h = await history()
    expect(ids(await logs(h.a.k, `event=createUser&outcome=success&actor=${h.keyActor}&created_after=${new Date(h.start + 1).toISOString()}`))).toEqual([
      h.u1.requestId,
    ])
  })

  test('limit pages through the filtered trail', async () => {
    const h = await history()
    const first = await t.call('GET', '/v1/audit-logs?limit=2&event=createUser', h.a.k)
    expect(first.body.data).toHaveLength(2)
    expect(ids(first.body.data)).toEqual([h.dup, h.u2].map((x) => x.requestId))
    const u = new URL(first.body.next_page_url)
    expect(u.searchParams.get('event')).toBe('createUser')
    const second = await t.call('GET', u.pathname + u.search, h.a.k)
    expect(ids(second.body.data)).toEqual([h.u1.requestId])
    expect(second.body.next_page_url).toBeNull()
    expect((await t.call('GET', '/v1/audit-logs?limit=0', h.a.k)).body.code).toBe('validation_error')
    expect((await t.call('GET', '/v1/audit-logs?limit=101', h.a.k)).body.code).toBe('validation_error')
  })
})

describe('visibility', () => {
  test("another account's logs are not visible, even with the same key", async () => {
    const a = await setup()
    const b = await t.account({ key: a.key })
    const r = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'private@example.com' } })
    const requestId = r.headers.get('x-request-id')
    const bLogs = await logs({ key: b.key, account: b.id })
    expect(bLogs.every((e) => e.account === b.id)).toBe(true)
    expect(ids(bLogs)).not.toContain(requestId)
    expect(await logs({ key: b.key, account: b.id }, `request_id=${requestId}`)).toHaveLength(0)
    expect(await logs({ key: b.key, account: b.id }, `resource=${r.body.id}`)).toHaveLength(0)
    // Another platform cannot read the account's trail at all.
    const other = await t.platform()
    const denied = await t.call('GET', '/v1/audit-logs', { key: other.test_key, account: a.id })
    expect(denied.status).toBe(403)
  })

  test('account sessions cannot read the audit log', async () => {
    const a = await setup()
    const s = await t.call('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id, components: { account_onboarding: { enabled: true } } } })
    const r = await t.call('GET', '/v1/audit-logs', { key: s.body.client_secret })
    expect(r.status).toBe(403)
  })
})

describe('GET /v1/admin/users/{admin_user}', () => {
  test('resolves a user of the account', async () => {
    const a = await setup()
    const user = (await t.call('POST', '/v1/users', { ...a.k, body: { email: 'admin@example.com', name: 'Ada Admin' } })).body
    const r = await t.call('GET', `/v1/admin/users/${user.id}`, a.k)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ id: user.id, object: 'admin_user', account: a.id, name: 'Ada Admin', email: 'admin@example.com', created_at: user.created_at })
  })

  test('404 admin_user_not_found for an actor that is not a person, or a person of another account', async () => {
    const a = await setup()
    const b = await t.account({ key: a.key })
    const keyActor = (await logs(a.k, 'event=createAccount'))[0]!.actor
    const other = (await t.call('POST', '/v1/users', { key: b.key, account: b.id, body: { email: 'b@example.com' } })).body
    for (const id of [keyActor, other.id, 'usr_missing', 'x']) {
      const r = await t.call('GET', `/v1/admin/users/${id}`, a.k)
      expect(r.status, id).toBe(404)
      expect(r.body.code).toBe('admin_user_not_found')
    }
    const long = await t.call('GET', `/v1/admin/users/${'u'.repeat(256)}`, a.k)
    expect(long.status).toBe(400)
  })

  test('a deleted user no longer resolves', async () => {
    const a = await setup()
    const user = (await t.call('POST', '/v1/users', { ...a.k, body: { email: 'leaving@example.com' } })).body
    await t.call('DELETE', `/v1/users/${user.id}`, a.k)
    expect((await t.call('GET', `/v1/admin/users/${user.id}`, a.k)).body.code).toBe('admin_user_not_found')
  })
})
