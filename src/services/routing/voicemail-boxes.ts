/**
 * Shared voicemail boxes: a box calls can be sent to straight (a routing target),
 * whose messages the listed users may hear.
 */
import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { sharedVoicemailBoxes, users } from '../../db/schema'
import { type FieldDetails, notFound, ValidationError } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { deleteGreetingsOf } from '../media/voicemail-greetings'
import { guardedDelete, guardedWrite, type RoutingCheck } from './config'

export type SharedVoicemailBoxRow = typeof sharedVoicemailBoxes.$inferSelect

export function sharedVoicemailBoxView(row: SharedVoicemailBoxRow) {
  return {
    id: row.id,
    object: 'shared_voicemail_box' as const,
    account: row.accountId,
    name: row.name,
    users: row.users,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export interface BoxInput {
  name?: string
  users?: string[]
}

/** Each listed user must be a user of the account (details `users.<index>`), listed once. */
async function checkUsers(db: Db, accountId: string, ids: string[] | undefined) {
  if (!ids || ids.length === 0) return
  // FOR SHARE: a user deleted meanwhile waits for this write, then takes itself off the list (no dangling listener).
  const found = new Set(
    (
      await db
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.accountId, accountId), inArray(users.id, ids)))
        .for('share')
    ).map((r) => r.id),
  )
  const details: FieldDetails = {}
  const seen = new Set<string>()
  ids.forEach((id, i) => {
    if (!found.has(id)) details[`users.${i}`] = `user ${JSON.stringify(id)} is not in this account`
    else if (seen.has(id)) details[`users.${i}`] = `user ${JSON.stringify(id)} is listed twice`
    seen.add(id)
  })
  if (Object.keys(details).length > 0) throw new ValidationError(details)
}

export async function createSharedVoicemailBox(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, input: BoxInput & { name: string }) {
  await checkUsers(tx, accountId, input.users)
  const id = newId('sharedVoicemailBox')
  const now = clock.now()
  return guardedWrite(tx, check, accountId, { collection: 'voicemailBoxes', id }, async () => {
    const [row] = await tx
      .insert(sharedVoicemailBoxes)
      .values({ id, accountId, name: input.name, users: input.users ?? [], createdAt: now, updatedAt: now })
      .returning()
    return row!
  })
}

export async function getSharedVoicemailBox(db: Db, accountId: string, id: string): Promise<SharedVoicemailBoxRow> {
  const [row] = await db
    .select()
    .from(sharedVoicemailBoxes)
    .where(and(eq(sharedVoicemailBoxes.accountId, accountId), eq(sharedVoicemailBoxes.id, id)))
  if (!row) throw notFound('shared_voicemail_box', id)
  return row
}

export function listSharedVoicemailBoxes(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<SharedVoicemailBoxRow>(db, sharedVoicemailBoxes, eq(sharedVoicemailBoxes.accountId, accountId), page)
}

export async function updateSharedVoicemailBox(tx: Db, clock: Clock, accountId: string, id: string, input: BoxInput) {
  await getSharedVoicemailBox(tx, accountId, id)
  await checkUsers(tx, accountId, input.users)
  const set: Partial<typeof sharedVoicemailBoxes.$inferInsert> = { updatedAt: clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.users !== undefined) set.users = input.users
  const [row] = await tx
    .update(sharedVoicemailBoxes)
    .set(set)
    .where(and(eq(sharedVoicemailBoxes.accountId, accountId), eq(sharedVoicemailBoxes.id, id)))
    .returning()
  return row!
}

/**
 * Deletes the box with its greetings, unless something still routes to it (409).
 * Its messages stay, as records (their `shared_voicemail_box_id` becomes null).
 * Returns the greetings' audio keys for the caller to remove after the commit.
 */
export async function deleteSharedVoicemailBox(tx: Db, check: RoutingCheck, accountId: string, id: string): Promise<{ audioKeys: string[] }> {
  // FOR UPDATE: a greeting upload locks the box to reference it; it waits, then finds the box gone.
  const [box] = await tx
    .select({ id: sharedVoicemailBoxes.id })
    .from(sharedVoicemailBoxes)
    .where(and(eq(sharedVoicemailBoxes.accountId, accountId), eq(sharedVoicemailBoxes.id, id)))
    .for('update')
  if (!box) throw notFound('shared_voicemail_box', id)
  let audioKeys: string[] = []
  await guardedDelete(tx, check, accountId, `shared voicemail box ${id}`, async () => {
    audioKeys = await deleteGreetingsOf(tx, accountId, id)
    await tx.delete(sharedVoicemailBoxes).where(and(eq(sharedVoicemailBoxes.accountId, accountId), eq(sharedVoicemailBoxes.id, id)))
  })
  return { audioKeys }
}

/** A deleted user is no longer one of the users who may listen to any box. */
export async function removeUserFromSharedVoicemailBoxes(tx: Db, clock: Clock, accountId: string, userId: string): Promise<void> {
  await tx
    .update(sharedVoicemailBoxes)
    .set({ users: sql`${sharedVoicemailBoxes.users} - ${userId}::text`, updatedAt: clock.now() })
    .where(and(eq(sharedVoicemailBoxes.accountId, accountId), sql`${sharedVoicemailBoxes.users} @> ${JSON.stringify([userId])}::jsonb`))
}
