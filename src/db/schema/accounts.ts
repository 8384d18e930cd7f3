import { sql } from 'drizzle-orm'
import { date, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { ts } from './columns'
import { platforms } from './platform'
import type { AccountConfig, StoredAddress } from '../../services/accounts/account-types'

export const accounts = pgTable(
  'accounts',
  {
    id: text('id').primaryKey(),
    platformId: text('platform_id')
      .notNull()
      .references(() => platforms.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    email: text('email'),
    name: text('name'),
    phone: text('phone'),
    primaryContactName: text('primary_contact_name'),
    config: jsonb('config').$type<AccountConfig>().notNull(),
    defaultOutboundDid: text('default_outbound_did'),
    holdMusicClip: text('hold_music_clip'),
    mainLocation: text('main_location'),
    defaultButtonTemplate: text('default_button_template'),
    provisioningBaseUrl: text('provisioning_base_url'),
    billingAddress: jsonb('billing_address').$type<StoredAddress | null>(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('accounts_platform_page_idx').on(t.platformId, t.mode, t.createdAt, t.id)],
)

export const locations = pgTable(
  'locations',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name'),
    address: jsonb('address').$type<StoredAddress>().notNull(),
    status: text('status', { enum: ['active', 'inactive'] })
      .notNull()
      .default('active'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('locations_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

/** Every agreed pricing, newest last: the latest is "account pricing", the latest in force is "effective". */
export const pricingAgreements = pgTable(
  'pricing_agreements',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    perUserRate: integer('per_user_rate').notNull(),
    perDidRate: integer('per_did_rate').notNull(),
    perVoiceaiLocationRate: integer('per_voiceai_location_rate').notNull(),
    effectiveFrom: date('effective_from', { mode: 'string' }).notNull(),
    agreedAt: ts('agreed_at').notNull(),
  },
  (t) => [index('pricing_account_idx').on(t.accountId, t.agreedAt)],
)

export const tosAcceptances = pgTable(
  'tos_acceptances',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    version: text('version').notNull(),
    acceptedAt: ts('accepted_at').notNull(),
    ip: text('ip'),
    userAgent: text('user_agent'),
    pricing: jsonb('pricing').$type<{ per_user_rate: number; per_did_rate: number; per_voiceai_location_rate: number }>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.version] })],
)

/** Users (team members) of an account. */
export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name'),
    email: text('email').notNull(),
    /** Bumped by revoke_sessions: user tokens carry the epoch they were minted in. */
    sessionEpoch: integer('session_epoch').notNull().default(0),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('users_account_page_idx').on(t.accountId, t.createdAt, t.id), uniqueIndex('users_account_email_uq').on(t.accountId, sql`lower(${t.email})`)],
)
