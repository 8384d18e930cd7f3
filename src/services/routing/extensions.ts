/**
 * Extensions: short dial codes of an account. The number is the path identifier,
 * unique per account, as long as `config.extension_length`; the target must be a
 * routable resource of the account, and the routing guard (config.ts) refuses a
 * target that would close a routing loop.
 */
import { and, desc, eq, inArray } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { extensions, users } from '../../db/schema'
import { conflict, notFound, ValidationError } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { isUniqueViolation } from '../../db/errors'
import { guardedWrite, type RoutingCheck, targetOf } from './config'

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
 * A first look at the target, before the routing guard checks that it exists and
 * forms no loop: its id must name a routable kind, and a user target must be a user
 * of the account.
 */
async function targetProblem(db: Db, accountId: string, target: string): Promise<string | undefined> {
  const ref = targetOf(target)
  if (!ref) return 'is not a routable resource of this account'
  if (ref.type !== 'user') return undefined
  // FOR SHARE: a concurrent delete of the user waits for this transaction, so an
  // extension can never be left pointing at a user deleted in between.
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.accountId, accountId), eq(users.id, target)))
    .for('share')
  return row ? undefined : 'is not a routable resource of this account'
}

const exists = (number: string) => conflict(`Extension ${number} already exists in this account.`, 'extension_exists')

export async function createExtension(
  tx: Db,
  clock: Clock,
  check: RoutingCheck,
  account: { id: string; extensionLength: number },
  input: { number: string; target: string; status?: 'active' | 'inactive' },
) {
  const details: Record<string, string> = {}
  if (input.number.length !== account.extensionLength) details.number = `must be exactly ${account.extensionLength} digits (config.extension_length)`
  const problem = await targetProblem(tx, account.id, input.target)
  if (problem) details.target = problem
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const now = clock.now()
  const rows = await guardedWrite(tx, check, account.id, { collection: 'extensions', id: input.number }, () =>
    tx
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
      .returning(),
  )
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

export async function updateExtension(
  tx: Db,
  clock: Clock,
  check: RoutingCheck,
  accountId: string,
  number: string,
  input: { target?: string; status?: 'active' | 'inactive' },
) {
  await getExtension(tx, accountId, number)
  const problem = input.target === undefined ? undefined : await targetProblem(tx, accountId, input.target)
  if (problem) throw new ValidationError({ target: problem })
  const set: Partial<typeof extensions.$inferInsert> = { updatedAt: clock.now() }
  if (input.target !== undefined) set.target = input.target
  if (input.status !== undefined) set.status = input.status
  try {
    return await guardedWrite(tx, check, accountId, { collection: 'extensions', id: number }, async () => {
      const [row] = await tx
        .update(extensions)
        .set(set)
        .where(and(eq(extensions.accountId, accountId), eq(extensions.number, number)))
        .returning()
      return row!
    })
  } catch (e) {
    if (isUniqueViolation(e)) throw exists(number)
    throw e
  }
}

export async function deleteExtension(tx: Db, accountId: string, number: string) {
  await getExtension(tx, accountId, number)
  await tx.delete(extensions).where(and(eq(extensions.accountId, accountId), eq(extensions.number, number)))
}

/** The extensions routing to each of these targets (for `expand[]=extensions`), newest first. */
export async function extensionsTargeting(db: Db, accountId: string, targets: string[]): Promise<Map<string, ExtensionRow[]>> {
  const byTarget = new Map<string, ExtensionRow[]>(targets.map((id) => [id, []]))
  if (targets.length === 0) return byTarget
  const rows = await db
    .select()
    .from(extensions)
    .where(and(eq(extensions.accountId, accountId), inArray(extensions.target, targets)))
    .orderBy(desc(extensions.createdAt), desc(extensions.id))
  for (const row of rows) byTarget.get(row.target)?.push(row)
  return byTarget
}
