/**
 * Retries and dead letters. A failed attempt is retried WEBHOOK_RETRY_INTERVAL_S
 * (simulated time) later, up to MAX_RETRIES times; then the delivery is dead (the
 * dead-letter queue), which counts toward its endpoint's health. An unhealthy
 * endpoint gets no retry. Retries are found from the rows (due `nextAttemptAt`), so
 * they survive a restart, and are not ordered. A dead delivery can be replayed.
 */
import { asc, eq, lte, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { events, webhookDeliveries } from '../../db/schema'
import { statement } from '../../db/statements'
import type { Logger } from '../../logger'
import { MAX_RETRIES, reviveDeadLetter } from '../dead-letters'
import type { WebhookResult } from '../webhook-transport'

export { MAX_RETRIES }
import { ATTEMPT_COLUMNS, EVENT_TYPE_OF, newAttemptId } from './attempt-log'
import type { Health } from './health'
import type { DeliveryRow, EndpointRow, Job } from './types'

/** Most due retries started by one look. */
export const RETRY_BATCH = 200

export type FailedResult = Exclude<WebhookResult, { kind: 'acknowledged' }>

/** What is recorded as the delivery's last error. */
export function failureReason(result: FailedResult): string {
  return result.kind === 'rejected' ? `HTTP ${result.status}` : result.kind === 'refused' ? `refused: ${result.reason}` : result.reason
}

/** A failed attempt: the delivery's new state and its row in the attempt log, in one statement. */
const RECORD_FAILED = statement(
  `with failed as (
    update webhook_deliveries
    set state = $2::text, attempts = $3::int, last_status = $4::int, last_error = $5::text, first_attempt_at = $6::timestamptz,
        next_attempt_at = $7::timestamptz, updated_at = $8::timestamptz
    where id = $1::text
    returning id, endpoint_id, event_seq, event_id
  )
  insert into webhook_attempts (${ATTEMPT_COLUMNS})
  select $9::text, f.endpoint_id, f.id, f.event_seq, f.event_id, ${EVENT_TYPE_OF('f.event_seq')}, $3::int, false, $4::int, $5::text, $10::int, $11::timestamptz
  from failed f
  on conflict (id) do nothing`,
)

/** The retries due at `now` (at most RETRY_BATCH), soonest first, with their events' bodies. */
export function dueRetries(db: Db, now: Date) {
  return (
    db
      .select({ d: webhookDeliveries, body: events.body })
      .from(webhookDeliveries)
      .innerJoin(events, eq(events.id, webhookDeliveries.eventId))
      // The predicate of webhook_deliveries_due_idx written out, so that every plan can use that index.
      .where(sql`${webhookDeliveries.state} = 'pending' and ${webhookDeliveries.attempts} > 0 and ${lte(webhookDeliveries.nextAttemptAt, now)}`)
      .orderBy(asc(webhookDeliveries.nextAttemptAt))
      .limit(RETRY_BATCH)
  )
}

export interface Retries {
  /**
   * Records a failed attempt, with its row in the attempt log, in one statement: the
   * next one is due a retry interval from now, or the delivery is dead. Logged at warn.
   */
  recordFailure(delivery: DeliveryRow, endpoint: EndpointRow, result: FailedResult, sentAt: Date, durationMs?: number): Promise<void>
  /** Starts the retries that are due (not those already under way); does not wait for them. */
  attemptDue(): Promise<void>
  /**
   * Puts a dead delivery back in line as a retry due now, with a fresh budget of
   * attempts (the count goes on). Returns the row as it now is, or undefined if there
   * is no dead delivery with that id.
   */
  replay(deliveryId: string): Promise<DeliveryRow | undefined>
}

export function createRetries(deps: {
  db: Db
  clock: Clock
  /** Simulated ms between two attempts of a delivery. */
  retryIntervalMs: number
  health: Health
  /** Starts one attempt (the attempting part). */
  attempt: (job: Job) => Promise<void>
  /** An attempt of this delivery is already under way. */
  inFlight: (deliveryId: string) => boolean
  log: Logger
}): Retries {
  const { db, clock, retryIntervalMs, health, log } = deps

  return {
    async recordFailure(d, endpoint, result, sentAt, durationMs = 0) {
      const now = clock.now()
      const attempts = d.attempts + 1
      const reason = failureReason(result)
      const status = result.kind === 'rejected' ? result.status : null
      // Ids and reasons only: never the endpoint's secret, the body or its headers.
      log.warn(
        { endpoint: endpoint.id, event: d.eventId, delivery: d.id, attempt: attempts, ...(status === null ? { reason } : { status }) },
        'webhook attempt failed',
      )
      // Health as it is now (another delivery may have changed it while this attempt was out):
      // an unhealthy endpoint gets no retry.
      const dead = (await health.isUnhealthy(endpoint.id)) || attempts >= d.maxAttempts
      const lastError = reason.slice(0, 500)
      const record = (tx: Db) =>
        RECORD_FAILED.rows(tx, [
          d.id,
          dead ? 'dead' : 'pending',
          attempts,
          status,
          lastError,
          (d.firstAttemptAt ?? sentAt).toISOString(),
          new Date(now.getTime() + retryIntervalMs).toISOString(),
          now.toISOString(),
          newAttemptId(),
          Math.max(0, Math.round(durationMs)),
          sentAt.toISOString(),
        ])
      if (!dead) {
        await record(db)
        return
      }
      // A failed delivery (not a failed attempt) counts toward the endpoint's health, in the
      // same transaction as the delivery's death so that a crash cannot count it twice or never.
      const becameUnhealthy = await db.transaction(async (tx) => {
        await record(tx)
        return health.countFailedDelivery(tx, endpoint.id, now)
      })
      // Mailed once, by whoever marked it, after commit.
      if (becameUnhealthy !== undefined) await health.notifyUnhealthy(endpoint, becameUnhealthy, reason)
    },

    async attemptDue() {
      const due = await dueRetries(db, clock.now())
      for (const r of due) {
        if (deps.inFlight(r.d.id)) continue
        void deps.attempt({ delivery: r.d, body: r.body }).catch((err) => log.error({ err, delivery: r.d.id }, 'retry crashed'))
      }
    },

    replay: (id) => reviveDeadLetter(db, clock, id),
  }
}
