/** Call routing: extensions (and, as they arrive, ring groups, queues, dial plans, schedules...). */
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { accounts } from './accounts'
import { ts } from './columns'

export const extensions = pgTable(
  'extensions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
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
