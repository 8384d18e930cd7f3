/**
 * Endpoint health. A failed delivery (one that died: its attempts used up), not a
 * failed attempt, counts toward it: UNHEALTHY_AFTER of them in a row make the
 * endpoint unhealthy, once, and the platform's administrators are mailed. While
 * unhealthy, events are tried once, without retries (dispatch and the retry part
 * read `unhealthySince`). One success clears it: successes are recorded by a group
 * commit (DeliveredRecorder) that clears health, and logs each attempt (webhook_attempts),
 * in the same statement.
 */
import { and, eq, isNull, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { platforms, webhookEndpoints } from '../../db/schema'
import { pgArray, statement } from '../../db/statements'
import type { Logger } from '../../logger'
import type { MailTransport } from '../mail'
import { ATTEMPT_COLUMNS, EVENT_TYPE_OF, newAttemptId } from './attempt-log'
import type { EndpointRow } from './types'

export const UNHEALTHY_AFTER = 5
/** Most successful attempts recorded by one statement. */
export const RECORD_BATCH = 1000

/** A successful attempt, to be recorded. */
export interface Delivered {
  id: string
  endpointId: string
  /** Attempts made, this one included. */
  attempts: number
  /** The receiver's 2xx status. */
  status: number
  firstAttemptAt: Date
  /** When this attempt was sent (its row in the attempt log is dated so). */
  sentAt: Date
  /** Real ms from sending to the answer. */
  durationMs: number
  at: Date
}

/**
 * Records successful attempts; each resolves once committed. Successes that come in
 * while a recording statement is out wait for the next one, which records them all
 * (group commit): one statement per batch instead of two per attempt. The endpoints
 * are made healthy in the same statement, judged on their rows as they are then, not
 * as read before sending: a failure recorded while an attempt was out (even one that
 * made the endpoint unhealthy) is cleared too.
 */
/** Successes, their rows in the attempt log, and the endpoints they make healthy again, in one statement. */
const RECORD_DELIVERED = statement(
  `with delivered as (
    update webhook_deliveries as d
    set state = 'delivered', attempts = v.attempts, last_status = v.status, last_error = null,
        first_attempt_at = v.first_attempt_at, delivered_at = v.at, updated_at = v.at
    from unnest($1::text[], $2::int[], $3::int[], $4::timestamptz[], $5::timestamptz[], $6::text[], $7::int[], $8::timestamptz[])
      as v(id, attempts, status, first_attempt_at, at, attempt_id, duration_ms, sent_at)
    where d.id = v.id
    returning d.endpoint_id, d.id, d.event_seq, d.event_id, v.attempt_id, v.attempts, v.status, v.duration_ms, v.sent_at
  ), logged as (
    insert into webhook_attempts (${ATTEMPT_COLUMNS})
    select x.attempt_id, x.endpoint_id, x.id, x.event_seq, x.event_id, ${EVENT_TYPE_OF('x.event_seq')}, x.attempts, true, x.status, null, x.duration_ms, x.sent_at
    from delivered x
    on conflict (id) do nothing
  )
  update webhook_endpoints set consecutive_failures = 0, unhealthy_since = null
  where id in (select endpoint_id from delivered) and (consecutive_failures > 0 or unhealthy_since is not null)`,
)

export class DeliveredRecorder {
  /** Successes waiting for the next statement. */
  private readonly queue: (Delivered & { done: (err?: unknown) => void })[] = []
  /** A statement is out (the flush loop is running). */
  private recording = false

  constructor(
    private readonly db: Db,
    private readonly batchSize = RECORD_BATCH,
  ) {}

  record(entry: Delivered): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ...entry, done: (err) => (err === undefined ? resolve() : reject(err)) })
      if (!this.recording) void this.flush()
    })
  }

  /** Successes waiting for a statement (not counting those in the one that is out). */
  get waiting() {
    return this.queue.length
  }

  private async flush() {
    this.recording = true
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.batchSize)
        try {
          // Arrays as single parameters: the same statement text whatever the batch size.
          await RECORD_DELIVERED.rows(this.db, [
            pgArray(batch.map((e) => e.id)),
            pgArray(batch.map((e) => e.attempts)),
            pgArray(batch.map((e) => e.status)),
            pgArray(batch.map((e) => e.firstAttemptAt.toISOString())),
            pgArray(batch.map((e) => e.at.toISOString())),
            pgArray(batch.map(() => newAttemptId())),
            pgArray(batch.map((e) => Math.max(0, Math.round(e.durationMs)))),
            pgArray(batch.map((e) => e.sentAt.toISOString())),
          ])
          for (const e of batch) e.done()
        } catch (err) {
          for (const e of batch) e.done(err ?? new Error('recording failed'))
        }
      }
    } finally {
      this.recording = false
    }
  }
}

export interface Health {
  /** The endpoint is unhealthy as its row is now (undefined row: not unhealthy). */
  isUnhealthy(endpointId: string): Promise<boolean>
  /**
   * Counts one failed delivery against the endpoint, inside `tx` (the transaction that
   * records the delivery's death, so that a crash cannot count it twice or never).
   * Returns the failure count if this made the endpoint unhealthy, else undefined.
   */
  countFailedDelivery(tx: Db, endpointId: string, now: Date): Promise<number | undefined>
  /** Mails the platform's administrators that the endpoint became unhealthy; a mail failure is logged, not thrown. */
  notifyUnhealthy(endpoint: EndpointRow, failures: number, reason: string): Promise<void>
}

export function createHealth(deps: { db: Db; mail: MailTransport; log: Logger }): Health {
  const { db, mail, log } = deps
  return {
    async isUnhealthy(endpointId) {
      const [current] = await db.select({ unhealthySince: webhookEndpoints.unhealthySince }).from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId))
      return current?.unhealthySince != null
    },

    async countFailedDelivery(tx, endpointId, now) {
      const [ep] = await tx
        .update(webhookEndpoints)
        .set({ consecutiveFailures: sql`${webhookEndpoints.consecutiveFailures} + 1` })
        .where(eq(webhookEndpoints.id, endpointId))
        .returning({ failures: webhookEndpoints.consecutiveFailures, unhealthySince: webhookEndpoints.unhealthySince })
      if (!ep || ep.unhealthySince != null || ep.failures < UNHEALTHY_AFTER) return undefined
      // Marked once: only the transaction that sets it reports it (and so mails).
      const [marked] = await tx
        .update(webhookEndpoints)
        .set({ unhealthySince: now })
        .where(and(eq(webhookEndpoints.id, endpointId), isNull(webhookEndpoints.unhealthySince)))
        .returning({ id: webhookEndpoints.id })
      return marked ? ep.failures : undefined
    },

    async notifyUnhealthy(endpoint, failures, reason) {
      const [platform] = await db
        .select({ name: platforms.name, adminEmails: platforms.adminEmails })
        .from(platforms)
        .where(eq(platforms.id, endpoint.platformId))
      const message = {
        to: platform?.adminEmails ?? [],
        subject: `Webhook endpoint ${endpoint.id} is unhealthy`,
        text:
          `Platform ${platform?.name ?? endpoint.platformId} (${endpoint.platformId}): the webhook endpoint ${endpoint.id} (${endpoint.url}) ` +
          `failed ${failures} deliveries in a row; the last failure was: ${reason}.\n\n` +
          `Until one delivery succeeds, each event is tried once, without retries. Failed deliveries are kept in the dead-letter queue and can be replayed.`,
      }
      await mail.send(message).catch((err) => log.error({ err, endpoint: endpoint.id }, 'unhealthy-endpoint mail failed'))
    },
  }
}
