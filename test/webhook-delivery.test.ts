/**
 * Webhook delivery semantics end to end, against real HTTP receivers on
 * 127.0.0.1: retries and their spacing, dead letters and replay, what counts as
 * an acknowledgement (any 2xx) and what as a failure (3xx without following it,
 * 5xx, no answer in time), endpoint health, per-account order under parallel
 * delivery, and retries kept per endpoint.
 *
 * Time runs VOICE_CLOCK_SPEED=200 times faster: a 60 s retry interval is 0.3 s of
 * real time and the 100 s timeout used here is 0.5 s. Timing is only ever
 * asserted as a lower bound.
 *
 * Data: PGlite in memory; with DATABASE_URL, a fresh database on that server
 * (created here, dropped after), so that nothing left by other runs is delivered
 * alongside and this file's process holds that database's delivery lock alone.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { ADMIN_TOKEN, startTestService } from './support/service'
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from './support/webhook-receiver'
import { scratchPostgres } from './support/scratch-postgres'
import { until } from './support/polling'
import { pendingDeliveriesTo } from './support/quiescence'

const SPEED = 200
const RETRY_INTERVAL_S = 60
const TIMEOUT_S = 100
/** Real milliseconds between two attempts of one delivery, at least. */
const INTERVAL_MS = (RETRY_INTERVAL_S * 1000) / SPEED
/** Timer slack allowed on that lower bound. */
const SLACK_MS = 30
const ATTEMPTS = 6 // the first attempt and 5 retries

const pg = await scratchPostgres('webhooks')
const t = await startTestService({
  ...pg.env,
  VOICE_CLOCK_SPEED: String(SPEED),
  WEBHOOK_RETRY_INTERVAL_S: String(RETRY_INTERVAL_S),
  WEBHOOK_TIMEOUT_S: String(TIMEOUT_S),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
})
// Registered after the service's own afterAll, so it runs once the service has stopped.
afterAll(() => pg.dispose())

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

// ---------------------------------------------------------------- helpers

async function platform(adminEmails?: string[]) {
  const r = await t.call('POST', '/admin/platforms', {
    headers: admin,
    body: { name: 'Webhook platform', ...(adminEmails ? { admin_emails: adminEmails } : {}) },
  })
  expect(r.status).toBe(200)
  return r.body as { id: string; test_key: string }
}

