/**
 * The attempt log (extension): every delivery attempt is recorded, with its endpoint,
 * event, attempt number, status code or failure reason and duration, and listed per
 * endpoint at GET /v1/webhook_endpoints/{id}/attempts, newest first, paginated, with
 * the filters `event` and `status`. Failed attempts are logged at warn with the ids and
 * the status or reason, never the secret or the body.
 *
 * Time runs 200 times faster: the 60 s retry interval is 0.3 s of real time.
 * Data: PGlite in memory; with DATABASE_URL, a fresh database on that server (created
 * here, dropped after), whose delivery lock this file's process holds alone.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { Writable } from 'node:stream'
import pino from 'pino'
import { ADMIN_TOKEN, startTestService } from './support/service'
import { startWebhookReceiver } from './support/webhook-receiver'
import { scratchPostgres } from './support/scratch-postgres'
import { until } from './support/polling'

const SPEED = 200

/** Every log line of the service, as JSON text. */
const logged: string[] = []
const sink = new Writable({
  write(chunk, _enc, done) {
    logged.push(...String(chunk).split('\n').filter(Boolean))
    done()
  },
})

const pg = await scratchPostgres('attempts')
const t = await startTestService(
  { ...pg.env, VOICE_CLOCK_SPEED: String(SPEED), WEBHOOK_RETRY_INTERVAL_S: '60', WEBHOOK_TIMEOUT_S: '100', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' },
  { log: pino({ level: 'warn', base: undefined }, sink) },
)
afterAll(() => pg.dispose())

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

async function scope() {
  const a = await t.account()
  return { key: a.key, account: a.id as string }
}

async function endpoint(s: { key: string; account: string }, url: string, enabled_events = ['*']) {
  const r = await t.call('POST', '/v1/webhook_endpoints', { ...s, body: { url, enabled_events } })
  expect(r.status).toBe(200)
  return r.body as { id: string; secret: string }
}

async function fire(s: { key: string; account: string }, event = 'fax.received') {
  const r = await t.call('POST', '/v1/test_helpers/events', { ...s, body: { event } })
  expect(r.status).toBe(200)
  return r.body.id as string
}

async function attempts(s: { key: string; account: string }, id: string, query = '') {
  const r = await t.call('GET', `/v1/webhook_endpoints/${id}/attempts${query}`, s)
  expect(r.status).toBe(200)
  return r.body as { object: 'list'; data: any[]; next_page_url: string | null; previous_page_url: string | null }
}

describe('GET /v1/webhook_endpoints/{id}/attempts', () => {
  test('two failures then a success: three attempts, newest first, with status code, reason and duration', async () => {
    const s = await scope()
    const rx = await startWebhookReceiver()
    rx.respond([500, 503, 200])
    const ep = await endpoint(s, rx.url)
    const event = await fire(s)
    await rx.waitFor(3, { timeoutMs: 15_000 })
    const list = await until('three attempts recorded', async () => {
      const l = await attempts(s, ep.id)
      return l.data.length === 3 ? l : undefined
    })
    expect(list.object).toBe('list')
    expect(list.data.map((a) => [a.attempt, a.status, a.status_code, a.failure_reason])).toEqual([
      [3, 'succeeded', 200, null],
      [2, 'failed', 503, 'HTTP 503'],
      [1, 'failed', 500, 'HTTP 500'],
    ])
    const deliveries = new Set(list.data.map((a) => a.delivery))
    expect(deliveries.size).toBe(1)
    for (const a of list.data) {
      expect(a).toMatchObject({ object: 'webhook_attempt', webhook_endpoint: ep.id, event_id: event, event: 'fax.received' })
      expect(a.id).toMatch(/^wha_/)
      expect(Number.isInteger(a.duration_ms) && a.duration_ms >= 0).toBe(true)
    }
    // Newest first by the time each was sent: a retry interval (60 s of service time) apart.
    const at = list.data.map((a) => Date.parse(a.created_at))
    expect(at[0]! - at[1]!).toBeGreaterThanOrEqual(60_000)
    expect(at[1]! - at[2]!).toBeGreaterThanOrEqual(60_000)

    // Filters.
    expect((await attempts(s, ep.id, '?status=failed')).data.map((a) => a.attempt)).toEqual([2, 1])
    expect((await attempts(s, ep.id, '?status=succeeded')).data.map((a) => a.attempt)).toEqual([3])
    expect((await attempts(s, ep.id, '?event=fax.received&status=failed')).data).toHaveLength(2)
    expect((await attempts(s, ep.id, '?event=call.end')).data).toEqual([])
    const unknown = await t.call('GET', `/v1/webhook_endpoints/${ep.id}/attempts?event=fax.recieved`, s)
    expect(unknown.status).toBe(400)
    expect(unknown.body.details).toEqual({ event: 'is not a known event type' })
    expect((await t.call('GET', `/v1/webhook_endpoints/${ep.id}/attempts?status=ok`, s)).status).toBe(400)

    // Pages of one, through next_page_url, then back.
    const seen: number[] = []
    let page = await attempts(s, ep.id, '?limit=1')
    expect(page.previous_page_url).toBeNull()
    seen.push(page.data[0].attempt)
    while (page.next_page_url) {
      const r = await t.call('GET', page.next_page_url, s)
      expect(r.status).toBe(200)
      page = r.body
      seen.push(...page.data.map((a: any) => a.attempt))
    }
    expect(seen).toEqual([3, 2, 1])
    expect(page.previous_page_url).not.toBeNull()
    // A cursor is bound to its filters.
    const filtered = await attempts(s, ep.id, '?limit=1&status=failed')
    expect(filtered.next_page_url).toContain('status=failed')
    expect((await t.call('GET', filtered.next_page_url!, s)).body.data.map((a: any) => a.attempt)).toEqual([1])

    // The failures were logged at warn with the ids and the status, never the secret or the body.
    const warns = logged.map((l) => JSON.parse(l)).filter((l) => l.msg === 'webhook attempt failed' && l.endpoint === ep.id)
    expect(warns.map((w) => [w.level, w.event, w.attempt, w.status])).toEqual([
      [40, event, 1, 500],
      [40, event, 2, 503],
    ])
    const text = logged.join('\n')
    expect(text).not.toContain(ep.secret)
    expect(text).not.toContain(rx.requests[0]!.rawBody)
  }, 30_000)

  test('a receiver that does not answer: the reason, no status code, logged at warn with the reason', async () => {
    const s = await scope()
    const rx = await startWebhookReceiver({ autoStop: false })
    const url = rx.url
    await rx.stop() // nothing listens there any more
    const ep = await endpoint(s, url)
    const event = await fire(s)
    const [first] = await until('a failed attempt', async () => {
      const l = await attempts(s, ep.id)
      return l.data.length > 0 ? l.data : undefined
    })
    expect(first).toMatchObject({ attempt: 1, status: 'failed', status_code: null, event_id: event })
    expect(first.failure_reason.length).toBeGreaterThan(0)
    const warn = await until('the warn line', async () =>
      logged.map((l) => JSON.parse(l)).find((l) => l.msg === 'webhook attempt failed' && l.endpoint === ep.id),
    )
    expect(warn).toMatchObject({ level: 40, event, delivery: first.delivery, attempt: 1, reason: first.failure_reason })
    expect(warn.status).toBeUndefined()
    // Stop retrying: the endpoint is disabled.
    await t.call('POST', `/v1/webhook_endpoints/${ep.id}`, { ...s, body: { status: 'disabled' } })
  }, 30_000)

  test('each endpoint lists only its own attempts; many successes are each recorded', async () => {
    const s = await scope()
    const rx = await startWebhookReceiver()
    const a = await endpoint(s, rx.url, ['fax.received'])
    const b = await endpoint(s, rx.url, ['fax.failed'])
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push(await fire(s, 'fax.received'))
    const other = await fire(s, 'fax.failed')
    await rx.waitFor(13, { timeoutMs: 15_000 })
    const listed = await until('thirteen attempts recorded', async () => {
      const la = await attempts(s, a.id, '?limit=100')
      const lb = await attempts(s, b.id, '?limit=100')
      return la.data.length === 12 && lb.data.length === 1 ? { la, lb } : undefined
    })
    expect(listed.la.data.every((x) => x.status === 'succeeded' && x.status_code === 200 && x.attempt === 1)).toBe(true)
    expect(new Set(listed.la.data.map((x) => x.event_id))).toEqual(new Set(ids))
    expect(listed.lb.data.map((x) => x.event_id)).toEqual([other])
  }, 30_000)

  test('404 for an endpoint that is not the caller’s; account scope as for the endpoint itself', async () => {
    const s = await scope()
    const ep = await endpoint(s, 'https://hooks.example.com/attempts')
    expect((await attempts(s, ep.id)).data).toEqual([])
    const missing = await t.call('GET', '/v1/webhook_endpoints/we_missing/attempts', s)
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe('webhook_endpoint_not_found')
    const stranger = await scope()
    expect((await t.call('GET', `/v1/webhook_endpoints/${ep.id}/attempts`, stranger)).status).toBe(404)
    // The platform-global form (no Service-Account) does not reach the account's endpoint.
    expect((await t.call('GET', `/v1/webhook_endpoints/${ep.id}/attempts`, { key: s.key })).status).toBe(404)
  })

  test('the operation is marked as an extension in the OpenAPI document', async () => {
    const doc = await t.call('GET', '/v1/openapi.json', { headers: admin })
    const op = doc.body.paths['/v1/webhook_endpoints/{webhook_endpoint}/attempts'].get
    expect(op.operationId).toBe('listWebhookAttempts')
    expect(op['x-extension']).toBe(true)
  })
})
