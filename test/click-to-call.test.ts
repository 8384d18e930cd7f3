/**
 * POST /v1/calls (createCall, click-to-call) end to end over HTTP.
 *
 * Validation names each offending field (details.user, details.dial_string,
 * details.did); an accepted request is recorded (audit log, Idempotency-Key) and
 * answered 202 with no body. The service runs with a spy registrar (the
 * RegisteredDevices driver) that records whom it was asked about and answers "no
 * registered device" for everyone: the route must ask it about the calling user of the
 * account, and then, as the spec says, nothing happens: once the account is quiescent
 * (test/support/quiescence.ts) no call.* event is committed, no call log row and no
 * actor of the account exists.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq, like } from 'drizzle-orm'
import { calls, events } from '../src/db/schema'
import type { RegisteredDevices } from '../src/services/calls/registered-devices'
import { actorsOfAccount, quiescence } from './support/quiescence'
import { startTestService } from './support/service'

const created: { key: string; account: string }[] = []
// Registered before the service's own afterAll (which stops it), so it runs first.
afterAll(async () => {
  for (const c of created) await t.call('DELETE', `/v1/accounts/${c.account}`, { key: c.key })
})

/** Every question the route asked the registrar, in order; it answers no device to each. */
const consulted: { accountId: string; userId: string }[] = []
const spyRegistrar: RegisteredDevices = {
  ofUser: async (accountId, userId) => {
    consulted.push({ accountId, userId })
    return []
  },
}

const t = await startTestService({ VOICE_CLOCK_SPEED: '200' }, { registeredDevices: spyRegistrar })

type Ctx = { key: string; account: string; alice: string; bob: string; number: string }

/** A sandbox account with two users, a number and extension 101; `key`: on that platform (each platform has its own sandbox numbers). */
async function sandbox(key?: string): Promise<Ctx> {
  const a = await t.account(key ? { key } : {})
  const c = { key: a.key, account: a.id }
  created.push(c)
  const alice = (await t.call('POST', '/v1/users', { ...c, body: { email: 'alice@example.com', name: 'Alice' } })).body.id
  const bob = (await t.call('POST', '/v1/users', { ...c, body: { email: 'bob@example.com', name: 'Bob' } })).body.id
  const number = (await t.call('GET', '/v1/available-phone-numbers?quantity=1', c)).body.data[0].phone_number
  expect((await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [number] } })).status).toBe(200)
  expect((await t.call('POST', '/v1/extensions', { ...c, body: { number: '101', target: bob } })).status).toBe(200)
  return { ...c, alice, bob, number }
}

const auth = (c: Ctx) => ({ key: c.key, account: c.account })
const createCall = (c: Ctx, body: unknown, headers?: Record<string, string>) => t.call('POST', '/v1/calls', { ...auth(c), body, headers })

async function callEvents(accountId: string) {
  return t.service.database.db
    .select({ type: events.type })
    .from(events)
    .where(and(eq(events.accountId, accountId), like(events.type, 'call.%')))
}
async function callRows(accountId: string) {
  return t.service.database.db.select({ id: calls.id }).from(calls).where(eq(calls.accountId, accountId))
}
async function audit(c: Ctx, query: string) {
  const r = await t.call('GET', `/v1/audit-logs?limit=100&event=createCall&${query}`, auth(c))
  expect(r.status).toBe(200)
  return r.body.data as { outcome: string; resource: string | null; status_code: number; request_id: string }[]
}

let c: Ctx
let other: Ctx

beforeAll(async () => {
  c = await sandbox()
  // Another account of the same platform: its number is not ours.
  other = await sandbox(c.key)
})

describe('POST /v1/calls: accepted', () => {
  test('202 Accepted with no body; recorded in the audit log; with no registered device nothing happens', async () => {
    consulted.length = 0
    const r = await createCall(c, { user: c.alice, dial_string: '101' })
    expect(r.status).toBe(202)
    expect(r.body).toBeUndefined()
    expect(r.headers.get('content-type')).toBeNull()
    expect(r.headers.get('x-request-id')).toMatch(/^req_/)
    const logs = await audit(c, 'outcome=success')
    expect(logs).toHaveLength(1)
    expect(logs[0]).toMatchObject({ resource: c.alice, status_code: 202, request_id: r.headers.get('x-request-id') })
    // the registrar was asked about the caller, and answered no device
    expect(consulted).toEqual([{ accountId: c.account, userId: c.alice }])
    await quiescence(t, c.account, 'every actor of the account')
    expect(await actorsOfAccount(t, c.account)).toEqual([])
    expect(await callEvents(c.account)).toEqual([])
    expect(await callRows(c.account)).toEqual([])
    expect((await t.call('GET', '/v1/calls', auth(c))).body.data).toEqual([])
  })

  test('every kind of destination is accepted, and none starts a call while no device is registered', async () => {
    consulted.length = 0
    const dialStrings = [
      '101', // extension of the account (internal)
      ' (1) 0-1 ', // formatting ignored
      c.bob, // user id of the account (internal)
      '+15551234567', // public: refused in sandbox, but only a registered device would hear the announcement
      '+1 (555) 123-4567',
      '5551234567', // NANP digits
      '15551234567',
      '933', // carrier test number
    ]
    for (const dial_string of dialStrings) {
      const r = await createCall(c, { user: c.alice, dial_string })
      expect({ dial_string, status: r.status, body: r.body }).toEqual({ dial_string, status: 202, body: undefined })
    }
    const withDid = await createCall(c, { user: c.bob, dial_string: '+15551234567', did: c.number })
    expect(withDid.status).toBe(202)
    // each request asked the registrar about its caller, and was answered no device
    expect(consulted).toEqual([...dialStrings.map(() => ({ accountId: c.account, userId: c.alice })), { accountId: c.account, userId: c.bob }])
    await quiescence(t, c.account, 'every actor of the account')
    expect(await actorsOfAccount(t, c.account)).toEqual([])
    expect(await callEvents(c.account)).toEqual([])
    expect(await callRows(c.account)).toEqual([])
  })

  test('Idempotency-Key: a retry replays 202 with no body and records nothing new; another body with the key is 422', async () => {
    const before = (await audit(c, 'outcome=success')).length
    const headers = { 'idempotency-key': `ctc-${crypto.randomUUID()}` }
    const first = await createCall(c, { user: c.alice, dial_string: '101' }, headers)
    expect(first.status).toBe(202)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    const retry = await createCall(c, { dial_string: '101', user: c.alice }, headers)
    expect(retry.status).toBe(202)
    expect(retry.body).toBeUndefined()
    expect(retry.headers.get('content-type')).toBeNull()
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect((await audit(c, 'outcome=success')).length).toBe(before + 1)
    const reused = await createCall(c, { user: c.bob, dial_string: '101' }, headers)
    expect(reused.status).toBe(422)
    expect(reused.body.code).toBe('idempotency_key_reused')
  })
})

