/**
 * Number porting: port orders, their status history and their documents. A port
 * order's row is the projection its actor (actors/port-orders) writes at every step;
 * the actor's machine (machines/port-order.ts) holds the lifecycle.
 */
import { index, integer, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { accounts } from './accounts'
import { ts } from './columns'

/** The order's details as the API shows them (machines/port-order.ts: PortOrderDetails). */
export type PortOrderDetailsRow = {
  phone_numbers: string[]
  subscriber: {
    btn: string | null
    business_name: string | null
    approver_name: string | null
    account_number: string | null
    pin: string | null
    address: { house_number: string | null; street_name: string | null; city: string | null; state: string | null; zip: string | null } | null
  }
  approval: { signature: string; ip: string; timestamp: string } | null
  requested_foc_date: string
  requested_foc_time: string | null
  rejection: { code: PortRejectionCode; message: string } | null
}
export type PortRejectionCode =
  | 'address_mismatch'
  | 'account_number_invalid'
  | 'name_mismatch'
  | 'business_name_mismatch'
  | 'btn_mismatch'
  | 'pin_required'
  | 'pin_invalid'

export const portOrders = pgTable(
  'port_orders',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    status: text('status', { enum: ['draft', 'approved', 'submitted', 'exception', 'foc', 'complete', 'cancelled'] }).notNull(),
    details: jsonb('details').$type<PortOrderDetailsRow>().notNull(),
    submittedAt: ts('submitted_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('port_orders_account_page_idx').on(t.accountId, t.createdAt, t.id), index('port_orders_account_status_idx').on(t.accountId, t.status)],
)

/** Every status change of an order (GET /v1/port-orders/{id}/events), written in the step that made it. */
export const portOrderEvents = pgTable(
  'port_order_events',
  {
    id: text('id').primaryKey(),
    orderId: text('order_id')
      .notNull()
      .references(() => portOrders.id, { onDelete: 'cascade' }),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    status: text('status').notNull(),
    previousStatus: text('previous_status'),
    rejection: jsonb('rejection').$type<{ code: string; message: string } | null>(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('port_order_events_order_page_idx').on(t.orderId, t.createdAt, t.id)],
)

/** The bill copy and the customer service record (CSR) of an order, uploaded, and its letter of authorization (LOA), generated at submit: one of each, a new one replaces the old. Bytes in blob storage. */
export const portOrderDocuments = pgTable(
  'port_order_documents',
  {
    orderId: text('order_id')
      .notNull()
      .references(() => portOrders.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: ['bill_copy', 'csr', 'loa'] }).notNull(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    filename: text('filename'),
    contentType: text('content_type').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    sha256: text('sha256').notNull(),
    storageKey: text('storage_key').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orderId, t.kind] })],
)
