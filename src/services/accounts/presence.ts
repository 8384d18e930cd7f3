/**
 * Presence reads: the users whose presence is asked for, and their presence
 * actors' persisted states, in one query for a whole page. What a state means (the
 * status, the initial state of a user with no actor yet) is the presence machine's
 * to say; the gateway asks actors/client for it, since src/ imports nothing above it.
 */
import { and, eq, inArray } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { actorSnapshots, users } from '../../db/schema'
import { notFound, ValidationError } from '../../errors'
import { keysetPage, type PageRequest } from '../../pagination'
import type { UserRow } from './users'

/** A presence actor's persisted state, as actors/client reads it. */
export interface PresenceActorState {
  machineVersion: string
  status: 'active' | 'done'
  snapshot: unknown
}

/** The PresenceStatus fields the presence machine gives. */
export interface PresenceRecord {
  user: string
  status: 'available' | 'on_call' | 'dnd' | 'away' | 'offline'
  status_text: string | null
  updated_at: string
}

/** Most users one GET /v1/presence names (user[]). */
export const PRESENCE_USERS_MAX = 100

/** A PresenceStatus: the machine's record plus the WebRTC sessions, of which there are none until WebRTC signalling exists. */
export function presenceView(r: PresenceRecord) {
  return {
    object: 'presence_status' as const,
    user: r.user,
    status: r.status,
    status_text: r.status_text,
    updated_at: r.updated_at,
    webrtc: { state: 'offline' as 'online' | 'offline', sessions: 0 },
  }
}

/** The user, when a user of the account (404 user_not_found otherwise, another account's users included). */
export async function presenceUser(db: Db, accountId: string, userId: string): Promise<UserRow> {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.accountId, accountId), eq(users.id, userId)))
  if (!row) throw notFound('user', userId)
  return row
}

/**
 * A page of the account's users for GET /v1/presence: every user, or those named
 * by user[]. A named id that is not a user of the account is refused (400 naming
 * user[]), the same answer for an unknown id and another account's user.
 */
export async function presenceUsersPage(db: Db, accountId: string, named: readonly string[] | undefined, page: PageRequest) {
  if (named === undefined) return keysetPage<UserRow>(db, users, eq(users.accountId, accountId), page)
  const ids = [...new Set(named)]
  const found = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.accountId, accountId), inArray(users.id, ids)))
  const known = new Set(found.map((r) => r.id))
  const unknown = ids.filter((id) => !known.has(id))
  if (unknown.length > 0) throw new ValidationError({ 'user[]': `not users of this account: ${unknown.join(', ')}` })
  return keysetPage<UserRow>(db, users, and(eq(users.accountId, accountId), inArray(users.id, ids)), page)
}

/** The persisted states of these users' presence actors (kind given by the caller), in one query; a user with none is absent. */
export async function presenceStates(db: Db, kind: string, userIds: readonly string[]): Promise<Map<string, PresenceActorState>> {
  const out = new Map<string, PresenceActorState>()
  if (userIds.length === 0) return out
  const rows = await db
    .select({ id: actorSnapshots.id, machineVersion: actorSnapshots.machineVersion, status: actorSnapshots.status, snapshot: actorSnapshots.snapshot })
    .from(actorSnapshots)
    .where(and(eq(actorSnapshots.kind, kind), inArray(actorSnapshots.id, [...userIds])))
  for (const { id, ...state } of rows) out.set(id, state)
  return out
}
