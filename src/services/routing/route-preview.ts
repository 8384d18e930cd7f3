/**
 * What the route preview and the routed sandbox call need of the account's routing:
 * the rows (loadRoutingRows), where a dialled number or extension enters them, and
 * the router's plan as the API shows it (snake_case, one object per step).
 *
 * src/ may not import machines/, so the plan is declared here by shape; the gateway
 * hands over the engine's plan and the compiler checks that it fits.
 */
import type { RoutingRows } from './config'

/** A plan step as the engine gives it (machines/routing/plan.ts), by shape. */
export interface EnginePlanStep {
  kind: string
  users?: readonly string[]
  timeoutSeconds?: number
  queue?: string
  agents?: readonly string[]
  maxWaitSeconds?: number
  clip?: string
  app?: string
  agent?: string
  prompt?: string | null
  digit?: string | null
  box?: { type: 'user' | 'shared'; id: string }
  reason?: string
  dialPlan?: string
  node?: string
  options?: readonly string[]
  source?: { type: string; id: string; node?: string }
}

/** Where a call to `to` enters the routing: an E.164 number of the account, or an extension number. */
export type EntryOf = { type: 'number'; number: string; phone_number: string } | { type: 'extension'; number: string }

export function entryOf(rows: Pick<RoutingRows, 'phoneNumbers' | 'extensions'>, to: string): EntryOf | undefined {
  if (to.startsWith('+')) {
    const pn = rows.phoneNumbers.find((n) => n.number === to)
    return pn ? { type: 'number', number: pn.number, phone_number: pn.id } : undefined
  }
  return rows.extensions.some((e) => e.number === to) ? { type: 'extension', number: to } : undefined
}

/** Users the caller marked dnd are left out of the routing, as the engine leaves out dnd users. */
export function withDndUsers(rows: RoutingRows, dnd: ReadonlySet<string>) {
  return { ...rows, users: rows.users.map((u) => ({ ...u, presence: dnd.has(u.id) ? ('dnd' as const) : ('available' as const) })) }
}

/** Queue names by id (queue.call.* events carry queue_name). */
export const queueNames = (rows: Pick<RoutingRows, 'queues'>): Record<string, string> => Object.fromEntries(rows.queues.map((q) => [q.id, q.name]))

/** For an extension the id is its number. */
const sourceView = (s: NonNullable<EnginePlanStep['source']>) => ({ type: s.type, id: s.id, ...(s.node !== undefined ? { node: s.node } : {}) })

/** One step as the API shows it: the engine's fields in snake_case, absent fields left out. */
export function planStepView(step: EnginePlanStep): Record<string, unknown> {
  const v: Record<string, unknown> = { kind: step.kind }
  if (step.users) v.users = [...step.users]
  if (step.timeoutSeconds !== undefined) v.timeout_seconds = step.timeoutSeconds
  if (step.queue !== undefined) v.queue = step.queue
  if (step.agents) v.agents = [...step.agents]
  if (step.maxWaitSeconds !== undefined) v.max_wait_seconds = step.maxWaitSeconds
  if (step.clip !== undefined) v.clip = step.clip
  if (step.prompt !== undefined) v.prompt = step.prompt
  if (step.digit !== undefined) v.digit = step.digit
  if (step.app !== undefined) v.app = step.app
  if (step.agent !== undefined) v.ai_agent = step.agent
  if (step.box) v.voicemail_box = { type: step.box.type, id: step.box.id }
  if (step.reason !== undefined) v.reason = step.reason
  if (step.dialPlan !== undefined) v.dial_plan = step.dialPlan
  if (step.node !== undefined) v.node = step.node
  if (step.options) v.options = [...step.options]
  v.source = step.source ? sourceView(step.source) : null
  return v
}

export const planView = (plan: { steps: readonly EnginePlanStep[] }) => plan.steps.map(planStepView)

/** The API's digits string ("1-2": 1, no input, 2) as the engine's list. */
export const digitsOf = (s: string | undefined): (string | null)[] => [...(s ?? '')].map((c) => (c === '-' ? null : c))
