/** Call recordings: reads, the API views, the transcript, signed downloads and pause intervals. */
import { and, eq, inArray } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { type RecordingPause, recordings } from '../../db/schema'
import { ApiError } from '../../errors'
import { newId } from '../../ids'
import { DEFAULT_DOWNLOAD_TTL_MS, signDownload } from '../../storage/download-urls'

export type RecordingRow = typeof recordings.$inferSelect

export function recordingView(r: RecordingRow) {
  return {
    id: r.id,
    object: 'recording' as const,
    call_id: r.callId,
    status: r.status,
    duration_seconds: r.durationSeconds,
    created_at: r.createdAt.toISOString(),
  }
}

/** The newest recording of each call. */
export async function recordingsOfCalls(db: Db, accountId: string, callIds: string[]): Promise<Map<string, RecordingRow>> {
  const out = new Map<string, RecordingRow>()
  if (callIds.length === 0) return out
  const rows = await db
    .select()
    .from(recordings)
    .where(and(eq(recordings.accountId, accountId), inArray(recordings.callId, callIds)))
  rows.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
  for (const r of rows) out.set(r.callId, r)
  return out
}

/** The call's newest recording, if it has one. */
export async function recordingOfCall(db: Db, accountId: string, callId: string): Promise<RecordingRow | undefined> {
  return (await recordingsOfCalls(db, accountId, [callId])).get(callId)
}

const noRecording = (callId: string) => new ApiError(404, `Call ${callId} has no recording.`, 'recording_not_found')

/** GET /v1/calls/{id}/transcript: 404 recording_not_found without a recording; status processing until transcribed. */
export function callTranscriptView(callId: string, rec: RecordingRow | undefined) {
  if (!rec) throw noRecording(callId)
  const segments = ((rec.transcript as { segments?: unknown[] } | null)?.segments ?? []) as {
    speaker: string
    start_seconds: number
    end_seconds: number
    text: string
  }[]
  return {
    object: 'transcript' as const,
    call_id: callId,
    recording: rec.id,
    status: rec.transcript ? ('completed' as const) : ('processing' as const),
    segments,
    summary: rec.summary,
    sentiment: rec.sentiment ?? null,
  }
}

/** GET /v1/calls/{id}/recording: the recording with a signed URL serving its audio for an hour, without an API key. */
export function recordingDownloadView(callId: string, rec: RecordingRow | undefined, signing: { key: string; baseUrl: string; now: Date }) {
  if (!rec?.storageKey || rec.status !== 'available') throw noRecording(callId)
  const expiresAt = new Date(signing.now.getTime() + DEFAULT_DOWNLOAD_TTL_MS)
  const path = signDownload(signing.key, { key: rec.storageKey, contentType: 'audio/wav', expiresAt })
  return { ...recordingView(rec), url: `${signing.baseUrl}${path}`, expires_at: expiresAt.toISOString() }
}

/**
 * Records a pause (or the resume that closes it) of a call's recording, at `offsetMs`
 * from the answer; the recording row is created by the first pause when the call's
 * recording has none yet. Written by the call actor in the step that toggled it
 * (actors/calls/call-actor.ts). Returns the pause intervals as the API shows them.
 */
export async function recordPauseToggle(tx: Db, clock: Clock, accountId: string, callId: string, pause: boolean, offsetMs: number) {
  const now = clock.now()
  const [rec] = await tx
    .select()
    .from(recordings)
    .where(and(eq(recordings.accountId, accountId), eq(recordings.callId, callId)))
  let pauses: RecordingPause[] = rec?.pauses ?? []
  if (pause) pauses = [...pauses, { from: offsetMs, to: null }]
  else pauses = pauses.map((p) => (p.to === null ? { ...p, to: Math.max(p.from, offsetMs) } : p))
  if (rec) await tx.update(recordings).set({ pauses, updatedAt: now }).where(eq(recordings.id, rec.id))
  else await tx.insert(recordings).values({ id: newId('recording'), callId, accountId, status: 'recording', pauses, createdAt: now, updatedAt: now })
  return pauses.map((p) => ({ from_ms: p.from, to_ms: p.to }))
}

/** The pause intervals of a call's recording, as the API shows them (none yet: empty). */
export async function recordingPauses(db: Db, accountId: string, callId: string) {
  const [rec] = await db
    .select({ pauses: recordings.pauses })
    .from(recordings)
    .where(and(eq(recordings.accountId, accountId), eq(recordings.callId, callId)))
  return (rec?.pauses ?? []).map((p) => ({ from_ms: p.from, to_ms: p.to }))
}
