/**
 * Webhook endpoints over HTTP (spec "Events and Webhook Endpoints", Conventions 2,
 * Authentication rule 6, "Webhook protocol"), and delivery to a real HTTP receiver
 * on 127.0.0.1: headers, signature (checked with stripe's verifier), envelope, and
 * which endpoints receive which events.
 *
 * "Received nothing" is never a wait: once a probe endpoint has received the event,
 * the event has been dispatched (every delivery of an event is created in one
 * transaction), so the absence of a delivery row for an endpoint is final.
 */
import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { webhookDeliveries } from '../src/db/schema'
import { startTestService } from './support/service'
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver'

const t = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })

/** Every event type of the spec ("Event types"). */
const SPEC_EVENT_TYPES = [
  'call.initiated',
  'call.incoming',
  'call.ringing',
  'call.mobile_push_wakeup',
  'call.answered',
  'call.end',
  'call.transfer',
  'call.emergency',
  'call.command_succeeded',
  'call.command_failed',
  'queue.call.queued',
  'queue.call.dispatched',
  'queue.call.answered',
  'queue.call.abandoned',
  'queue.call.timed_out',
  'queue.call.completed',
  'queue.call.callback_requested',
  'queue.call.callback_attempted',
  'queue.call.callback_failed',
  'fax.received',
  'fax.delivered',
  'fax.failed',
  'voicemail.new',
  'recording.available',
  'recording.failed',
  'recording.transcription.complete',
  'recording.summary.complete',
  'voicemail.transcription.complete',
  'voicemail.summary.complete',
  'device.provisioned',
  'device.config_fetched',
  'device.provisioning_failed',
  'user.created',
  'user.deleted',
  'phone_number.activated',
  'phone_number.disconnected',
]

const ENDPOINT_FIELDS = ['id', 'object', 'account', 'url', 'enabled_events', 'description', 'status', 'livemode', 'healthy', 'created_at', 'updated_at']

interface Scope {
  key: string
  account?: string
}

async function createEndpoint(scope: Scope, body: Record<string, unknown>) {
  const r = await t.call('POST', '/v1/webhook_endpoints', { ...scope, body })
  if (r.status !== 200) throw new Error(`endpoint create failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body as { id: string; secret: string; [k: string]: any }
}

/** A receiver with an endpoint pointing at it. */
async function hook(scope: Scope, body: Record<string, unknown> = {}) {
  const rx = await startWebhookReceiver()
  const endpoint = await createEndpoint(scope, { url: rx.url, ...body })
  return { rx, endpoint }
}

async function testEvent(key: string, account: string, event: string) {
  const r = await t.call('POST', '/v1/test_helpers/events', { key, account, body: { event } })
  if (r.status !== 200) throw new Error(`test event failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body as { id: string; type: string; created_at: string; account_id: string; data: Record<string, unknown> }
}

/** Whether a delivery of this event to this endpoint was ever created. */
async function hasDelivery(eventId: string, endpointId: string) {
  const rows = await t.service.database.db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.eventId, eventId), eq(webhookDeliveries.endpointId, endpointId)))
  return rows.length > 0
}

/** `rx` (of `endpointId`) never gets `eventId`: asserted once `probe` has received it. */
async function expectNotDelivered(eventId: string, probe: WebhookReceiver, endpointId: string, rx: WebhookReceiver) {
  await probe.waitForEvent(eventId)
  expect(await hasDelivery(eventId, endpointId)).toBe(false)
  expect(rx.events().map((e) => e.id)).not.toContain(eventId)
}

/** A live-enabled platform with a sandbox account and a live account. */
async function livePlatform() {
  const p = await t.platform({ live_enabled: true })
  const sandbox = await t.account({ key: p.test_key })
  const live = await t.account({ key: p.live_key })
  return { p, sandbox: sandbox.id, live: live.id }
}

const ids = (r: { body: any }) => r.body.data.map((e: any) => e.id)

