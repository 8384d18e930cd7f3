import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { accounts, users } from './accounts'
import { ts } from './columns'

/**
 * A browser's Web Push subscription (RFC 8030), made by a user's softphone so that a
 * call can wake it. One row per push endpoint: the browser profile that subscribed
 * belongs to the user who subscribed last. `auth` is the subscription's authentication
 * secret (RFC 8291), sealed at rest; `p256dh` its public key.
 */
export const pushSubscriptions = pgTable(
  'push_subscriptions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    endpoint: text('endpoint').notNull(),
    p256dh: text('p256dh').notNull(),
    auth: text('auth').notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [uniqueIndex('push_subscriptions_endpoint_idx').on(t.endpoint), index('push_subscriptions_user_idx').on(t.userId, t.createdAt, t.id)],
)
