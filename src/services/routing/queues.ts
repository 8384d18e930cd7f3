/**
 * Call queues: callers wait in order for the queue's agents (members); after
 * max_wait_seconds they go to the timeout target. Refusals use the spec's queue
 * codes: QueueMemberConflict (409) for a user already in the queue, and
 * QueueValidationFailed for a member or timeout target outside the account or a
 * change that forms a routing loop.
 *
 * A user's queue-agent standing (`GET/POST /v1/users/{id}/queue-agent`) says
 * whether queues may dispatch calls to them at all.
 *
 * Each queue is an actor (actors/queues/) that holds its waiting callers and its
 * agents' standing. A write here that changes who may take its calls (a member added
 * or removed, an agent logging in or out) tells the queue actors concerned in the same
 * transaction, through `messages` (deps.actorMessages), when the caller passes it.
 */
import { and, asc, eq, inArray } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { isUniqueViolation } from '../../db/errors'
import { queueAgents, queueMembers, queues, users } from '../../db/schema'
import { ApiError, conflict, notFound } from '../../errors'
import { newId } from '../../ids'
import { pgArray, statement } from '../../db/statements'
import { keysetPage, type PageRequest } from '../../pagination'
import type { ActorMessages } from '../deps'
import { guardedDelete, guardedWrite, type RoutingCheck, targetOf } from './config'

export type QueueRow = typeof queues.$inferSelect
export type QueueMemberRow = typeof queueMembers.$inferSelect

export function queueMemberView(row: QueueMemberRow) {
  return { id: row.id, object: 'queue_member' as const, queue: row.queueId, user: row.userId, created_at: row.createdAt.toISOString() }
}

export function queueView(row: QueueRow, members?: QueueMemberRow[]) {
  return {
    id: row.id,
    object: 'queue' as const,
    account: row.accountId,
    name: row.name,
    max_wait_seconds: row.maxWaitSeconds,
    timeout_target: row.timeoutTarget,
    ...(members ? { members: { object: 'list' as const, data: members.map(queueMemberView) } } : {}),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export interface QueueInput {
  name?: string
  max_wait_seconds?: number
  timeout_target?: string | null
}

const invalid = (details: Record<string, string>) => new ApiError(400, 'The queue failed validation.', 'queue_validation_failed', details)
const QUEUE = { code: 'queue_validation_failed' as const }

function checkTimeoutTarget(input: QueueInput) {
  if (input.timeout_target && !targetOf(input.timeout_target)) throw invalid({ timeout_target: 'is not a routable resource of this account' })
}

export async function createQueue(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, input: QueueInput & { name: string }) {
  checkTimeoutTarget(input)
  const id = newId('queue')
  const now = clock.now()
  return guardedWrite(
    tx,
    check,
    accountId,
    { collection: 'queues', id },
    async () => {
      const [row] = await tx
        .insert(queues)
        .values({
          id,
          accountId,
          name: input.name,
          maxWaitSeconds: input.max_wait_seconds ?? 0,
          timeoutTarget: input.timeout_target ?? null,
          createdAt: now,
          updatedAt: now,
        })
        .returning()
      return row!
    },
    QUEUE,
  )
}

export async function getQueue(db: Db, accountId: string, id: string): Promise<QueueRow> {
  const [row] = await db
    .select()
    .from(queues)
    .where(and(eq(queues.accountId, accountId), eq(queues.id, id)))
  if (!row) throw notFound('queue', id)
  return row
}

export function listQueues(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<QueueRow>(db, queues, eq(queues.accountId, accountId), page)
}

/** All members of a queue in dispatch order (the order they were added), for expand[]=members. */
export function allQueueMembers(db: Db, queueId: string) {
  return db.select().from(queueMembers).where(eq(queueMembers.queueId, queueId)).orderBy(asc(queueMembers.createdAt), asc(queueMembers.id))
}

export function listQueueMembers(db: Db, queueId: string, page: PageRequest) {
  return keysetPage<QueueMemberRow>(db, queueMembers, eq(queueMembers.queueId, queueId), page)
}

export async function updateQueue(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, id: string, input: QueueInput) {
  await getQueue(tx, accountId, id)
  checkTimeoutTarget(input)
  const set: Partial<typeof queues.$inferInsert> = { updatedAt: clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.max_wait_seconds !== undefined) set.maxWaitSeconds = input.max_wait_seconds
  if (input.timeout_target !== undefined) set.timeoutTarget = input.timeout_target
  return guardedWrite(
    tx,
    check,
    accountId,
    { collection: 'queues', id },
    async () => {
      const [row] = await tx
        .update(queues)
        .set(set)
        .where(and(eq(queues.accountId, accountId), eq(queues.id, id)))
        .returning()
      return row!
    },
    QUEUE,
  )
}

export async function deleteQueue(tx: Db, check: RoutingCheck, accountId: string, id: string) {
  await getQueue(tx, accountId, id)
  await guardedDelete(tx, check, accountId, `queue ${id}`, async () => {
    await tx.delete(queues).where(and(eq(queues.accountId, accountId), eq(queues.id, id)))
  })
}

const memberConflict = (user: string, queue: string) => conflict(`User ${user} is already a member of queue ${queue}.`, 'queue_member_conflict')

/** The queue actor's kind (actors/queues/messages: QUEUE_KIND; src/ may not import actors/). */
const QUEUE_ACTOR = 'queue'

/** Tells one queue actor about one agent (dropped when the queue has no actor yet: it reads its members when a call arrives). */
const tellQueue = (tx: Db, clock: Clock, messages: ActorMessages | undefined, queueId: string, event: { type: string; user_id: string; status?: string }) =>
  messages?.tell(tx, QUEUE_ACTOR, queueId, { ...event, at: clock.now().toISOString() })

export async function addQueueMember(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, queueId: string, user: string, messages?: ActorMessages) {
  await getQueue(tx, accountId, queueId)
  const [existing] = await tx
    .select({ id: queueMembers.id })
    .from(queueMembers)
    .where(and(eq(queueMembers.queueId, queueId), eq(queueMembers.userId, user)))
  if (existing) throw memberConflict(user, queueId)
  const index = (await allQueueMembers(tx, queueId)).length
  try {
    const [standing] = await queueAgentStandings(tx, [user])
    // Presence is the queue's to learn (the presence actor tells it on the next change): a new member counts as free unless logged out.
    await tellQueue(tx, clock, messages, queueId, { type: 'AGENT_STATUS', user_id: user, status: standing === 'unavailable' ? 'offline' : 'available' })
    return await guardedWrite(
      tx,
      check,
      accountId,
      { collection: 'queues', id: queueId },
      async () => {
        const [row] = await tx
          .insert(queueMembers)
          .values({ id: newId('queueMember'), accountId, queueId, userId: user, createdAt: clock.now() })
          .returning()
        return row!
      },
      { ...QUEUE, rename: { [`members.${index}`]: 'user' } },
    )
  } catch (e) {
    if (isUniqueViolation(e)) throw memberConflict(user, queueId)
    throw e
  }
}

export async function removeQueueMember(tx: Db, accountId: string, queueId: string, memberId: string, deps?: { clock: Clock; messages?: ActorMessages }) {
  await getQueue(tx, accountId, queueId)
  const [row] = await tx
    .delete(queueMembers)
    .where(and(eq(queueMembers.queueId, queueId), eq(queueMembers.id, memberId)))
    .returning()
  if (!row) throw notFound('queue_member', memberId)
  if (deps) await tellQueue(tx, deps.clock, deps.messages, queueId, { type: 'AGENT_REMOVED', user_id: row.userId })
  return row
}

// ---------------------------------------------------------------- queue agent

async function userOfAccount(db: Db, accountId: string, userId: string) {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.accountId, accountId), eq(users.id, userId)))
  if (!row) throw notFound('user', userId)
}

