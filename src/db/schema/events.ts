import { bigint, bigserial, boolean, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core'
import { sql } from 'drizzle-orm'
import { ts } from './columns'

/**
 * The outbox: every event, written in the same transaction as the change that
 * caused it. `body` is the exact JSON envelope that is signed and sent. `seq`
 * orders events; an event is undispatched while its seq is in `event_outbox`
 * (below), so an event committed late (with a lower seq) is still picked up.
 */
export const events = pgTable(
  'events',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    id: text('id').notNull().unique(),
    platformId: text('platform_id').notNull(),
    /** No foreign key: events outlive an account's deletion until delivered. */
    accountId: text('account_id').notNull(),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    type: text('type').notNull(),
    body: text('body').notNull(),
    createdAt: ts('created_at').notNull(),
    /** Voice apps the event also goes to (a call's events once an app follows it); null: none. */
    voiceApps: jsonb('voice_apps').$type<string[]>(),
  },
  (t) => [index('events_account_seq_idx').on(t.accountId, t.seq)],
)

/**
 * The events not dispatched yet, by seq: a row is added by the database itself for
 * every events row inserted (the statement-level trigger of migration 0027), so no
 * way of writing an event can leave it out, and dispatch deletes it in the
 * transaction that writes the event's delivery rows. A narrow table of its own rather
 * than a flag on the event: setting a flag rewrote the whole event (its body, a new
 * entry in each of its indexes, as the flag was in a partial index's predicate),
 * the costliest statement per row of `npm run bench -- calls` after the timers.
 * No foreign key: its check would cost each insert a lookup, and events leave only
 * by retention, which takes dispatched ones only.
 */
export const eventOutbox = pgTable('event_outbox', {
  seq: bigint('seq', { mode: 'number' }).primaryKey(),
})

export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: text('id').primaryKey(),
    platformId: text('platform_id').notNull(),
    /** Null: platform-global, receives every account's events of its mode. */
    accountId: text('account_id'),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    url: text('url').notNull(),
    /** Sealed under the master key (src/auth/): opened to sign; never returned after the create response. */
    secret: text('secret').notNull(),
    enabledEvents: jsonb('enabled_events').$type<string[]>().notNull(),
    description: text('description'),
    status: text('status', { enum: ['enabled', 'disabled'] }).notNull(),
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
    unhealthySince: ts('unhealthy_since'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('webhook_endpoints_scope_idx').on(t.platformId, t.mode, t.accountId, t.createdAt, t.id)],
)

/** One row per (event, endpoint): the delivery's attempts, schedule and outcome. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    eventSeq: bigint('event_seq', { mode: 'number' }).notNull(),
    eventId: text('event_id').notNull(),
    endpointId: text('endpoint_id').notNull(),
    accountId: text('account_id').notNull(),
    state: text('state', { enum: ['pending', 'delivered', 'dead'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    /** How many attempts this delivery may make in all (1 when the endpoint was unhealthy). */
    maxAttempts: integer('max_attempts').notNull(),
    nextAttemptAt: ts('next_attempt_at').notNull(),
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
    committedAt: ts('committed_at').notNull(),
    firstAttemptAt: ts('first_attempt_at'),
    deliveredAt: ts('delivered_at'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    // Retries (attempts > 0) and first attempts (resumed after a restart) apart: a delivery whose first
    // attempt succeeds never enters the index the retry poll walks. With one index of every pending row,
    // each delivered webhook left an entry there until vacuum, and the poll (a bitmap scan, which cannot
    // mark entries dead) visited all of them: 21,000 heap pages' worth, 1.2 ms a poll, after one
    // `npm run bench -- webhooks`, growing with the traffic between autovacuums.
    index('webhook_deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.state} = 'pending' and ${t.attempts} > 0`),
    index('webhook_deliveries_fresh_idx').on(t.eventSeq).where(sql`${t.state} = 'pending' and ${t.attempts} = 0`),
    index('webhook_deliveries_dead_idx').on(t.updatedAt, t.id).where(sql`${t.state} = 'dead'`),
    index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.eventSeq),
  ],
)

/**
 * Every delivery attempt, written in the statement that records its outcome (see
 * src/events/delivery): which endpoint, event and try, and how it went. Listed per
 * endpoint (GET /v1/webhook_endpoints/{id}/attempts), newest first; deleted with its
 * event by the outbox retention (src/events/retention.ts), by `event_seq`.
 */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: text('id').primaryKey(),
    endpointId: text('endpoint_id').notNull(),
    deliveryId: text('delivery_id').notNull(),
    eventSeq: bigint('event_seq', { mode: 'number' }).notNull(),
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    /** 1 for the first try of the delivery; the count goes on after a replay. */
    attempt: integer('attempt').notNull(),
    succeeded: boolean('succeeded').notNull(),
    /** The receiver's HTTP status, when it answered. */
    statusCode: integer('status_code'),
    /** Why a failed attempt failed (as the delivery's last_error); null on success. */
    failureReason: text('failure_reason'),
    /** Real milliseconds from sending to the answer (or the failure). */
    durationMs: integer('duration_ms').notNull(),
    /** When the attempt was sent (the service clock). */
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('webhook_attempts_endpoint_idx').on(t.endpointId, t.createdAt, t.id), index('webhook_attempts_event_seq_idx').on(t.eventSeq)],
)

/** The recorded operator mailbox, used when no SMTP_URL is configured. */
export const operatorMail = pgTable('operator_mail', {
  id: text('id').primaryKey(),
  to: jsonb('to').$type<string[]>().notNull(),
  subject: text('subject').notNull(),
  body: text('body').notNull(),
  createdAt: ts('created_at').notNull(),
})
