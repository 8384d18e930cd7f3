/** Audio clips: uploaded audio stored in the form telephony plays (hold music, announcements, menus). */
import { and, eq, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { accounts, audioClips, dialPlans } from '../../db/schema'
import { conflict, notFound } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import type { BlobStorage } from '../../storage/blob-storage'
import { audioColumnsOf, audioView, convertUpload, type DownloadSigning } from './stored-audio'
import type { AudioConverter } from './telephony-audio'

export type AudioClipRow = typeof audioClips.$inferSelect

export function audioClipView(row: AudioClipRow, signing: DownloadSigning) {
  return {
    id: row.id,
    object: 'audio_clip' as const,
    account: row.accountId,
    name: row.name,
    ...audioView(row, signing),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export interface AudioUpload {
  bytes: Uint8Array
  filename: string | null
}

/** Converts, then stores the WAV and the row; a refused upload stores nothing. */
export async function createAudioClip(
  tx: Db,
  fx: { clock: Clock; storage: BlobStorage; convert: AudioConverter },
  accountId: string,
  input: { name: string | null; file: AudioUpload },
): Promise<AudioClipRow> {
  const audio = await convertUpload(fx.convert, input.file.bytes)
  const id = newId('audioClip')
  const now = fx.clock.now()
  const storageKey = `audio-clips/${accountId}/${id}.wav`
  const [row] = await tx
    .insert(audioClips)
    .values({ id, accountId, name: input.name, ...audioColumnsOf(audio, storageKey, input.file.filename), createdAt: now, updatedAt: now })
    .returning()
  // Stored last: if this fails the row rolls back with it.
  await fx.storage.put(storageKey, audio.wav, 'audio/wav')
  return row!
}

export function listAudioClips(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<AudioClipRow>(db, audioClips, eq(audioClips.accountId, accountId), page)
}

export async function getAudioClip(db: Db, accountId: string, id: string): Promise<AudioClipRow> {
  const [row] = await db
    .select()
    .from(audioClips)
    .where(and(eq(audioClips.accountId, accountId), eq(audioClips.id, id)))
  if (!row) throw notFound('audio_clip', id)
  return row
}

export async function updateAudioClip(tx: Db, clock: Clock, accountId: string, id: string, input: { name?: string | null }) {
  await getAudioClip(tx, accountId, id)
  const [row] = await tx
    .update(audioClips)
    .set({ ...(input.name !== undefined ? { name: input.name } : {}), updatedAt: clock.now() })
    .where(and(eq(audioClips.accountId, accountId), eq(audioClips.id, id)))
    .returning()
  return row!
}

/** What plays the clip: the account's hold music, dial plans with a node naming it. */
async function clipUsers(tx: Db, accountId: string, id: string): Promise<string[]> {
  const [account] = await tx
    .select({ id: accounts.id })
    .from(accounts)
    .where(and(eq(accounts.id, accountId), eq(accounts.holdMusicClip, id)))
  // Nodes are jsonb in the routing engine's shape; a clip id appears there only as a quoted value.
  const plans = await tx
    .select({ id: dialPlans.id })
    .from(dialPlans)
    .where(and(eq(dialPlans.accountId, accountId), sql`position(${JSON.stringify(id)} in ${dialPlans.nodes}::text) > 0`))
  return [...(account ? ['the account hold music (hold_music_clip)'] : []), ...plans.map((p) => `dial plan ${p.id}`)]
}

/** Deletes the row, unless something plays it (409); the caller removes the blob after the commit (returned key). */
export async function deleteAudioClip(tx: Db, accountId: string, id: string): Promise<string> {
  const row = await getAudioClip(tx, accountId, id)
  const users = await clipUsers(tx, accountId, id)
  if (users.length > 0) throw conflict(`Audio clip ${id} is in use by ${users.join(', ')}.`, 'audio_clip_in_use')
  await tx.delete(audioClips).where(eq(audioClips.id, row.id))
  return row.storageKey
}
