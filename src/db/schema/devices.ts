/**
 * Devices: desk phones, DECT bases and their handsets (one table, `type` tells them
 * apart), their lines with SIP credentials, the users they are assigned to, button
 * templates and per-device button overrides, and the provisioning history.
 */
import { type AnyPgColumn, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { accounts, locations, users } from './accounts'
import { ts } from './columns'
import { extensions } from './routing'

/** A key of a phone: what a template button and a device's override both are. */
const buttonColumns = () => ({
  key: integer('key').notNull(),
  type: text('type').notNull(),
  value: text('value'),
  label: text('label'),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
})

export const buttonTemplates = pgTable(
  'button_templates',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    vendor: text('vendor').notNull(),
    /** Models the template fits; empty: every model of the vendor. */
    models: text('models').array().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('button_templates_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

export const templateButtons = pgTable(
  'template_buttons',
  {
    id: text('id').primaryKey(),
    templateId: text('template_id')
      .notNull()
      .references(() => buttonTemplates.id, { onDelete: 'cascade' }),
    ...buttonColumns(),
  },
  (t) => [uniqueIndex('template_buttons_key_uq').on(t.templateId, t.key), index('template_buttons_page_idx').on(t.templateId, t.createdAt, t.id)],
)

export const devices = pgTable(
  'devices',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    type: text('type', { enum: ['deskphone', 'dect_base', 'dect_handset'] }).notNull(),
    vendor: text('vendor').notNull(),
    model: text('model').notNull(),
    /** 12 uppercase hex digits; null for DECT handsets (they reach the network through their base). */
    macAddress: text('mac_address'),
    name: text('name'),
    // The service refuses to delete a location with devices; `set null` only lets an account deletion cascade in any order.
    locationId: text('location_id').references(() => locations.id, { onDelete: 'set null' }),
    // A handset goes with its base.
    baseId: text('base_id').references((): AnyPgColumn => devices.id, { onDelete: 'cascade' }),
    buttonTemplateId: text('button_template_id').references(() => buttonTemplates.id, { onDelete: 'set null' }),
    status: text('status').notNull(),
    /** HTTP credentials the phone presents when it fetches its file (deskphones and bases; sealed like SIP passwords). */
    provisioningUsername: text('provisioning_username'),
    provisioningPasswordSealed: text('provisioning_password_sealed'),
    ipAddress: text('ip_address'),
    provisionedAt: ts('provisioned_at'),
    lastFetchedAt: ts('last_fetched_at'),
    checkSyncRequestedAt: ts('check_sync_requested_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    // MACs are physical identities: a phone asks for its file by MAC alone, so one MAC is one device service-wide.
    uniqueIndex('devices_mac_uq').on(t.macAddress),
    index('devices_account_page_idx').on(t.accountId, t.createdAt, t.id),
    index('devices_account_type_idx').on(t.accountId, t.type, t.createdAt, t.id),
    index('devices_base_idx').on(t.baseId),
    index('devices_location_idx').on(t.locationId),
  ],
)

export const deviceLines = pgTable(
  'device_lines',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    deviceId: text('device_id')
      .notNull()
      .references(() => devices.id, { onDelete: 'cascade' }),
    lineNumber: integer('line_number').notNull(),
    userId: text('user_id').references(() => users.id, { onDelete: 'set null' }),
    extensionId: text('extension_id').references(() => extensions.id, { onDelete: 'set null' }),
    label: text('label'),
    sipUsername: text('sip_username').notNull(),
    /** AES-256-GCM under the server's SIP credential key: digest auth needs the password back, so it cannot be hashed. */
    sipPasswordSealed: text('sip_password_sealed').notNull(),
    sipDomain: text('sip_domain').notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('device_lines_number_uq').on(t.deviceId, t.lineNumber),
    uniqueIndex('device_lines_sip_username_uq').on(t.sipUsername),
    index('device_lines_page_idx').on(t.deviceId, t.createdAt, t.id),
  ],
)

export const deviceUsers = pgTable(
  'device_users',
  {
    id: text('id').notNull(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    deviceId: text('device_id')
      .notNull()
      .references(() => devices.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.deviceId, t.userId] }),
    index('device_users_page_idx').on(t.deviceId, t.createdAt, t.id),
    index('device_users_account_idx').on(t.accountId),
    index('device_users_user_idx').on(t.userId),
  ],
)

export const buttonOverrides = pgTable(
  'button_overrides',
  {
    id: text('id').primaryKey(),
    deviceId: text('device_id')
      .notNull()
      .references(() => devices.id, { onDelete: 'cascade' }),
    ...buttonColumns(),
  },
  (t) => [uniqueIndex('button_overrides_key_uq').on(t.deviceId, t.key), index('button_overrides_page_idx').on(t.deviceId, t.createdAt, t.id)],
)

export const provisioningEvents = pgTable(
  'provisioning_events',
  {
    id: text('id').primaryKey(),
    // No key to accounts: the device's key goes (cascades) with the account's, and
    // each key checked costs every history row's insert (two per fetch) a lookup.
    accountId: text('account_id').notNull(),
    deviceId: text('device_id')
      .notNull()
      .references(() => devices.id, { onDelete: 'cascade' }),
    /** provisioned, config_fetched, provisioning_failed, check_sync_requested */
    type: text('type').notNull(),
    errorCode: text('error_code'),
    ipAddress: text('ip_address'),
    userAgent: text('user_agent'),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('provisioning_events_page_idx').on(t.deviceId, t.createdAt, t.id)],
)