describe('POST /v1/calls: validation (400 validation_error, field by field)', () => {
  const invalid = async (body: unknown) => {
    const r = await createCall(c, body)
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ code: 'validation_error', error: expect.any(String) })
    return r.body.details as Record<string, string>
  }

  test('missing, mistyped and unknown fields', async () => {
    expect(Object.keys(await invalid({ dial_string: '101' }))).toContain('user')
    expect(Object.keys(await invalid({ user: c.alice }))).toContain('dial_string')
    expect(Object.keys(await invalid({ user: c.alice, dial_string: '' }))).toContain('dial_string')
    expect(Object.keys(await invalid({ user: c.alice, dial_string: 101 }))).toContain('dial_string')
    expect(Object.keys(await invalid({ user: c.alice, dial_string: '101', did: '5551234567' }))).toContain('did')
    expect(Object.keys(await invalid({ user: c.alice, dial_string: '101', to: '+15551234567' }))).not.toHaveLength(0)
  })

  test('user must be a user of the account (another account’s user is not)', async () => {
    expect(await invalid({ user: 'usr_nope', dial_string: '101' })).toEqual({ user: 'is not a user of this account' })
    expect(await invalid({ user: other.alice, dial_string: '101' })).toEqual({ user: 'is not a user of this account' })
  })

  test('dial_string must be dialable: E.164, an extension or user of the account, or digits', async () => {
    for (const dial_string of ['abc', '102', '12345', '+0123', '1-800-FLOWERS', 'sip:bob@example.com', other.bob]) {
      const d = await invalid({ user: c.alice, dial_string })
      expect({ dial_string, fields: Object.keys(d) }).toEqual({ dial_string, fields: ['dial_string'] })
      expect(typeof d.dial_string).toBe('string')
    }
    // another account's extension 101 leads to its own bob, not to ours: ours is what counts
    const ours = await createCall(other, { user: other.alice, dial_string: '101' })
    expect(ours.status).toBe(202)
  })

  test('did must be an active phone number of the account', async () => {
    expect(await invalid({ user: c.alice, dial_string: '101', did: other.number })).toEqual({ did: 'is not an active phone number of this account' })
    expect(await invalid({ user: c.alice, dial_string: '101', did: '+15005559876' })).toEqual({ did: 'is not an active phone number of this account' })
  })

  test('all offending fields at once; each refusal is audited as a failure and starts nothing', async () => {
    const d = await invalid({ user: 'usr_nope', dial_string: 'nope', did: other.number })
    expect(Object.keys(d).sort()).toEqual(['dial_string', 'did', 'user'])
    const failures = await audit(c, 'outcome=failure')
    expect(failures.filter((f) => f.status_code === 400).length).toBeGreaterThan(10)
    // the only other refusal of this file is the reused Idempotency-Key
    expect(failures.filter((f) => f.status_code !== 400).map((f) => f.status_code)).toEqual([422])
    expect(await callEvents(c.account)).toEqual([])
  })
})

describe('POST /v1/calls: credentials', () => {
  test('401 without a key; 400 without the Service-Account header', async () => {
    const anon = await t.call('POST', '/v1/calls', { account: c.account, body: { user: c.alice, dial_string: '101' } })
    expect(anon.status).toBe(401)
    const noHeader = await t.call('POST', '/v1/calls', { key: c.key, body: { user: c.alice, dial_string: '101' } })
    expect(noHeader.status).toBe(400)
    expect(noHeader.body.code).toBe('account_header_required')
  })

  test('a user token may not place calls for the account', async () => {
    const s = await t.call('POST', '/v1/user_sessions', { key: c.key, body: { user: c.alice } })
    expect(s.status).toBe(200)
    const r = await t.call('POST', '/v1/calls', { key: s.body.client_secret, body: { user: c.alice, dial_string: '101' } })
    expect(r.status).toBe(403)
  })
})
