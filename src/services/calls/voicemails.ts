/** Voicemails: reads, the API view and the transcript (the call simulator and, later, the media role write them). */
import { and, eq, gte, or, type SQL } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { voicemails } from '../../db/schema'
import { notFound } from '../../errors'
import { keysetPage, type PageRequest } from '../../pagination'
import { type CallRow, callView, parseDateBound } from './call-log'

export type VoicemailRow = typeof voicemails.$inferSelect

export function voicemailView(row: VoicemailRow, expanded?: { call?: CallRow | null }) {
  return {
    id: row.id,
    object: 'voicemail' as const,
    account: row.accountId,
    owner: row.userId,
    shared_voicemail_box_id: row.sharedVoicemailBoxId,
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
  /** A user (their messages) or a shared voicemail box (the messages left in it), as greetings name their owner. */
  owner?: string
  is_read?: boolean
  from_date?: string
}

export function listVoicemails(db: Db, accountId: string, f: VoicemailFilters, page: PageRequest) {
  const where: (SQL | undefined)[] = [eq(voicemails.accountId, accountId)]
  if (f.owner) where.push(or(eq(voicemails.userId, f.owner), eq(voicemails.sharedVoicemailBoxId, f.owner)))
  if (f.is_read !== undefined) where.push(eq(voicemails.isRead, f.is_read))
  const from = parseDateBound(f.from_date, 'from_date', false)
  if (from) where.push(gte(voicemails.createdAt, from))
  return keysetPage<VoicemailRow>(db, voicemails, and(...where), page)
}

export async function getVoicemail(db: Db, accountId: string, id: string): Promise<VoicemailRow> {
  const [row] = await db
    .select()
    .from(voicemails)
    .where(and(eq(voicemails.accountId, accountId), eq(voicemails.id, id)))
  if (!row) throw notFound('voicemail', id)
  return row
}

/** POST /v1/voicemails/{id}: mark read or unread. */
export async function updateVoicemail(tx: Db, clock: Clock, accountId: string, id: string, input: { is_read?: boolean }): Promise<VoicemailRow> {
  await getVoicemail(tx, accountId, id)
  const [row] = await tx
    .update(voicemails)
    .set({ ...(input.is_read !== undefined ? { isRead: input.is_read } : {}), updatedAt: clock.now() })
    .where(and(eq(voicemails.accountId, accountId), eq(voicemails.id, id)))
    .returning()
  return row!
}

/** DELETE /v1/voicemails/{id}: removes the record; returns its audio's storage key for the caller to delete after the commit. */
export async function deleteVoicemail(tx: Db, accountId: string, id: string): Promise<string | null> {
  const row = await getVoicemail(tx, accountId, id)
  await tx.delete(voicemails).where(eq(voicemails.id, row.id))
  return row.storageKey
}

/** GET /v1/voicemails/{id}/transcript: the message as text and as one caller segment; status processing until transcribed. */
export function voicemailTranscriptView(row: VoicemailRow) {
  const stored = row.transcript as { text?: unknown; segments?: unknown } | null
  const text = typeof stored?.text === 'string' ? stored.text : null
  const segments = Array.isArray(stored?.segments)
    ? (stored.segments as { speaker: string; start_seconds: number; end_seconds: number; text: string }[])
    : text !== null
      ? [{ speaker: 'caller', start_seconds: 0, end_seconds: row.durationSeconds, text }]
      : []
  return {
    object: 'voicemail_transcript' as const,
    voicemail_id: row.id,
    call_id: row.callId,
    status: stored ? ('completed' as const) : ('processing' as const),
    text,
    segments,
    summary: row.summary,
    sentiment: row.sentiment ?? null,
  }
}
