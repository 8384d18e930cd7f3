/**
 * The delivery engine: composes the parts and runs the loop.
 *
 * - dispatch (dispatch.ts): committed, undispatched events become delivery rows;
 *   their first attempts go to lanes (lanes.ts), one per (endpoint, account), in
 *   commit order, lanes in parallel. Resume puts back what was pending at a restart.
 * - attempts (attempt.ts): one signed POST each, within the parallelism cap.
 * - retries (retries.ts): failed attempts are retried after the retry interval,
 *   then dead; replay of a dead delivery.
 * - health (health.ts): failed deliveries in a row make an endpoint unhealthy; one
 *   success clears it; successes are recorded by group commit.
 *
 * The loop: wait to be the one that delivers (leadership), resume, then dispatch
 * and start due retries, woken by commits (wake) or by a short poll. A lead can be
 * lost without this process doing anything (the database connection that held the
 * lock died, and with it the lock): then delivery stops, what waited in the lanes is
 * left to the rows, and the loop waits to lead again. A new leader waits a moment
 * before it delivers, long enough for a previous leader to have noticed its loss.
 *
 * Everything is recorded in the database before and after each attempt, so a
 * process killed at any point resumes from the rows: at-least-once.
 */
import { eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Config } from '../../config'
import { type Db, LEADERSHIP_CHECK_MS } from '../../db/client'
import { events } from '../../db/schema'
import type { Logger } from '../../logger'
import type { MailTransport } from '../mail'
import type { WebhookTransport } from '../webhook-transport'
import { createAttempter, EndpointCache, Slots } from './attempt'
import { createDispatcher, DISPATCH_BATCH } from './dispatch'
import { createHealth, DeliveredRecorder } from './health'
import { Lanes } from './lanes'
import { createRetries } from './retries'

/**
 * Under a stream of commits (the last dispatch took events), the next dispatch waits
 * this long (real ms) for more: one dispatch transaction per batch of events rather
 * than per event. An event after a quiet spell is dispatched at once.
 */
const DISPATCH_GATHER_MS = 20
/** How often (real ms) the loop looks for work when nothing wakes it. */
const POLL_MS = 50
/** After a failure to take the delivery lock or to resume, wait this long (real ms) before trying again. */
const RETRY_START_MS = 1000
/** stop() lets attempts under way finish for at most this long (real ms). */
const STOP_DRAIN_MS = 5000
/**
 * A new leader waits this long (real ms) before it delivers: a leader whose lock went
 * with its connection notices within LEADERSHIP_CHECK_MS, and stops.
 */
export const TAKEOVER_GRACE_MS = 2 * LEADERSHIP_CHECK_MS

/** A lead that can end on its own: `lost` settles when the lock is no longer held. */
export interface DeliveryLease {
  lost: Promise<unknown>
  release(): Promise<void>
}

export interface DeliveryEngine {
  start(): Promise<void>
  stop(): Promise<void>
  /** Something was committed to the outbox: look now rather than at the next poll. */
  wake(): void
  /** Puts a dead delivery back in line (operator replay). */
  replay(deliveryId: string): Promise<boolean>
}

/** The loop's wake-up: a request made while the loop is busy is kept for its next turn. */
class Wakeup {
  private requested = false
  private resolveSleep: (() => void) | undefined

  request() {
    this.requested = true
    this.resolveSleep?.()
  }

  /** Whether a wake-up was requested since the last call (and forgets it). */
  take() {
    const was = this.requested
    this.requested = false
    return was
  }

  /** Sleeps up to `ms` (real), or until request() or interrupt(). */
  async sleep(ms: number) {
    await new Promise<void>((resolve) => {
      this.resolveSleep = resolve
      setTimeout(resolve, ms)
    })
    this.resolveSleep = undefined
  }

  /** Ends a sleep under way without requesting a turn. */
  interrupt() {
    this.resolveSleep?.()
  }
}

