/**
 * The routing of a real call (the media role's B2BUA asks it): the account's routing
 * rows, where the dialled number or extension enters them, and the engine's plan
 * (machines/routing: route) for now. Users who set dnd are left out, as the engine
 * leaves out dnd users; every other user is taken as available (an offline user has
 * no registered phone, so the B2BUA passes over them anyway). A plan stops at a menu
 * waiting for a digit (`gather`): the B2BUA plays its prompt, collects the digit and
 * routes again from the menu's node. Undefined: `to` is neither a number nor an
 * extension of the account.
 */
import { buildRoutingConfig, type Plan, route } from '../../machines/routing'
import type { Db } from '../../src/db/client'
import { presenceStates } from '../../src/services/accounts/presence'
import { loadRoutingRows } from '../../src/services/routing/config'
import { entryOf, withDndUsers } from '../../src/services/routing/route-preview'
import { PRESENCE_KIND, presenceStatusOf } from '../presence/messages'
import { directUser } from './routed-simulation'

/**
 * The plan, and what the call's input keeps of it: the user it targets directly
 * (call.incoming's user_id), the voicemail box it ends in (whose message it is), the
 * AI agent it ends with, named (its call's summary names it).
 */
export type CallRoute = Plan & { user?: string; voicemail_box?: { type: 'user' | 'shared'; id: string }; ai_agent?: { id: string; name: string } }
/** A menu the caller answered: route again from its node with the digit (null: no input). */
export interface MenuAnswer {
  dialPlan: string
  node: string
  digit: string | null
}
export type CallRouter = (accountId: string, to: string, now: Date, answer?: MenuAnswer) => Promise<CallRoute | undefined>

export function callRouter(db: Db): CallRouter {
  return async (accountId, to, now, answer) => {
    const rows = await loadRoutingRows(db, accountId)
    const entry = entryOf(rows, to)
    if (!entry) return undefined
    const states = await presenceStates(
      db,
      PRESENCE_KIND,
      rows.users.map((u) => u.id),
    )
    const at = now.toISOString()
    const dnd = new Set([...states].filter(([id, state]) => presenceStatusOf(state, id, at).status === 'dnd').map(([id]) => id))
    const config = buildRoutingConfig(withDndUsers(rows, dnd))
    // A menu waiting for a digit ends the plan (gather): the B2BUA collects the digit and asks again with `answer`.
    const plan = answer
      ? route(config, { entry: { type: 'node', dialPlan: answer.dialPlan, node: answer.node }, digits: [answer.digit] }, now)
      : route(config, { entry: { type: entry.type, number: entry.number }, digits: [] }, now)
    const last = plan.steps[plan.steps.length - 1]
    const user = directUser(plan)
    return {
      ...plan,
      ...(user ? { user } : {}),
      ...(last?.kind === 'voicemail' ? { voicemail_box: { type: last.box.type, id: last.box.id } } : {}),
      ...(last?.kind === 'ai_agent' ? { ai_agent: { id: last.agent, name: rows.aiAgents.find((a) => a.id === last.agent)?.name ?? last.agent } } : {}),
    }
  }
}