describe('endpoints: create, get, list, update, delete', () => {
  test("Creating an endpoint: request url, enabled_events (default ['*']); the secret appears only in the create response", async () => {
    const p = await t.platform()
    const created = await t.call('POST', '/v1/webhook_endpoints', { key: p.test_key, body: { url: 'https://hooks.example.com/voice' } })
    expect(created.status).toBe(200)
    expect(created.body).toMatchObject({
      object: 'webhook_endpoint',
      account: null,
      url: 'https://hooks.example.com/voice',
      enabled_events: ['*'],
      status: 'enabled',
      livemode: false,
    })
    expect(created.body.id).toEqual(expect.any(String))
    expect(created.body.id.length).toBeLessThanOrEqual(255)
    expect(created.body.secret).toEqual(expect.any(String))
    expect(created.body.secret.length).toBeGreaterThanOrEqual(24)
    const { secret, ...view } = created.body

    const got = await t.call('GET', `/v1/webhook_endpoints/${created.body.id}`, { key: p.test_key })
    expect(got.status).toBe(200)
    expect('secret' in got.body).toBe(false)
    expect(got.body).toEqual(view)
    expect(Object.keys(got.body).sort()).toEqual([...ENDPOINT_FIELDS].sort())

    const list = await t.call('GET', '/v1/webhook_endpoints', { key: p.test_key })
    expect(list.status).toBe(200)
    expect(list.body.object).toBe('list')
    expect(list.body.data).toEqual([view])
    for (const e of list.body.data) expect('secret' in e).toBe(false)

    const updated = await t.call('POST', `/v1/webhook_endpoints/${created.body.id}`, { key: p.test_key, body: { description: 'main hook' } })
    expect(updated.status).toBe(200)
    expect('secret' in updated.body).toBe(false)
    expect(updated.body.description).toBe('main hook')
    expect(JSON.stringify([got.body, list.body, updated.body])).not.toContain(secret)

    // Each endpoint has its own secret.
    const other = await createEndpoint({ key: p.test_key }, { url: 'https://hooks.example.com/other' })
    expect(other.secret).not.toBe(secret)
  })

  test("enabled_events given explicitly is kept; every event type of the spec and '*' are accepted", async () => {
    const p = await t.platform()
    const some = await createEndpoint({ key: p.test_key }, { url: 'https://a.example.com/h', enabled_events: ['call.end', 'fax.received'] })
    expect(some.enabled_events).toEqual(['call.end', 'fax.received'])
    const all = await createEndpoint({ key: p.test_key }, { url: 'https://a.example.com/h', enabled_events: SPEC_EVENT_TYPES })
    expect(all.enabled_events).toEqual(SPEC_EVENT_TYPES)
    const star = await createEndpoint({ key: p.test_key }, { url: 'https://a.example.com/h', enabled_events: ['*'] })
    expect(star.enabled_events).toEqual(['*'])
    expect((await t.call('GET', `/v1/webhook_endpoints/${some.id}`, { key: p.test_key })).body.enabled_events).toEqual(['call.end', 'fax.received'])
  })

  test("enabled_events is validated against the known event types and '*': an unknown type is a validation_error with details enabled_events[i]", async () => {
    const p = await t.platform()
    const r = await t.call('POST', '/v1/webhook_endpoints', {
      key: p.test_key,
      body: { url: 'https://a.example.com/h', enabled_events: ['call.end', 'call.exploded', '*', 'fax.sent'] },
    })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(typeof r.body.error).toBe('string')
    expect(Object.keys(r.body.details).sort()).toEqual(['enabled_events[1]', 'enabled_events[3]'])
    for (const bad of [['call.*'], ['CALL.END'], ['']]) {
      const x = await t.call('POST', '/v1/webhook_endpoints', { key: p.test_key, body: { url: 'https://a.example.com/h', enabled_events: bad } })
      expect([bad, x.status, x.body.code]).toEqual([bad, 400, 'validation_error'])
      expect(Object.keys(x.body.details).some((k) => k.startsWith('enabled_events'))).toBe(true)
    }
    const notArray = await t.call('POST', '/v1/webhook_endpoints', { key: p.test_key, body: { url: 'https://a.example.com/h', enabled_events: 'call.end' } })
    expect(notArray.status).toBe(400)
    expect(notArray.body.code).toBe('validation_error')
    expect((await t.call('GET', '/v1/webhook_endpoints', { key: p.test_key })).body.data).toEqual([])

    // On update too, and the endpoint is left as it was.
    const ep = await createEndpoint({ key: p.test_key }, { url: 'https://a.example.com/h', enabled_events: ['fax.received'] })
    const u = await t.call('POST', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key, body: { enabled_events: ['fax.received', 'fax.lost'] } })
    expect(u.status).toBe(400)
    expect(u.body.code).toBe('validation_error')
    expect(Object.keys(u.body.details)).toEqual(['enabled_events[1]'])
    expect((await t.call('GET', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key })).body.enabled_events).toEqual(['fax.received'])
  })

  test('url is required and must be an http or https URL', async () => {
    const p = await t.platform()
    for (const url of ['ftp://example.com/hook', 'not a url', 'javascript:alert(1)', 'file:///etc/passwd', 'mailto:ops@example.com', '', 42]) {
      const r = await t.call('POST', '/v1/webhook_endpoints', { key: p.test_key, body: { url } })
      expect([url, r.status, r.body.code]).toEqual([url, 400, 'validation_error'])
      expect(r.body.details.url).toBeDefined()
    }
    const missing = await t.call('POST', '/v1/webhook_endpoints', { key: p.test_key, body: { enabled_events: ['*'] } })
    expect(missing.status).toBe(400)
    expect(missing.body.details.url).toBeDefined()
    expect((await t.call('GET', '/v1/webhook_endpoints', { key: p.test_key })).body.data).toEqual([])
    for (const url of ['http://hooks.example.com/a', 'https://hooks.example.com:8443/b?x=1']) {
      expect((await createEndpoint({ key: p.test_key }, { url })).url).toBe(url)
    }
    const ep = await createEndpoint({ key: p.test_key }, { url: 'https://hooks.example.com/c' })
    const bad = await t.call('POST', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key, body: { url: 'ftp://hooks.example.com/c' } })
    expect(bad.status).toBe(400)
    expect(bad.body.details.url).toBeDefined()
    const good = await t.call('POST', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key, body: { url: 'http://hooks.example.com/d' } })
    expect(good.status).toBe(200)
    expect(good.body.url).toBe('http://hooks.example.com/d')
  })

  test('status is enabled or disabled; update changes only the fields given', async () => {
    const p = await t.platform()
    const ep = await createEndpoint({ key: p.test_key }, { url: 'https://hooks.example.com/s', enabled_events: ['fax.failed'], description: 'ops' })
    const off = await t.call('POST', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key, body: { status: 'disabled' } })
    expect(off.status).toBe(200)
    expect(off.body).toMatchObject({
      status: 'disabled',
      url: 'https://hooks.example.com/s',
      enabled_events: ['fax.failed'],
      description: 'ops',
      created_at: ep.created_at,
    })
    expect(Date.parse(off.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(ep.updated_at))
    expect((await t.call('GET', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key })).body.status).toBe('disabled')
    const on = await t.call('POST', `/v1/webhook_endpoints/${ep.id}`, {
      key: p.test_key,
      body: { status: 'enabled', enabled_events: ['*'], description: null },
    })
    expect(on.body).toMatchObject({ status: 'enabled', enabled_events: ['*'], description: null })
    for (const status of ['paused', 'ENABLED', '', true]) {
      const r = await t.call('POST', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key, body: { status } })
      expect([status, r.status, r.body.code]).toEqual([status, 400, 'validation_error'])
      expect(r.body.details.status).toBeDefined()
    }
    // Mode and secret are not updatable fields.
    for (const body of [{ livemode: true }, { secret: 'whsec_mine' }, { account: 'acct_x' }]) {
      const r = await t.call('POST', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key, body })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
    }
    expect((await t.call('GET', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key })).body.livemode).toBe(false)
  })

  test('delete: the endpoint is gone (404 webhook_endpoint_not_found on get, update, delete)', async () => {
    const p = await t.platform()
    const ep = await createEndpoint({ key: p.test_key }, { url: 'https://hooks.example.com/x' })
    const keep = await createEndpoint({ key: p.test_key }, { url: 'https://hooks.example.com/y' })
    const d = await t.call('DELETE', `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key })
    expect(d.status).toBe(200)
    expect(d.body).toEqual({ id: ep.id, object: 'webhook_endpoint', deleted: true })
    for (const [method, body] of [
      ['GET', undefined],
      ['POST', { description: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const r = await t.call(method, `/v1/webhook_endpoints/${ep.id}`, { key: p.test_key, body })
      expect([method, r.status, r.body.code]).toEqual([method, 404, 'webhook_endpoint_not_found'])
    }
    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: p.test_key }))).toEqual([keep.id])
  })

  test('list: newest first, paginated by URL', async () => {
    const p = await t.platform()
    const made = []
    for (let i = 0; i < 5; i++) made.push((await createEndpoint({ key: p.test_key }, { url: `https://hooks.example.com/${i}` })).id)
    const newestFirst = [...made].reverse()
    const p1 = await t.call('GET', '/v1/webhook_endpoints?limit=2', { key: p.test_key })
    expect(p1.status).toBe(200)
    expect(ids(p1)).toEqual(newestFirst.slice(0, 2))
    expect(p1.body.previous_page_url).toBeNull()
    const p2 = await t.call('GET', p1.body.next_page_url, { key: p.test_key })
    expect(ids(p2)).toEqual(newestFirst.slice(2, 4))
    const p3 = await t.call('GET', p2.body.next_page_url, { key: p.test_key })
    expect(ids(p3)).toEqual(newestFirst.slice(4))
    expect(p3.body.next_page_url).toBeNull()
    expect((await t.call('GET', '/v1/webhook_endpoints?limit=0', { key: p.test_key })).body.code).toBe('validation_error')
  })
})

