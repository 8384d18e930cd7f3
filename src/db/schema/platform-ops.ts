import { index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { ts } from './platforms'

/** One row per mutation attempt: who did what to which resource, and how it ended. */
export const auditLogs = pgTable(
  'audit_logs',
  {
    id: text('id').primaryKey(),
    platformId: text('platform_id').notNull(),
    /** No foreign key: the trail of a deleted account's deletion must not vanish with it. */
    accountId: text('account_id'),
    actor: text('actor').notNull(),
    credential: text('credential', { enum: ['secret_key', 'account_session', 'user_session'] }).notNull(),
    event: text('event').notNull(),
    resource: text('resource'),
    outcome: text('outcome', { enum: ['success', 'failure'] }).notNull(),
    statusCode: integer('status_code').notNull(),
    ipAddress: text('ip_address'),
    requestId: text('request_id').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    index('audit_account_page_idx').on(t.accountId, t.createdAt, t.id),
    index('audit_request_idx').on(t.requestId),
  ],
)

/**
 * Idempotency-Key records. A row is claimed ('running') before the work starts and
 * completed in the same transaction as the work, so a committed change always has
 * its replayable response.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    state: text('state', { enum: ['running', 'done'] }).notNull(),
    lockedAt: ts('locked_at').notNull(),
    statusCode: integer('status_code'),
    responseBody: text('response_body'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index('idempotency_created_idx').on(t.createdAt)],
)
