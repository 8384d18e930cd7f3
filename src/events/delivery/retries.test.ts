/**
 * Retries alone: a failed attempt is due again a retry interval later (manual
 * clock), up to MAX_RETRIES, then the delivery is dead and counted toward health
 * (a stub Health here, to see what is asked of it); due retries are started; a dead
 * delivery is replayed. A real database (PGlite; a scratch PostgreSQL database with
 * DATABASE_URL).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { manualClock } from '../../clock'
import type { Database } from '../../db/client'
import { webhookAttempts, webhookDeliveries } from '../../db/schema'
import type { Health } from './health'
import { createRetries, dueRetries, failureReason, MAX_RETRIES, type FailedResult } from './retries'
import { clearDeliveryTables, insertDelivery, insertEndpoint, insertPlatform, openTestDatabase, recordingLogger, settle } from './test-fixtures'
import type { EndpointRow, Job } from './types'
import { planJson } from '../../../test/support/query-plans'

const INTERVAL_MS = 60_000
const clock = manualClock()
let t: Awaited<ReturnType<typeof openTestDatabase>>
let database: Database
let endpoint: EndpointRow

beforeAll(async () => {
  t = await openTestDatabase('retries')
  database = t.database
})
afterAll(() => t?.dispose())
beforeEach(async () => {
  await clearDeliveryTables(database)
  endpoint = await insertEndpoint(database, clock, { platformId: await insertPlatform(database, clock) })
})

const rowOf = async (id: string) => (await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)))[0]!

/** A Health that answers as told and records what it was asked. */
function stubHealth(opts: { unhealthy?: boolean; becomesUnhealthy?: number; countThrows?: boolean } = {}) {
  const counted: { endpointId: string; now: Date }[] = []
  const notified: { endpointId: string; failures: number; reason: string }[] = []
  const health: Health = {
    isUnhealthy: async () => opts.unhealthy ?? false,
    async countFailedDelivery(_tx, endpointId, now) {
      if (opts.countThrows) throw new Error('crash while counting')
      counted.push({ endpointId, now })
      return opts.becomesUnhealthy
    },
    async notifyUnhealthy(ep, failures, reason) {
      notified.push({ endpointId: ep.id, failures, reason })
    },
  }
  return { health, counted, notified }
}

function setup(health = stubHealth()) {
  const attempted: Job[] = []
  const inFlight = new Set<string>()
  const { log, lines } = recordingLogger()
  let attemptResult: () => Promise<void> = async () => {}
  const retries = createRetries({
    db: database.db,
    clock,
    retryIntervalMs: INTERVAL_MS,
    health: health.health,
    attempt: (job) => {
      attempted.push(job)
      return attemptResult()
    },
    inFlight: (id) => inFlight.has(id),
    log,
  })
  return {
    retries,
    attempted,
    inFlight,
    lines,
    ...health,
    failAttempts: () => {
      attemptResult = async () => {
        throw new Error('attempt blew up')
      }
    },
  }
}

const rejected500: FailedResult = { kind: 'rejected', status: 500 }

