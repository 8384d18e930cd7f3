import { sql } from 'drizzle-orm'
import { index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { accounts } from './accounts'
import { ts } from './columns'

/**
 * Phone numbers held by accounts. A number is live on at most one account of its
 * space at a time (the partial unique index covers every status but released): live
 * numbers share one space, the real network's; each platform's sandbox numbers have
 * their own (src/services/numbers/number-space.ts), so platforms never meet there.
 */
export const phoneNumbers = pgTable(
  'phone_numbers',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    number: text('number').notNull(),
    /** 'live', or the platform id for sandbox numbers: where the number is unique. */
    space: text('space').notNull(),
    status: text('status', { enum: ['active', 'inactive', 'pending', 'released'] }).notNull(),
    orderId: text('order_id'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    releasedAt: ts('released_at'),
    /** When the number last became active on its account: the 30-day minimum hold before a disconnect runs from here (null: created_at). */
    activatedAt: ts('activated_at'),
    /** The SMS port-out window: open while sms_port_out_expires_at is in the future; null, locked. */
    smsPortOutOpenedAt: ts('sms_port_out_opened_at'),
    smsPortOutExpiresAt: ts('sms_port_out_expires_at'),
  },
  (t) => [
    uniqueIndex('phone_numbers_space_number_uq').on(t.space, t.number).where(sql`${t.status} <> 'released'`),
    index('phone_numbers_account_page_idx').on(t.accountId, t.createdAt, t.id),
    // A carrier's call names only the number: its holder is found by number across spaces (media/b2bua/directory.ts).
    index('phone_numbers_active_number_idx').on(t.number).where(sql`${t.status} = 'active'`),
  ],
)

export const phoneNumberOrders = pgTable(
  'phone_number_orders',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    status: text('status', { enum: ['pending', 'complete', 'partial', 'failed'] }).notNull(),
    orderType: text('order_type', { enum: ['order', 'disconnect'] }).notNull(),
    /** The E.164 numbers asked for, in request order. */
    numbers: jsonb('numbers').$type<string[]>().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('phone_number_orders_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)
