/**
 * Attempting alone: the endpoint row cache, the parallelism slots, and one signed
 * attempt through a fake WebhookTransport, its result handed to a recording outcome.
 * A real database (PGlite; a scratch PostgreSQL database with DATABASE_URL) holds the
 * endpoint and delivery rows.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { createHmac } from 'node:crypto'
import { createKeyRing, MasterKey } from '../../auth/key-encryption'
import { holdKeyRing } from '../../auth/master-key'
import { sealedContext } from '../../auth/sealed-columns'
import { manualClock } from '../../clock'
import type { Database } from '../../db/client'
import { webhookDeliveries, webhookEndpoints } from '../../db/schema'
import type { WebhookResult } from '../webhook-transport'
import { type AttemptOutcome, createAttempter, ENDPOINT_FRESH_MS, EndpointCache, Slots } from './attempt'
import type { Delivered } from './health'
import { clearDeliveryTables, deferred, fakeTransport, insertDelivery, insertEndpoint, insertPlatform, openTestDatabase, settle, until } from './test-fixtures'
import type { EndpointRow } from './types'

const clock = manualClock()
const endpointRow = (values: Partial<EndpointRow> & { id: string; platformId: string }): EndpointRow => ({
  accountId: null,
  mode: 'test',
  url: 'https://hooks.example.com/in',
  secret: 'whsec_x',
  enabledEvents: ['*'],
  description: null,
  status: 'enabled',
  consecutiveFailures: 0,
  unhealthySince: null,
  createdAt: clock.now(),
  updatedAt: clock.now(),
  ...values,
})

describe('endpoint cache', () => {
  test('a row is fresh for ENDPOINT_FRESH_MS after it was read, then not', () => {
    let now = 1000
    const cache = new EndpointCache(() => now)
    cache.set(endpointRow({ id: 'we_1', platformId: 'plat_1' }))
    expect(cache.fresh('we_1')?.id).toBe('we_1')
    now += ENDPOINT_FRESH_MS - 1
    expect(cache.fresh('we_1')?.id).toBe('we_1')
    now += 1
    expect(cache.fresh('we_1')).toBeUndefined()
    expect(cache.fresh('we_unknown')).toBeUndefined()
  })

  test("a dispatch's rows replace its platforms' entries: missing ones were disabled or deleted", () => {
    let now = 1000
    const cache = new EndpointCache(() => now)
    cache.set(endpointRow({ id: 'we_kept', platformId: 'plat_1', url: 'https://old.example.com' }))
    cache.set(endpointRow({ id: 'we_gone', platformId: 'plat_1' }))
    cache.set(endpointRow({ id: 'we_other', platformId: 'plat_2' }))
    now += 10
    cache.replacePlatforms(['plat_1'], [endpointRow({ id: 'we_kept', platformId: 'plat_1', url: 'https://new.example.com' })])
    expect(cache.fresh('we_kept')?.url).toBe('https://new.example.com')
    expect(cache.fresh('we_gone')).toBeUndefined()
    // Another platform's row is not judged by this dispatch.
    expect(cache.fresh('we_other')?.id).toBe('we_other')
    expect(cache.size).toBe(2)
  })

  test('a dispatch drops rows that are no longer fresh, whatever their platform', () => {
    let now = 1000
    const cache = new EndpointCache(() => now)
    cache.set(endpointRow({ id: 'we_old', platformId: 'plat_2' }))
    now += ENDPOINT_FRESH_MS
    cache.replacePlatforms(['plat_1'], [endpointRow({ id: 'we_new', platformId: 'plat_1' })])
    expect(cache.size).toBe(1)
    expect(cache.fresh('we_new')?.id).toBe('we_new')
  })
})

describe('slots', () => {
  test('at most `limit` held at once; waiters get in first come, first served', async () => {
    const slots = new Slots(2)
    const order: string[] = []
    await slots.acquire()
    await slots.acquire()
    expect(slots.inUse).toBe(2)
    const c = slots.acquire().then(() => order.push('c'))
    const d = slots.acquire().then(() => order.push('d'))
    await settle()
    expect(order).toEqual([])
    expect(slots.queued).toBe(2)
    slots.release()
    await c
    expect(order).toEqual(['c'])
    expect(slots.inUse).toBe(2)
    slots.release()
    await d
    expect(order).toEqual(['c', 'd'])
    slots.release()
    slots.release()
    expect(slots.inUse).toBe(0)
  })

  test('MAX_PARALLEL is the default limit', () => {
    expect(new Slots().limit).toBe(128)
  })
})

describe('one attempt', () => {
  let t: Awaited<ReturnType<typeof openTestDatabase>>
  let database: Database
  let platformId: string
  beforeAll(async () => {
    t = await openTestDatabase('attempt')
    database = t.database
  })
  afterAll(() => t?.dispose())
  beforeEach(async () => {
    await clearDeliveryTables(database)
    platformId = await insertPlatform(database, clock)
  })

  /** An outcome that records what it was given; `hold` keeps the recording open until released. */
  function recordingOutcome() {
    const delivered: Delivered[] = []
    const failed: { id: string; endpointId: string; result: WebhookResult; sentAt: Date }[] = []
    let hold: Promise<void> = Promise.resolve()
    const outcome: AttemptOutcome = {
      async delivered(entry) {
        delivered.push(entry)
        await hold
      },
      async failed(d, endpoint, result, sentAt) {
        failed.push({ id: d.id, endpointId: endpoint.id, result, sentAt })
        await hold
      },
    }
    return {
      outcome,
      delivered,
      failed,
      holdUntil: (p: Promise<void>) => {
        hold = p
      },
    }
  }

  function setup(opts: { respond?: Parameters<typeof fakeTransport>[0]; slots?: Slots; cacheNow?: () => number } = {}) {
    const transport = fakeTransport(opts.respond)
    const endpoints = new EndpointCache(opts.cacheNow)
    const rec = recordingOutcome()
    const attempter = createAttempter({
      db: database.db,
      clock,
      transport,
      timeoutMs: 1234,
      endpoints,
      slots: opts.slots ?? new Slots(),
      outcome: rec.outcome,
    })
    return { transport, endpoints, attempter, ...rec }
  }

  test('sends the exact body, signed with the endpoint secret, with the account and a timeout', async () => {
    const s = setup()
    const ep = await insertEndpoint(database, clock, { platformId, url: 'https://hooks.example.com/a?x=1', secret: 'whsec_abc' })
    const job = await insertDelivery(database, clock, ep, { accountId: 'acct_9' })
    await s.attempter.attempt(job)
    expect(s.transport.sent).toHaveLength(1)
    const [req] = s.transport.sent
    expect(req!.url).toBe('https://hooks.example.com/a?x=1')
    expect(req!.body).toBe(job.body)
    expect(req!.timeoutMs).toBe(1234)
    expect(req!.headers['content-type']).toBe('application/json')
    expect(req!.headers['user-agent']).toBe('Service-Webhook/1.0')
    expect(req!.headers['x-service-account-id']).toBe('acct_9')
    const unix = Math.floor(clock.now().getTime() / 1000)
    const v1 = createHmac('sha256', 'whsec_abc').update(`${unix}.${job.body}`).digest('hex')
    expect(req!.headers['x-service-signature']).toBe(`t=${unix},v1=${v1}`)
  })

  test('a secret stored sealed (src/auth/) is opened to sign; a new secret for the same endpoint is opened anew', async () => {
    const ring = createKeyRing(MasterKey.generate())
    const release = holdKeyRing(ring)
    try {
      const s = setup()
      const ep = await insertEndpoint(database, clock, { platformId })
      const signedWith = async (secret: string) => {
        await database.db
          .update(webhookEndpoints)
          .set({ secret: ring.seal(secret, sealedContext.webhookSecret(ep.id)) })
          .where(eq(webhookEndpoints.id, ep.id))
        const job = await insertDelivery(database, clock, ep)
        await s.attempter.attempt({ ...job, delivery: { ...job.delivery, attempts: 1 } })
        const unix = Math.floor(clock.now().getTime() / 1000)
        const expected = (key: string) => `t=${unix},v1=${createHmac('sha256', key).update(`${unix}.${job.body}`).digest('hex')}`
        return s.transport.sent.at(-1)!.headers['x-service-signature'] === expected(secret)
      }
      expect(await signedWith('whsec_sealed_one')).toBe(true)
      expect(await signedWith('whsec_sealed_two')).toBe(true)
    } finally {
      release()
    }
  })

  test('acknowledged: `acknowledged` is called before the success is recorded; the entry counts this attempt', async () => {
    const s = setup({ respond: () => ({ kind: 'acknowledged', status: 204 }) })
    const ep = await insertEndpoint(database, clock, { platformId })
    const job = await insertDelivery(database, clock, ep)
    const recorded = deferred()
    s.holdUntil(recorded.promise)
    let acked = false
    const done = s.attempter.attempt(job, () => {
      acked = true
    })
    await until('acknowledged', () => acked)
    expect(s.attempter.inFlight(job.delivery.id)).toBe(true)
    recorded.resolve()
    await done
    expect(s.attempter.inFlight(job.delivery.id)).toBe(false)
    expect(s.delivered).toEqual([
      {
        id: job.delivery.id,
        endpointId: ep.id,
        attempts: 1,
        status: 204,
        firstAttemptAt: clock.now(),
        sentAt: clock.now(),
        durationMs: expect.any(Number),
        at: clock.now(),
      },
    ])
    expect(s.failed).toEqual([])
  })

  test('a retry that succeeds keeps the first attempt time and counts on', async () => {
    const s = setup()
    const ep = await insertEndpoint(database, clock, { platformId })
    const first = new Date(clock.now().getTime() - 60_000)
    const job = await insertDelivery(database, clock, ep, { attempts: 2, firstAttemptAt: first })
    await s.attempter.attempt(job)
    expect(s.delivered[0]).toMatchObject({ attempts: 3, firstAttemptAt: first })
  })

  test('anything but an acknowledgement goes to `failed`, and `acknowledged` is not called', async () => {
    const results: WebhookResult[] = [
      { kind: 'rejected', status: 500 },
      { kind: 'refused', reason: '10.0.0.1 is a private address' },
      { kind: 'error', reason: 'no answer within 1234 ms' },
    ]
    const s = setup({ respond: () => results[s.transport.sent.length - 1]! })
    const ep = await insertEndpoint(database, clock, { platformId })
    for (const _ of results) {
      const job = await insertDelivery(database, clock, ep)
      let acked = false
      await s.attempter.attempt(job, () => {
        acked = true
      })
      expect(acked).toBe(false)
    }
    expect(s.failed.map((f) => f.result)).toEqual(results)
    expect(s.failed.every((f) => f.endpointId === ep.id && f.sentAt.getTime() === clock.now().getTime())).toBe(true)
    expect(s.delivered).toEqual([])
  })

  test('a first attempt uses the row read moments ago; once it is stale, it reads the row again', async () => {
    let now = 1000
    const s = setup({ cacheNow: () => now })
    const ep = await insertEndpoint(database, clock, { platformId, url: 'https://db.example.com/' })
    s.endpoints.set({ ...ep, url: 'https://cached.example.com/' })
    await s.attempter.attempt(await insertDelivery(database, clock, ep))
    expect(s.transport.sent[0]!.url).toBe('https://cached.example.com/')
    now += ENDPOINT_FRESH_MS
    await s.attempter.attempt(await insertDelivery(database, clock, ep))
    expect(s.transport.sent[1]!.url).toBe('https://db.example.com/')
    // What it read is cached in turn.
    expect(s.endpoints.fresh(ep.id)?.url).toBe('https://db.example.com/')
  })

  test('a retry always reads the endpoint row anew', async () => {
    const s = setup({ cacheNow: () => 1000 })
    const ep = await insertEndpoint(database, clock, { platformId, url: 'https://db.example.com/' })
    s.endpoints.set({ ...ep, url: 'https://cached.example.com/' })
    await s.attempter.attempt(await insertDelivery(database, clock, ep, { attempts: 1 }))
    expect(s.transport.sent[0]!.url).toBe('https://db.example.com/')
  })

  test('a disabled endpoint gets nothing: the delivery is dead, replayable, and no outcome is recorded', async () => {
    const s = setup()
    const ep = await insertEndpoint(database, clock, { platformId, status: 'disabled' })
    const job = await insertDelivery(database, clock, ep)
    await s.attempter.attempt(job)
    expect(s.transport.sent).toEqual([])
    const [row] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, job.delivery.id))
    expect(row).toMatchObject({ state: 'dead', lastError: 'endpoint disabled', attempts: 0 })
    expect(s.delivered).toEqual([])
    expect(s.failed).toEqual([])
  })

  test('a deleted endpoint: the delivery is dead and the cached row is forgotten', async () => {
    let now = 1000
    const s = setup({ cacheNow: () => now })
    const ep = await insertEndpoint(database, clock, { platformId })
    s.endpoints.set(ep)
    await database.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, ep.id))
    now += ENDPOINT_FRESH_MS
    const job = await insertDelivery(database, clock, ep)
    await s.attempter.attempt(job)
    expect(s.transport.sent).toEqual([])
    expect(s.endpoints.size).toBe(0)
    const [row] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, job.delivery.id))
    expect(row).toMatchObject({ state: 'dead', lastError: 'endpoint deleted' })
  })

  test('a delivery is never attempted twice at once', async () => {
    const answer = deferred<WebhookResult>()
    const s = setup({ respond: () => answer.promise })
    const ep = await insertEndpoint(database, clock, { platformId })
    const job = await insertDelivery(database, clock, ep)
    const first = s.attempter.attempt(job)
    await until('sent', () => s.transport.sent.length === 1)
    await s.attempter.attempt(job) // returns at once: the first is still out
    expect(s.transport.sent).toHaveLength(1)
    answer.resolve({ kind: 'acknowledged', status: 200 })
    await first
    expect(s.delivered).toHaveLength(1)
  })

  test('attempts wait for a slot; a slot is given back even when recording throws', async () => {
    const answer = deferred<WebhookResult>()
    const slots = new Slots(1)
    const s = setup({ respond: () => (s.transport.sent.length === 1 ? answer.promise : { kind: 'acknowledged', status: 200 }), slots })
    s.outcome.failed = async () => {
      throw new Error('database went away')
    }
    const ep = await insertEndpoint(database, clock, { platformId })
    const a = await insertDelivery(database, clock, ep)
    const b = await insertDelivery(database, clock, ep, { accountId: 'acct_2' })
    const first = s.attempter.attempt(a)
    const second = s.attempter.attempt(b)
    await until('first sent', () => s.transport.sent.length === 1)
    await settle()
    expect(s.transport.sent).toHaveLength(1)
    expect(s.attempter.inFlight(b.delivery.id)).toBe(true) // waiting for the slot
    answer.resolve({ kind: 'rejected', status: 503 })
    await expect(first).rejects.toThrow('database went away')
    await second
    expect(s.transport.sent.map((r) => r.body)).toEqual([a.body, b.body])
    expect(s.attempter.inFlight(a.delivery.id)).toBe(false)
    expect(slots.inUse).toBe(0)
  })

  test('drain waits for attempts under way', async () => {
    const answer = deferred<WebhookResult>()
    const s = setup({ respond: () => answer.promise })
    const ep = await insertEndpoint(database, clock, { platformId })
    const job = await insertDelivery(database, clock, ep)
    void s.attempter.attempt(job)
    await until('sent', () => s.transport.sent.length === 1)
    let drained = false
    const draining = s.attempter.drain(10_000).then(() => {
      drained = true
    })
    await settle()
    expect(drained).toBe(false)
    answer.resolve({ kind: 'acknowledged', status: 200 })
    await draining
    expect(s.attempter.inFlight(job.delivery.id)).toBe(false)
  })
})
