/**
 * One account's routing objects as the routing engine reads them, and the write
 * guard every routing service runs.
 *
 * src/ may not import machines/ (ARCHITECTURE.md), so this module declares the
 * engine's input shape structurally (`RoutingRows`, the same field names as
 * machines/routing `RoutingInput`) and takes the engine's check as a parameter
 * (`RoutingCheck`, `deps.routingCheck`): the composition root (src/server.ts) fills it
 * with `validateChange` over `buildRoutingConfig`, where the compiler checks the two
 * shapes agree.
 */
import { asc, eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import {
  aiAgents,
  dialPlans,
  extensions,
  phoneNumberRoutes,
  phoneNumbers,
  queueMembers,
  queues,
  ringGroups,
  schedules,
  sharedVoicemailBoxes,
  users,
  voiceApps,
} from '../../db/schema'
import type { DialPlanNodeRow } from '../../db/schema/routing'
import { conflict, type FieldDetails, type StableCode, ValidationError, ApiError } from '../../errors'
import { idKind } from '../../ids'

export type TargetType = 'user' | 'ring_group' | 'queue' | 'dial_plan' | 'voicemail_box' | 'voice_app' | 'extension'
export interface TargetRef {
  type: TargetType
  id: string
}

const TARGET_OF_KIND: Partial<Record<string, TargetType>> = {
  user: 'user',
  ringGroup: 'ring_group',
  queue: 'queue',
  dialPlan: 'dial_plan',
  sharedVoicemailBox: 'voicemail_box',
  voiceApp: 'voice_app',
}

/** The routing target an API id names, by its prefix; undefined when the id is no routable kind. */
export function targetOf(id: string): TargetRef | undefined {
  const kind = idKind(id)
  const type = kind && TARGET_OF_KIND[kind]
  return type ? { type, id } : undefined
}

/** A stored target id as the engine reads it; an id of no routable kind stays a dangling user reference, which validation reports. */
const storedTarget = (id: string | null): TargetRef | null => (id === null ? null : (targetOf(id) ?? { type: 'user', id }))

type EngineNode =
  | { kind: 'menu'; prompt?: string | null; options: { digit: string; next: string }[]; default?: string | null }
  | { kind: 'schedule'; schedule: string; open: string; closed: string }
  | { kind: 'play'; clip: string; next: string }
  | { kind: 'voice_app'; app: string; mode: 'control' }
  | { kind: 'voice_app'; app: string; mode: 'notify'; next: string }
  | { kind: 'route'; target: TargetRef }
  | { kind: 'hangup' }

/** The engine's RoutingInput (machines/routing/config.ts), declared here by shape. */
export interface RoutingRows {
  users: { id: string; presence: 'available'; voicemail: boolean }[]
  extensions: { number: string; target: TargetRef; status: 'active' | 'inactive' }[]
  ringGroups: {
    id: string
    strategy: 'simultaneous' | 'sequential'
    members: { user: string; ringSeconds?: number }[]
    ringSeconds: number
    noAnswerTarget: TargetRef | null
  }[]
  queues: { id: string; name: string; members: string[]; maxWaitSeconds: number; timeoutTarget: TargetRef | null }[]
  dialPlans: { id: string; entry: string; nodes: Record<string, EngineNode> }[]
  schedules: {
    id: string
    timeZone: string
    hours: { day: 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun'; open: string; close: string }[]
    holidays: string[]
    hold: 'open' | 'closed' | null
  }[]
  voicemailBoxes: { id: string }[]
  voiceApps: ({ id: string; kind: 'webhook' } | { id: string; kind: 'ai_agent'; agent: string })[]
  aiAgents: { id: string; name: string }[]
  phoneNumbers: { id: string; number: string; routing: { mode: 'target'; target: TargetRef } | { mode: 'ring_all' } | { mode: 'drop' } }[]
}

/** What the engine's validateChange reports, by shape. */
export interface RoutingProblemLike {
  code: string
  path: (string | number)[]
  message: string
  cycle?: string[]
}

/** The engine's write-time check, injected: problems `after` brings that `before` did not have. */
export type RoutingCheck = (before: RoutingRows, after: RoutingRows) => RoutingProblemLike[]

export function engineNode(node: DialPlanNodeRow): EngineNode {
  switch (node.kind) {
    case 'route':
      return { kind: 'route', target: storedTarget(node.target)! }
    case 'voice_app':
      return node.mode === 'notify'
        ? { kind: 'voice_app', app: node.app, mode: 'notify', next: node.next ?? '' }
        : { kind: 'voice_app', app: node.app, mode: 'control' }
    default:
      return node
  }
}

/** Every routing row of the account, in the engine's shape. */
export async function loadRoutingRows(db: Db, accountId: string): Promise<RoutingRows> {
  const [userRows, extRows, groupRows, queueRows, memberRows, planRows, scheduleRows, boxRows, appRows, agentRows, numberRows] = await Promise.all([
    db.select({ id: users.id }).from(users).where(eq(users.accountId, accountId)).orderBy(asc(users.createdAt), asc(users.id)),
    db.select().from(extensions).where(eq(extensions.accountId, accountId)),
    db.select().from(ringGroups).where(eq(ringGroups.accountId, accountId)),
    db.select().from(queues).where(eq(queues.accountId, accountId)),
    db.select().from(queueMembers).where(eq(queueMembers.accountId, accountId)).orderBy(asc(queueMembers.createdAt), asc(queueMembers.id)),
    db.select().from(dialPlans).where(eq(dialPlans.accountId, accountId)),
    db.select().from(schedules).where(eq(schedules.accountId, accountId)),
    db.select({ id: sharedVoicemailBoxes.id }).from(sharedVoicemailBoxes).where(eq(sharedVoicemailBoxes.accountId, accountId)),
    db.select().from(voiceApps).where(eq(voiceApps.accountId, accountId)),
    db.select({ id: aiAgents.id, name: aiAgents.name }).from(aiAgents).where(eq(aiAgents.accountId, accountId)),
    db
      .select({ id: phoneNumbers.id, number: phoneNumbers.number, mode: phoneNumberRoutes.mode, target: phoneNumberRoutes.target })
      .from(phoneNumbers)
      .leftJoin(phoneNumberRoutes, eq(phoneNumberRoutes.phoneNumberId, phoneNumbers.id))
      .where(sql`${phoneNumbers.accountId} = ${accountId} and ${phoneNumbers.status} <> 'released'`),
  ])
  const membersOf = new Map<string, string[]>()
  for (const m of memberRows) {
    const list = membersOf.get(m.queueId) ?? []
    list.push(m.userId)
    membersOf.set(m.queueId, list)
  }
  return {
    users: userRows.map((u) => ({ id: u.id, presence: 'available' as const, voicemail: true })),
    extensions: extRows.map((e) => ({ number: e.number, target: storedTarget(e.target)!, status: e.status })),
    ringGroups: groupRows.map((g) => ({
      id: g.id,
      strategy: g.strategy,
      members: g.members.map((m) => (m.ringSeconds === null ? { user: m.user } : { user: m.user, ringSeconds: m.ringSeconds })),
      ringSeconds: g.ringSeconds,
      noAnswerTarget: storedTarget(g.noAnswerTarget),
    })),
    queues: queueRows.map((q) => ({
      id: q.id,
      name: q.name,
      members: membersOf.get(q.id) ?? [],
      maxWaitSeconds: q.maxWaitSeconds,
      timeoutTarget: storedTarget(q.timeoutTarget),
    })),
    dialPlans: planRows.map((p) => ({ id: p.id, entry: p.entry, nodes: Object.fromEntries(Object.entries(p.nodes).map(([k, n]) => [k, engineNode(n)])) })),
    schedules: scheduleRows.map((s) => ({ id: s.id, timeZone: s.timeZone, hours: s.hours, holidays: s.holidays, hold: s.hold })),
    voicemailBoxes: boxRows,
    voiceApps: appRows.map((a) =>
      a.kind === 'ai_agent' ? { id: a.id, kind: 'ai_agent' as const, agent: a.aiAgent ?? '' } : { id: a.id, kind: 'webhook' as const },
    ),
    aiAgents: agentRows,
    phoneNumbers: numberRows.map((n) => ({
      id: n.id,
      number: n.number,
      routing:
        n.mode === 'target' && n.target !== null
          ? { mode: 'target' as const, target: storedTarget(n.target)! }
          : n.mode === 'drop'
            ? { mode: 'drop' as const }
            : { mode: 'ring_all' as const },
    })),
  }
}

// ---------------------------------------------------------------- problem paths in API names

/** The API's names for the engine's collections and fields (camelCase config → snake_case API). */
const COLLECTION: Record<string, string> = {
  users: 'users',
  extensions: 'extensions',
  ringGroups: 'ring_groups',
  queues: 'queues',
  dialPlans: 'dial_plans',
  schedules: 'schedules',
  voicemailBoxes: 'shared_voicemail_boxes',
  voiceApps: 'voice_apps',
  aiAgents: 'ai_agents',
  phoneNumbers: 'phone_numbers',
}
const FIELD: Record<string, string> = { agent: 'ai_agent', routing: '' }
const snake = (s: string) => FIELD[s] ?? s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/** The object a write is about: its engine collection and id (for an extension, its number). */
export interface Subject {
  collection: keyof RoutingRows
  id: string
}

/**
 * A problem's field as the API names it: relative to the written object
 * (`no_answer_target`, `nodes.main.options.2.next`), else qualified by the object
 * it sits in (`ring_groups.rg_1.no_answer_target`). Node ids and object ids are
 * kept as they are.
 */
export function apiPath(path: (string | number)[], subject?: Subject): string {
  const [collection, id, ...rest] = path
  const fields: string[] = []
  // Inside a dial plan, the segment after 'nodes' is a node id, not a field name.
  rest.forEach((seg, i) => {
    if (typeof seg === 'number' || rest[i - 1] === 'nodes') fields.push(String(seg))
    else if (snake(seg) !== '') fields.push(snake(seg))
  })
  if (subject && collection === subject.collection && id === subject.id) return fields.join('.') || 'id'
  return [COLLECTION[collection as string] ?? String(collection), String(id), ...fields].join('.')
}

function describe(p: RoutingProblemLike): string {
  return p.cycle ? `${p.message} (the change closes a routing loop)` : p.message
}

// ---------------------------------------------------------------- the write guard

export interface GuardOptions {
  /** The stable code of a refusal (queues answer QueueValidationFailed). */
  code?: Extract<StableCode, 'validation_error' | 'queue_validation_failed'>
  /** Detail keys to report under the request's own field names (a member added at index n is the body's `user`). */
  rename?: Record<string, string>
}

/**
 * Runs one routing write inside the caller's transaction, with the account's
 * routing serialised (an advisory lock: two writes that each close half a loop
 * must not both pass). The write goes in first; if the account's routing after it
 * has problems it did not have before, the error rolls the transaction back, so
 * nothing is stored.
 */
export async function guardedWrite<T>(
  tx: Db,
  check: RoutingCheck,
  accountId: string,
  subject: Subject,
  write: () => Promise<T>,
  options: GuardOptions = {},
): Promise<T> {
  await lockRouting(tx, accountId)
  const before = await loadRoutingRows(tx, accountId)
  const result = await write()
  const problems = check(before, await loadRoutingRows(tx, accountId))
  if (problems.length > 0) {
    const details: FieldDetails = {}
    for (const p of problems) {
      const path = apiPath(p.path, subject)
      const key = options.rename?.[path] ?? path
      details[key] = details[key] ? `${details[key]}; ${describe(p)}` : describe(p)
    }
    const message = problems.some((p) => p.code === 'routing_loop')
      ? 'The change would form a routing loop.'
      : problems.some((p) => p.code === 'notify_ai_agent')
        ? 'A notify-mode voice_app node cannot point at an AI-agent voice app.'
        : 'The request failed validation.'
    if (options.code === 'queue_validation_failed') throw new ApiError(400, message, 'queue_validation_failed', details)
    throw new ValidationError(details, message)
  }
  return result
}

/**
 * Deletes a routing object unless something still routes to it: 409
 * routing_object_in_use, with `details.referenced_by` naming each referring field
 * (`extensions.101.target`, `phone_numbers.pn_1.target`, `ring_groups.rg_1.no_answer_target`).
 */
export async function guardedDelete(tx: Db, check: RoutingCheck, accountId: string, what: string, remove: () => Promise<void>): Promise<void> {
  await lockRouting(tx, accountId)
  const before = await loadRoutingRows(tx, accountId)
  await remove()
  const problems = check(before, await loadRoutingRows(tx, accountId)).filter((p) => p.code === 'unknown_reference')
  if (problems.length > 0) {
    const referencedBy = problems.map((p) => apiPath(p.path))
    throw conflict(`The ${what} is still routed to by ${referencedBy.join(', ')}.`, 'routing_object_in_use', { referenced_by: referencedBy })
  }
}

/** Serialises the account's routing writes until the transaction ends (taken again by the same transaction, it does not block). */
export async function lockRouting(tx: Db, accountId: string) {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`routing:${accountId}`}))`)
}

/** Field problems for target ids that name no routable kind (before the engine checks existence). */
export function checkTargetKinds(details: FieldDetails, fields: Record<string, string | null | undefined>) {
  for (const [field, id] of Object.entries(fields)) {
    if (id !== null && id !== undefined && !targetOf(id)) details[field] = 'is not a routable resource of this account'
  }
}
