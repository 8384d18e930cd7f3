/**
 * Billable-count events for users (spec "Billable-count events"): creating or
 * deleting a user on a live account emits user.created / user.deleted with user,
 * previous_billable_users, current_billable_users, request and changed_at, the
 * account carried as `account` in the envelope; none for sandbox accounts, none on
 * account deletion, one per resource; the actor is found through
 * GET /v1/audit-logs?request_id=. Delivered to a real receiver on 127.0.0.1.
 *
 * "No event" is asserted on the outbox (an event exists exactly when its change
 * committed) and, where the spec orders delivery (per account), by a later event of
 * the same account arriving alone.
 */
import { describe, expect, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import { events } from '../src/db/schema'
import { startTestService } from './support/service'
import { startWebhookReceiver, type ReceivedWebhook } from './support/webhook-receiver'

const t = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })

// One live-enabled platform; a platform-global live endpoint and a sandbox one.
const p = await t.platform({ live_enabled: true })
const liveRx = await startWebhookReceiver()
const sandboxRx = await startWebhookReceiver()
const liveEndpoint = (await t.call('POST', '/v1/webhook_endpoints', { key: p.live_key, body: { url: liveRx.url } })).body as {
  id: string
  secret: string
  livemode: boolean
}
const _sandboxEndpoint = (await t.call('POST', '/v1/webhook_endpoints', { key: p.test_key, body: { url: sandboxRx.url } })).body as {
  id: string
  secret: string
}

async function liveAccount() {
  const a = await t.account({ key: p.live_key })
  expect(a.account.livemode ?? true).toBe(true)
  return { key: p.live_key, account: a.id }
}

async function sandboxAccount() {
  return { key: p.test_key, account: (await t.account({ key: p.test_key })).id }
}

type Ctx = { key: string; account: string }

async function createUser(c: Ctx, email: string, extra: Record<string, string> = {}) {
  const r = await t.call('POST', '/v1/users', { ...c, body: { email }, headers: extra })
  if (r.status !== 200) throw new Error(`user create failed: ${r.status} ${JSON.stringify(r.body)}`)
  return { id: r.body.id as string, requestId: r.headers.get('x-request-id')! }
}

async function deleteUser(c: Ctx, id: string) {
  const r = await t.call('DELETE', `/v1/users/${id}`, c)
  if (r.status !== 200) throw new Error(`user delete failed: ${r.status} ${JSON.stringify(r.body)}`)
  return { id, requestId: r.headers.get('x-request-id')! }
}

/** The account's events in the outbox, in publication order. */
async function outbox(accountId: string) {
  const rows = await t.service.database.db
    .select({ id: events.id, type: events.type, body: events.body })
    .from(events)
    .where(eq(events.accountId, accountId))
    .orderBy(asc(events.seq))
  return rows.map((r) => ({ id: r.id, type: r.type, body: JSON.parse(r.body) }))
}

/** The live receiver's requests for one account, waiting (bounded) until `n` have arrived. */
const liveHits = (account: string, n: number) => liveRx.waitFor(n, { where: (r) => r.body?.account === account })

const isIsoTime = (v: unknown) => typeof v === 'string' && new Date(v).toISOString() === v

async function checkDelivered(hit: ReceivedWebhook, account: string) {
  expect(hit.headers['x-service-account-id']).toBe(account)
  expect(hit.headers['user-agent']).toBe('Service-Webhook/1.0')
  expect(await liveRx.verify(hit, liveEndpoint.secret)).toEqual(hit.body)
}

