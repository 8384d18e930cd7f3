import { boolean, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core'
import { accounts } from './accounts'
import { ts } from './columns'

/** The call log: one row per call, written as the call moves; `status` stays null while in flight. */
export const calls = pgTable(
  'calls',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    mode: text('mode', { enum: ['test', 'live'] }).notNull(),
    direction: text('direction', { enum: ['inbound', 'outbound', 'internal'] }).notNull(),
    fromNumber: text('from_number'),
    fromLabel: text('from_label'),
    toNumber: text('to_number'),
    userId: text('user_id'),
    fromUserId: text('from_user_id'),
    toUserId: text('to_user_id'),
    /** completed, no-answer, busy, failed, voicemail; null while in flight. */
    status: text('status'),
    startedAt: ts('started_at').notNull(),
    ringingAt: ts('ringing_at'),
    answeredAt: ts('answered_at'),
    connectedAt: ts('connected_at'),
    endedAt: ts('ended_at'),
    durationSeconds: integer('duration_seconds'),
    relatedCall: text('related_call'),
    summary: text('summary'),
    sentiment: jsonb('sentiment'),
    simulated: boolean('simulated').notNull().default(false),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('calls_account_page_idx').on(t.accountId, t.createdAt, t.id), index('calls_account_user_idx').on(t.accountId, t.userId)],
)

/** A paused stretch of a recording, in ms from its start (the answer); `to` null while still paused. */
export type RecordingPause = { from: number; to: number | null }

/** Recordings are audio files in storage; pause and resume leave a silent gap in the one file. */
export const recordings = pgTable(
  'recordings',
  {
    id: text('id').primaryKey(),
    callId: text('call_id').notNull(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    status: text('status', { enum: ['recording', 'processing', 'available', 'failed'] }).notNull(),
    storageKey: text('storage_key'),
    durationSeconds: integer('duration_seconds'),
    /** Simulated-time intervals during which recording was paused: [{from, to}] in ms from the start. */
    pauses: jsonb('pauses').$type<RecordingPause[]>().notNull().default([]),
    transcript: jsonb('transcript'),
    summary: text('summary'),
    sentiment: jsonb('sentiment'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('recordings_call_idx').on(t.callId)],
)

export const voicemails = pgTable(
  'voicemails',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** The owning user; null for a shared voicemail box. */
    userId: text('user_id'),
    callId: text('call_id'),
    fromNumber: text('from_number'),
    fromName: text('from_name'),
    durationSeconds: integer('duration_seconds').notNull(),
    storageKey: text('storage_key'),
    isRead: boolean('is_read').notNull().default(false),
    transcript: jsonb('transcript'),
    summary: text('summary'),
    sentiment: jsonb('sentiment'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('voicemails_account_page_idx').on(t.accountId, t.createdAt, t.id)],
)

/** Listeners attached to an active call (monitoring). */
export const callListeners = pgTable(
  'call_listeners',
  {
    id: text('id').primaryKey(),
    callId: text('call_id').notNull(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    userId: text('user_id'),
    mode: text('mode', { enum: ['listen', 'whisper', 'barge'] }).notNull(),
    status: text('status', { enum: ['active', 'ended'] }).notNull(),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('call_listeners_call_idx').on(t.callId, t.createdAt, t.id)],
)