/** A user's queue-agent standing (available unless set otherwise) and the queues they belong to. */
export async function getQueueAgent(db: Db, accountId: string, userId: string) {
  await userOfAccount(db, accountId, userId)
  const [agent] = await db.select().from(queueAgents).where(eq(queueAgents.userId, userId))
  const memberOf = await db
    .select({ queue: queueMembers.queueId })
    .from(queueMembers)
    .where(and(eq(queueMembers.accountId, accountId), eq(queueMembers.userId, userId)))
    .orderBy(asc(queueMembers.createdAt), asc(queueMembers.id))
  return {
    object: 'queue_agent' as const,
    user: userId,
    status: agent?.status ?? ('available' as const),
    queues: memberOf.map((m) => m.queue),
    updated_at: agent ? agent.updatedAt.toISOString() : null,
  }
}

export async function updateQueueAgent(
  tx: Db,
  clock: Clock,
  accountId: string,
  userId: string,
  input: { status: 'available' | 'unavailable' },
  messages?: ActorMessages,
) {
  await userOfAccount(tx, accountId, userId)
  const now = clock.now()
  await tx
    .insert(queueAgents)
    .values({ userId, accountId, status: input.status, updatedAt: now })
    .onConflictDoUpdate({ target: queueAgents.userId, set: { status: input.status, updatedAt: now } })
  // Logging in makes the agent free for the queues; presence (on a call, dnd) follows with its next change.
  for (const m of await queueMembershipsOf(tx, userId))
    await tellQueue(tx, clock, messages, m.queue_id, { type: 'AGENT_STATUS', user_id: userId, status: input.status === 'available' ? 'available' : 'offline' })
  return getQueueAgent(tx, accountId, userId)
}

/** The queue-agent standing of each user (in order): `unavailable` is logged out of every queue. */
export async function queueAgentStandings(db: Db, userIds: readonly string[]): Promise<('available' | 'unavailable')[]> {
  if (userIds.length === 0) return []
  const rows = await db
    .select({ userId: queueAgents.userId, status: queueAgents.status })
    .from(queueAgents)
    .where(inArray(queueAgents.userId, [...userIds]))
  const by = new Map(rows.map((r) => [r.userId, r.status]))
  return userIds.map((u) => by.get(u) ?? 'available')
}

const MEMBERSHIPS = statement<{ queue_id: string; standing: 'available' | 'unavailable' }>(
  `select m.queue_id, coalesce(a.status, 'available') as standing
     from queue_members m left join queue_agents a on a.user_id = m.user_id
    where m.user_id = $1`,
)

/**
 * The queues a user is an agent of, with their standing: what a presence change must
 * tell (one statement; nothing for a user in no queue).
 */
export function queueMembershipsOf(db: Db, userId: string) {
  return MEMBERSHIPS.rows(db, [userId])
}

const MEMBERSHIPS_OF_USERS = statement<{ user_id: string; queue_id: string; standing: 'available' | 'unavailable' }>(
  `select m.user_id, m.queue_id, coalesce(a.status, 'available') as standing
     from queue_members m left join queue_agents a on a.user_id = m.user_id
    where m.user_id = any($1::text[])`,
)

/** queueMembershipsOf for many users in one statement (the presence changes one transaction of actor steps commits). */
export function queueMembershipsOfUsers(db: Db, userIds: readonly string[]) {
  return MEMBERSHIPS_OF_USERS.rows(db, [pgArray(userIds)])
}
