/**
 * Appends events to the outbox inside the caller's transaction: an event exists
 * exactly when the change that caused it committed. Delivery starts after commit.
 */
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { statement } from '../db/statements'
import { newId } from '../ids'
import { BILLABLE_COUNT_EVENTS } from './catalog'

export interface NewEvent {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
  type: string
  data: Record<string, unknown>
  /** Voice apps the event also goes to, signed with each app's secret (a call's events once an app follows it). */
  voiceApps?: readonly string[]
}

export interface StoredEvent {
  seq: number
  id: string
  platformId: string
  accountId: string
  mode: 'test' | 'live'
  type: string
  /** The exact JSON text sent, signed and streamed. */
  body: string
  createdAt: Date
}

/** The webhook envelope, as text: `{id, type, created_at, account_id | account, data}`. */
export function envelope(id: string, type: string, createdAt: Date, accountId: string, data: Record<string, unknown>): string {
  const accountField = BILLABLE_COUNT_EVENTS.has(type) ? 'account' : 'account_id'
  return JSON.stringify({ id, type, created_at: createdAt.toISOString(), [accountField]: accountId, data })
}

/**
 * Transactions that appended events: after their commit, delivery and the event
 * streams are woken (a transaction that wrote no event wakes nobody).
 */
const wroteEvents = new WeakSet<object>()
export const appendedEvents = (tx: Db): boolean => wroteEvents.has(tx)

/** An event ready to be written: its id, envelope and time fixed. */
export interface PreparedEvent extends NewEvent {
  id: string
  body: string
  createdAt: Date
}

export function prepareEvents(clock: Clock, list: NewEvent[]): PreparedEvent[] {
  const now = clock.now()
  return list.map((e) => {
    const id = newId('event')
    return { ...e, id, body: envelope(id, e.type, now, e.accountId, e.data), createdAt: now }
  })
}

const INSERT_EVENTS = statement<{ seq: number | string; id: string }>(
  `insert into events (id, platform_id, account_id, mode, type, body, created_at, voice_apps)
    select id, platform_id, account_id, mode, type, body, created_at, voice_apps
    from jsonb_to_recordset($1::jsonb)
      as x(ord integer, id text, platform_id text, account_id text, mode text, type text, body text, created_at timestamptz, voice_apps jsonb)
    order by ord
    returning seq, id`,
)

/**
 * Writes prepared events in one statement, in list order (their seq follows it). The
 * rows travel as one JSON parameter, so the statement text is the same whatever the
 * count: PostgreSQL keeps it prepared.
 */
export async function insertEvents(tx: Db, list: PreparedEvent[]): Promise<StoredEvent[]> {
  if (list.length === 0) return []
  wroteEvents.add(tx)
  const rows = list.map((e, ord) => ({
    ord,
    id: e.id,
    platform_id: e.platformId,
    account_id: e.accountId,
    mode: e.mode,
    type: e.type,
    body: e.body,
    created_at: e.createdAt.toISOString(),
    ...(e.voiceApps?.length ? { voice_apps: e.voiceApps } : {}),
  }))
  const stored = await INSERT_EVENTS.rows(tx, [JSON.stringify(rows)])
  const seqOf = new Map(stored.map((r) => [r.id, Number(r.seq)]))
  return list.map((e) => ({
    seq: seqOf.get(e.id)!,
    id: e.id,
    platformId: e.platformId,
    accountId: e.accountId,
    mode: e.mode,
    type: e.type,
    body: e.body,
    createdAt: e.createdAt,
  }))
}

export function appendEvents(tx: Db, clock: Clock, list: NewEvent[]): Promise<StoredEvent[]> {
  return insertEvents(tx, prepareEvents(clock, list))
}
