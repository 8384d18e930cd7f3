/**
 * E911: the emergency registration of locations and the users' own emergency
 * addresses (the spec's "Locations" provision-e911 / validate-e911 and "User
 * Profile" emergency addresses).
 */
import { index, jsonb, pgTable, text } from 'drizzle-orm/pg-core'
import { accounts, locations, users } from './accounts'
import { ts } from './columns'
import type { StoredAddress } from '../../services/accounts/account-types'

/**
 * A location's E911 state, for the address it was checked with: `place_id` is that
 * address's; once the location's address changes the row no longer applies (the
 * location reads unvalidated and not provisioned) and is deleted with the change.
 */
export const locationE911 = pgTable(
  'location_e911',
  {
    locationId: text('location_id')
      .primaryKey()
      .references(() => locations.id, { onDelete: 'cascade' }),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    status: text('status', { enum: ['validated', 'invalid', 'provisioned'] }).notNull(),
    placeId: text('place_id').notNull(),
    /** Field reasons of the last validation that failed (status invalid). */
    details: jsonb('details').$type<Record<string, string>>(),
    validatedAt: ts('validated_at').notNull(),
    provisionedAt: ts('provisioned_at'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('location_e911_account_idx').on(t.accountId, t.status)],
)

/** A user's emergency addresses (validated before stored); `registered_ip` binds one to the network a softphone presented it from. */
export const emergencyAddresses = pgTable(
  'emergency_addresses',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    address: jsonb('address').$type<StoredAddress>().notNull(),
    registeredIp: text('registered_ip'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('emergency_addresses_user_page_idx').on(t.userId, t.createdAt, t.id),
    index('emergency_addresses_account_ip_idx').on(t.accountId, t.registeredIp),
  ],
)
