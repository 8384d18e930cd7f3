/**
 * Claiming alone: committed, undispatched events become one delivery row per
 * matching endpoint, handed to lanes (a recording `enqueue` here) in commit order
 * and only after commit; resume hands back pending first attempts. A real database
 * (PGlite; a scratch PostgreSQL database with DATABASE_URL, so that no other run's
 * events are taken).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { asc, eq, sql } from 'drizzle-orm'
import { manualClock } from '../../clock'
import type { Database, Db } from '../../db/client'
import { eventOutbox, events, webhookDeliveries } from '../../db/schema'
import { newId } from '../../ids'
import { EndpointCache } from './attempt'
import { createDispatcher, DISPATCH_BATCH, matchesEndpoint } from './dispatch'
import { MAX_RETRIES } from './retries'
import { clearDeliveryTables, insertDelivery, insertEndpoint, insertEvent, insertPlatform, openTestDatabase } from './test-fixtures'
import type { Job } from './types'

const clock = manualClock()
let t: Awaited<ReturnType<typeof openTestDatabase>>
let database: Database
let platformId: string

beforeAll(async () => {
  t = await openTestDatabase('dispatch')
  database = t.database
})
afterAll(() => t?.dispose())
beforeEach(async () => {
  await clearDeliveryTables(database)
  platformId = await insertPlatform(database, clock)
})

function setup(opts: { db?: Db; cacheNow?: () => number } = {}) {
  const enqueued: Job[] = []
  const endpoints = new EndpointCache(opts.cacheNow)
  const dispatcher = createDispatcher({ db: opts.db ?? database.db, clock, endpoints, enqueue: (job) => enqueued.push(job) })
  return { dispatcher, enqueued, endpoints }
}

const allDeliveries = () => database.db.select().from(webhookDeliveries).orderBy(asc(webhookDeliveries.eventSeq), asc(webhookDeliveries.endpointId))
const undispatched = () => database.db.select({ id: events.id }).from(events).innerJoin(eventOutbox, eq(eventOutbox.seq, events.seq))

describe('matchesEndpoint', () => {
  const event = { type: 'user.created', mode: 'test', accountId: 'acct_a' }
  const ep = { enabledEvents: ['*'], status: 'enabled' as const, mode: 'test' as const, accountId: null }
  test('enabled, same mode, platform-global or the same account, and the type enabled', () => {
    expect(matchesEndpoint(ep, event)).toBe(true)
    expect(matchesEndpoint({ ...ep, accountId: 'acct_a' }, event)).toBe(true)
    expect(matchesEndpoint({ ...ep, enabledEvents: ['call.ended', 'user.created'] }, event)).toBe(true)
    expect(matchesEndpoint({ ...ep, accountId: 'acct_b' }, event)).toBe(false)
    expect(matchesEndpoint({ ...ep, mode: 'live' }, event)).toBe(false)
    expect(matchesEndpoint({ ...ep, status: 'disabled' }, event)).toBe(false)
    expect(matchesEndpoint({ ...ep, enabledEvents: ['call.ended'] }, event)).toBe(false)
    expect(matchesEndpoint({ ...ep, enabledEvents: [] }, event)).toBe(false)
  })
})

describe('dispatch', () => {
  test('one delivery row per matching endpoint; the events are marked dispatched; jobs in commit order', async () => {
    const s = setup()
    const global = await insertEndpoint(database, clock, { platformId })
    const ofA = await insertEndpoint(database, clock, { platformId, accountId: 'acct_a' })
    await insertEndpoint(database, clock, { platformId, accountId: 'acct_b' })
    await insertEndpoint(database, clock, { platformId, mode: 'live' })
    await insertEndpoint(database, clock, { platformId, status: 'disabled' })
    await insertEndpoint(database, clock, { platformId, enabledEvents: ['call.ended'] })
    await insertEndpoint(database, clock, { platformId: await insertPlatform(database, clock) })
    const e1 = await insertEvent(database, clock, { platformId, accountId: 'acct_a' })
    const e2 = await insertEvent(database, clock, { platformId, accountId: 'acct_c' })
    clock.advance(1000)

    expect(await s.dispatcher.dispatch()).toBe(2)

    const rows = await allDeliveries()
    const pairs = (list: { eventId: string; endpointId: string }[]) => list.map((r) => `${r.eventId}>${r.endpointId}`).sort()
    const expected = [`${e1.id}>${global.id}`, `${e1.id}>${ofA.id}`, `${e2.id}>${global.id}`].sort()
    expect(pairs(rows)).toEqual(expected)
    const row = rows.find((r) => r.eventId === e1.id && r.endpointId === global.id)!
    expect(row).toMatchObject({
      eventSeq: e1.seq,
      accountId: 'acct_a',
      state: 'pending',
      attempts: 0,
      maxAttempts: 1 + MAX_RETRIES,
      nextAttemptAt: clock.now(),
      committedAt: e1.createdAt,
      firstAttemptAt: null,
      createdAt: clock.now(),
    })
    expect(await undispatched()).toEqual([])
    // Handed on with their bodies, in commit order (e1's before e2's).
    expect(pairs(s.enqueued.map((j) => j.delivery))).toEqual(expected)
    expect(s.enqueued.map((j) => j.delivery.eventSeq)).toEqual([e1.seq, e1.seq, e2.seq])
    expect(s.enqueued.every((j) => j.body === (j.delivery.eventId === e1.id ? e1.body : e2.body))).toBe(true)
    expect(s.enqueued.map((j) => j.delivery.id).sort()).toEqual(rows.map((r) => r.id).sort())
  })

  test('an unhealthy endpoint gets each event once, without retries', async () => {
    const s = setup()
    await insertEndpoint(database, clock, { platformId, unhealthySince: clock.now(), consecutiveFailures: 5 })
    await insertEvent(database, clock, { platformId, accountId: 'acct_a' })
    await s.dispatcher.dispatch()
    expect(s.enqueued[0]!.delivery.maxAttempts).toBe(1)
  })

  test('an event no endpoint wants is dispatched all the same; nothing left, nothing taken', async () => {
    const s = setup()
    await insertEvent(database, clock, { platformId, accountId: 'acct_a' })
    expect(await s.dispatcher.dispatch()).toBe(1)
    expect(await allDeliveries()).toEqual([])
    expect(await undispatched()).toEqual([])
    expect(await s.dispatcher.dispatch()).toBe(0)
    expect(s.enqueued).toEqual([])
  })

  test('every events row is written undispatched, however it is written, and an outbox row without its event is dropped', async () => {
    const s = setup()
    await insertEndpoint(database, clock, { platformId })
    // Two inserts of several rows each, by drizzle and by hand: the database puts every row in the outbox.
    const values = (n: number) => ({
      id: newId('event'),
      platformId,
      accountId: 'acct_a',
      mode: 'test' as const,
      type: 'user.created',
      body: `{"n":${n}}`,
      createdAt: clock.now(),
    })
    await database.db.insert(events).values([values(1), values(2)])
    const [gone] = await database.db.insert(events).values(values(3)).returning({ seq: events.seq })
    await database.db.execute(
      sql`insert into events (id, platform_id, account_id, mode, type, body, created_at) values (${newId('event')}, ${platformId}, 'acct_a', 'test', 'user.created', '{"n":4}', now()), (${newId('event')}, ${platformId}, 'acct_a', 'test', 'user.created', '{"n":5}', now())`,
    )
    expect(await undispatched()).toHaveLength(5)
    // An event deleted before its dispatch (nothing in the service does so) leaves its outbox row behind.
    await database.db.delete(events).where(eq(events.seq, gone!.seq))
    expect(await database.db.select().from(eventOutbox)).toHaveLength(5)
    expect(await s.dispatcher.dispatch()).toBe(5)
    expect(s.enqueued.map((j) => j.body)).toEqual(['{"n":1}', '{"n":2}', '{"n":4}', '{"n":5}'])
    expect(await database.db.select().from(eventOutbox)).toEqual([])
  })

  test(`at most ${DISPATCH_BATCH} events a transaction, oldest first`, async () => {
    const s = setup()
    await insertEndpoint(database, clock, { platformId })
    const rows = Array.from({ length: DISPATCH_BATCH + 1 }, (_, i) => ({
      id: newId('event'),
      platformId,
      accountId: 'acct_a',
      mode: 'test' as const,
      type: 'user.created',
      body: `{"n":${i}}`,
      createdAt: clock.now(),
    }))
    await database.db.insert(events).values(rows)
    expect(await s.dispatcher.dispatch()).toBe(DISPATCH_BATCH)
    expect(await s.dispatcher.dispatch()).toBe(1)
    expect(s.enqueued.map((j) => j.body)).toEqual(rows.map((r) => r.body))
  })

  test('nothing is handed on unless the transaction commits', async () => {
    // The database as it is, except that every transaction fails at its end (rolled back).
    const failing = new Proxy(database.db, {
      get(target, prop) {
        if (prop === 'transaction')
          return (fn: (tx: Db) => Promise<unknown>) =>
            target.transaction(async (tx) => {
              await fn(tx)
              throw new Error('commit failed')
            })
        return Reflect.get(target, prop, target)
      },
    })
    const s = setup({ db: failing })
    await insertEndpoint(database, clock, { platformId })
    await insertEvent(database, clock, { platformId, accountId: 'acct_a' })
    await expect(s.dispatcher.dispatch()).rejects.toThrow('commit failed')
    expect(s.enqueued).toEqual([])
    expect(await allDeliveries()).toEqual([])
    expect(await undispatched()).toHaveLength(1)
  })

  test("the endpoint rows read are cached for the batch's first attempts; a missing one is forgotten", async () => {
    const s = setup({ cacheNow: () => 1000 })
    const ep = await insertEndpoint(database, clock, { platformId })
    const disabled = await insertEndpoint(database, clock, { platformId, status: 'disabled' })
    s.endpoints.set({ ...disabled, status: 'enabled' }) // as read before it was disabled
    await insertEvent(database, clock, { platformId, accountId: 'acct_a' })
    await s.dispatcher.dispatch()
    expect(s.endpoints.fresh(ep.id)).toEqual(ep)
    expect(s.endpoints.fresh(disabled.id)).toBeUndefined()
  })
})

describe('resume', () => {
  test('pending first attempts go back in commit order; attempted, delivered and dead ones do not', async () => {
    const s = setup()
    const ep = await insertEndpoint(database, clock, { platformId })
    const later = await insertDelivery(database, clock, ep, { eventSeq: 20 })
    const earlier = await insertDelivery(database, clock, ep, { eventSeq: 10 })
    await insertDelivery(database, clock, ep, { eventSeq: 5, attempts: 1 })
    await insertDelivery(database, clock, ep, { eventSeq: 6, state: 'delivered' })
    await insertDelivery(database, clock, ep, { eventSeq: 7, state: 'dead' })
    await s.dispatcher.resume()
    expect(s.enqueued.map((j) => [j.delivery.id, j.body])).toEqual([
      [earlier.delivery.id, earlier.body],
      [later.delivery.id, later.body],
    ])
  })
})
