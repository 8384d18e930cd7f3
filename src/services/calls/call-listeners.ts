/**
 * Listeners on a call (monitoring: listen, whisper, barge). A listener is created
 * only on an answered call; it ends when it is deleted or when the call ends (the
 * call actor's projection ends them on call.end; reads reconcile a listener created
 * in a race with the end).
 */
import { and, eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { callListeners, calls } from '../../db/schema'
import { pgArray, statement } from '../../db/statements'
import { notFound } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'

export type ListenerRow = typeof callListeners.$inferSelect
export type ListenerMode = ListenerRow['mode']

export function listenerView(r: ListenerRow) {
  return {
    id: r.id,
    object: 'call_listener' as const,
    call_id: r.callId,
    user: r.userId,
    mode: r.mode,
    status: r.status,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  }
}

/** Ends the calls' active listeners (the calls ended, or their warm-transfer consultation was handed over). */
export async function endListenersOfCalls(db: Db, clock: Clock, callIds: string[]): Promise<void> {
  if (callIds.length === 0) return
  await END_LISTENERS_OF_CALLS.rows(db, [clock.now().toISOString(), pgArray(callIds)])
}

/** Every ended call's step runs it (with the calls of its group commit): a fixed statement, the ids as one array. */
const END_LISTENERS_OF_CALLS = statement(
  `update call_listeners set status = 'ended', updated_at = $1::timestamptz where status = 'active' and call_id = any($2::text[])`,
)

/** Ends the call's active listeners when the call has ended (status set on the call log). */
export async function reconcileListeners(db: Db, clock: Clock, accountId: string, callId: string): Promise<void> {
  const [call] = await db
    .select({ status: calls.status })
    .from(calls)
    .where(and(eq(calls.accountId, accountId), eq(calls.id, callId)))
  if (!call || call.status === null) return
  await db
    .update(callListeners)
    .set({ status: 'ended', updatedAt: clock.now() })
    .where(and(eq(callListeners.accountId, accountId), eq(callListeners.callId, callId), eq(callListeners.status, 'active')))
}

export async function createListener(db: Db, clock: Clock, accountId: string, callId: string, f: { user?: string; mode?: ListenerMode }): Promise<ListenerRow> {
  const now = clock.now()
  const [row] = await db
    .insert(callListeners)
    .values({ id: newId('listener'), callId, accountId, userId: f.user ?? null, mode: f.mode ?? 'listen', status: 'active', createdAt: now, updatedAt: now })
    .returning()
  return row!
}

export function listListeners(db: Db, accountId: string, callId: string, page: PageRequest) {
  return keysetPage<ListenerRow>(db, callListeners, and(eq(callListeners.accountId, accountId), eq(callListeners.callId, callId)), page)
}

export async function getListener(db: Db, accountId: string, callId: string, id: string): Promise<ListenerRow> {
  const [row] = await db
    .select()
    .from(callListeners)
    .where(and(eq(callListeners.accountId, accountId), eq(callListeners.callId, callId), eq(callListeners.id, id)))
  if (!row) throw notFound('listener', id)
  return row
}

/** Ends a listener (idempotent: an ended listener stays ended). */
export async function endListener(db: Db, clock: Clock, accountId: string, callId: string, id: string): Promise<ListenerRow> {
  const row = await getListener(db, accountId, callId, id)
  if (row.status === 'ended') return row
  const [updated] = await db.update(callListeners).set({ status: 'ended', updatedAt: clock.now() }).where(eq(callListeners.id, row.id)).returning()
  return updated!
}
