/**
 * Extensions: short dial codes of an account. The number is the path identifier,
 * unique per account, as long as `config.extension_length`; the target must be a
 * routable resource of the account.
 */
import { and, eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { extensions, users } from '../../db/schema'
import { conflict, notFound, ValidationError } from '../../errors'
import { idKind, newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { isUniqueViolation } from '../../db/errors'

export type ExtensionRow = typeof extensions.$inferSelect

export function extensionView(row: ExtensionRow) {
  return {
    id: row.id,
    object: 'extension' as const,
    account: row.accountId,
    number: row.number,
    target: row.target,
    status: row.status,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

/**
 * Routing targets that exist today are users; voice apps, dial plans, ring groups,
 * shared voicemail boxes and queues join this check as they become resources.
 */
async function isRoutableTarget(db: Db, accountId: string, target: string): Promise<boolean> {
  if (idKind(target) === 'user') {
    // FOR SHARE: a concurrent delete of the user waits for this transaction, so an
    // extension can never be left pointing at a user deleted in between.
    const [row] = await db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.accountId, accountId), eq(users.id, target)))
      .for('share')
    return row !== undefined
  }
  return false
}

const exists = (number: string) => conflict(`Extension ${number} already exists in this account.`, 'extension_exists')

export async function createExtension(
  tx: Db,
  clock: Clock,
  account: { id: string; extensionLength: number },
  input: { number: string; target: string; status?: 'active' | 'inactive' },
) {
  const details: Record<string, string> = {}
  if (input.number.length !== account.extensionLength) details.number = `must be exactly ${account.extensionLength} digits (config.extension_length)`
  if (!(await isRoutableTarget(tx, account.id, input.target))) details.target = 'is not a routable resource of this account'
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const now = clock.now()
  const rows = await tx
    .insert(extensions)
    .values({
      id: newId('extension'),
      accountId: account.id,
      number: input.number,
      target: input.target,
      status: input.status ?? 'active',
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing()
    .returning()
  if (rows.length === 0) throw exists(input.number)
  return rows[0]!
}

export async function getExtension(db: Db, accountId: string, number: string): Promise<ExtensionRow> {
  const [row] = await db
    .select()
    .from(extensions)
    .where(and(eq(extensions.accountId, accountId), eq(extensions.number, number)))
  if (!row) throw notFound('extension', number)
  return row
}

/** The account's active extension with this number, if any. */
export async function activeExtension(db: Db, accountId: string, number: string): Promise<ExtensionRow | undefined> {
  const [row] = await db
    .select()
    .from(extensions)
    .where(and(eq(extensions.accountId, accountId), eq(extensions.number, number), eq(extensions.status, 'active')))
  return row
}

export function listExtensions(db: Db, accountId: string, filters: { target?: string }, page: PageRequest) {
  const where = filters.target ? and(eq(extensions.accountId, accountId), eq(extensions.target, filters.target)) : eq(extensions.accountId, accountId)
  return keysetPage<ExtensionRow>(db, extensions, where, page)
}

export async function updateExtension(tx: Db, clock: Clock, accountId: string, number: string, input: { target?: string; status?: 'active' | 'inactive' }) {
  await getExtension(tx, accountId, number)
  if (input.target !== undefined && !(await isRoutableTarget(tx, accountId, input.target))) {
    throw new ValidationError({ target: 'is not a routable resource of this account' })
  }
  const set: Partial<typeof extensions.$inferInsert> = { updatedAt: clock.now() }
  if (input.target !== undefined) set.target = input.target
  if (input.status !== undefined) set.status = input.status
  try {
    const [row] = await tx
      .update(extensions)
      .set(set)
      .where(and(eq(extensions.accountId, accountId), eq(extensions.number, number)))
      .returning()
    return row!
  } catch (e) {
    if (isUniqueViolation(e)) throw exists(number)
    throw e
  }
}

export async function deleteExtension(tx: Db, accountId: string, number: string) {
  await getExtension(tx, accountId, number)
  await tx.delete(extensions).where(and(eq(extensions.accountId, accountId), eq(extensions.number, number)))
}
