/**
 * Webhook delivery from the outbox.
 *
 * - dispatch: committed events not yet dispatched become one delivery row per
 *   matching endpoint (same mode, enabled_events match, platform-global or the
 *   event's account), in one transaction with marking the events dispatched.
 * - first attempts run in lanes, one lane per (endpoint, account): inside a lane
 *   they go one after another in commit order; lanes run in parallel. The next one
 *   goes once the previous is acknowledged; successes are recorded in batches
 *   meanwhile (one statement for all that came in while the last one ran).
 * - a failed attempt is retried after WEBHOOK_RETRY_INTERVAL_S (simulated time),
 *   up to 5 retries, then the delivery is dead (the dead-letter queue).
 * - 5 consecutive failed deliveries (a delivery fails when it dies: its attempts
 *   used up) make an endpoint unhealthy: events are then tried once, without
 *   retry, and the platform's administrators are mailed; one success clears it.
 *   Failed attempts that are still to be retried do not count: a single event
 *   gets its 5 retries even on an endpoint that has never succeeded.
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
/**
 * Under a stream of commits (the last dispatch took events), the next dispatch waits
 * this long (real ms) for more: one dispatch transaction per batch of events rather
 * than per event. An event after a quiet spell is dispatched at once.
 */
const DISPATCH_GATHER_MS = 20
/**
 * A first attempt uses its endpoint's row as read at most this long ago (real ms), by a
 * dispatch or an attempt, instead of reading it again: under load every dispatch reads
 * the rows anyway. So a change to an endpoint (disabled, deleted, new URL or secret)
 * reaches first attempts dispatched before it at most this late.
 */
const ENDPOINT_FRESH_MS = 100
/** Most successful attempts recorded by one statement. */
const RECORD_BATCH = 1000

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

