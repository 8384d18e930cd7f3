/**
 * Ring groups: users rung together (simultaneous) or one after another
 * (sequential, each member for its own ring time), then the no-answer target.
 * Every write goes through the routing guard (config.ts): members must be users of
 * the account, the no-answer target a routable object of it, and no loop may form.
 */
import { and, eq, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { ringGroups } from '../../db/schema'
import type { RingGroupMemberRow } from '../../db/schema/routing'
import { conflict, type FieldDetails, notFound, ValidationError } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { checkTargetKinds, guardedDelete, guardedWrite, type RoutingCheck } from './config'

export type RingGroupRow = typeof ringGroups.$inferSelect
export const DEFAULT_RING_SECONDS = 30

export function ringGroupMemberView(groupId: string, m: RingGroupMemberRow) {
  return { id: m.id, object: 'ring_group_member' as const, ring_group: groupId, user: m.user, ring_seconds: m.ringSeconds }
}

export function ringGroupView(row: RingGroupRow, expand: { members?: boolean } = {}) {
  return {
    id: row.id,
    object: 'ring_group' as const,
    account: row.accountId,
    name: row.name,
    strategy: row.strategy,
    ring_seconds: row.ringSeconds,
    no_answer_target: row.noAnswerTarget,
    member_count: row.members.length,
    ...(expand.members ? { members: { object: 'list' as const, data: row.members.map((m) => ringGroupMemberView(row.id, m)) } } : {}),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export interface MemberInput {
  user: string
  ring_seconds?: number | null
}

export interface RingGroupInput {
  name?: string
  strategy?: 'simultaneous' | 'sequential'
  ring_seconds?: number
  no_answer_target?: string | null
  members?: MemberInput[]
}

const toMember = (m: MemberInput): RingGroupMemberRow => ({ id: newId('ringGroupMember'), user: m.user, ringSeconds: m.ring_seconds ?? null })

function checkKinds(input: RingGroupInput) {
  const details: FieldDetails = {}
  checkTargetKinds(details, { no_answer_target: input.no_answer_target })
  if (Object.keys(details).length > 0) throw new ValidationError(details)
}

export async function createRingGroup(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, input: RingGroupInput & { name: string }) {
  checkKinds(input)
  const id = newId('ringGroup')
  const now = clock.now()
  return guardedWrite(tx, check, accountId, { collection: 'ringGroups', id }, async () => {
    const [row] = await tx
      .insert(ringGroups)
      .values({
        id,
        accountId,
        name: input.name,
        strategy: input.strategy ?? 'simultaneous',
        ringSeconds: input.ring_seconds ?? DEFAULT_RING_SECONDS,
        noAnswerTarget: input.no_answer_target ?? null,
        members: (input.members ?? []).map(toMember),
        createdAt: now,
        updatedAt: now,
      })
      .returning()
    return row!
  })
}

export async function getRingGroup(db: Db, accountId: string, id: string): Promise<RingGroupRow> {
  const [row] = await db
    .select()
    .from(ringGroups)
    .where(and(eq(ringGroups.accountId, accountId), eq(ringGroups.id, id)))
  if (!row) throw notFound('ring_group', id)
  return row
}

export function listRingGroups(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<RingGroupRow>(db, ringGroups, eq(ringGroups.accountId, accountId), page)
}

async function store(tx: Db, clock: Clock, accountId: string, id: string, set: Partial<typeof ringGroups.$inferInsert>) {
  const [row] = await tx
    .update(ringGroups)
    .set({ ...set, updatedAt: clock.now() })
    .where(and(eq(ringGroups.accountId, accountId), eq(ringGroups.id, id)))
    .returning()
  return row!
}

/** Fields given replace the stored ones; `members`, when given, replaces the whole list. */
export async function updateRingGroup(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, id: string, input: RingGroupInput) {
  await getRingGroup(tx, accountId, id)
  checkKinds(input)
  const set: Partial<typeof ringGroups.$inferInsert> = {}
  if (input.name !== undefined) set.name = input.name
  if (input.strategy !== undefined) set.strategy = input.strategy
  if (input.ring_seconds !== undefined) set.ringSeconds = input.ring_seconds
  if (input.no_answer_target !== undefined) set.noAnswerTarget = input.no_answer_target
  if (input.members !== undefined) set.members = input.members.map(toMember)
  return guardedWrite(tx, check, accountId, { collection: 'ringGroups', id }, () => store(tx, clock, accountId, id, set))
}

export async function deleteRingGroup(tx: Db, check: RoutingCheck, accountId: string, id: string) {
  await getRingGroup(tx, accountId, id)
  await guardedDelete(tx, check, accountId, `ring group ${id}`, async () => {
    await tx.delete(ringGroups).where(and(eq(ringGroups.accountId, accountId), eq(ringGroups.id, id)))
  })
}

export async function addRingGroupMember(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, id: string, input: MemberInput) {
  const group = await getRingGroup(tx, accountId, id)
  if (group.members.some((m) => m.user === input.user))
    throw conflict(`User ${input.user} is already a member of ring group ${id}.`, 'ring_group_member_conflict')
  const member = toMember(input)
  await guardedWrite(tx, check, accountId, { collection: 'ringGroups', id }, () => store(tx, clock, accountId, id, { members: [...group.members, member] }), {
    rename: { [`members.${group.members.length}.user`]: 'user', [`members.${group.members.length}.ring_seconds`]: 'ring_seconds' },
  })
  return ringGroupMemberView(id, member)
}

export async function removeRingGroupMember(tx: Db, clock: Clock, accountId: string, id: string, memberId: string) {
  const group = await getRingGroup(tx, accountId, id)
  const member = group.members.find((m) => m.id === memberId)
  if (!member) throw notFound('ring_group_member', memberId)
  // Removing a member cannot form a loop or a dangling reference: no guard needed.
  await store(tx, clock, accountId, id, { members: group.members.filter((m) => m.id !== memberId) })
  return member
}

/**
 * A deleted user leaves every ring group they ring in (the rest of each group stays
 * as it was). Members are jsonb, so the groups naming the user are found by
 * containment and rewritten one by one.
 */
export async function removeUserFromRingGroups(tx: Db, clock: Clock, accountId: string, userId: string): Promise<void> {
  const groups = await tx
    .select()
    .from(ringGroups)
    .where(and(eq(ringGroups.accountId, accountId), sql`${ringGroups.members} @> ${JSON.stringify([{ user: userId }])}::jsonb`))
  for (const group of groups) await store(tx, clock, accountId, group.id, { members: group.members.filter((m) => m.user !== userId) })
}
