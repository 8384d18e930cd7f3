/**
 * Webhook delivery from the outbox.
 *
 * - dispatch: committed events not yet dispatched become one delivery row per
 *   matching endpoint (same mode, enabled_events match, platform-global or the
 *   event's account), in one transaction with marking the events dispatched.
 * - first attempts run in lanes, one lane per (endpoint, account): inside a lane
 *   they go one after another in commit order; lanes run in parallel.
 * - a failed attempt is retried after WEBHOOK_RETRY_INTERVAL_S (simulated time),
 *   up to 5 retries, then the delivery is dead (the dead-letter queue).
 * - 5 consecutive failed attempts make an endpoint unhealthy: events are then
 *   tried once, without retry, and the platform's administrators are mailed;
 *   one success clears it.
 *
 * Everything is recorded in the database before and after each attempt, so a
 * process killed at any point resumes from the rows: at-least-once.
 */
import { and, asc, eq, gt, inArray, isNull, lte, sql } from 'drizzle-orm'
import type { Clock } from '../clock'
import type { Config } from '../config'
import type { Db } from '../db/client'
import { events, platforms, webhookDeliveries, webhookEndpoints } from '../db/schema'
import { newId } from '../ids'
import type { Logger } from '../logger'
import type { MailTransport } from './mail'
import { signatureHeader } from './signing'
import type { WebhookResult, WebhookTransport } from './webhook-transport'

export const MAX_RETRIES = 5
export const UNHEALTHY_AFTER = 5
const DISPATCH_BATCH = 500
const MAX_PARALLEL = 128

type EndpointRow = typeof webhookEndpoints.$inferSelect
type DeliveryRow = typeof webhookDeliveries.$inferSelect

interface Job {
  delivery: DeliveryRow
  body: string
}

export interface DeliveryEngine {
  start(): Promise<void>
  stop(): Promise<void>
  /** Something was committed to the outbox: look now rather than at the next poll. */
  wake(): void
  /** Puts a dead delivery back in line (operator replay). */
  replay(deliveryId: string): Promise<boolean>
}

export function matchesEndpoint(endpoint: Pick<EndpointRow, 'enabledEvents' | 'status' | 'mode' | 'accountId'>, event: { type: string; mode: string; accountId: string }) {
  return (
    endpoint.status === 'enabled' &&
    endpoint.mode === event.mode &&
    (endpoint.accountId === null || endpoint.accountId === event.accountId) &&
    (endpoint.enabledEvents.includes('*') || endpoint.enabledEvents.includes(event.type))
  )
}

