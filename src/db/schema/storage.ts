/**
 * Blob deletions owed: a row per storage key whose record is gone, written in the
 * transaction that removed the record, so a crash between the commit and the blob's
 * removal leaves work to retry, never an orphan (src/services/data-lifecycle/).
 */
import { sql } from 'drizzle-orm'
import { index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import { ts } from './columns'

export const storageDeletions = pgTable(
  'storage_deletions',
  {
    /** The blob's storage key; at most one pending deletion per key. */
    key: text('key').primaryKey(),
    /** No foreign key: the account is usually the thing being deleted. Kept for the operator's eye. */
    accountId: text('account_id'),
    // Database time: the callers (an account's delete) have no clock at hand, and this only says when it was asked.
    createdAt: ts('created_at').notNull().default(sql`now()`),
    attempts: integer('attempts').notNull().default(0),
    /** Null: due now. Otherwise a claim's lease or a retry's backoff, by the sweeper's clock. */
    nextAttemptAt: ts('next_attempt_at'),
    lastError: text('last_error'),
  },
  (t) => [index('storage_deletions_due_idx').on(t.nextAttemptAt)],
)