async function account(key: string) {
  const r = await t.call('POST', '/v1/accounts', {
    key,
    body: {
      email: 'owner@example.com',
      primary_contact_name: 'Ada Owner',
      name: 'Acme Dental',
      address: { address_number: '100', street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
      pricing: { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 },
    },
  })
  expect(r.status).toBe(200)
  return r.body.id as string
}

/** A webhook endpoint: platform-global without `accountId`, that account's with it. */
async function endpoint(key: string, url: string, accountId?: string) {
  const r = await t.call('POST', '/v1/webhook_endpoints', { key, account: accountId, body: { url } })
  expect(r.status).toBe(200)
  return r.body as { id: string; secret: string; healthy: boolean }
}

async function getEndpoint(key: string, id: string, accountId?: string) {
  const r = await t.call('GET', `/v1/webhook_endpoints/${id}`, { key, account: accountId })
  expect(r.status).toBe(200)
  return r.body
}

/** Commits one test event for the account; resolves to its id once the create answered. */
async function fire(key: string, accountId: string, type = 'fax.delivered'): Promise<string> {
  const r = await t.call('POST', '/v1/test_helpers/events', { key, account: accountId, body: { event: type } })
  if (r.status !== 200) throw new Error(`test event failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.id as string
}

async function deadLetters(): Promise<any[]> {
  const r = await t.call('GET', '/admin/dead-letters?limit=500', { headers: admin })
  expect(r.status).toBe(200)
  return r.body.data
}

const deadLetterOf = async (eventId: string, endpointId: string) => (await deadLetters()).find((d) => d.event === eventId && d.endpoint === endpointId)

const hitsOf = (rx: WebhookReceiver, eventId: string) => rx.requests.filter((r) => r.body?.id === eventId)

/** Nothing more arrives: once no delivery to the receiver's endpoints is pending, none can be sent; then the count is final. */
async function settles(rx: WebhookReceiver, where: (r: ReceivedWebhook) => boolean, expected: number) {
  await until(`no delivery to ${rx.url} pending`, async () => (await pendingDeliveriesTo(t.service.database.db, rx.url)) === 0)
  expect(rx.requests.filter(where).length).toBe(expected)
}

// ---------------------------------------------------------------- retries

describe('retries and dead letters', () => {
  test('a 500 gets the first attempt and 5 retries, spaced by the retry interval; then a dead letter that replay delivers', async () => {
    const p = await platform()
    const acct = await account(p.test_key)
    const rx = await startWebhookReceiver()
    rx.respond(500)
    const ep = await endpoint(p.test_key, rx.url)
    const id = await fire(p.test_key, acct)

    const hits = await rx.waitFor(ATTEMPTS, { where: (r) => r.body?.id === id, timeoutMs: 20_000 })
    for (let i = 1; i < hits.length; i++) {
      expect(hits[i]!.receivedAt - hits[i - 1]!.receivedAt).toBeGreaterThanOrEqual(INTERVAL_MS - SLACK_MS)
    }
    // Every attempt is the same signed POST of the same body.
    for (const h of hits) {
      expect(h.method).toBe('POST')
      expect(h.rawBody).toBe(hits[0]!.rawBody)
      expect(h.headers['content-type']).toBe('application/json')
      expect(h.headers['user-agent']).toBe('Service-Webhook/1.0')
      expect(h.headers['x-service-account-id']).toBe(acct)
      expect((await rx.verify(h, ep.secret)).id).toBe(id)
    }

    const dead = await until('the dead letter', () => deadLetterOf(id, ep.id))
    expect(dead).toMatchObject({
      object: 'dead_letter',
      event: id,
      event_type: 'fax.delivered',
      endpoint: ep.id,
      account: acct,
      attempts: ATTEMPTS,
      last_status: 500,
    })
    expect(dead.last_error).toContain('500')
    expect(typeof dead.first_attempt_at).toBe('string')
    await settles(rx, (r) => r.body?.id === id, ATTEMPTS)
    // One failed delivery is not five: the endpoint stays healthy.
    expect((await getEndpoint(p.test_key, ep.id)).healthy).toBe(true)

    // Replay once the receiver is fixed: delivered again, and gone from the queue.
    rx.respond(204)
    const replay = await t.call('POST', `/admin/dead-letters/${dead.id}/replay`, { headers: admin })
    expect(replay.status).toBe(200)
    expect(replay.body).toMatchObject({ id: dead.id, replayed: true })
    const [again] = await rx.waitFor(ATTEMPTS + 1, { where: (r) => r.body?.id === id }).then((all) => all.slice(ATTEMPTS))
    expect(again!.rawBody).toBe(hits[0]!.rawBody)
    await until('the replayed delivery to leave the dead-letter queue', async () => !(await deadLetterOf(id, ep.id)))
    await settles(rx, (r) => r.body?.id === id, ATTEMPTS + 1)
    expect(hitsOf(rx, id).at(-1)!.status).toBe(204)

    // Only a dead delivery can be replayed.
    const twice = await t.call('POST', `/admin/dead-letters/${dead.id}/replay`, { headers: admin })
    expect(twice.status).toBe(404)
    expect(twice.body.code).toBe('dead_letter_not_found')
    // The operator API wants its token.
    expect((await t.call('GET', '/admin/dead-letters')).status).toBe(401)
    expect((await t.call('POST', `/admin/dead-letters/${dead.id}/replay`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401)
  })

  test('a failure followed by a success stops retrying: delivered, no dead letter', async () => {
    const p = await platform()
    const acct = await account(p.test_key)
    const rx = await startWebhookReceiver()
    rx.respond([503, 500, 200])
    const ep = await endpoint(p.test_key, rx.url)
    const id = await fire(p.test_key, acct)
    const hits = await rx.waitFor(3, { where: (r) => r.body?.id === id })
    expect(hits.map((h) => h.status)).toEqual([503, 500, 200])
    await settles(rx, (r) => r.body?.id === id, 3)
    expect(await deadLetterOf(id, ep.id)).toBeUndefined()
  })

  test('any 2xx acknowledges: 201 and 204 are delivered once, without retry', async () => {
    const p = await platform()
    const acct = await account(p.test_key)
    const created = await startWebhookReceiver()
    created.respond(201)
    const noContent = await startWebhookReceiver()
    noContent.respond(204)
    const e201 = await endpoint(p.test_key, created.url)
    const e204 = await endpoint(p.test_key, noContent.url, acct)
    const ids = [await fire(p.test_key, acct), await fire(p.test_key, acct, 'user.created')]
    for (const rx of [created, noContent]) {
      for (const id of ids) await rx.waitForEvent(id)
    }
    await settles(created, () => true, 2)
    expect(noContent.requests.length).toBe(2)
    expect(created.requests.map((r) => r.body.id)).toEqual(ids)
    expect(noContent.requests.map((r) => r.body.id)).toEqual(ids)
    const dead = await deadLetters()
    expect(dead.filter((d) => d.endpoint === e201.id || d.endpoint === e204.id)).toEqual([])
  })

  test('a 3xx is a failed delivery and the redirect is not followed', async () => {
    const suffix = randomUUID()
    const hookPath = `/hook-${suffix}`
    const otherPath = `/elsewhere-${suffix}`
    const seen: { path: string; status: number; at: number }[] = []
    const codes = [301, 302, 303, 307, 308]
    let otherUrl = ''
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req): Promise<Response> {
        const path = new URL(req.url).pathname
        await req.text()
        if (path === hookPath) {
          const status = codes[seen.filter((s) => s.path === hookPath).length % codes.length]!
          seen.push({ path, status, at: Date.now() })
          return new Response(null, { status, headers: { location: otherUrl } })
        }
        if (path === otherPath) seen.push({ path, status: 200, at: Date.now() })
        return new Response('ok')
      },
    })
    otherUrl = `http://127.0.0.1:${server.port}${otherPath}`
    try {
      const p = await platform()
      const acct = await account(p.test_key)
      const ep = await endpoint(p.test_key, `http://127.0.0.1:${server.port}${hookPath}`)
      const id = await fire(p.test_key, acct)
      const dead = await until('the dead letter', () => deadLetterOf(id, ep.id))
      expect(dead.attempts).toBe(ATTEMPTS)
      expect(codes).toContain(dead.last_status)
      expect(seen.filter((s) => s.path === hookPath).length).toBe(ATTEMPTS)
      expect(seen.filter((s) => s.path === otherPath)).toEqual([])
    } finally {
      await server.stop(true)
    }
  })

  test('an endpoint disabled or deleted while a retry is pending gets no further attempt: the delivery is dead-lettered', async () => {
    const p = await platform()
    const acct = await account(p.test_key)
    const rx = await startWebhookReceiver()
    rx.respond(500)
    const disabled = await endpoint(p.test_key, rx.url)
    const rx2 = await startWebhookReceiver()
    rx2.respond(500)
    const deleted = await endpoint(p.test_key, rx2.url)
    const id = await fire(p.test_key, acct)
    await rx.waitFor(2, { where: (r) => r.body?.id === id })
    await rx2.waitFor(2, { where: (r) => r.body?.id === id })
    expect((await t.call('POST', `/v1/webhook_endpoints/${disabled.id}`, { key: p.test_key, body: { status: 'disabled' } })).status).toBe(200)
    expect((await t.call('DELETE', `/v1/webhook_endpoints/${deleted.id}`, { key: p.test_key })).status).toBe(200)
    const sentDisabled = hitsOf(rx, id).length
    const sentDeleted = hitsOf(rx2, id).length
    const d1 = await until('the disabled endpoint’s dead letter', () => deadLetterOf(id, disabled.id))
    const d2 = await until('the deleted endpoint’s dead letter', () => deadLetterOf(id, deleted.id))
    expect(d1.last_error).toContain('disabled')
    expect(d2.last_error).toContain('deleted')
    await settles(rx, (r) => r.body?.id === id, sentDisabled)
    expect(hitsOf(rx2, id).length).toBe(sentDeleted)
    expect(sentDisabled).toBeLessThan(ATTEMPTS)
  })

  test('a receiver that does not answer within WEBHOOK_TIMEOUT_S (scaled) is a failed delivery', async () => {
    const p = await platform()
    const acct = await account(p.test_key)
    const rx = await startWebhookReceiver()
    const timeoutMs = (TIMEOUT_S * 1000) / SPEED
    // Answers 200, but only well after the service has given up.
    rx.respond(async () => {
      await Bun.sleep(4 * timeoutMs)
      return 200
    })
    const ep = await endpoint(p.test_key, rx.url)
    const id = await fire(p.test_key, acct)
    const dead = await until('the dead letter', () => deadLetterOf(id, ep.id), 30_000)
    expect(dead.attempts).toBe(ATTEMPTS)
    expect(dead.last_status).toBeNull()
    expect(dead.last_error).toMatch(/no answer/)
    const hits = hitsOf(rx, id)
    expect(hits.length).toBe(ATTEMPTS)
    // Each attempt waited for the timeout, then the retry interval. One request that
    // reaches the receiver late (a loaded machine) shortens the next gap by its delay,
    // so each gap is held to the timeout plus half the interval, and their mean to both.
    const gaps = hits.slice(1).map((h, i) => h.receivedAt - hits[i]!.receivedAt)
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(timeoutMs + INTERVAL_MS / 2)
    const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length
    expect(mean).toBeGreaterThanOrEqual(timeoutMs + INTERVAL_MS - SLACK_MS)
  }, 45_000)
})