export function createDeliveryEngine(deps: {
  db: Db
  clock: Clock
  config: Config
  log: Logger
  transport: WebhookTransport
  mail: MailTransport
  /** Resolves once this process may deliver (the only deliverer in distributed mode), with the lease when it can be lost. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a lock that cannot be lost (one process, the tests' deferreds) resolves with nothing
  leadership?: () => Promise<void | DeliveryLease>
}): DeliveryEngine {
  const { db, clock, config, transport, mail } = deps
  const log = deps.log.child({ role: 'delivery' })
  const state = {
    running: false,
    /** This process holds the delivery lock (it is the one that delivers). */
    leading: false,
    /** The lease of the current lead, when it can be lost. */
    lease: undefined as DeliveryLease | undefined,
    loopDone: undefined as Promise<void> | undefined,
  }
  const wakeup = new Wakeup()

  const endpoints = new EndpointCache()
  const health = createHealth({ db, mail, log })
  const successes = new DeliveredRecorder(db)
  const retries = createRetries({
    db,
    clock,
    retryIntervalMs: config.webhookRetryIntervalS * 1000,
    health,
    attempt: (job) => attempter.attempt(job),
    inFlight: (id) => attempter.inFlight(id),
    log,
  })
  const attempter = createAttempter({
    db,
    clock,
    transport,
    timeoutMs: clock.realDelayMs(config.webhookTimeoutS * 1000),
    endpoints,
    slots: new Slots(),
    outcome: { delivered: (entry) => successes.record(entry), failed: retries.recordFailure },
  })
  const lanes = new Lanes({ attempt: attempter.attempt, active: () => state.running && state.leading, log })
  const dispatcher = createDispatcher({ db, clock, endpoints, enqueue: (job) => lanes.enqueue(job) })

  /** Waits to lead; undefined when stopped meanwhile. */
  async function lead(): Promise<{ lease: DeliveryLease | undefined } | undefined> {
    // Stopping while still waiting (a standby: the wait is aborted) is a normal end, not
    // an error; a failure to ask (the database went away) is retried, not fatal.
    for (;;) {
      try {
        try {
          return { lease: (await deps.leadership?.()) ?? undefined }
        } catch (err) {
          // Stopped while standing by for the lock: nothing to deliver, nothing to report.
          if (!state.running) return undefined
          throw err
        }
      } catch (err) {
        if (!state.running) return undefined
        log.error({ err }, 'waiting for the delivery lock failed; retrying')
        await new Promise((r) => setTimeout(r, RETRY_START_MS))
      }
    }
  }

  async function loop() {
    while (state.running) {
      const led = await lead()
      if (!led) return
      const { lease } = led
      state.leading = true
      if (lease) {
        void lease.lost.then(() => {
          if (!state.leading || state.lease !== lease) return
          log.warn('lost the delivery lock (its database connection ended): delivery stops here until this process leads again')
          state.leading = false
          wakeup.interrupt()
        })
        state.lease = lease
        // Not the wake-up's sleep: commits would cut the grace short.
        await new Promise((r) => setTimeout(r, TAKEOVER_GRACE_MS))
        if (!state.running) return
      }
      log.info('delivering webhooks (holding the delivery lock)')
      await deliverWhileLeading()
      if (!state.running) return
      // Lost: forget what waited in the lanes (the rows keep it), let attempts under way finish, give the connection back.
      lanes.clear()
      await attempter.drain(STOP_DRAIN_MS)
      await lease?.release().catch(() => {})
    }
  }

  async function deliverWhileLeading() {
    while (state.running && state.leading) {
      try {
        await dispatcher.resume()
        break
      } catch (err) {
        if (!state.running) return
        log.error({ err }, 'resuming deliveries failed; retrying')
        await new Promise((r) => setTimeout(r, RETRY_START_MS))
      }
    }
    let lastRetryCheck = -Infinity
    while (state.running && state.leading) {
      let taken = 0
      try {
        taken = await dispatcher.dispatch()
        while (state.running && state.leading && taken === DISPATCH_BATCH) taken = await dispatcher.dispatch()
        // Under a stream of commits the loop turns once per batch: look for due retries
        // once per poll interval then, not on every turn.
        if (taken === 0 || performance.now() - lastRetryCheck >= POLL_MS) {
          lastRetryCheck = performance.now()
          await retries.attemptDue()
        }
      } catch (err) {
        if (state.running) log.error({ err }, 'delivery loop failed; retrying')
      }
      if (!state.running || !state.leading) break
      if (wakeup.take()) {
        // Events are coming in: gather a batch of them rather than dispatching one by one.
        if (taken > 0) await new Promise((r) => setTimeout(r, DISPATCH_GATHER_MS))
        continue
      }
      await wakeup.sleep(POLL_MS)
    }
  }

  return {
    async start() {
      state.running = true
      state.loopDone = loop()
    },
    async stop() {
      state.running = false
      state.leading = false
      wakeup.interrupt()
      await state.loopDone
      // Attempts under way finish (their result is recorded) before the caller closes the database.
      await attempter.drain(STOP_DRAIN_MS)
      transport.close()
    },
    wake() {
      wakeup.request()
    },
    async replay(id) {
      // The delivering process picks the replayed delivery up from the row: this process
      // when it holds the delivery lock, else the one that does. A standby that got the
      // operator's request must not send it itself, or two processes would deliver at once.
      const row = await retries.replay(id)
      if (!row) return false
      if (row.attempts > 0) {
        wakeup.request()
      } else if (state.leading) {
        // Never attempted (its endpoint was gone): retries only cover attempted rows, so
        // it goes to its lane; elsewhere the next delivering process resumes it.
        const [event] = await db.select({ body: events.body }).from(events).where(eq(events.id, row.eventId))
        if (event) lanes.enqueue({ delivery: row, body: event.body })
      }
      return true
    },
  }
}
