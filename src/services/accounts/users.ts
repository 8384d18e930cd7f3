/** Users (team members) of an account, and their extensions. */
import { and, eq, ilike, inArray, ne, or, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { pgArray, statement, tableStatement } from '../../db/statements'
import { extensions, queueAgents, queueMembers, users } from '../../db/schema'
import { isUniqueViolation } from '../../db/errors'
import { conflict, type FieldDetails, notFound, ValidationError } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import type { ActorMessages } from '../deps'
import { checkPlainText } from '../devices/plain-text'
import { deleteGreetingsOf } from '../media/voicemail-greetings'
import { guardedDelete, lockRouting, type RoutingCheck } from '../routing/config'
import { extensionView, type ExtensionRow } from '../routing/extensions'
import { removeQueueMember } from '../routing/queues'
import { removeUserFromRingGroups } from '../routing/ring-groups'
import { removeUserFromSharedVoicemailBoxes } from '../routing/voicemail-boxes'

export type UserRow = typeof users.$inferSelect

export function userView(row: UserRow, expanded?: { extensions?: ExtensionRow[] }) {
  return {
    id: row.id,
    object: 'user' as const,
    account: row.accountId,
    name: row.name,
    email: row.email,
    ...(expanded?.extensions ? { extensions: { object: 'list' as const, data: expanded.extensions.map(extensionView) } } : {}),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

const emailTaken = () => conflict('Another user of this account has this email.', 'user_email_taken')

async function assertEmailFree(db: Db, accountId: string, email: string, exceptId?: string) {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.accountId, accountId), sql`lower(${users.email}) = lower(${email})`))
  if (row && row.id !== exceptId) throw emailTaken()
}

/** A user's name is the caller ID and display name their phones show. */
function checkName(name: string | null | undefined) {
  const details: FieldDetails = {}
  checkPlainText(details, { name })
  if (Object.keys(details).length > 0) throw new ValidationError(details)
}

/**
 * The email check and the insert in one fixed statement: creating users is the
 * busiest write of onboarding, and the builder's two statements cost more client
 * CPU than the database's work (`npm run bench -- api`). Nothing comes back when the
 * account has a user with this email, or when a concurrent create took it first
 * (the unique index).
 */
const INSERT_USER = tableStatement(
  users,
  (columns) => `insert into users (id, account_id, name, email, created_at, updated_at)
    select $1, $2, $3, $4, $5, $5
    where not exists (select 1 from users where account_id = $2 and lower(email) = lower($4))
    on conflict do nothing
    returning ${columns}`,
)

export async function createUser(tx: Db, clock: Clock, accountId: string, input: { name?: string | null; email: string }): Promise<UserRow> {
  checkName(input.name)
  const [row] = await INSERT_USER.rows(tx, [newId('user'), accountId, input.name ?? null, input.email, clock.now().toISOString()])
  if (!row) throw emailTaken()
  return row
}

export async function getUser(db: Db, accountId: string, id: string): Promise<UserRow> {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.accountId, accountId), eq(users.id, id)))
  if (!row) throw notFound('user', id)
  return row
}

/** The user's session epoch (user tokens carry the one they were minted in; revoke_sessions bumps it), undefined when the user is gone. */
export async function userSessionEpoch(db: Db, accountId: string, userId: string): Promise<number | undefined> {
  const [row] = await db
    .select({ epoch: users.sessionEpoch })
    .from(users)
    .where(and(eq(users.id, userId), eq(users.accountId, accountId)))
  return row?.epoch
}

/** Which of these ids are users of the account (one fixed statement, whatever the count: every call origination asks). */
const USERS_OF_ACCOUNT = statement<{ id: string }>('select id from users where account_id = $1 and id = any($2::text[])')

export async function usersOfAccount(db: Db, accountId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rows = await USERS_OF_ACCOUNT.rows(db, [accountId, pgArray([...new Set(ids)])])
  return new Set(rows.map((r) => r.id))
}

export const isUserOfAccount = async (db: Db, accountId: string, id: string): Promise<boolean> => (await usersOfAccount(db, accountId, [id])).has(id)

/** A referenced user (a request field) must be a user of the account: 400 validation_error naming the field otherwise. */
export async function assertUserOfAccount(db: Db, accountId: string, id: string, field: string): Promise<void> {
  if (!(await isUserOfAccount(db, accountId, id))) throw new ValidationError({ [field]: 'is not a user of this account' })
}

/** Escapes LIKE wildcards so a search for "50%" finds "50%" literally. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/** A user by ID alone, whatever its account: callers check the account is the caller's. */
export async function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.id, id))
  return row
}

