/**
 * Health alone: failed deliveries counted toward an endpoint (unhealthy once, at
 * UNHEALTHY_AFTER), the operator mail, and the group-committed recording of
 * successes that clears health. A real database (PGlite; a scratch PostgreSQL
 * database with DATABASE_URL).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { manualClock } from '../../clock'
import type { Database, Db } from '../../db/client'
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema'
import type { MailMessage } from '../mail'
import { createHealth, type Delivered, DeliveredRecorder, UNHEALTHY_AFTER } from './health'
import { clearDeliveryTables, insertDelivery, insertEndpoint, insertPlatform, openTestDatabase, recordingLogger } from './test-fixtures'

const clock = manualClock()
let t: Awaited<ReturnType<typeof openTestDatabase>>
let database: Database
let platformId: string

beforeAll(async () => {
  t = await openTestDatabase('health')
  database = t.database
})
afterAll(() => t?.dispose())
beforeEach(async () => {
  await clearDeliveryTables(database)
  platformId = await insertPlatform(database, clock, ['ops@example.com', 'cto@example.com'])
})

const endpointOf = async (id: string) => (await database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)))[0]!
const deliveryOf = async (id: string) => (await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)))[0]!

function mailbox() {
  const sent: MailMessage[] = []
  return { sent, send: async (m: MailMessage) => void sent.push(m) }
}

describe('failed deliveries', () => {
  test(`${UNHEALTHY_AFTER} in a row make the endpoint unhealthy, reported once`, async () => {
    const health = createHealth({ db: database.db, mail: mailbox(), log: recordingLogger().log })
    const ep = await insertEndpoint(database, clock, { platformId })
    const reported: (number | undefined)[] = []
    for (let i = 1; i <= UNHEALTHY_AFTER + 1; i++) reported.push(await database.db.transaction((tx) => health.countFailedDelivery(tx, ep.id, clock.now())))
    expect(reported).toEqual([undefined, undefined, undefined, undefined, UNHEALTHY_AFTER, undefined])
    const row = await endpointOf(ep.id)
    expect(row.consecutiveFailures).toBe(UNHEALTHY_AFTER + 1)
    expect(row.unhealthySince).toEqual(clock.now())
    expect(await health.isUnhealthy(ep.id)).toBe(true)
  })

  test('counted in the transaction given: rolled back with it', async () => {
    const health = createHealth({ db: database.db, mail: mailbox(), log: recordingLogger().log })
    const ep = await insertEndpoint(database, clock, { platformId, consecutiveFailures: UNHEALTHY_AFTER - 1 })
    await expect(
      database.db.transaction(async (tx) => {
        expect(await health.countFailedDelivery(tx, ep.id, clock.now())).toBe(UNHEALTHY_AFTER)
        throw new Error('crash before commit')
      }),
    ).rejects.toThrow('crash before commit')
    expect(await endpointOf(ep.id)).toMatchObject({ consecutiveFailures: UNHEALTHY_AFTER - 1, unhealthySince: null })
  })

  test('an endpoint that is gone counts nothing; a healthy or missing one is not unhealthy', async () => {
    const health = createHealth({ db: database.db, mail: mailbox(), log: recordingLogger().log })
    expect(await database.db.transaction((tx) => health.countFailedDelivery(tx, 'we_gone', clock.now()))).toBeUndefined()
    expect(await health.isUnhealthy('we_gone')).toBe(false)
    const ep = await insertEndpoint(database, clock, { platformId })
    expect(await health.isUnhealthy(ep.id)).toBe(false)
  })
})

describe('the operator mail', () => {
  test("goes to the platform's administrators, saying what failed", async () => {
    const mail = mailbox()
    const health = createHealth({ db: database.db, mail, log: recordingLogger().log })
    const ep = await insertEndpoint(database, clock, { platformId, url: 'https://hooks.example.com/x' })
    await health.notifyUnhealthy(ep, 5, 'HTTP 503')
    expect(mail.sent).toHaveLength(1)
    const [m] = mail.sent
    expect(m!.to).toEqual(['ops@example.com', 'cto@example.com'])
    expect(m!.subject).toBe(`Webhook endpoint ${ep.id} is unhealthy`)
    expect(m!.text).toContain(`Platform Platform ${platformId} (${platformId})`)
    expect(m!.text).toContain('https://hooks.example.com/x')
    expect(m!.text).toContain('failed 5 deliveries in a row; the last failure was: HTTP 503.')
  })

  test('a failure to send is logged, not thrown', async () => {
    const { log, lines } = recordingLogger()
    const health = createHealth({
      db: database.db,
      mail: {
        send: async () => {
          throw new Error('smtp down')
        },
      },
      log,
    })
    const ep = await insertEndpoint(database, clock, { platformId })
    await health.notifyUnhealthy(ep, 5, 'HTTP 500')
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'unhealthy-endpoint mail failed', endpoint: ep.id }))
  })
})

describe('recording successes', () => {
  /** The database with its execute() counted (and failing while `failNext` is set). */
  /** The database, counting (and on demand failing) the statements sent through its driver. */
  function countingDb() {
    const counter = { statements: 0, failNext: false }
    const counting = (client: object) =>
      new Proxy(client, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target)
          if ((prop !== 'unsafe' && prop !== 'query') || typeof value !== 'function') return value
          return (...args: unknown[]) => {
            counter.statements++
            if (counter.failNext) {
              counter.failNext = false
              return Promise.reject(new Error('connection reset'))
            }
            return value.apply(target, args)
          }
        },
      })
    const db = new Proxy(database.db, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target)
        if (prop !== 'session') return value
        const session = value as { client: object }
        return new Proxy(session, { get: (s, p) => (p === 'client' ? counting(s.client) : Reflect.get(s, p, s)) })
      },
    }) as Db
    return { db, counter }
  }

  const success = (id: string, endpointId: string, attempts = 1): Delivered => ({
    id,
    endpointId,
    attempts,
    status: 200,
    firstAttemptAt: new Date(clock.now().getTime() - 1000),
    sentAt: clock.now(),
    durationMs: 12,
    at: clock.now(),
  })

  test('marks the delivery delivered and clears the endpoint, unhealthy or not', async () => {
    const recorder = new DeliveredRecorder(database.db)
    const ep = await insertEndpoint(database, clock, { platformId, consecutiveFailures: 7, unhealthySince: clock.now() })
    const job = await insertDelivery(database, clock, ep, { attempts: 2, lastError: 'HTTP 500', lastStatus: 500 })
    await recorder.record(success(job.delivery.id, ep.id, 3))
    expect(await deliveryOf(job.delivery.id)).toMatchObject({
      state: 'delivered',
      attempts: 3,
      lastStatus: 200,
      lastError: null,
      firstAttemptAt: new Date(clock.now().getTime() - 1000),
      deliveredAt: clock.now(),
      updatedAt: clock.now(),
    })
    expect(await endpointOf(ep.id)).toMatchObject({ consecutiveFailures: 0, unhealthySince: null })
  })

  test('successes that come in while a statement is out are recorded together by the next one', async () => {
    const { db, counter } = countingDb()
    const recorder = new DeliveredRecorder(db)
    const ep = await insertEndpoint(database, clock, { platformId })
    const jobs = await Promise.all([1, 2, 3, 4].map((i) => insertDelivery(database, clock, ep, { accountId: `acct_${i}` })))
    await Promise.all(jobs.map((j) => recorder.record(success(j.delivery.id, ep.id))))
    // The first alone (nothing was out), then the other three in one statement, each with its attempt logged by that statement.
    expect(counter.statements).toBe(2)
    for (const j of jobs) expect((await deliveryOf(j.delivery.id)).state).toBe('delivered')
    for (const j of jobs) {
      const logged = await database.db.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, j.delivery.id))
      expect(logged).toMatchObject([
        {
          endpointId: ep.id,
          eventId: j.delivery.eventId,
          eventSeq: j.delivery.eventSeq,
          attempt: 1,
          succeeded: true,
          statusCode: 200,
          failureReason: null,
          durationMs: 12,
        },
      ])
      expect(logged[0]!.eventType.length).toBeGreaterThan(0)
    }
    expect(recorder.waiting).toBe(0)
  })

  test('a statement records at most its batch size', async () => {
    const { db, counter } = countingDb()
    const recorder = new DeliveredRecorder(db, 2)
    const ep = await insertEndpoint(database, clock, { platformId })
    const jobs = await Promise.all([1, 2, 3, 4, 5].map((i) => insertDelivery(database, clock, ep, { accountId: `acct_${i}` })))
    await Promise.all(jobs.map((j) => recorder.record(success(j.delivery.id, ep.id))))
    expect(counter.statements).toBe(3) // [1], [2, 3], [4, 5]
  })

  test('a failed statement rejects its whole batch; later successes are still recorded', async () => {
    const { db, counter } = countingDb()
    const recorder = new DeliveredRecorder(db)
    const ep = await insertEndpoint(database, clock, { platformId })
    const [a, b, c] = await Promise.all([1, 2, 3].map((i) => insertDelivery(database, clock, ep, { accountId: `acct_${i}` })))
    const first = recorder.record(success(a!.delivery.id, ep.id)) // its statement is out already
    counter.failNext = true // so the next one fails: the one that records b and c
    const rest = Promise.all([recorder.record(success(b!.delivery.id, ep.id)), recorder.record(success(c!.delivery.id, ep.id))])
    const outcomes = await Promise.allSettled([first, rest])
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected'])
    expect((await deliveryOf(a!.delivery.id)).state).toBe('delivered')
    expect((await deliveryOf(b!.delivery.id)).state).toBe('pending')
    await recorder.record(success(c!.delivery.id, ep.id))
    expect((await deliveryOf(c!.delivery.id)).state).toBe('delivered')
  })
})
