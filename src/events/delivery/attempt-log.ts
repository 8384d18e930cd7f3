/**
 * The attempt log (table webhook_attempts): one row per delivery attempt, written by
 * the statement that records the attempt's outcome (a success by the group commit in
 * health.ts, a failure by retries.ts), never by a statement of its own.
 */
import { newId } from '../../ids'

/** A new attempt id (`wha_…`), time-ordered like every other id. */
export const newAttemptId = () => newId('webhookAttempt')

/** The columns an attempt row is inserted with, in the order the statements give them. */
export const ATTEMPT_COLUMNS =
  'id, endpoint_id, delivery_id, event_seq, event_id, event_type, attempt, succeeded, status_code, failure_reason, duration_ms, created_at'

/** The event's type, read by its seq (the primary key) in the recording statement itself. */
export const EVENT_TYPE_OF = (seq: string) => `coalesce((select e.type from events e where e.seq = ${seq}), '')`
