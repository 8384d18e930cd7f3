/**
 * Appends events to the outbox inside the caller's transaction: an event exists
 * exactly when the change that caused it committed. Delivery starts after commit.
 */
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { events } from '../db/schema'
import { newId } from '../ids'
import { BILLABLE_COUNT_EVENTS } from './catalog'

export interface NewEvent {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
  type: string
  data: Record<string, unknown>
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

export async function appendEvents(tx: Db, clock: Clock, list: NewEvent[]): Promise<StoredEvent[]> {
  if (list.length === 0) return []
  const now = clock.now()
  const rows = list.map((e) => {
    const id = newId('event')
    return { id, platformId: e.platformId, accountId: e.accountId, mode: e.mode, type: e.type, body: envelope(id, e.type, now, e.accountId, e.data), createdAt: now }
  })
  return (await tx.insert(events).values(rows).returning({
    seq: events.seq,
    id: events.id,
    platformId: events.platformId,
    accountId: events.accountId,
    mode: events.mode,
    type: events.type,
    body: events.body,
    createdAt: events.createdAt,
  })) as StoredEvent[]
}