describe('user.created, user.deleted on a live account', () => {
  test('data has user, previous_billable_users, current_billable_users (integers), request (the X-Request-Id of the causing request), changed_at; the account is carried as `account`', async () => {
    expect(liveEndpoint.livemode).toBe(true)
    const c = await liveAccount()
    const u1 = await createUser(c, 'one@example.com')
    const [h1] = await liveHits(c.account, 1)
    const e1 = h1!.body
    expect(Object.keys(e1).sort()).toEqual(['account', 'created_at', 'data', 'id', 'type'])
    expect('account_id' in e1).toBe(false)
    expect(e1).toMatchObject({ type: 'user.created', account: c.account })
    expect(Object.keys(e1.data).sort()).toEqual(['changed_at', 'current_billable_users', 'previous_billable_users', 'request', 'user'])
    expect(e1.data).toMatchObject({ user: u1.id, previous_billable_users: 0, current_billable_users: 1, request: u1.requestId })
    expect(Number.isInteger(e1.data.previous_billable_users) && Number.isInteger(e1.data.current_billable_users)).toBe(true)
    expect(isIsoTime(e1.data.changed_at)).toBe(true)
    expect(isIsoTime(e1.created_at)).toBe(true)
    await checkDelivered(h1!, c.account)

    const u2 = await createUser(c, 'two@example.com')
    const d1 = await deleteUser(c, u1.id)
    const hits = await liveHits(c.account, 3)
    const [, h2, h3] = hits
    expect(h2!.body).toMatchObject({
      type: 'user.created',
      account: c.account,
      data: { user: u2.id, previous_billable_users: 1, current_billable_users: 2, request: u2.requestId },
    })
    expect(h3!.body).toMatchObject({
      type: 'user.deleted',
      account: c.account,
      data: { user: u1.id, previous_billable_users: 2, current_billable_users: 1, request: d1.requestId },
    })
    expect(Object.keys(h3!.body.data).sort()).toEqual(['changed_at', 'current_billable_users', 'previous_billable_users', 'request', 'user'])
    expect('account_id' in h3!.body).toBe(false)
    for (const h of hits) await checkDelivered(h, c.account)
    // The counts agree with a recount from the list endpoint.
    expect((await t.call('GET', '/v1/users', c)).body.data).toHaveLength(h3!.body.data.current_billable_users)
    // The outbox holds the same three events, in this order.
    expect((await outbox(c.account)).map((e) => e.body)).toEqual(hits.map((h) => h.body))
  })

  test('Actor lookup: GET /v1/audit-logs with request_id finds who made the change', async () => {
    const c = await liveAccount()
    const byKey = await createUser(c, 'key@example.com')
    const session = await t.call('POST', '/v1/account_sessions', {
      key: p.live_key,
      body: { account: c.account, components: { account_onboarding: { enabled: true } } },
    })
    expect(session.status).toBe(200)
    const bySession = await t.call('POST', '/v1/users', { key: session.body.client_secret, body: { email: 'session@example.com' } })
    expect(bySession.status).toBe(200)
    const hits = await liveHits(c.account, 2)
    const lookups = []
    for (const hit of hits) {
      const r = await t.call('GET', `/v1/audit-logs?request_id=${encodeURIComponent(hit.body.data.request)}`, c)
      expect(r.status).toBe(200)
      expect(r.body.data).toHaveLength(1)
      const entry = r.body.data[0]
      expect(entry).toMatchObject({
        request_id: hit.body.data.request,
        event: 'createUser',
        resource: hit.body.data.user,
        outcome: 'success',
        account: c.account,
      })
      lookups.push(entry)
    }
    expect(hits[0]!.body.data.request).toBe(byKey.requestId)
    expect(lookups[0]).toMatchObject({ credential: 'secret_key', actor: expect.stringMatching(/^key_/) })
    expect(hits[1]!.body.data.request).toBe(bySession.headers.get('x-request-id'))
    // The session's actor is the account session the platform created.
    const minted = await t.call('GET', `/v1/audit-logs?request_id=${session.headers.get('x-request-id')}`, c)
    expect(lookups[1]).toMatchObject({ credential: 'account_session', actor: minted.body.data[0].resource })
  })

  test('one event per resource: each create and delete emits exactly one; failed and non-billable changes emit none', async () => {
    const c = await liveAccount()
    const a = await createUser(c, 'a@example.com')
    // Refused: duplicate email (409), unknown user (404), invalid body (400).
    expect((await t.call('POST', '/v1/users', { ...c, body: { email: 'A@example.com' } })).status).toBe(409)
    expect((await t.call('DELETE', '/v1/users/usr_nope', c)).status).toBe(404)
    expect((await t.call('POST', '/v1/users', { ...c, body: { email: 'nope' } })).status).toBe(400)
    // Not a change of the count: an update.
    expect((await t.call('POST', `/v1/users/${a.id}`, { ...c, body: { name: 'Renamed' } })).status).toBe(200)
    // A retried create (same Idempotency-Key) is one user, one event.
    const first = await createUser(c, 'b@example.com', { 'idempotency-key': 'create-b' })
    const replay = await t.call('POST', '/v1/users', { ...c, body: { email: 'b@example.com' }, headers: { 'idempotency-key': 'create-b' } })
    expect(replay.status).toBe(200)
    expect(replay.body.id).toBe(first.id)
    const gone = await deleteUser(c, a.id)
    expect((await t.call('DELETE', `/v1/users/${a.id}`, c)).status).toBe(404)

    const expected = [
      { type: 'user.created', user: a.id, request: a.requestId, previous: 0, current: 1 },
      { type: 'user.created', user: first.id, request: first.requestId, previous: 1, current: 2 },
      { type: 'user.deleted', user: a.id, request: gone.requestId, previous: 2, current: 1 },
    ]
    const summary = (e: any) => ({
      type: e.type,
      user: e.data.user,
      request: e.data.request,
      previous: e.data.previous_billable_users,
      current: e.data.current_billable_users,
    })
    expect((await outbox(c.account)).map((e) => summary(e.body))).toEqual(expected)
    // Per-account order: the last one arriving means the receiver has all of them, and nothing else.
    const stored = await outbox(c.account)
    await liveRx.waitForEvent(stored[stored.length - 1]!.id)
    const received = liveRx.requests.filter((r) => r.body?.account === c.account).map((r) => summary(r.body))
    expect(received).toEqual(expected)
  })

  test('concurrent creates and deletes: one event each, and the counts chain without gaps or repeats', async () => {
    const c = await liveAccount()
    const made = await Promise.all(Array.from({ length: 6 }, (_, i) => createUser(c, `c${i}@example.com`)))
    await Promise.all(made.slice(0, 3).map((u) => deleteUser(c, u.id)))
    const stored = (await outbox(c.account)).map((e) => e.body)
    expect(stored).toHaveLength(9)
    // Each resource once per change.
    const created = stored.filter((e) => e.type === 'user.created')
    const deleted = stored.filter((e) => e.type === 'user.deleted')
    expect(created.map((e) => e.data.user).sort()).toEqual(made.map((u) => u.id).sort())
    expect(deleted.map((e) => e.data.user).sort()).toEqual(
      made
        .slice(0, 3)
        .map((u) => u.id)
        .sort(),
    )
    expect(new Set(stored.map((e) => e.data.request)).size).toBe(9)
    // In publication order, each event's previous count is the last one's current count.
    let count = 0
    for (const e of stored) {
      expect(e.data.previous_billable_users).toBe(count)
      count += e.type === 'user.created' ? 1 : -1
      expect(e.data.current_billable_users).toBe(count)
    }
    expect(count).toBe(3)
    await liveHits(c.account, 9)
  })
})

