/** The dead-letter queue as the operator sees it: deliveries that used up their attempts. */
import { and, desc, eq, sql } from 'drizzle-orm'
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { events, webhookDeliveries } from '../db/schema'

/** Attempts after the first that a delivery gets, and again when replayed. */
export const MAX_RETRIES = 5

/**
 * Puts a dead delivery back in line as a retry due now, with a fresh budget of
 * attempts (the count goes on). Returns the row as it now is, or undefined if there is
 * no dead delivery with that id. Only the row changes: whichever process delivers picks
 * it up from there, so any process may do this.
 */
export async function reviveDeadLetter(db: Db, clock: Clock, deliveryId: string) {
  const now = clock.now()
  const [row] = await db
    .update(webhookDeliveries)
    .set({ state: 'pending', maxAttempts: sql`${webhookDeliveries.attempts} + ${1 + MAX_RETRIES}`, nextAttemptAt: now, updatedAt: now })
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.state, 'dead')))
    .returning()
  return row
}

export async function listDeadLetters(db: Db, limit: number) {
  const rows = await db
    .select({ d: webhookDeliveries, type: events.type })
    .from(webhookDeliveries)
    .innerJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(and(eq(webhookDeliveries.state, 'dead')))
    .orderBy(desc(webhookDeliveries.updatedAt), desc(webhookDeliveries.id))
    .limit(limit)
  return rows.map(({ d, type }) => ({
    id: d.id,
    object: 'dead_letter' as const,
    event: d.eventId,
    event_type: type,
    endpoint: d.endpointId,
    account: d.accountId,
    attempts: d.attempts,
    last_status: d.lastStatus,
    last_error: d.lastError,
    first_attempt_at: d.firstAttemptAt?.toISOString() ?? null,
    died_at: d.updatedAt.toISOString(),
  }))
}