describe('a failed attempt', () => {
  test('with attempts left: pending, due a retry interval later', async () => {
    const s = setup()
    const job = await insertDelivery(database, clock, endpoint)
    const sentAt = new Date(clock.now().getTime() - 5)
    await s.retries.recordFailure(job.delivery, endpoint, rejected500, sentAt, 41.6)
    expect(await rowOf(job.delivery.id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      lastStatus: 500,
      lastError: 'HTTP 500',
      firstAttemptAt: sentAt,
      nextAttemptAt: new Date(clock.now().getTime() + INTERVAL_MS),
      updatedAt: clock.now(),
    })
    expect(s.counted).toEqual([])
    // The attempt's row in the attempt log, written by the same statement.
    const logged = await database.db.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, job.delivery.id))
    expect(logged).toMatchObject([
      {
        endpointId: endpoint.id,
        eventId: job.delivery.eventId,
        attempt: 1,
        succeeded: false,
        statusCode: 500,
        failureReason: 'HTTP 500',
        durationMs: 42,
        createdAt: sentAt,
      },
    ])
    // Logged at warn: ids and the status, nothing of the endpoint's secret.
    const warn = s.lines.find((l) => l.msg === 'webhook attempt failed')
    expect(warn).toMatchObject({ level: 40, endpoint: endpoint.id, event: job.delivery.eventId, delivery: job.delivery.id, attempt: 1, status: 500 })
    expect(JSON.stringify(s.lines)).not.toContain(endpoint.secret)
  })

  test('what is recorded as the error', async () => {
    expect(failureReason({ kind: 'rejected', status: 302 })).toBe('HTTP 302')
    expect(failureReason({ kind: 'refused', reason: '10.0.0.1 is a private address' })).toBe('refused: 10.0.0.1 is a private address')
    expect(failureReason({ kind: 'error', reason: 'no answer within 100 ms' })).toBe('no answer within 100 ms')
    const s = setup()
    const job = await insertDelivery(database, clock, endpoint)
    await s.retries.recordFailure(job.delivery, endpoint, { kind: 'error', reason: 'x'.repeat(600) }, clock.now())
    const row = await rowOf(job.delivery.id)
    expect(row.lastError).toHaveLength(500)
    expect(row.lastStatus).toBeNull()
  })

  test('a retry keeps the time of the first attempt', async () => {
    const s = setup()
    const first = new Date(clock.now().getTime() - INTERVAL_MS)
    const job = await insertDelivery(database, clock, endpoint, { attempts: 1, firstAttemptAt: first })
    await s.retries.recordFailure(job.delivery, endpoint, rejected500, clock.now())
    expect(await rowOf(job.delivery.id)).toMatchObject({ attempts: 2, firstAttemptAt: first })
  })

  test(`the first attempt and ${MAX_RETRIES} retries, then the delivery is dead and counts toward health`, async () => {
    const s = setup()
    const job = await insertDelivery(database, clock, endpoint, { maxAttempts: 1 + MAX_RETRIES })
    let d = job.delivery
    for (let i = 1; i <= 1 + MAX_RETRIES; i++) {
      expect(s.counted).toEqual([])
      await s.retries.recordFailure(d, endpoint, rejected500, clock.now())
      d = await rowOf(d.id)
      expect(d.attempts).toBe(i)
      expect(d.state).toBe(i < 1 + MAX_RETRIES ? 'pending' : 'dead')
    }
    expect(s.counted).toEqual([{ endpointId: endpoint.id, now: clock.now() }])
    expect(s.notified).toEqual([])
  })

  test('the death that makes the endpoint unhealthy mails, after commit', async () => {
    const s = setup(stubHealth({ becomesUnhealthy: 5 }))
    const job = await insertDelivery(database, clock, endpoint, { maxAttempts: 1 })
    await s.retries.recordFailure(job.delivery, endpoint, { kind: 'refused', reason: 'private' }, clock.now())
    expect((await rowOf(job.delivery.id)).state).toBe('dead')
    expect(s.notified).toEqual([{ endpointId: endpoint.id, failures: 5, reason: 'refused: private' }])
  })

  test('an endpoint that is unhealthy now gets no retry', async () => {
    const s = setup(stubHealth({ unhealthy: true }))
    const job = await insertDelivery(database, clock, endpoint, { maxAttempts: 1 + MAX_RETRIES })
    await s.retries.recordFailure(job.delivery, endpoint, rejected500, clock.now())
    expect(await rowOf(job.delivery.id)).toMatchObject({ state: 'dead', attempts: 1 })
    expect(s.counted).toHaveLength(1)
  })

  test('death and its count commit together: a failure to count leaves the delivery as it was', async () => {
    const s = setup(stubHealth({ countThrows: true }))
    const job = await insertDelivery(database, clock, endpoint, { maxAttempts: 1 })
    await expect(s.retries.recordFailure(job.delivery, endpoint, rejected500, clock.now())).rejects.toThrow('crash while counting')
    expect(await rowOf(job.delivery.id)).toMatchObject({ state: 'pending', attempts: 0, lastError: null })
  })
})