// ---------------------------------------------------------------- health

describe('endpoint health', () => {
  test('5 consecutive failed deliveries make the endpoint unhealthy: one attempt each, administrators mailed; one success clears it', async () => {
    const mailbox = `ops-${randomUUID()}@example.com`
    const p = await platform([mailbox, 'second-admin@example.com'])
    const acct = await account(p.test_key)
    const rx = await startWebhookReceiver()
    rx.respond(500)
    const ep = await endpoint(p.test_key, rx.url)

    // Four failed deliveries (every one retried to the end): still healthy.
    const firstFour: string[] = []
    for (let i = 0; i < 4; i++) firstFour.push(await fire(p.test_key, acct))
    for (const id of firstFour) {
      const dead = await until(`dead letter of ${id}`, () => deadLetterOf(id, ep.id))
      expect(dead.attempts).toBe(ATTEMPTS)
    }
    expect((await getEndpoint(p.test_key, ep.id)).healthy).toBe(true)

    // The fifth makes it unhealthy, and the administrators hear of it once.
    const fifth = await fire(p.test_key, acct)
    expect((await until('the fifth dead letter', () => deadLetterOf(fifth, ep.id))).attempts).toBe(ATTEMPTS)
    expect((await getEndpoint(p.test_key, ep.id)).healthy).toBe(false)
    const mails = await until('the unhealthy-endpoint mail', async () => {
      const r = await t.call('GET', '/admin/mail?limit=500', { headers: admin })
      const mine = (r.body.data as any[]).filter((m) => m.to.includes(mailbox))
      return mine.length > 0 ? mine : undefined
    })
    expect(mails.length).toBe(1)
    expect(mails[0].to).toEqual([mailbox, 'second-admin@example.com'])
    expect(mails[0].subject).toContain(ep.id)
    expect(mails[0].body).toContain(rx.url)

    // Unhealthy: a new event is tried once, without retry, straight to the dead letters.
    const once = await fire(p.test_key, acct)
    await rx.waitForEvent(once)
    const deadOnce = await until('the single-attempt dead letter', () => deadLetterOf(once, ep.id))
    expect(deadOnce.attempts).toBe(1)
    await settles(rx, (r) => r.body?.id === once, 1)
    expect((await getEndpoint(p.test_key, ep.id)).healthy).toBe(false)

    // One success clears it.
    rx.respond(200)
    const ok = await fire(p.test_key, acct)
    await rx.waitForEvent(ok)
    await until('the endpoint to be healthy again', async () => (await getEndpoint(p.test_key, ep.id)).healthy === true)

    // Healthy again: failures are retried again.
    rx.respond(500)
    const retried = await fire(p.test_key, acct)
    await rx.waitFor(3, { where: (r) => r.body?.id === retried })
    // Still one mail: the endpoint did not become unhealthy again.
    const after = await t.call('GET', '/admin/mail?limit=500', { headers: admin })
    expect((after.body.data as any[]).filter((m) => m.to.includes(mailbox)).length).toBe(1)
  }, 45_000)
})

