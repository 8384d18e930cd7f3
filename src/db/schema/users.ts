import { index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { sql } from 'drizzle-orm'
import { accounts } from './accounts'
import { ts } from './platforms'

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name'),
    email: text('email').notNull(),
    /** Bumped by revoke_sessions: user tokens carry the epoch they were minted in. */
    sessionEpoch: integer('session_epoch').notNull().default(0),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('users_account_page_idx').on(t.accountId, t.createdAt, t.id),
    uniqueIndex('users_account_email_uq').on(t.accountId, sql`lower(${t.email})`),
  ],
)

export const extensions = pgTable(
  'extensions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id, { onDelete: 'cascade' }),
    number: text('number').notNull(),
    target: text('target').notNull(),
    status: text('status', { enum: ['active', 'inactive'] }).notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('extensions_account_number_uq').on(t.accountId, t.number),
    index('extensions_account_page_idx').on(t.accountId, t.createdAt, t.id),
    index('extensions_target_idx').on(t.accountId, t.target),
  ],
)