describe("endpoints: scope (platform-global without Service-Account, the account's with it)", () => {
  test("Webhook endpoints take the header optionally: omitted, the operation applies to platform-global endpoints; given, to that account's endpoints", async () => {
    const p = await t.platform()
    const a1 = (await t.account({ key: p.test_key })).id
    const a2 = (await t.account({ key: p.test_key })).id
    const g = await createEndpoint({ key: p.test_key }, { url: 'https://hooks.example.com/global' })
    const e1 = await createEndpoint({ key: p.test_key, account: a1 }, { url: 'https://hooks.example.com/a1' })
    const e2 = await createEndpoint({ key: p.test_key, account: a2 }, { url: 'https://hooks.example.com/a2' })
    expect(g.account).toBeNull()
    expect(e1.account).toBe(a1)
    expect(e2.account).toBe(a2)

    // Each list shows only its scope.
    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: p.test_key }))).toEqual([g.id])
    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: p.test_key, account: a1 }))).toEqual([e1.id])
    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: p.test_key, account: a2 }))).toEqual([e2.id])

    // An endpoint is reachable only in its own scope.
    const outOfScope: [string, string | undefined][] = [
      [e1.id, undefined], // account endpoint without the header
      [g.id, a1], // platform-global endpoint with a header
      [e1.id, a2], // another account's endpoint
    ]
    for (const [id, account] of outOfScope) {
      for (const [method, body] of [
        ['GET', undefined],
        ['POST', { status: 'disabled' }],
        ['DELETE', undefined],
      ] as const) {
        const r = await t.call(method, `/v1/webhook_endpoints/${id}`, { key: p.test_key, account, body })
        expect([id, account, method, r.status, r.body.code]).toEqual([id, account, method, 404, 'webhook_endpoint_not_found'])
      }
    }
    // Nothing was changed by those attempts.
    for (const [id, account] of [
      [g.id, undefined],
      [e1.id, a1],
      [e2.id, a2],
    ] as const) {
      const r = await t.call('GET', `/v1/webhook_endpoints/${id}`, { key: p.test_key, account })
      expect(r.status).toBe(200)
      expect(r.body.status).toBe('enabled')
    }
    // In scope, update and delete work.
    expect((await t.call('POST', `/v1/webhook_endpoints/${e1.id}`, { key: p.test_key, account: a1, body: { status: 'disabled' } })).body.status).toBe(
      'disabled',
    )
    expect((await t.call('DELETE', `/v1/webhook_endpoints/${e1.id}`, { key: p.test_key, account: a1 })).status).toBe(200)
    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: p.test_key, account: a1 }))).toEqual([])
  })

  test("another platform's endpoint is absent: 404 webhook_endpoint_not_found; another platform's account in the header: 403", async () => {
    const mine = await t.platform()
    const theirs = await t.platform()
    const theirAccount = (await t.account({ key: theirs.test_key })).id
    const myAccount = (await t.account({ key: mine.test_key })).id
    const g = await createEndpoint({ key: theirs.test_key }, { url: 'https://hooks.example.com/theirs' })
    const a = await createEndpoint({ key: theirs.test_key, account: theirAccount }, { url: 'https://hooks.example.com/theirs-acct' })
    for (const [id, account] of [
      [g.id, undefined],
      [a.id, undefined],
      [g.id, myAccount],
      [a.id, myAccount],
    ] as const) {
      for (const [method, body] of [
        ['GET', undefined],
        ['POST', { url: 'https://evil.example.com/' }],
        ['DELETE', undefined],
      ] as const) {
        const r = await t.call(method, `/v1/webhook_endpoints/${id}`, { key: mine.test_key, account, body })
        expect([method, r.status, r.body.code]).toEqual([method, 404, 'webhook_endpoint_not_found'])
      }
    }
    const r = await t.call('GET', '/v1/webhook_endpoints', { key: mine.test_key, account: theirAccount })
    expect(r.status).toBe(403)
    const c = await t.call('POST', '/v1/webhook_endpoints', { key: mine.test_key, account: theirAccount, body: { url: 'https://evil.example.com/' } })
    expect(c.status).toBe(403)
    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: mine.test_key }))).toEqual([])
    expect((await t.call('GET', `/v1/webhook_endpoints/${g.id}`, { key: theirs.test_key })).body.url).toBe('https://hooks.example.com/theirs')
  })

  test('account sessions and user tokens cannot manage webhook endpoints: 403', async () => {
    const a = await t.account()
    const ep = await createEndpoint({ key: a.key, account: a.id }, { url: 'https://hooks.example.com/s' })
    const s = await t.call('POST', '/v1/account_sessions', {
      key: a.key,
      body: { account: a.id, components: { account_onboarding: { enabled: true }, call_logs: { enabled: true } } },
    })
    expect(s.status).toBe(200)
    const u = await t.call('POST', '/v1/users', { key: a.key, account: a.id, body: { email: 'tok@example.com' } })
    const us = await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user: u.body.id } })
    expect(us.status).toBe(200)
    for (const token of [s.body.client_secret, us.body.client_secret]) {
      for (const account of [undefined, a.id]) {
        const calls: [string, string, unknown][] = [
          ['GET', '/v1/webhook_endpoints', undefined],
          ['POST', '/v1/webhook_endpoints', { url: 'https://hooks.example.com/t' }],
          ['GET', `/v1/webhook_endpoints/${ep.id}`, undefined],
          ['POST', `/v1/webhook_endpoints/${ep.id}`, { status: 'disabled' }],
          ['DELETE', `/v1/webhook_endpoints/${ep.id}`, undefined],
        ]
        for (const [method, path, body] of calls) {
          const r = await t.call(method, path, { key: token, account, body })
          expect([method, path, r.status]).toEqual([method, path, 403])
          expect(typeof r.body.error).toBe('string')
        }
      }
    }
    const still = await t.call('GET', `/v1/webhook_endpoints/${ep.id}`, { key: a.key, account: a.id })
    expect(still.body.status).toBe('enabled')
    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: a.key, account: a.id }))).toEqual([ep.id])
  })

  test('a missing or invalid key: 401', async () => {
    expect((await t.call('GET', '/v1/webhook_endpoints')).status).toBe(401)
    expect((await t.call('POST', '/v1/webhook_endpoints', { key: 'sk_test_nope', body: { url: 'https://a.example.com' } })).status).toBe(401)
  })
})