// ---------------------------------------------------------------- order and fan-out

describe('order and fan-out', () => {
  test('200 events of 5 accounts to one platform-global endpoint: first attempts in commit order per account, accounts interleaved', async () => {
    const ACCOUNTS = 5
    const PER_ACCOUNT = 40
    const p = await platform()
    const accounts: string[] = []
    for (let i = 0; i < ACCOUNTS; i++) accounts.push(await account(p.test_key))
    const rx = await startWebhookReceiver()
    let inFlight = 0
    let maxInFlight = 0
    rx.respond(async () => {
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      await Bun.sleep(5 + Math.random() * 20)
      inFlight--
      return 200
    })
    const ep = await endpoint(p.test_key, rx.url)

    // Each account's events one after another (so commit order is creation order); accounts side by side.
    const created = new Map<string, string[]>()
    const types = ['fax.delivered', 'user.created', 'queue.call.queued', 'fax.received']
    await Promise.all(
      accounts.map(async (acct) => {
        const ids: string[] = []
        created.set(acct, ids)
        for (let i = 0; i < PER_ACCOUNT; i++) ids.push(await fire(p.test_key, acct, types[i % types.length]))
      }),
    )
    const all = new Set([...created.values()].flat())
    expect(all.size).toBe(ACCOUNTS * PER_ACCOUNT)
    await until(
      'every event at the receiver',
      () => {
        const got = new Set(rx.requests.map((r) => r.body?.id))
        return [...all].every((id) => got.has(id))
      },
      30_000,
    )

    // First attempts only (a retry after a slow answer may come later; it does not count).
    const firsts: ReceivedWebhook[] = []
    const seen = new Set<string>()
    for (const r of rx.requests) {
      if (seen.has(r.body.id)) continue
      seen.add(r.body.id)
      firsts.push(r)
    }
    for (const acct of accounts) {
      const arrived = firsts.filter((r) => r.headers['x-service-account-id'] === acct)
      for (const r of arrived) expect(r.body.account_id ?? r.body.account).toBe(acct)
      expect(arrived.map((r) => r.body.id)).toEqual(created.get(acct)!)
    }
    // Different accounts' lanes ran side by side.
    let switches = 0
    for (let i = 1; i < firsts.length; i++) if (firsts[i]!.headers['x-service-account-id'] !== firsts[i - 1]!.headers['x-service-account-id']) switches++
    expect(switches).toBeGreaterThan(ACCOUNTS)
    expect(maxInFlight).toBeGreaterThanOrEqual(2)
    expect((await deadLetters()).filter((d) => d.endpoint === ep.id)).toEqual([])
  }, 60_000)

  test('each endpoint retries on its own: the failing one retries to the end, the healthy one gets each event once', async () => {
    const p = await platform()
    const acct = await account(p.test_key)
    const failing = await startWebhookReceiver()
    failing.respond(500)
    const healthy = await startWebhookReceiver()
    const bad = await endpoint(p.test_key, failing.url, acct)
    const good = await endpoint(p.test_key, healthy.url)
    const ids: string[] = []
    for (let i = 0; i < 3; i++) ids.push(await fire(p.test_key, acct))

    for (const id of ids) {
      const dead = await until(`dead letter of ${id}`, () => deadLetterOf(id, bad.id))
      expect(dead.attempts).toBe(ATTEMPTS)
    }
    await settles(failing, () => true, ids.length * ATTEMPTS)
    for (const id of ids) expect(hitsOf(failing, id).length).toBe(ATTEMPTS)
    expect(healthy.requests.map((r) => r.body.id)).toEqual(ids)
    const dead = await deadLetters()
    expect(dead.filter((d) => d.endpoint === good.id)).toEqual([])
    // Same event, same bytes to both; each signed with its own endpoint's secret.
    for (const id of ids) {
      const [toGood] = hitsOf(healthy, id)
      const [toBad] = hitsOf(failing, id)
      expect(toGood!.rawBody).toBe(toBad!.rawBody)
      await healthy.verify(toGood!, good.secret)
      await failing.verify(toBad!, bad.secret)
      await expect(healthy.verify(toGood!, bad.secret)).rejects.toThrow()
    }
  }, 45_000)
})
