/** The dead-letter queue as the operator sees it: deliveries that used up their attempts. */
import { and, desc, eq } from 'drizzle-orm'
import type { Db } from '../db/client'
import { events, webhookDeliveries } from '../db/schema'

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
