/**
 * Hardware orders. An order's row is the projection its actor
 * (actors/hardware-orders) writes at every step; the actor's machine
 * (machines/hardware-order.ts) holds the lifecycle. The catalog is not a table: it
 * is the list of models provisioning supports (src/services/hardware/catalog.ts).
 */
import { index, jsonb, pgTable, text } from 'drizzle-orm/pg-core'
import { accounts, locations } from './accounts'
import { ts } from './columns'

/** One physical unit of an order (machines/hardware-order.ts: HardwareOrderItem). */
export type HardwareOrderItemRow = {
  id: string
  catalog_item: string
  device_type: 'deskphone' | 'dect_base' | 'dect_handset' | 'accessory'
  user: string | null
  mac_address: string | null
  base: string | null
  device: string | null
}

export const hardwareOrders = pgTable(
  'hardware_orders',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    status: text('status', { enum: ['draft', 'submitted', 'approved', 'rejected', 'fulfilled', 'cancelled'] }).notNull(),
    // The service refuses to delete a location with pending orders; `set null` lets finished orders outlive it.
    locationId: text('location_id').references(() => locations.id, { onDelete: 'set null' }),
    reference: text('reference'),
    rejectionReason: text('rejection_reason'),
    items: jsonb('items').$type<HardwareOrderItemRow[]>().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('hardware_orders_account_page_idx').on(t.accountId, t.createdAt, t.id),
    index('hardware_orders_location_status_idx').on(t.locationId, t.status),
  ],
)