describe('no billable-count events', () => {
  test('no events for sandbox accounts', async () => {
    const c = await sandboxAccount()
    const u = await createUser(c, 'sandbox@example.com')
    await createUser(c, 'sandbox2@example.com')
    await deleteUser(c, u.id)
    expect(await outbox(c.account)).toEqual([])
    // A later event of the same account arrives alone: nothing was published before it.
    const marker = await t.call('POST', '/v1/test_helpers/events', { ...c, body: { event: 'fax.received' } })
    expect(marker.status).toBe(200)
    await sandboxRx.waitForEvent(marker.body.id)
    expect(sandboxRx.requests.filter((r) => r.body?.account_id === c.account || r.body?.account === c.account).map((r) => r.body.id)).toEqual([marker.body.id])
    expect(liveRx.requests.filter((r) => r.body?.account === c.account)).toHaveLength(0)
  })

  test('no events on account deletion', async () => {
    const c = await liveAccount()
    await createUser(c, 'x@example.com')
    await createUser(c, 'y@example.com')
    await liveHits(c.account, 2)
    const before = await outbox(c.account)
    expect(before.map((e) => e.type)).toEqual(['user.created', 'user.created'])
    const d = await t.call('DELETE', `/v1/accounts/${c.account}`, { key: p.live_key })
    expect(d.status).toBe(200)
    expect(await outbox(c.account)).toEqual(before)
    // Another live account's change is delivered; this account got nothing more.
    const other = await liveAccount()
    await createUser(other, 'z@example.com')
    await liveHits(other.account, 1)
    expect(liveRx.requests.filter((r) => r.body?.account === c.account)).toHaveLength(2)
  })
})