/** A PostgreSQL array literal (text elements quoted), to pass a whole array as one parameter. */
const pgArray = (values: readonly (string | number)[]) =>
  `{${values.map((v) => (typeof v === 'number' ? String(v) : `"${v.replace(/["\\]/g, '\\$&')}"`)).join(',')}}`

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
  /** Endpoint rows by id, with when (performance.now()) they were read: see ENDPOINT_FRESH_MS. */
  const endpointCache = new Map<string, { row: EndpointRow; readAt: number }>()
  /** Successful attempts waiting to be recorded by the next statement (group commit): see recordDelivered. */
  const deliveredQueue: { id: string; endpointId: string; attempts: number; status: number; firstAttemptAt: Date; at: Date; done: (err?: unknown) => void }[] = []
  let recording = false
  let running = false
  /** This process holds the delivery lock (it is the one that delivers). */
  let leading = false
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
        // The lane's next first attempt goes once this one is acknowledged, while it is being
        // recorded (a failure is recorded first). Recording keeps the lane's order, so a crash
        // before it is recorded sends it again on resume, in order: at-least-once, as before.
        await new Promise<void>((next) => {
          attempt(job, next)
            .catch((err) => log_.error({ err, delivery: job.delivery.id }, 'delivery attempt crashed'))
            .finally(next)
        })
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
      // These rows are now the freshest: the first attempts of this batch use them. A
      // cached endpoint of these platforms that is missing was disabled or deleted: forget it.
      const readAt = performance.now()
      const seen = new Set(endpoints.map((ep) => ep.id))
      const ofBatch = new Set(platformIds)
      for (const [id, c] of endpointCache) if (readAt - c.readAt >= ENDPOINT_FRESH_MS || (ofBatch.has(c.row.platformId) && !seen.has(id))) endpointCache.delete(id)
      for (const ep of endpoints) endpointCache.set(ep.id, { row: ep, readAt })
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

  /** One attempt; `acknowledged` is called as soon as the receiver has acknowledged it, before it is recorded. */
  async function attempt(job: Job, acknowledged?: () => void) {
    const d = job.delivery
    if (inFlight.has(d.id)) return
    inFlight.add(d.id)
    await slot()
    try {
      // A first attempt uses the row read moments ago (by its dispatch, mostly); a retry reads it anew.
      const cached = d.attempts === 0 ? endpointCache.get(d.endpointId) : undefined
      let endpoint = cached && performance.now() - cached.readAt < ENDPOINT_FRESH_MS ? cached.row : undefined
      if (!endpoint) {
        ;[endpoint] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, d.endpointId))
        if (endpoint) endpointCache.set(endpoint.id, { row: endpoint, readAt: performance.now() })
        else endpointCache.delete(d.endpointId)
      }
      if (!endpoint || endpoint.status !== 'enabled') {
        // A disabled endpoint gets nothing more, retries included; the delivery stays replayable.
        await db
          .update(webhookDeliveries)
          .set({ state: 'dead', lastError: endpoint ? 'endpoint disabled' : 'endpoint deleted', updatedAt: clock.now() })
          .where(eq(webhookDeliveries.id, d.id))
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
      if (result.kind === 'acknowledged') acknowledged?.()
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
      await recordDelivered({ id: d.id, endpointId: endpoint.id, attempts, status: result.status, firstAttemptAt: d.firstAttemptAt ?? sentAt, at: now })
      return
    }
    const reason = result.kind === 'rejected' ? `HTTP ${result.status}` : result.kind === 'refused' ? `refused: ${result.reason}` : result.reason
    // Health as it is now (another delivery may have changed it while this attempt was out):
    // an unhealthy endpoint gets no retry.
    const [current] = await db.select({ unhealthySince: webhookEndpoints.unhealthySince }).from(webhookEndpoints).where(eq(webhookEndpoints.id, endpoint.id))
    const dead = current?.unhealthySince != null || attempts >= d.maxAttempts
    const failed = {
      state: dead ? ('dead' as const) : ('pending' as const),
      attempts,
      lastStatus: result.kind === 'rejected' ? result.status : null,
      lastError: reason.slice(0, 500),
      firstAttemptAt: d.firstAttemptAt ?? sentAt,
      nextAttemptAt: new Date(now.getTime() + retryIntervalMs),
      updatedAt: now,
    }
    if (!dead) {
      await db.update(webhookDeliveries).set(failed).where(eq(webhookDeliveries.id, d.id))
      return
    }
    // A failed delivery (not a failed attempt) counts toward the endpoint's health, in the
    // same transaction as the delivery's death so that a crash cannot count it twice or never.
    const becameUnhealthy = await db.transaction(async (tx) => {
      await tx.update(webhookDeliveries).set(failed).where(eq(webhookDeliveries.id, d.id))
      const [ep] = await tx
        .update(webhookEndpoints)
        .set({ consecutiveFailures: sql`${webhookEndpoints.consecutiveFailures} + 1` })
        .where(eq(webhookEndpoints.id, endpoint.id))
        .returning({ failures: webhookEndpoints.consecutiveFailures, unhealthySince: webhookEndpoints.unhealthySince })
      if (!ep || ep.unhealthySince != null || ep.failures < UNHEALTHY_AFTER) return undefined
      const [marked] = await tx
        .update(webhookEndpoints)
        .set({ unhealthySince: now })
        .where(and(eq(webhookEndpoints.id, endpoint.id), isNull(webhookEndpoints.unhealthySince)))
        .returning({ id: webhookEndpoints.id })
      return marked ? ep.failures : undefined
    })
    // Mailed once, by whoever marked it, after commit.
    if (becameUnhealthy !== undefined) await notifyUnhealthy(endpoint, becameUnhealthy, reason)
  }

  /**
   * Records a successful attempt; resolves once it is committed. Successes that come in
   * while a recording statement is out wait for the next one, which records them all
   * (group commit): one statement per batch instead of two per attempt. The endpoints
   * are made healthy in the same statement, judged on their rows as they are then, not
   * as read before sending: a failure recorded while an attempt was out (even one that
   * made the endpoint unhealthy) is cleared too.
   */
  function recordDelivered(entry: Omit<(typeof deliveredQueue)[number], 'done'>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      deliveredQueue.push({ ...entry, done: (err) => (err === undefined ? resolve() : reject(err)) })
      if (!recording) void flushDelivered()
    })
  }

  async function flushDelivered() {
    recording = true
    try {
      while (deliveredQueue.length > 0) {
        const batch = deliveredQueue.splice(0, RECORD_BATCH)
        try {
          // Arrays as single parameters: the same statement text whatever the batch size.
          await db.execute(sql`
            with delivered as (
              update ${webhookDeliveries} as d
              set state = 'delivered', attempts = v.attempts, last_status = v.status, last_error = null,
                  first_attempt_at = v.first_attempt_at, delivered_at = v.at, updated_at = v.at
              from unnest(${pgArray(batch.map((e) => e.id))}::text[], ${pgArray(batch.map((e) => e.attempts))}::int[], ${pgArray(batch.map((e) => e.status))}::int[],
                          ${pgArray(batch.map((e) => e.firstAttemptAt.toISOString()))}::timestamptz[], ${pgArray(batch.map((e) => e.at.toISOString()))}::timestamptz[])
                   as v(id, attempts, status, first_attempt_at, at)
              where d.id = v.id
              returning d.endpoint_id
            )
            update ${webhookEndpoints} set consecutive_failures = 0, unhealthy_since = null
            where id in (select endpoint_id from delivered) and (consecutive_failures > 0 or unhealthy_since is not null)`)
          for (const e of batch) e.done()
        } catch (err) {
          for (const e of batch) e.done(err ?? new Error('recording failed'))
        }
      }
    } finally {
      recording = false
    }
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
    // Wait to be the one that delivers, then put back what was under way. Stopping while
    // still waiting (a standby: the wait is aborted) is a normal end, not an error; a
    // failure to ask or to resume (the database went away) is retried, not fatal.
    for (;;) {
      try {
        try {
      await deps.leadership?.()
    } catch (err) {
      // Stopped while standing by for the lock: nothing to deliver, nothing to report.
      if (!running) return
      throw err
    }
        leading = true
        break
      } catch (err) {
        if (!running) return
        log_.error({ err }, 'waiting for the delivery lock failed; retrying')
        await new Promise((r) => setTimeout(r, 1000))
      }
    }
    while (running) {
      try {
        await resume()
        break
      } catch (err) {
        if (!running) return
        log_.error({ err }, 'resuming deliveries failed; retrying')
        await new Promise((r) => setTimeout(r, 1000))
      }
    }
    let lastRetryCheck = -Infinity
    while (running) {
      let taken = 0
      try {
        taken = await dispatch()
        while (running && taken === DISPATCH_BATCH) taken = await dispatch()
        // Under a stream of commits the loop turns once per batch: look for due retries
        // once per poll interval then, not on every turn.
        if (taken === 0 || performance.now() - lastRetryCheck >= pollMs) {
          lastRetryCheck = performance.now()
          await retryDue()
        }
      } catch (err) {
        if (running) log_.error({ err }, 'delivery loop failed; retrying')
      }
      if (!running) break
      if (wakeRequested) {
        wakeRequested = false
        // Events are coming in: gather a batch of them rather than dispatching one by one.
        if (taken > 0) await new Promise((r) => setTimeout(r, DISPATCH_GATHER_MS))
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
      leading = false
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
      // Back in line as a retry due now, with a fresh budget of attempts (the count goes on).
      // The delivering process picks it up from the row: this process when it holds the
      // delivery lock, else the one that does. A standby that got the operator's request
      // must not send it itself, or two processes would deliver at once.
      const now = clock.now()
      const [row] = await db
        .update(webhookDeliveries)
        .set({ state: 'pending', maxAttempts: sql`${webhookDeliveries.attempts} + ${1 + MAX_RETRIES}`, nextAttemptAt: now, updatedAt: now })
        .where(and(eq(webhookDeliveries.id, id), eq(webhookDeliveries.state, 'dead')))
        .returning()
      if (!row) return false
      if (row.attempts > 0) {
        wakeRequested = true
        wakeResolve?.()
      } else if (leading) {
        // Never attempted (its endpoint was gone): retries only cover attempted rows, so
        // it goes to its lane; elsewhere the next delivering process resumes it.
        const [event] = await db.select({ body: events.body }).from(events).where(eq(events.id, row.eventId))
        if (event) enqueue({ delivery: row, body: event.body })
      }
      return true
    },
  }
}

