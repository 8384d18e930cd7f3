import { sql } from 'drizzle-orm'
import { boolean, doublePrecision, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core'
import { accounts } from './accounts'
import { ts } from './columns'
import { sharedVoicemailBoxes } from './routing'

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
    /** The devices (endpoints) that placed or answered the call, for the log's endpoint_id filter. */
    endpointIds: text('endpoint_ids').array().notNull().default(sql`'{}'::text[]`),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [
    index('calls_account_page_idx').on(t.accountId, t.createdAt, t.id),
    index('calls_account_user_idx').on(t.accountId, t.userId),
    index('calls_endpoints_idx').using('gin', t.endpointIds),
  ],
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
    /**
     * The shared box the message was left in. A message is a record, like the call
     * log: deleting the box keeps it (the reference becomes null), as deleting a user
     * keeps theirs.
     */
    sharedVoicemailBoxId: text('shared_voicemail_box_id').references(() => sharedVoicemailBoxes.id, { onDelete: 'set null' }),
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
  (t) => [index('voicemails_account_page_idx').on(t.accountId, t.createdAt, t.id), index('voicemails_box_idx').on(t.sharedVoicemailBoxId)],
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

/**
 * The media processes (the `media` role) alive now: each writes its heartbeat every
 * few seconds and removes its row when it stops. A SIP call's actor names the process
 * holding its legs; a process whose heartbeat stopped (killed, or its machine lost)
 * has its calls ended `failed` (src/services/calls/media-watchdog.ts).
 */
export const mediaNodes = pgTable('media_nodes', {
  id: text('id').primaryKey(),
  startedAt: ts('started_at').notNull(),
  /** Wall time: heartbeats are real seconds whatever VOICE_CLOCK_SPEED. */
  heartbeatAt: ts('heartbeat_at').notNull(),
})

/**
 * Click-to-calls the gateway accepted and no media process has taken yet: written
 * with the request (the 202 promises it), taken (deleted) by the media process that
 * places it, on the bus notice or on its poll for notices it missed. Rows older than
 * a few seconds of ringing are dropped unplaced (src/services/calls/click-to-call-requests.ts).
 */
export const clickToCallRequests = pgTable(
  'click_to_call_requests',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** The notice as the media role takes it (src/services/calls/click-to-call.ts ClickToCallNotice). */
    notice: jsonb('notice').notNull(),
    /** Wall time: the freshness window is real seconds whatever VOICE_CLOCK_SPEED. */
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('click_to_call_requests_created_idx').on(t.createdAt)],
)

/** One leg's RTP figures as kept: what the platform received from that side's phone; loss, jitter and MOS null when it received nothing. */
export interface StoredLegQuality {
  packets_received: number
  packets_sent: number
  packets_lost: number
  /** 0..1 */
  loss_fraction: number | null
  jitter_ms: number | null
  /** E-model estimate, 1..4.5 */
  mos: number | null
}

/**
 * The media quality of an answered SIP call, written once by the media process when
 * the call ends (src/services/quality). No reference to `calls`: the call actor writes
 * the call log row asynchronously and the figures may arrive first; the reads join
 * the call log. Deleting the account deletes them, as it deletes its calls.
 */
export const callQuality = pgTable(
  'call_quality',
  {
    callId: text('call_id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** When the media ended (the call's end): the summary buckets calls by it. */
    endedAt: ts('ended_at').notNull(),
    caller: jsonb('caller').$type<StoredLegQuality>().notNull(),
    callee: jsonb('callee').$type<StoredLegQuality>().notNull(),
    /** The worse leg's MOS; null when neither leg received audio. */
    mos: doublePrecision('mos'),
    /** The worse leg's loss fraction (0..1), of the legs that received audio. */
    packetLoss: doublePrecision('packet_loss'),
    /** The worse leg's jitter, of the legs that received audio. */
    jitterMs: doublePrecision('jitter_ms'),
    /** At least one leg received no RTP at all (one-way or no audio). */
    missingAudio: boolean('missing_audio').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('call_quality_account_ended_idx').on(t.accountId, t.endedAt)],
)
