/**
 * Dial plans: a graph of nodes (menu, schedule, play, voice_app, route, hangup)
 * entered at `entry`, as the routing engine models them. The routing guard refuses
 * a plan that names anything outside the account, loops (within itself or through
 * ring groups, queues and other plans), or notifies an AI-agent voice app.
 */
import { and, eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { dialPlans } from '../../db/schema'
import type { DialPlanNodeRow } from '../../db/schema/routing'
import { type FieldDetails, notFound, ValidationError } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { checkTargetKinds, guardedDelete, guardedWrite, type RoutingCheck } from './config'

export type DialPlanRow = typeof dialPlans.$inferSelect

export function dialPlanView(row: DialPlanRow) {
  return {
    id: row.id,
    object: 'dial_plan' as const,
    account: row.accountId,
    name: row.name,
    entry: row.entry,
    nodes: row.nodes,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export interface DialPlanInput {
  name?: string
  entry?: string
  nodes?: Record<string, DialPlanNodeRow>
}

/** What the engine cannot see: a route target id of no routable kind, a notify node without its next node. */
function checkNodes(nodes: Record<string, DialPlanNodeRow> | undefined) {
  if (!nodes) return
  const details: FieldDetails = {}
  for (const [id, node] of Object.entries(nodes)) {
    if (node.kind === 'route') checkTargetKinds(details, { [`nodes.${id}.target`]: node.target })
    if (node.kind === 'voice_app' && node.mode === 'notify' && !node.next) details[`nodes.${id}.next`] = 'a notify-mode voice_app node needs the next node'
    if (node.kind === 'voice_app' && node.mode === 'control' && node.next)
      details[`nodes.${id}.next`] = 'a control-mode voice_app node ends the plan: it has no next node'
  }
  if (Object.keys(details).length > 0) throw new ValidationError(details)
}

export async function createDialPlan(
  tx: Db,
  clock: Clock,
  check: RoutingCheck,
  accountId: string,
  input: DialPlanInput & { name: string; entry: string; nodes: Record<string, DialPlanNodeRow> },
) {
  checkNodes(input.nodes)
  const id = newId('dialPlan')
  const now = clock.now()
  return guardedWrite(tx, check, accountId, { collection: 'dialPlans', id }, async () => {
    const [row] = await tx
      .insert(dialPlans)
      .values({ id, accountId, name: input.name, entry: input.entry, nodes: input.nodes, createdAt: now, updatedAt: now })
      .returning()
    return row!
  })
}

export async function getDialPlan(db: Db, accountId: string, id: string): Promise<DialPlanRow> {
  const [row] = await db
    .select()
    .from(dialPlans)
    .where(and(eq(dialPlans.accountId, accountId), eq(dialPlans.id, id)))
  if (!row) throw notFound('dial_plan', id)
  return row
}

export function listDialPlans(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<DialPlanRow>(db, dialPlans, eq(dialPlans.accountId, accountId), page)
}

/** Fields given replace the stored ones; `nodes` replaces the whole graph. */
export async function updateDialPlan(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, id: string, input: DialPlanInput) {
  await getDialPlan(tx, accountId, id)
  checkNodes(input.nodes)
  const set: Partial<typeof dialPlans.$inferInsert> = { updatedAt: clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.entry !== undefined) set.entry = input.entry
  if (input.nodes !== undefined) set.nodes = input.nodes
  return guardedWrite(tx, check, accountId, { collection: 'dialPlans', id }, async () => {
    const [row] = await tx
      .update(dialPlans)
      .set(set)
      .where(and(eq(dialPlans.accountId, accountId), eq(dialPlans.id, id)))
      .returning()
    return row!
  })
}

export async function deleteDialPlan(tx: Db, check: RoutingCheck, accountId: string, id: string) {
  await getDialPlan(tx, accountId, id)
  await guardedDelete(tx, check, accountId, `dial plan ${id}`, async () => {
    await tx.delete(dialPlans).where(and(eq(dialPlans.accountId, accountId), eq(dialPlans.id, id)))
  })
}
