/** Call routing: extensions (and, as they arrive, ring groups, queues, dial plans, schedules...). */
import { index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core'
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

// ---------------------------------------------------------------- routing objects
// Each object is one row; its structured parts (members, hours, nodes) are jsonb in
// the engine's own shape (machines/routing/config.ts), so the config loader maps a
// row to a RoutingConfig record without joins. Targets are stored as the API gives
// them: bare ids, resolved to a type by their prefix when the config is loaded.

export interface RingGroupMemberRow {
  id: string
  user: string
  ringSeconds: number | null
}

export const ringGroups = pgTable(
  'ring_groups',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    strategy: text('strategy', { enum: ['simultaneous', 'sequential'] }).notNull(),
    ringSeconds: integer('ring_seconds').notNull(),
    noAnswerTarget: text('no_answer_target'),
    members: jsonb('members').$type<RingGroupMemberRow[]>().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('ring_groups_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

export interface OpenIntervalRow {
  day: 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun'
  open: string
  close: string
}

export const schedules = pgTable(
  'schedules',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    timeZone: text('time_zone').notNull(),
    hours: jsonb('hours').$type<OpenIntervalRow[]>().notNull(),
    holidays: jsonb('holidays').$type<string[]>().notNull(),
    hold: text('hold', { enum: ['open', 'closed'] }),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('schedules_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

/** A dial plan node as the API writes it (snake_case, targets as bare ids). */
export type DialPlanNodeRow =
  | { kind: 'menu'; prompt?: string | null; options: { digit: string; next: string }[]; default?: string | null }
  | { kind: 'schedule'; schedule: string; open: string; closed: string }
  | { kind: 'play'; clip: string; next: string }
  | { kind: 'voice_app'; app: string; mode: 'control' | 'notify'; next?: string | null }
  | { kind: 'route'; target: string }
  | { kind: 'hangup' }

export const dialPlans = pgTable(
  'dial_plans',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    entry: text('entry').notNull(),
    nodes: jsonb('nodes').$type<Record<string, DialPlanNodeRow>>().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('dial_plans_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

export const sharedVoicemailBoxes = pgTable(
  'shared_voicemail_boxes',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Users who may listen to the box's messages. */
    users: jsonb('users').$type<string[]>().notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('shared_voicemail_boxes_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

export const aiAgents = pgTable(
  'ai_agents',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    instructions: text('instructions').notNull(),
    greeting: text('greeting'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('ai_agents_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

export const voiceApps = pgTable(
  'voice_apps',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    kind: text('kind', { enum: ['webhook', 'ai_agent'] }).notNull(),
    /** webhook apps: where calls are delivered. */
    url: text('url'),
    /** ai_agent apps: the agent that answers. */
    aiAgent: text('ai_agent'),
    /** Signs the app's webhooks; sealed under the master key (src/auth/); shown only in the create and rotate_secret answers. */
    secret: text('secret').notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('voice_apps_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

export const queues = pgTable(
  'queues',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    maxWaitSeconds: integer('max_wait_seconds').notNull(),
    timeoutTarget: text('timeout_target'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('queues_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

export const queueMembers = pgTable(
  'queue_members',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    queueId: text('queue_id')
      .notNull()
      .references(() => queues.id, { onDelete: 'cascade' }),
    userId: text('user_id').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [uniqueIndex('queue_members_queue_user_uq').on(t.queueId, t.userId), index('queue_members_page_idx').on(t.queueId, t.createdAt, t.id)],
)

/** A user's standing as a queue agent: whether queues may dispatch calls to them. */
export const queueAgents = pgTable('queue_agents', {
  userId: text('user_id').primaryKey(),
  accountId: text('account_id')
    .notNull()
    .references(() => accounts.id, { onDelete: 'cascade' }),
  status: text('status', { enum: ['available', 'unavailable'] }).notNull(),
  updatedAt: ts('updated_at').notNull(),
})

/** Inbound routing of a phone number; no row: the number rings every user. */
export const phoneNumberRoutes = pgTable('phone_number_routes', {
  phoneNumberId: text('phone_number_id').primaryKey(),
  accountId: text('account_id')
    .notNull()
    .references(() => accounts.id, { onDelete: 'cascade' }),
  mode: text('mode', { enum: ['target', 'ring_all', 'drop'] }).notNull(),
  target: text('target'),
  updatedAt: ts('updated_at').notNull(),
})
