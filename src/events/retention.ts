/**
 * The outbox is not an archive: an event is kept while someone may still need it and
 * deleted, with its delivery records and its attempt log (webhook_attempts), after that.
 *
 * - For RESUME_WINDOW_MS (24 h) after it was committed: a stream may resume after it.
 * - Until it is dispatched: delivery has not yet made its delivery rows.
 * - While a delivery of it is pending: its body is what is sent.
 * - While a delivery of it is dead and died less than DEAD_LETTER_RETENTION_MS ago:
 *   the operator may still replay it (the dead-letter queue reads the event). Keeping
 *   dead letters for ever would keep every event an endpoint never took; a bounded
 *   time, long past the mail an unhealthy endpoint sends, keeps replay possible
 *   without letting one broken endpoint grow the outbox without end.
 *
 * Deletion goes in batches, each its own short transaction, and a run stops after a
 * bounded number of them; the caller keeps the returned cursor for the next run.
 */
import { and, asc, gt, inArray, sql } from 'drizzle-orm'
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { events, webhookAttempts, webhookDeliveries } from '../db/schema'
import { RESUME_WINDOW_MS } from './stream'

/** An event is dispatched once its seq has left the outbox (event_outbox). */
// Qualified by hand: drizzle writes a one-table query's columns bare, and a bare seq here would be the outbox's own.
const notInOutbox = sql<boolean>`not exists (select 1 from event_outbox o where o.seq = "events"."seq")`

/** How long after it died a dead delivery (and so its event) stays replayable. */
export const DEAD_LETTER_RETENTION_MS = 30 * 24 * 3600_000

export interface EventPurgeOptions {
  /** Events looked at per transaction. */
  batch?: number
  /** Transactions per run at most. */
  maxBatches?: number
  /** Where the previous run stopped (its `next`); 0 starts from the oldest event. */
  after?: number
}

export interface EventPurgeResult {
  events: number
  deliveries: number
  /** Rows of the attempt log (webhook_attempts) deleted with their events. */
  attempts: number
  batches: number
  /** Where the next run should start: 0 once this one reached events still in the window. */
  next: number
}

/**
 * Deletes the events past retention (see above) with their delivery rows and attempts. Events are
 * walked in commit order and a run ends at the first one still in the resume window:
 * commit order follows time closely enough, and what it leaves the next run takes.
 */
export async function purgeOldEvents(db: Db, clock: Clock, opts: EventPurgeOptions = {}): Promise<EventPurgeResult> {
  const batch = opts.batch ?? 500
  const maxBatches = opts.maxBatches ?? 20
  const now = clock.now().getTime()
  const cutoff = new Date(now - RESUME_WINDOW_MS)
  const deadCutoff = new Date(now - DEAD_LETTER_RETENTION_MS)
  const out: EventPurgeResult = { events: 0, deliveries: 0, attempts: 0, batches: 0, next: opts.after ?? 0 }
  while (out.batches < maxBatches) {
    const after = out.next
    const scanned = await db
      .select({ seq: events.seq, createdAt: events.createdAt, dispatched: notInOutbox })
      .from(events)
      .where(gt(events.seq, after))
      .orderBy(asc(events.seq))
      .limit(batch)
    out.batches++
    const old = scanned.filter((e) => e.createdAt < cutoff)
    const reachedWindow = old.length < scanned.length || scanned.length < batch
    const candidates = old.filter((e) => e.dispatched).map((e) => e.seq)
    if (candidates.length > 0) {
      const removed = await db.transaction(async (tx) => {
        // Locks first, decision after: a replay of a dead letter (an update of its
        // delivery row) either happened before and keeps the event, or waits and then
        // finds its dead letter gone.
        const locked = await tx
          .select({ seq: events.seq })
          .from(events)
          .where(and(inArray(events.seq, candidates), notInOutbox))
          .for('update', { skipLocked: true })
        if (locked.length === 0) return { events: 0, deliveries: 0, attempts: 0 }
        const seqs = locked.map((e) => e.seq)
        const deliveries = await tx
          .select({ eventSeq: webhookDeliveries.eventSeq, state: webhookDeliveries.state, updatedAt: webhookDeliveries.updatedAt })
          .from(webhookDeliveries)
          .where(inArray(webhookDeliveries.eventSeq, seqs))
          .for('update')
        const keep = new Set(deliveries.filter((d) => d.state === 'pending' || (d.state === 'dead' && d.updatedAt >= deadCutoff)).map((d) => d.eventSeq))
        const doomed = seqs.filter((s) => !keep.has(s))
        if (doomed.length === 0) return { events: 0, deliveries: 0, attempts: 0 }
        const gone = await tx.delete(webhookDeliveries).where(inArray(webhookDeliveries.eventSeq, doomed)).returning({ id: webhookDeliveries.id })
        const logged = await tx.delete(webhookAttempts).where(inArray(webhookAttempts.eventSeq, doomed)).returning({ id: webhookAttempts.id })
        const deleted = await tx.delete(events).where(inArray(events.seq, doomed)).returning({ seq: events.seq })
        return { events: deleted.length, deliveries: gone.length, attempts: logged.length }
      })
      out.events += removed.events
      out.deliveries += removed.deliveries
      out.attempts += removed.attempts
    }
    if (reachedWindow) {
      out.next = 0
      break
    }
    out.next = scanned[scanned.length - 1]!.seq
  }
  return out
}