describe('due retries', () => {
  test('start once the retry interval has passed on the clock, with the event body', async () => {
    const s = setup()
    const job = await insertDelivery(database, clock, endpoint)
    await s.retries.recordFailure(job.delivery, endpoint, rejected500, clock.now())
    await s.retries.attemptDue()
    expect(s.attempted).toEqual([])
    clock.advance(INTERVAL_MS - 1)
    await s.retries.attemptDue()
    expect(s.attempted).toEqual([])
    clock.advance(1)
    await s.retries.attemptDue()
    expect(s.attempted).toHaveLength(1)
    expect(s.attempted[0]!.body).toBe(job.body)
    expect(s.attempted[0]!.delivery).toMatchObject({ id: job.delivery.id, attempts: 1, state: 'pending' })
  })

  test('only attempted, pending rows; not first attempts (lanes have those), not finished ones, not those under way', async () => {
    const s = setup()
    const past = new Date(clock.now().getTime() - 1)
    const due = await insertDelivery(database, clock, endpoint, { attempts: 1, nextAttemptAt: past })
    const busy = await insertDelivery(database, clock, endpoint, { attempts: 2, nextAttemptAt: past })
    await insertDelivery(database, clock, endpoint, { attempts: 0, nextAttemptAt: past })
    await insertDelivery(database, clock, endpoint, { attempts: 6, nextAttemptAt: past, state: 'dead' })
    await insertDelivery(database, clock, endpoint, { attempts: 2, nextAttemptAt: past, state: 'delivered' })
    s.inFlight.add(busy.delivery.id)
    await s.retries.attemptDue()
    expect(s.attempted.map((j) => j.delivery.id)).toEqual([due.delivery.id])
  })

  test('the longest due go first', async () => {
    const s = setup()
    const at = (ms: number) => new Date(clock.now().getTime() - ms)
    const b = await insertDelivery(database, clock, endpoint, { attempts: 1, nextAttemptAt: at(10) })
    const a = await insertDelivery(database, clock, endpoint, { attempts: 1, nextAttemptAt: at(20) })
    await s.retries.attemptDue()
    expect(s.attempted.map((j) => j.delivery.id)).toEqual([a.delivery.id, b.delivery.id])
  })

  test('an attempt that throws is logged', async () => {
    const s = setup()
    s.failAttempts()
    const job = await insertDelivery(database, clock, endpoint, { attempts: 1, nextAttemptAt: clock.now() })
    await s.retries.attemptDue()
    await settle()
    expect(s.lines).toContainEqual(expect.objectContaining({ msg: 'retry crashed', delivery: job.delivery.id }))
  })
})

describe('replay', () => {
  test('a dead delivery is due now with a fresh budget of attempts; the count goes on', async () => {
    const s = setup()
    const job = await insertDelivery(database, clock, endpoint, { state: 'dead', attempts: 6, maxAttempts: 6, nextAttemptAt: new Date(0) })
    clock.advance(1000)
    const row = await s.retries.replay(job.delivery.id)
    expect(row).toMatchObject({
      id: job.delivery.id,
      state: 'pending',
      attempts: 6,
      maxAttempts: 6 + 1 + MAX_RETRIES,
      nextAttemptAt: clock.now(),
      updatedAt: clock.now(),
    })
    await s.retries.attemptDue()
    expect(s.attempted.map((j) => j.delivery.id)).toEqual([job.delivery.id])
  })

  test('only a dead delivery', async () => {
    const s = setup()
    const pending = await insertDelivery(database, clock, endpoint, { attempts: 1 })
    const delivered = await insertDelivery(database, clock, endpoint, { state: 'delivered' })
    expect(await s.retries.replay(pending.delivery.id)).toBeUndefined()
    expect(await s.retries.replay(delivered.delivery.id)).toBeUndefined()
    expect(await s.retries.replay('whd_unknown')).toBeUndefined()
    expect((await rowOf(delivered.delivery.id)).state).toBe('delivered')
  })
})

describe('the retry poll', () => {
  test('walks only deliveries that failed an attempt: thousands delivered at their first attempt cost it nothing', async () => {
    const now = clock.now()
    const at = now.toISOString()
    // As the dispatcher writes them (pending, no attempt yet), then delivered at their first attempt.
    await database.db.execute(sql`
      insert into webhook_deliveries (id, event_seq, event_id, endpoint_id, account_id, state, attempts, max_attempts, next_attempt_at, committed_at, created_at, updated_at)
      select 'whd_poll_' || g, g, 'evt_poll_' || g, ${endpoint.id}, 'acct_poll', 'pending', 0, ${1 + MAX_RETRIES}, ${at}, ${at}, ${at}, ${at}
      from generate_series(1, 10000) as g`)
    await database.db.execute(sql`
      insert into events (id, platform_id, account_id, mode, type, body, created_at)
      select 'evt_poll_' || g, ${endpoint.platformId}, 'acct_poll', 'test', 'call.end', '{}', ${at} from generate_series(1, 10000) as g`)
    await database.db.execute(sql`update webhook_deliveries set state = 'delivered', attempts = 1, delivered_at = ${at} where id like 'whd_poll_%'`)
    await database.db.execute(sql`analyze webhook_deliveries`)
    await database.db.execute(sql`analyze events`)
    const q = dueRetries(database.db, new Date(now.getTime() + INTERVAL_MS)).toSQL()
    const plan = await planJson(database.db, q.sql, q.params as string[], 'analyze, buffers')
    // The top node's counts include its children's. With one index of every pending row, the poll
    // visited the pages of the delivered rows (222 blocks here).
    const blocks = ['Hit', 'Read'].map((k) => Number(plan.match(new RegExp(`Shared ${k} Blocks\\W+(\\d+)`))?.[1] ?? 0))
    expect(blocks[0]! + blocks[1]!).toBeLessThan(30)
    expect(await dueRetries(database.db, new Date(now.getTime() + INTERVAL_MS))).toEqual([])
  })
})