describe('endpoints: Webhook endpoints are environment-scoped: the key used to create the endpoint fixes its mode', () => {
  test('a sandbox key makes livemode false; a live key (live-enabled platform) makes livemode true; each mode lists and reaches only its own', async () => {
    const { p, sandbox, live } = await livePlatform()
    const tg = await createEndpoint({ key: p.test_key }, { url: 'https://hooks.example.com/test' })
    const lg = await createEndpoint({ key: p.live_key }, { url: 'https://hooks.example.com/live' })
    const ta = await createEndpoint({ key: p.test_key, account: sandbox }, { url: 'https://hooks.example.com/test-acct' })
    const la = await createEndpoint({ key: p.live_key, account: live }, { url: 'https://hooks.example.com/live-acct' })
    expect([tg.livemode, ta.livemode, lg.livemode, la.livemode]).toEqual([false, false, true, true])
    expect(la.account).toBe(live)

    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: p.test_key }))).toEqual([tg.id])
    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: p.live_key }))).toEqual([lg.id])
    expect(ids(await t.call('GET', '/v1/webhook_endpoints', { key: p.live_key, account: live }))).toEqual([la.id])
    for (const [key, id] of [
      [p.live_key, tg.id],
      [p.test_key, lg.id],
    ]) {
      for (const [method, body] of [
        ['GET', undefined],
        ['POST', { status: 'disabled' }],
        ['DELETE', undefined],
      ] as const) {
        const r = await t.call(method, `/v1/webhook_endpoints/${id}`, { key, body })
        expect([method, r.status, r.body.code]).toEqual([method, 404, 'webhook_endpoint_not_found'])
      }
    }
    // A key cannot reach the other mode's accounts, so it cannot make an endpoint of the other mode there.
    const cross = await t.call('POST', '/v1/webhook_endpoints', { key: p.test_key, account: live, body: { url: 'https://hooks.example.com/x' } })
    expect(cross.status).toBe(403)
    expect(cross.body.code).toBe('account_mode_mismatch')
    const cross2 = await t.call('GET', '/v1/webhook_endpoints', { key: p.live_key, account: sandbox })
    expect(cross2.status).toBe(403)
    // The mode stays what the creating key made it.
    const upd = await t.call('POST', `/v1/webhook_endpoints/${lg.id}`, { key: p.live_key, body: { url: 'https://hooks.example.com/live2' } })
    expect(upd.body.livemode).toBe(true)
  })
})

