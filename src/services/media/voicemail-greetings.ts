/** Voicemail greetings: per owner (a user or a shared voicemail box) and type, one stored telephony WAV each. */
import { and, eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { sharedVoicemailBoxes, users, voicemailGreetings } from '../../db/schema'
import { notFound } from '../../errors'
import { newId } from '../../ids'
import type { BlobStorage } from '../../storage/blob-storage'
import type { AudioUpload } from './audio-clips'
import { audioColumnsOf, audioView, convertUpload, type DownloadSigning } from './stored-audio'
import type { AudioConverter } from './telephony-audio'
import { scheduleBlobDeletions } from '../data-lifecycle/blob-deletions'

export type GreetingRow = typeof voicemailGreetings.$inferSelect
export type GreetingType = GreetingRow['type']

export function greetingView(row: GreetingRow, signing: DownloadSigning) {
  return {
    id: row.id,
    object: 'voicemail_greeting' as const,
    account: row.accountId,
    owner: row.ownerId,
    type: row.type,
    ...audioView(row, signing),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

/** The greeting's owner column of each kind: exactly one is set (the table's check). */
type OwnerKey = { userId: string; sharedVoicemailBoxId: null } | { userId: null; sharedVoicemailBoxId: string }

/**
 * 404 voicemail_owner_not_found unless the owner is a user or a shared voicemail box
 * of the account. A write locks the owner (FOR SHARE): an owner deleted meanwhile
 * waits for the write (then deletes the greeting with itself), or is already gone
 * and reads as absent.
 */
async function ownerKey(db: Db, accountId: string, ownerId: string, lock = false): Promise<OwnerKey> {
  const userQuery = db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.accountId, accountId), eq(users.id, ownerId)))
  const [user] = lock ? await userQuery.for('share') : await userQuery
  if (user) return { userId: user.id, sharedVoicemailBoxId: null }
  const boxQuery = db
    .select({ id: sharedVoicemailBoxes.id })
    .from(sharedVoicemailBoxes)
    .where(and(eq(sharedVoicemailBoxes.accountId, accountId), eq(sharedVoicemailBoxes.id, ownerId)))
  const [box] = lock ? await boxQuery.for('share') : await boxQuery
  if (!box) throw notFound('voicemail_owner', ownerId)
  return { userId: null, sharedVoicemailBoxId: box.id }
}

export async function getGreeting(db: Db, accountId: string, ownerId: string, type: GreetingType): Promise<GreetingRow> {
  await ownerKey(db, accountId, ownerId)
  const [row] = await db
    .select()
    .from(voicemailGreetings)
    .where(and(eq(voicemailGreetings.accountId, accountId), eq(voicemailGreetings.ownerId, ownerId), eq(voicemailGreetings.type, type)))
  if (!row) throw notFound('voicemail_greeting')
  return row
}

/** Sets (or replaces) the owner's greeting of this type; a refused upload changes nothing. */
export async function setGreeting(
  tx: Db,
  fx: { clock: Clock; storage: BlobStorage; convert: AudioConverter },
  accountId: string,
  ownerId: string,
  type: GreetingType,
  file: AudioUpload,
): Promise<{ row: GreetingRow; replacedKey?: string }> {
  const owner = await ownerKey(tx, accountId, ownerId, true)
  const [previous] = await tx
    .select({ storageKey: voicemailGreetings.storageKey })
    .from(voicemailGreetings)
    .where(and(eq(voicemailGreetings.accountId, accountId), eq(voicemailGreetings.ownerId, ownerId), eq(voicemailGreetings.type, type)))
  const audio = await convertUpload(fx.convert, file.bytes)
  const now = fx.clock.now()
  const id = newId('voicemailGreeting')
  // A new key per upload: a replaced greeting's old audio stays whole until the caller deletes it after commit.
  const storageKey = `greetings/${accountId}/${id}.wav`
  const columns = audioColumnsOf(audio, storageKey, file.filename)
  const [row] = await tx
    .insert(voicemailGreetings)
    .values({ id, accountId, ownerId, ...owner, type, ...columns, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({
      target: [voicemailGreetings.accountId, voicemailGreetings.ownerId, voicemailGreetings.type],
      set: { ...columns, updatedAt: now },
    })
    .returning()
  await fx.storage.put(storageKey, audio.wav, 'audio/wav')
  return { row: row!, replacedKey: previous?.storageKey }
}

/** Deletes the greeting; returns its storage key for the caller to remove after the commit. */
export async function deleteGreeting(tx: Db, accountId: string, ownerId: string, type: GreetingType): Promise<string> {
  const row = await getGreeting(tx, accountId, ownerId, type)
  await tx.delete(voicemailGreetings).where(eq(voicemailGreetings.id, row.id))
  return row.storageKey
}

/**
 * Deletes every greeting of an owner that is being deleted (the foreign keys would
 * drop the rows, but not their audio). The audio is owed durably in this transaction
 * (the data-lifecycle sweeper removes it, whatever crashes); the keys are returned so
 * the caller may remove it at once after the commit.
 */
export async function deleteGreetingsOf(tx: Db, accountId: string, ownerId: string): Promise<string[]> {
  const rows = await tx
    .delete(voicemailGreetings)
    .where(and(eq(voicemailGreetings.accountId, accountId), eq(voicemailGreetings.ownerId, ownerId)))
    .returning({ storageKey: voicemailGreetings.storageKey })
  const keys = rows.map((r) => r.storageKey)
  await scheduleBlobDeletions(tx, keys, accountId)
  return keys
}