export function createDeliveryEngine(deps: {
  db: Db
  clock: Clock
  config: Config
  log: Logger
  transport: WebhookTransport
  mail: MailTransport
  /** Resolves once this process may deliver (the only deliverer in distributed mode). */
  leadership?: () => Promise<void>
}): DeliveryEngine {
  const { db, clock, config, log, transport, mail } = deps
  const log_ = log.child({ role: 'delivery' })
  const lanes = new Map<string, Job[]>()
  const busyLanes = new Set<string>()
  const inFlight = new Set<string>()
  let running = false
  let wakeRequested = false
  let wakeResolve: (() => void) | undefined
  let loopDone: Promise<void> | undefined
  let active = 0
  const slotWaiters: (() => void)[] = []

  const retryIntervalMs = config.webhookRetryIntervalS * 1000
  const timeoutMs = clock.realDelayMs(config.webhookTimeoutS * 1000)
  const pollMs = 50

  async function slot() {
    if (active < MAX_PARALLEL) {
      active++
      return
    }
    await new Promise<void>((r) => slotWaiters.push(r))
    active++
  }
  function release() {
    active--
    slotWaiters.shift()?.()
  }

  function enqueue(job: Job) {
    const key = `${job.delivery.endpointId}|${job.delivery.accountId}`
    let lane = lanes.get(key)
    if (!lane) lanes.set(key, (lane = []))
    lane.push(job)
    if (!busyLanes.has(key)) void runLane(key)
  }

  async function runLane(key: string) {
    busyLanes.add(key)
    try {
      const lane = lanes.get(key)!
      while (running && lane.length > 0) {
        const job = lane.shift()!
        await attempt(job).catch((err) => log_.error({ err, delivery: job.delivery.id }, 'delivery attempt crashed'))
      }
      if (lane.length === 0) lanes.delete(key)
    } finally {
      busyLanes.delete(key)
    }
  }

  /** Moves committed, undispatched events into delivery rows; returns how many events it took. */
  async function dispatch(): Promise<number> {
    const jobs: Job[] = []
    const taken = await db.transaction(async (tx) => {
      const batch = await tx
        .select({ seq: events.seq, id: events.id, platformId: events.platformId, accountId: events.accountId, mode: events.mode, type: events.type, body: events.body, createdAt: events.createdAt })
        .from(events)
        .where(eq(events.dispatched, false))
        .orderBy(asc(events.seq))
        .limit(DISPATCH_BATCH)
        .for('update', { skipLocked: true })
      if (batch.length === 0) return 0
      const platformIds = [...new Set(batch.map((e) => e.platformId))]
      const endpoints = await tx.select().from(webhookEndpoints).where(and(inArray(webhookEndpoints.platformId, platformIds), eq(webhookEndpoints.status, 'enabled')))
      const now = clock.now()
      const rows: DeliveryRow[] = []
      for (const e of batch) {
        for (const ep of endpoints) {
          if (ep.platformId !== e.platformId || !matchesEndpoint(ep, e)) continue
          rows.push({
            id: newId('webhookDelivery'),
            eventSeq: e.seq,
            eventId: e.id,
            endpointId: ep.id,
            accountId: e.accountId,
            state: 'pending',
            attempts: 0,
            maxAttempts: ep.unhealthySince ? 1 : 1 + MAX_RETRIES,
            nextAttemptAt: now,
            lastStatus: null,
            lastError: null,
            committedAt: e.createdAt,
            firstAttemptAt: null,
            deliveredAt: null,
            createdAt: now,
            updatedAt: now,
          })
          jobs.push({ delivery: rows[rows.length - 1]!, body: e.body })
        }
      }
      for (let i = 0; i < rows.length; i += 1000) await tx.insert(webhookDeliveries).values(rows.slice(i, i + 1000))
      await tx.update(events).set({ dispatched: true }).where(inArray(events.seq, batch.map((e) => e.seq)))
      return batch.length
    })
    // Only after commit: the rows exist, so a crash from here on is recovered by resume().
    for (const job of jobs) enqueue(job)
    return taken
  }

  /** First attempts that were pending when the process stopped, back in their lanes in order. */
  async function resume() {
    const pending = await db
      .select({ d: webhookDeliveries, body: events.body })
      .from(webhookDeliveries)
      .innerJoin(events, eq(events.id, webhookDeliveries.eventId))
      .where(and(eq(webhookDeliveries.state, 'pending'), eq(webhookDeliveries.attempts, 0)))
      .orderBy(asc(webhookDeliveries.eventSeq))
    for (const p of pending) enqueue({ delivery: p.d, body: p.body })
  }

  async function retryDue() {
    const due = await db
      .select({ d: webhookDeliveries, body: events.body })
      .from(webhookDeliveries)
      .innerJoin(events, eq(events.id, webhookDeliveries.eventId))
      .where(and(eq(webhookDeliveries.state, 'pending'), gt(webhookDeliveries.attempts, 0), lte(webhookDeliveries.nextAttemptAt, clock.now())))
      .orderBy(asc(webhookDeliveries.nextAttemptAt))
      .limit(200)
    for (const r of due) {
      if (inFlight.has(r.d.id)) continue
      void attempt({ delivery: r.d, body: r.body }).catch((err) => log_.error({ err, delivery: r.d.id }, 'retry crashed'))
    }
  }

  async function attempt(job: Job) {
    const d = job.delivery
    if (inFlight.has(d.id)) return
    inFlight.add(d.id)
    await slot()
    try {
      const [endpoint] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, d.endpointId))
      if (!endpoint) {
        await db.update(webhookDeliveries).set({ state: 'dead', lastError: 'endpoint deleted', updatedAt: clock.now() }).where(eq(webhookDeliveries.id, d.id))
        return
      }
      const sentAt = clock.now()
      const result = await transport.send({
        url: endpoint.url,
        body: job.body,
        timeoutMs,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Service-Webhook/1.0',
          'x-service-signature': signatureHeader(endpoint.secret, job.body, Math.floor(sentAt.getTime() / 1000)),
          'x-service-account-id': d.accountId,
        },
      })
      await record(d, endpoint, result, sentAt)
    } finally {
      release()
      inFlight.delete(d.id)
    }
  }

  async function record(d: DeliveryRow, endpoint: EndpointRow, result: WebhookResult, sentAt: Date) {
    const now = clock.now()
    const attempts = d.attempts + 1
    if (result.kind === 'acknowledged') {
      await db
        .update(webhookDeliveries)
        .set({ state: 'delivered', attempts, lastStatus: result.status, lastError: null, firstAttemptAt: d.firstAttemptAt ?? sentAt, deliveredAt: now, updatedAt: now })
        .where(eq(webhookDeliveries.id, d.id))
      if (endpoint.consecutiveFailures > 0 || endpoint.unhealthySince) {
        await db.update(webhookEndpoints).set({ consecutiveFailures: 0, unhealthySince: null }).where(eq(webhookEndpoints.id, endpoint.id))
      }
      return
    }
    const reason = result.kind === 'rejected' ? `HTTP ${result.status}` : result.kind === 'refused' ? `refused: ${result.reason}` : result.reason
    const [ep] = await db
      .update(webhookEndpoints)
      .set({ consecutiveFailures: sql`${webhookEndpoints.consecutiveFailures} + 1` })
      .where(eq(webhookEndpoints.id, endpoint.id))
      .returning({ failures: webhookEndpoints.consecutiveFailures, unhealthySince: webhookEndpoints.unhealthySince, platformId: webhookEndpoints.platformId, url: webhookEndpoints.url })
    let unhealthy = ep?.unhealthySince != null
    if (ep && !unhealthy && ep.failures >= UNHEALTHY_AFTER) {
      const [marked] = await db
        .update(webhookEndpoints)
        .set({ unhealthySince: now })
        .where(and(eq(webhookEndpoints.id, endpoint.id), isNull(webhookEndpoints.unhealthySince)))
        .returning({ id: webhookEndpoints.id })
      unhealthy = true
      if (marked) await notifyUnhealthy(endpoint, ep.failures, reason)
    }
    const dead = unhealthy || attempts >= d.maxAttempts
    await db
      .update(webhookDeliveries)
      .set({
        state: dead ? 'dead' : 'pending',
        attempts,
        lastStatus: result.kind === 'rejected' ? result.status : null,
        lastError: reason.slice(0, 500),
        firstAttemptAt: d.firstAttemptAt ?? sentAt,
        nextAttemptAt: new Date(now.getTime() + retryIntervalMs),
        updatedAt: now,
      })
      .where(eq(webhookDeliveries.id, d.id))
  }

  async function notifyUnhealthy(endpoint: EndpointRow, failures: number, reason: string) {
    const [platform] = await db.select({ name: platforms.name, adminEmails: platforms.adminEmails }).from(platforms).where(eq(platforms.id, endpoint.platformId))
    const message = {
      to: platform?.adminEmails ?? [],
      subject: `Webhook endpoint ${endpoint.id} is unhealthy`,
      text:
        `Platform ${platform?.name ?? endpoint.platformId} (${endpoint.platformId}): the webhook endpoint ${endpoint.id} (${endpoint.url}) ` +
        `failed ${failures} deliveries in a row; the last failure was: ${reason}.\n\n` +
        `Until one delivery succeeds, each event is tried once, without retries. Failed deliveries are kept in the dead-letter queue and can be replayed.`,
    }
    await mail.send(message).catch((err) => log_.error({ err, endpoint: endpoint.id }, 'unhealthy-endpoint mail failed'))
  }

  async function loop() {
    await deps.leadership?.()
    await resume()
    while (running) {
      try {
        let taken = await dispatch()
        while (running && taken === DISPATCH_BATCH) taken = await dispatch()
        await retryDue()
      } catch (err) {
        if (running) log_.error({ err }, 'delivery loop failed; retrying')
      }
      if (!running) break
      if (wakeRequested) {
        wakeRequested = false
        continue
      }
      await new Promise<void>((resolve) => {
        wakeResolve = resolve
        setTimeout(resolve, pollMs)
      })
      wakeResolve = undefined
    }
  }

  return {
    async start() {
      running = true
      loopDone = loop()
    },
    async stop() {
      running = false
      wakeResolve?.()
      await loopDone
      // Attempts under way finish (their result is recorded) before the caller closes the database.
      const deadline = Date.now() + 5000
      while (inFlight.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
      transport.close()
    },
    wake() {
      wakeRequested = true
      wakeResolve?.()
    },
    async replay(id) {
      const [row] = await db
        .update(webhookDeliveries)
        .set({ state: 'pending', attempts: 0, maxAttempts: 1 + MAX_RETRIES, nextAttemptAt: clock.now(), updatedAt: clock.now() })
        .where(and(eq(webhookDeliveries.id, id), eq(webhookDeliveries.state, 'dead')))
        .returning()
      if (!row) return false
      const [event] = await db.select({ body: events.body }).from(events).where(eq(events.id, row.eventId))
      if (event) enqueue({ delivery: row, body: event.body })
      return true
    },
  }
}

