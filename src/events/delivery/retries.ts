/**
 * Retries and dead letters. A failed attempt is retried WEBHOOK_RETRY_INTERVAL_S
 * (simulated time) later, up to MAX_RETRIES times; then the delivery is dead (the
 * dead-letter queue), which counts toward its endpoint's health. An unhealthy
 * endpoint gets no retry. Retries are found from the rows (due `nextAttemptAt`), so
 * they survive a restart, and are not ordered. A dead delivery can be replayed.
 */
import { and, asc, eq, gt, lte, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { events, webhookDeliveries } from '../../db/schema'
import type { Logger } from '../../logger'
import type { WebhookResult } from '../webhook-transport'
import type { Health } from './health'
import type { DeliveryRow, EndpointRow, Job } from './types'

export const MAX_RETRIES = 5
/** Most due retries started by one look. */
export const RETRY_BATCH = 200

export type FailedResult = Exclude<WebhookResult, { kind: 'acknowledged' }>

/** What is recorded as the delivery's last error. */
export function failureReason(result: FailedResult): string {
  return result.kind === 'rejected' ? `HTTP ${result.status}` : result.kind === 'refused' ? `refused: ${result.reason}` : result.reason
}

export interface Retries {
  /** Records a failed attempt: the next one is due a retry interval from now, or the delivery is dead. */
  recordFailure(delivery: DeliveryRow, endpoint: EndpointRow, result: FailedResult, sentAt: Date): Promise<void>
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
    async recordFailure(d, endpoint, result, sentAt) {
      const now = clock.now()
      const attempts = d.attempts + 1
      const reason = failureReason(result)
      // Health as it is now (another delivery may have changed it while this attempt was out):
      // an unhealthy endpoint gets no retry.
      const dead = (await health.isUnhealthy(endpoint.id)) || attempts >= d.maxAttempts
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
        return health.countFailedDelivery(tx, endpoint.id, now)
      })
      // Mailed once, by whoever marked it, after commit.
      if (becameUnhealthy !== undefined) await health.notifyUnhealthy(endpoint, becameUnhealthy, reason)
    },

    async attemptDue() {
      const due = await db
        .select({ d: webhookDeliveries, body: events.body })
        .from(webhookDeliveries)
        .innerJoin(events, eq(events.id, webhookDeliveries.eventId))
        .where(and(eq(webhookDeliveries.state, 'pending'), gt(webhookDeliveries.attempts, 0), lte(webhookDeliveries.nextAttemptAt, clock.now())))
        .orderBy(asc(webhookDeliveries.nextAttemptAt))
        .limit(RETRY_BATCH)
      for (const r of due) {
        if (deps.inFlight(r.d.id)) continue
        void deps.attempt({ delivery: r.d, body: r.body }).catch((err) => log.error({ err, delivery: r.d.id }, 'retry crashed'))
      }
    },

    async replay(id) {
      const now = clock.now()
      const [row] = await db
        .update(webhookDeliveries)
        .set({ state: 'pending', maxAttempts: sql`${webhookDeliveries.attempts} + ${1 + MAX_RETRIES}`, nextAttemptAt: now, updatedAt: now })
        .where(and(eq(webhookDeliveries.id, id), eq(webhookDeliveries.state, 'dead')))
        .returning()
      return row
    },
  }
}
