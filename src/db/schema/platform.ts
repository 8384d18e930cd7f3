/** The platform layer: platforms and their keys, server-wide settings, the audit log and idempotency records. */
import { boolean, index, integer, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { ts } from './columns'

export const platforms = pgTable('platforms', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  liveEnabled: boolean('live_enabled').notNull().default(false),
  /** Who is emailed about the platform's operations (an unhealthy webhook endpoint, ...). */
  adminEmails: jsonb('admin_emails').$type<string[]>().notNull().default([]),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
})

/** Secret keys are stored only as SHA-256 hashes; `hint` keeps the last characters for operators. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    platformId: text('platform_id')
      .notNull()
      .references(() => platforms.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    keyHash: text('key_hash').notNull().unique(),
    hint: text('hint').notNull(),
    createdAt: ts('created_at').notNull(),
    revokedAt: ts('revoked_at'),
  },
  (t) => [index('api_keys_platform_idx').on(t.platformId)],
)

/** Server-wide secrets and settings that every process must share (cursor and JWT keys, sealed under the master key: src/auth/). */
export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
})

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
  (t) => [index('audit_account_page_idx').on(t.accountId, t.createdAt, t.id), index('audit_request_idx').on(t.requestId)],
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
