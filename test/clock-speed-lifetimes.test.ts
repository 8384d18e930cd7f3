/**
 * VOICE_CLOCK_SPEED compresses simulated call time and delivery timers, nothing else:
 * a session token, an Idempotency-Key record and a webhook signature's `t=` are
 * measured by clients on their own clocks, so they follow real time. At speed 1,000 a
 * sped-up clock runs an hour ahead in 3.6 real seconds: before this, a one-hour
 * session died in 3.6 s and signatures were stamped hours in the future (failing
 * Stripe's 5-minute tolerance).
 */
import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { idempotencyKeys } from '../src/db/schema'
import { startTestService } from './support/service'
import { startWebhookReceiver } from './support/webhook-receiver'

const SPEED = 1000
const t = await startTestService({ VOICE_CLOCK_SPEED: String(SPEED), WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const a = await t.account()
const k = { key: a.key, account: a.id }

describe(`lifetimes in real time at VOICE_CLOCK_SPEED=${SPEED}`, () => {
  test('a one-hour account session outlives an hour of simulated time', async () => {
    const minted = await t.call('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id, components: { call_logs: { enabled: true } } } })
    expect(minted.status).toBe(200)
    const expiresIn = new Date(minted.body.expires_at).getTime() - Date.now()
    expect(expiresIn).toBeGreaterThan(3_500_000) // an hour of real time from now
    const simulatedStart = t.service.clock.now().getTime()
    // Wait until more than an hour of simulated time has passed (about 3.6 real seconds).
    while (t.service.clock.now().getTime() - simulatedStart < 3_700_000) await Bun.sleep(100)
    expect((await t.call('GET', '/v1/calls', { key: minted.body.client_secret })).status).toBe(200)
  }, 30_000)

  test('an Idempotency-Key record is stamped in real time (its 24 hours are the client’s)', async () => {
    const body = { email: `idem-${Date.now()}@example.com`, name: 'Idem' }
    // A key of its own: the PostgreSQL run's database keeps earlier runs' records.
    const idem = `speed-test-${randomUUID()}`
    const first = await t.call('POST', '/v1/users', { ...k, body, headers: { 'idempotency-key': idem } })
    expect(first.status).toBe(200)
    // Waiting 24 real hours is not a test: the record's own time shows which clock it follows.
    const again = await t.call('POST', '/v1/users', { ...k, body, headers: { 'idempotency-key': idem } })
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    const [row] = await t.service.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, idem))
    const createdAt = row!.createdAt.getTime()
    expect(Math.abs(createdAt - Date.now())).toBeLessThan(60_000)
  })

  test('a webhook signature carries real time, which a Stripe verifier accepts', async () => {
    const rx = await startWebhookReceiver()
    const ep = await t.call('POST', '/v1/webhook_endpoints', { key: a.key, body: { url: rx.url } })
    expect(ep.status).toBe(200)
    // Let the simulated clock run well ahead of real time first.
    while (t.service.clock.now().getTime() - Date.now() < 3_600_000) await Bun.sleep(100)
    const fired = await t.call('POST', '/v1/test_helpers/events', { ...k, body: { event: 'fax.received' } })
    expect(fired.status).toBe(200)
    const [hit] = await rx.waitFor(1, { where: (r) => r.body?.id === fired.body.id })
    const stamp = Number(/t=(\d+)/.exec(hit!.headers['x-service-signature']!)![1])
    expect(Math.abs(stamp * 1000 - Date.now())).toBeLessThan(60_000)
    expect((await rx.verify(hit!, ep.body.secret)).id).toBe(fired.body.id)
  }, 30_000)
})