describe('delivery (Webhook protocol)', () => {
  test("POST with Content-Type application/json, X-Service-Signature t=,v1= (HMAC-SHA256 with the endpoint's own secret, verified by stripe), X-Service-Account-Id, User-Agent Service-Webhook/1.0; the body is the envelope", async () => {
    const a = await t.account()
    const one = await hook({ key: a.key })
    const two = await hook({ key: a.key, account: a.id })
    const before = Math.floor(Date.now() / 1000)
    const sent = await testEvent(a.key, a.id, 'fax.received')
    for (const { rx, endpoint } of [one, two]) {
      const hit = await rx.waitForEvent(sent.id)
      expect(hit.method).toBe('POST')
      expect(hit.path).toBe(new URL(rx.url).pathname)
      expect(hit.headers['content-type']).toBe('application/json')
      expect(hit.headers['user-agent']).toBe('Service-Webhook/1.0')
      expect(hit.headers['x-service-account-id']).toBe(a.id)
      const sig = hit.headers['x-service-signature']!
      expect(sig).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
      const ts = Number(sig.slice(2, sig.indexOf(',')))
      expect(ts).toBeGreaterThanOrEqual(before - 1)
      expect(ts).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 1)
      // The body received is exactly the envelope {id, type, created_at, account_id, data}.
      expect(Object.keys(hit.body).sort()).toEqual(['account_id', 'created_at', 'data', 'id', 'type'])
      expect(hit.body).toEqual(sent)
      expect(hit.body.account_id).toBe(a.id)
      expect(new Date(hit.body.created_at).toISOString()).toBe(hit.body.created_at)
      const verified = await rx.verify(hit, endpoint.secret)
      expect(verified).toEqual(sent)
    }
    // Each endpoint signs with its own secret.
    const [h1] = await one.rx.waitFor(1)
    await expect(one.rx.verify(h1!, two.endpoint.secret)).rejects.toThrow()
    await expect(one.rx.verify(h1!, 'whsec_wrong')).rejects.toThrow()
    // A tampered body does not verify.
    const { verifySignature } = await import('./support/webhook-receiver')
    await expect(
      verifySignature(h1!.rawBody.replace('fax.received', 'fax.delivered'), h1!.headers['x-service-signature']!, one.endpoint.secret),
    ).rejects.toThrow()
  })

  test("Delivered to an endpoint only when enabled_events contains the type or '*'", async () => {
    const a = await t.account()
    const star = await hook({ key: a.key }, { enabled_events: ['*'] })
    const fax = await hook({ key: a.key }, { enabled_events: ['fax.received'] })
    const other = await hook({ key: a.key }, { enabled_events: ['fax.failed', 'queue.call.queued'] })
    const received = await testEvent(a.key, a.id, 'fax.received')
    expect((await fax.rx.waitForEvent(received.id)).body).toEqual(received)
    await expectNotDelivered(received.id, star.rx, other.endpoint.id, other.rx)
    const failed = await testEvent(a.key, a.id, 'fax.failed')
    const queued = await testEvent(a.key, a.id, 'queue.call.queued')
    // Per-account order within an endpoint: what arrived is exactly the two matching events.
    await other.rx.waitForEvent(queued.id)
    expect(other.rx.events().map((e) => e.id)).toEqual([failed.id, queued.id])
    await star.rx.waitFor(3)
    expect(star.rx.events().map((e) => e.id)).toEqual([received.id, failed.id, queued.id])
    await expectNotDelivered(failed.id, star.rx, fax.endpoint.id, fax.rx)
    expect(fax.rx.events().map((e) => e.id)).toEqual([received.id])
  })

  test("a platform-global endpoint receives every account's events of its mode; an account endpoint only its account's", async () => {
    const p = await t.platform()
    const a1 = (await t.account({ key: p.test_key })).id
    const a2 = (await t.account({ key: p.test_key })).id
    const global = await hook({ key: p.test_key })
    const only1 = await hook({ key: p.test_key, account: a1 })
    const elsewhere = await t.platform()
    const foreign = await hook({ key: elsewhere.test_key })
    const e1 = await testEvent(p.test_key, a1, 'device.provisioned')
    const e2 = await testEvent(p.test_key, a2, 'device.provisioned')
    const g1 = await global.rx.waitForEvent(e1.id)
    const g2 = await global.rx.waitForEvent(e2.id)
    expect(g1.headers['x-service-account-id']).toBe(a1)
    expect(g2.headers['x-service-account-id']).toBe(a2)
    expect(g2.body.account_id).toBe(a2)
    expect((await only1.rx.waitForEvent(e1.id)).headers['x-service-account-id']).toBe(a1)
    await expectNotDelivered(e2.id, global.rx, only1.endpoint.id, only1.rx)
    // Another platform's endpoints never see these accounts.
    for (const e of [e1, e2]) await expectNotDelivered(e.id, global.rx, foreign.endpoint.id, foreign.rx)
    expect(foreign.rx.requests).toHaveLength(0)
    expect(only1.rx.events().map((e) => e.id)).toEqual([e1.id])
  })

  test('a disabled endpoint receives nothing; enabled again, it receives what follows', async () => {
    const a = await t.account()
    const probe = await hook({ key: a.key })
    const off = await hook({ key: a.key, account: a.id })
    expect((await t.call('POST', `/v1/webhook_endpoints/${off.endpoint.id}`, { key: a.key, account: a.id, body: { status: 'disabled' } })).body.status).toBe(
      'disabled',
    )
    const missed = await testEvent(a.key, a.id, 'fax.delivered')
    await expectNotDelivered(missed.id, probe.rx, off.endpoint.id, off.rx)
    await t.call('POST', `/v1/webhook_endpoints/${off.endpoint.id}`, { key: a.key, account: a.id, body: { status: 'enabled' } })
    const seen = await testEvent(a.key, a.id, 'fax.delivered')
    await off.rx.waitForEvent(seen.id)
    expect(off.rx.events().map((e) => e.id)).toEqual([seen.id])
  })

  test('a deleted endpoint receives nothing more', async () => {
    const a = await t.account()
    const probe = await hook({ key: a.key })
    const gone = await hook({ key: a.key, account: a.id })
    const first = await testEvent(a.key, a.id, 'fax.failed')
    await gone.rx.waitForEvent(first.id)
    expect((await t.call('DELETE', `/v1/webhook_endpoints/${gone.endpoint.id}`, { key: a.key, account: a.id })).status).toBe(200)
    const second = await testEvent(a.key, a.id, 'fax.failed')
    await expectNotDelivered(second.id, probe.rx, gone.endpoint.id, gone.rx)
    expect(gone.rx.events().map((e) => e.id)).toEqual([first.id])
  })

  test("Sandbox endpoints receive only sandbox events and live endpoints only live events (delivered only when the endpoint's mode matches the account's mode)", async () => {
    const { p, sandbox, live } = await livePlatform()
    const testGlobal = await hook({ key: p.test_key })
    const liveGlobal = await hook({ key: p.live_key })
    const liveAccount = await hook({ key: p.live_key, account: live })
    // A sandbox event.
    const sandboxEvent = await testEvent(p.test_key, sandbox, 'fax.received')
    await expectNotDelivered(sandboxEvent.id, testGlobal.rx, liveGlobal.endpoint.id, liveGlobal.rx)
    expect(await hasDelivery(sandboxEvent.id, liveAccount.endpoint.id)).toBe(false)
    // A live event (creating a user on a live account emits user.created).
    const u = await t.call('POST', '/v1/users', { key: p.live_key, account: live, body: { email: 'live@example.com' } })
    expect(u.status).toBe(200)
    const [liveHit] = await liveGlobal.rx.waitFor(1)
    expect(liveHit!.body.type).toBe('user.created')
    expect(liveHit!.body.account).toBe(live)
    expect(liveHit!.headers['x-service-account-id']).toBe(live)
    expect(await liveGlobal.rx.verify(liveHit!, liveGlobal.endpoint.secret)).toEqual(liveHit!.body)
    expect((await liveAccount.rx.waitForEvent(liveHit!.body.id)).body).toEqual(liveHit!.body)
    expect(await hasDelivery(liveHit!.body.id, testGlobal.endpoint.id)).toBe(false)
    expect(testGlobal.rx.events().map((e) => e.id)).toEqual([sandboxEvent.id])
    expect(liveGlobal.rx.events().map((e) => e.id)).toEqual([liveHit!.body.id])
  })
})
