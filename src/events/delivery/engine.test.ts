/**
 * The engine as composed: the loop dispatches committed events, first attempts go
 * out in commit order, failures are retried when the manual clock says so, health
 * turns and clears, dead deliveries are replayed, pending work resumes at start,
 * and a standby delivers nothing and stops cleanly. A fake WebhookTransport; a real
 * database (PGlite; a scratch PostgreSQL database with DATABASE_URL). The engine's
 * own short real-time poll drives it: the tests wait on conditions, bounded.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { manualClock } from '../../clock'
import { loadConfig } from '../../config'
import type { Database } from '../../db/client'
import { webhookDeliveries, webhookEndpoints } from '../../db/schema'
import type { MailMessage } from '../mail'
import type { WebhookRequest, WebhookResult } from '../webhook-transport'
import { createDeliveryEngine, type DeliveryEngine } from './engine'
import { MAX_RETRIES, UNHEALTHY_AFTER } from './index'
import {
  clearDeliveryTables,
  deferred,
  fakeTransport,
  insertDelivery,
  insertEndpoint,
  insertEvent,
  insertPlatform,
  openTestDatabase,
  recordingLogger,
  settle,
  until,
} from './test-fixtures'

const INTERVAL_S = 60
const config = loadConfig({ WEBHOOK_RETRY_INTERVAL_S: String(INTERVAL_S), WEBHOOK_TIMEOUT_S: '5' })
let t: Awaited<ReturnType<typeof openTestDatabase>>
let database: Database
let platformId: string
let engine: DeliveryEngine | undefined

beforeAll(async () => {
  t = await openTestDatabase('engine')
  database = t.database
})
afterAll(() => t?.dispose())
beforeEach(async () => {
  await clearDeliveryTables(database)
  platformId = await insertPlatform(database, manualClock(), ['ops@example.com'])
})
afterEach(async () => {
  await engine?.stop()
  engine = undefined
})

function start(opts: { respond?: (req: WebhookRequest) => WebhookResult | Promise<WebhookResult>; leadership?: () => Promise<void> } = {}) {
  const clock = manualClock()
  const transport = fakeTransport(opts.respond)
  const mail: MailMessage[] = []
  const { log, lines } = recordingLogger()
  engine = createDeliveryEngine({
    db: database.db,
    clock,
    config,
    log,
    transport,
    mail: { send: async (m) => void mail.push(m) },
    leadership: opts.leadership,
  })
  return { engine, clock, transport, mail, lines }
}

const deliveryOf = async (id: string) => (await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)))[0]!
const deliveriesOfEvent = (eventId: string) => database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.eventId, eventId))
const bodiesSent = (sent: WebhookRequest[]) => sent.map((r) => JSON.parse(r.body).id as string)

describe('delivery engine', () => {
  test('committed events are delivered, per account in commit order, and recorded', async () => {
    const s = start()
    const ep = await insertEndpoint(database, s.clock, { platformId })
    const ofA = [await insertEvent(database, s.clock, { platformId, accountId: 'acct_a' })]
    await s.engine.start()
    // Committed while the engine runs: the wake-up says so.
    ofA.push(await insertEvent(database, s.clock, { platformId, accountId: 'acct_a' }))
    const ofB = await insertEvent(database, s.clock, { platformId, accountId: 'acct_b' })
    ofA.push(await insertEvent(database, s.clock, { platformId, accountId: 'acct_a' }))
    s.engine.wake()
    await until('all sent', () => s.transport.sent.length === 4)
    expect(bodiesSent(s.transport.sent).filter((id) => id !== ofB.id)).toEqual(ofA.map((e) => e.id))
    const ids = [...ofA, ofB].map((e) => e.id)
    for (const id of ids) await until(`${id} recorded`, async () => (await deliveriesOfEvent(id))[0]?.state === 'delivered')
    const [row] = await deliveriesOfEvent(ids[0]!)
    expect(row).toMatchObject({ endpointId: ep.id, attempts: 1, lastStatus: 200 })
  })

  test('a failed attempt is retried once the retry interval has passed on the clock', async () => {
    const s = start({ respond: () => (s.transport.sent.length === 1 ? { kind: 'rejected', status: 503 } : { kind: 'acknowledged', status: 200 }) })
    await insertEndpoint(database, s.clock, { platformId })
    const event = await insertEvent(database, s.clock, { platformId, accountId: 'acct_a' })
    await s.engine.start()
    await until('the first attempt is recorded', async () => (await deliveriesOfEvent(event.id))[0]?.attempts === 1)
    // Nothing is due until the clock moves.
    expect(s.transport.sent).toHaveLength(1)
    s.clock.advance(INTERVAL_S * 1000)
    await until('delivered on retry', async () => (await deliveriesOfEvent(event.id))[0]?.state === 'delivered')
    expect(s.transport.sent).toHaveLength(2)
    expect((await deliveriesOfEvent(event.id))[0]).toMatchObject({ attempts: 2, lastStatus: 200 })
  })

  test(`dead after ${MAX_RETRIES} retries; the death that makes the endpoint unhealthy mails once; one success clears it`, async () => {
    let fail = true
    const s = start({ respond: () => (fail ? { kind: 'rejected', status: 500 } : { kind: 'acknowledged', status: 200 }) })
    const ep = await insertEndpoint(database, s.clock, { platformId, consecutiveFailures: UNHEALTHY_AFTER - 1 })
    const event = await insertEvent(database, s.clock, { platformId, accountId: 'acct_a' })
    await s.engine.start()
    for (let attempt = 1; attempt <= 1 + MAX_RETRIES; attempt++) {
      await until(`attempt ${attempt} recorded`, async () => (await deliveriesOfEvent(event.id))[0]?.attempts === attempt)
      s.clock.advance(INTERVAL_S * 1000)
    }
    expect((await deliveriesOfEvent(event.id))[0]).toMatchObject({ state: 'dead', attempts: 1 + MAX_RETRIES, lastError: 'HTTP 500' })
    await until('mailed', () => s.mail.length === 1)
    expect(s.mail[0]!.to).toEqual(['ops@example.com'])
    const [unhealthy] = await database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, ep.id))
    expect(unhealthy).toMatchObject({ consecutiveFailures: UNHEALTHY_AFTER, unhealthySince: s.clock.now() })

    // Unhealthy: the next event is tried once, without retries, and no second mail.
    const once = await insertEvent(database, s.clock, { platformId, accountId: 'acct_a' })
    s.engine.wake()
    await until('tried once and dead', async () => (await deliveriesOfEvent(once.id))[0]?.state === 'dead')
    expect((await deliveriesOfEvent(once.id))[0]).toMatchObject({ attempts: 1, maxAttempts: 1 })

    fail = false
    const ok = await insertEvent(database, s.clock, { platformId, accountId: 'acct_a' })
    s.engine.wake()
    await until('delivered', async () => (await deliveriesOfEvent(ok.id))[0]?.state === 'delivered')
    const [healthy] = await database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, ep.id))
    expect(healthy).toMatchObject({ consecutiveFailures: 0, unhealthySince: null })
    expect(s.mail).toHaveLength(1)
  })

  test('at start, first attempts left pending by a stopped process go out in commit order', async () => {
    const s = start()
    const ep = await insertEndpoint(database, s.clock, { platformId })
    const second = await insertDelivery(database, s.clock, ep, { eventSeq: 2 })
    const first = await insertDelivery(database, s.clock, ep, { eventSeq: 1 })
    await s.engine.start()
    await until('both sent', () => s.transport.sent.length === 2)
    expect(s.transport.sent.map((r) => r.body)).toEqual([first.body, second.body])
  })

  test('replay: an attempted dead delivery goes out again as a retry; a never-attempted one through its lane', async () => {
    const s = start()
    const ep = await insertEndpoint(database, s.clock, { platformId })
    const attempted = await insertDelivery(database, s.clock, ep, { state: 'dead', attempts: 6, maxAttempts: 6, lastError: 'HTTP 500' })
    const never = await insertDelivery(database, s.clock, ep, { state: 'dead', attempts: 0, lastError: 'endpoint disabled' })
    const warmUp = await insertEvent(database, s.clock, { platformId, accountId: 'acct_b' })
    await s.engine.start()
    // Once this is delivered the engine is leading and has resumed (dead rows are not resumed).
    await until('leading', async () => (await deliveriesOfEvent(warmUp.id))[0]?.state === 'delivered')
    expect(s.transport.sent).toHaveLength(1)
    expect(await s.engine.replay(attempted.delivery.id)).toBe(true)
    expect(await s.engine.replay(never.delivery.id)).toBe(true)
    await until(
      'both delivered',
      async () => (await deliveryOf(attempted.delivery.id)).state === 'delivered' && (await deliveryOf(never.delivery.id)).state === 'delivered',
    )
    expect((await deliveryOf(attempted.delivery.id)).attempts).toBe(7)
    expect(await s.engine.replay(attempted.delivery.id)).toBe(false) // no longer dead
  })

  test('a standby delivers nothing, leaves replayed first attempts to the deliverer, and stops cleanly', async () => {
    const lock = deferred()
    let asked = false
    const s = start({
      leadership: () => {
        asked = true
        return lock.promise
      },
    })
    const ep = await insertEndpoint(database, s.clock, { platformId })
    const event = await insertEvent(database, s.clock, { platformId, accountId: 'acct_a' })
    const never = await insertDelivery(database, s.clock, ep, { state: 'dead', attempts: 0 })
    await s.engine.start()
    await until('standing by', () => asked)
    expect(await s.engine.replay(never.delivery.id)).toBe(true)
    s.engine.wake()
    await settle()
    const stopping = s.engine.stop()
    lock.reject(new Error('aborted')) // the wait for the lock is given up when stopping
    await stopping
    engine = undefined
    expect(s.transport.sent).toEqual([])
    expect(s.transport.closed).toBe(true)
    expect((await deliveryOf(never.delivery.id)).state).toBe('pending')
    expect(await deliveriesOfEvent(event.id)).toEqual([]) // not dispatched
    expect(s.lines.filter((l) => l.level >= 50)).toEqual([])
  })

  test('stop lets an attempt under way finish and be recorded, then closes the transport', async () => {
    const answer = deferred<WebhookResult>()
    const s = start({ respond: () => answer.promise })
    await insertEndpoint(database, s.clock, { platformId })
    const event = await insertEvent(database, s.clock, { platformId, accountId: 'acct_a' })
    await s.engine.start()
    await until('sent', () => s.transport.sent.length === 1)
    const stopping = s.engine.stop()
    engine = undefined
    await settle()
    expect(s.transport.closed).toBe(false)
    answer.resolve({ kind: 'acknowledged', status: 200 })
    await stopping
    expect(s.transport.closed).toBe(true)
    expect((await deliveriesOfEvent(event.id))[0]!.state).toBe('delivered')
  })
})
