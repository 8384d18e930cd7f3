import { boolean, index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' })

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
    platformId: text('platform_id').notNull().references(() => platforms.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    keyHash: text('key_hash').notNull().unique(),
    hint: text('hint').notNull(),
    createdAt: ts('created_at').notNull(),
    revokedAt: ts('revoked_at'),
  },
  (t) => [index('api_keys_platform_idx').on(t.platformId)],
)

/** Server-wide secrets and settings that every process must share (cursor and JWT keys). */
export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
})

export { ts }
