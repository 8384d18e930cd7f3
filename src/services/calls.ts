/** The call log, recordings and voicemails: reads and the API views. */
import { and, eq, gte, inArray, lt, sql, type SQL } from 'drizzle-orm'
import type { Db } from '../db/client'
import { calls, recordings, voicemails } from '../db/schema'
import { notFound, ValidationError } from '../errors'
import { keysetPage, type PageRequest } from '../pagination'

export type CallRow = typeof calls.$inferSelect
export type RecordingRow = typeof recordings.$inferSelect
export type VoicemailRow = typeof voicemails.$inferSelect

const iso = (d: Date | null) => (d ? d.toISOString() : null)

export function recordingView(r: RecordingRow) {
  return { id: r.id, object: 'recording' as const, call_id: r.callId, status: r.status, duration_seconds: r.durationSeconds, created_at: r.createdAt.toISOString() }
}

/**
 * The call log record. While the call is in flight (status null) it is the sparse
 * live view: fields known only after the end (ended_at, duration, recording,
 * summary, sentiment) are absent.
 */
export function callView(row: CallRow, recording?: RecordingRow | null) {
  const base = {
    id: row.id,
    object: 'call' as const,
    account: row.accountId,
    direction: row.direction,
    from_number: row.fromNumber,
    from_label: row.fromLabel,
    to_number: row.toNumber,
    user_id: row.userId,
    from_user_id: row.fromUserId,
    to_user_id: row.toUserId,
    status: row.status,
    started_at: row.startedAt.toISOString(),
    ringing_at: iso(row.ringingAt),
    answered_at: iso(row.answeredAt),
    connected_at: iso(row.connectedAt),
    related_call: row.relatedCall,
    simulated: row.simulated,
  }
  if (row.status === null) return base
  return {
    ...base,
    ended_at: iso(row.endedAt),
    duration_seconds: row.durationSeconds,
    recording: recording ? recordingView(recording) : null,
    summary: row.summary,
    sentiment: row.sentiment ?? null,
  }
}

/** `from_date`/`to_date`: a date (whole UTC day, to_date inclusive) or a date-time. */
export function parseDateBound(value: string | undefined, field: string, end: boolean): Date | undefined {
  if (value === undefined) return undefined
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value)
  const t = Date.parse(dateOnly ? `${value}T00:00:00.000Z` : value)
  if (Number.isNaN(t)) throw new ValidationError({ [field]: 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time' })
  return new Date(dateOnly && end ? t + 86_400_000 : t + (end ? 1 : 0))
}

export interface CallFilters {
  user_id?: string
  /** Calls that involved this device endpoint; no call records endpoints yet, so none match. */
  endpoint_id?: string
  direction?: CallRow['direction']
  from_number?: string
  to_number?: string
  status?: string
  from_date?: string
  to_date?: string
}

export function listCalls(db: Db, accountId: string, f: CallFilters, page: PageRequest) {
  const where: (SQL | undefined)[] = [eq(calls.accountId, accountId)]
  if (f.user_id) where.push(eq(calls.userId, f.user_id))
  if (f.endpoint_id) where.push(sql`false`)
  if (f.direction) where.push(eq(calls.direction, f.direction))
  if (f.from_number) where.push(eq(calls.fromNumber, f.from_number))
  if (f.to_number) where.push(eq(calls.toNumber, f.to_number))
  if (f.status) where.push(eq(calls.status, f.status))
  const from = parseDateBound(f.from_date, 'from_date', false)
  const to = parseDateBound(f.to_date, 'to_date', true)
  if (from) where.push(gte(calls.startedAt, from))
  if (to) where.push(lt(calls.startedAt, to))
  return keysetPage<CallRow>(db, calls, and(...where), page)
}

export async function getCall(db: Db, accountId: string, id: string): Promise<CallRow> {
  const [row] = await db.select().from(calls).where(and(eq(calls.accountId, accountId), eq(calls.id, id)))
  if (!row) throw notFound('call', id)
  return row
}

/** The newest recording of each call. */
export async function recordingsOfCalls(db: Db, accountId: string, callIds: string[]): Promise<Map<string, RecordingRow>> {
  const out = new Map<string, RecordingRow>()
  if (callIds.length === 0) return out
  const rows = await db.select().from(recordings).where(and(eq(recordings.accountId, accountId), inArray(recordings.callId, callIds)))
  rows.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
  for (const r of rows) out.set(r.callId, r)
  return out
}

export function voicemailView(row: VoicemailRow, expanded?: { call?: CallRow | null }) {
  return {
    id: row.id,
    object: 'voicemail' as const,
    account: row.accountId,
    owner: row.userId,
    call_id: row.callId,
    from_number: row.fromNumber,
    from_name: row.fromName,
    duration_seconds: row.durationSeconds,
    is_read: row.isRead,
    summary: row.summary,
    sentiment: row.sentiment ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    ...(expanded?.call !== undefined ? { call: expanded.call ? callView(expanded.call) : null } : {}),
  }
}

export interface VoicemailFilters {
  owner?: string
  is_read?: boolean
  from_date?: string
}

export function listVoicemails(db: Db, accountId: string, f: VoicemailFilters, page: PageRequest) {
  const where: (SQL | undefined)[] = [eq(voicemails.accountId, accountId)]
  if (f.owner) where.push(eq(voicemails.userId, f.owner))
  if (f.is_read !== undefined) where.push(eq(voicemails.isRead, f.is_read))
  const from = parseDateBound(f.from_date, 'from_date', false)
  if (from) where.push(gte(voicemails.createdAt, from))
  return keysetPage<VoicemailRow>(db, voicemails, and(...where), page)
}

export async function getVoicemail(db: Db, accountId: string, id: string): Promise<VoicemailRow> {
  const [row] = await db.select().from(voicemails).where(and(eq(voicemails.accountId, accountId), eq(voicemails.id, id)))
  if (!row) throw notFound('voicemail', id)
  return row
}

export async function callsByIds(db: Db, accountId: string, ids: string[]): Promise<Map<string, CallRow>> {
  if (ids.length === 0) return new Map()
  const rows = await db.select().from(calls).where(and(eq(calls.accountId, accountId), inArray(calls.id, ids)))
  return new Map(rows.map((r) => [r.id, r]))
}