export function listUsers(db: Db, accountId: string, filters: { search?: string }, page: PageRequest) {
  const search = filters.search?.trim()
  const where = search
    ? and(eq(users.accountId, accountId), or(ilike(users.name, `%${likeEscape(search)}%`), ilike(users.email, `%${likeEscape(search)}%`)))
    : eq(users.accountId, accountId)
  return keysetPage<UserRow>(db, users, where, page)
}

/** `GET /v1/me/directory`: every other user of the account, in list order. */
export function listDirectory(db: Db, accountId: string, selfId: string, page: PageRequest) {
  return keysetPage<UserRow>(db, users, and(eq(users.accountId, accountId), ne(users.id, selfId)), page)
}

/** A DirectoryEntry: only these two fields (spec); an unnamed user shows its id. */
export function directoryEntry(row: UserRow) {
  return { user: row.id, display_name: row.name?.trim() ? row.name : row.id }
}

export async function extensionsOfUsers(db: Db, accountId: string, userIds: string[]): Promise<Map<string, ExtensionRow[]>> {
  const out = new Map<string, ExtensionRow[]>(userIds.map((id) => [id, []]))
  if (userIds.length === 0) return out
  const rows = await db
    .select()
    .from(extensions)
    .where(and(eq(extensions.accountId, accountId), inArray(extensions.target, userIds)))
    .orderBy(extensions.number)
  for (const r of rows) out.get(r.target)?.push(r)
  return out
}

export async function updateUser(tx: Db, clock: Clock, accountId: string, id: string, input: { name?: string | null; email?: string }) {
  await getUser(tx, accountId, id)
  checkName(input.name)
  if (input.email !== undefined) await assertEmailFree(tx, accountId, input.email, id)
  const set: Partial<typeof users.$inferInsert> = { updatedAt: clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.email !== undefined) set.email = input.email
  try {
    const [row] = await tx
      .update(users)
      .set(set)
      .where(and(eq(users.accountId, accountId), eq(users.id, id)))
      .returning()
    return row!
  } catch (e) {
    if (isUniqueViolation(e)) throw emailTaken()
    throw e
  }
}

/**
 * Deletes a user with what is theirs, in the caller's transaction:
 *   - their extensions (the spec lists a user's extensions as the user's own),
 *   - their memberships: ring groups, queues, queue-agent standing, and the lists of
 *     users who may hear a shared voicemail box,
 *   - their voicemail greetings (the audio keys are returned, to remove after the commit).
 * A routing object elsewhere that sends calls to the user (a phone number's route, a
 * ring group's no-answer target, a queue's timeout target, a dial plan route node)
 * is someone's decision about where callers go, so it is not rewritten behind their
 * back: the delete is refused with 409 routing_object_in_use naming each such field,
 * and the whole transaction (memberships included) rolls back.
 */
export async function deleteUser(
  tx: Db,
  clock: Clock,
  check: RoutingCheck,
  accountId: string,
  id: string,
  messages?: ActorMessages,
): Promise<{ audioKeys: string[] }> {
  // FOR UPDATE: writes that lock the user to reference it (an extension, a greeting) wait, then find it gone.
  const [row] = await tx
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.accountId, accountId), eq(users.id, id)))
    .for('update')
  if (!row) throw notFound('user', id)
  // Memberships go before the guard reads the routing "before", so only references to the user itself can be new problems.
  await lockRouting(tx, accountId)
  await tx.delete(extensions).where(and(eq(extensions.accountId, accountId), eq(extensions.target, id)))
  await removeUserFromRingGroups(tx, clock, accountId, id)
  // Through the queue service, so that each queue actor is told its agent is gone.
  const memberships = await tx
    .select({ id: queueMembers.id, queueId: queueMembers.queueId })
    .from(queueMembers)
    .where(and(eq(queueMembers.accountId, accountId), eq(queueMembers.userId, id)))
  for (const m of memberships) await removeQueueMember(tx, accountId, m.queueId, m.id, { clock, messages })
  await tx.delete(queueAgents).where(and(eq(queueAgents.accountId, accountId), eq(queueAgents.userId, id)))
  await removeUserFromSharedVoicemailBoxes(tx, clock, accountId, id)
  const audioKeys = await deleteGreetingsOf(tx, accountId, id)
  await guardedDelete(tx, check, accountId, `user ${id}`, async () => {
    await tx.delete(users).where(and(eq(users.accountId, accountId), eq(users.id, id)))
  })
  return { audioKeys }
}

export async function revokeUserSessions(tx: Db, clock: Clock, accountId: string, id: string) {
  const now = clock.now()
  const [row] = await tx
    .update(users)
    .set({ sessionEpoch: sql`${users.sessionEpoch} + 1` })
    .where(and(eq(users.accountId, accountId), eq(users.id, id)))
    .returning()
  if (!row) throw notFound('user', id)
  return { object: 'user_session_revocation' as const, user: id, revoked_at: now.toISOString() }
}
