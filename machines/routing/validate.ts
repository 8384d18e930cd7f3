// Write-time validation: what the services check before storing a routing change,
// so that a stored config never loops and every reference stays inside the account.
import { nodeOf, type RoutingConfig, type Target } from './config'
import { clockMinutes, isValidTimeZone, isWeekday } from './schedule'

export type ProblemCode =
  /** A target, member, schedule, app, agent or node id that is not in this account's config. */
  | 'unknown_reference'
  /** Following targets, fallbacks, timeout targets and dial plan nodes comes back to where it started. */
  | 'routing_loop'
  /** A notify-mode voice_app node names an AI-agent voice app (an agent cannot just be notified). */
  | 'notify_ai_agent'
  | 'invalid_value'
  | 'duplicate'

export interface RoutingProblem {
  code: ProblemCode
  /**
   * The offending field, as segments of the RoutingInput shape:
   * `['ringGroups', 'rg_1', 'noAnswerTarget']`, `['dialPlans', 'dp_1', 'nodes', 'main', 'options', 2, 'next']`.
   * For a loop: the reference that closes it.
   */
  path: (string | number)[]
  message: string
  /** For a loop: the objects it goes through, first one repeated at the end (`ring_group:a`, `dial_plan:d#node`, ...). */
  cycle?: string[]
}

const MENU_DIGIT = /^[0-9*#]$/
const DATE = /^\d{4}-\d{2}-\d{2}$/

const positive = (n: number | undefined) => n === undefined || (Number.isFinite(n) && n > 0)

/** Every problem of a config; empty when it may be stored. */
export function validateRouting(config: RoutingConfig): RoutingProblem[] {
  const problems: RoutingProblem[] = []
  const problem = (code: ProblemCode, path: (string | number)[], message: string) => problems.push({ code, path, message })
  const checkTarget = (target: Target | null | undefined, path: (string | number)[]) => {
    if (target && !targetExists(config, target)) problem('unknown_reference', path, `${target.type} ${JSON.stringify(target.id)} is not in this account`)
  }
  const checkUser = (id: string, path: (string | number)[]) => {
    if (!config.users.has(id)) problem('unknown_reference', path, `user ${JSON.stringify(id)} is not in this account`)
  }

  if (!positive(config.defaults.ringSeconds)) problem('invalid_value', ['defaults', 'ringSeconds'], 'ring time must be a positive number of seconds')
  for (const user of config.users.values()) {
    if (!positive(user.ringSeconds)) problem('invalid_value', ['users', user.id, 'ringSeconds'], 'ring time must be a positive number of seconds')
  }
  for (const pn of config.phoneNumbers.values()) {
    if (pn.routing.mode === 'target') checkTarget(pn.routing.target, ['phoneNumbers', pn.id, 'routing', 'target'])
  }
  for (const ext of config.extensions.values()) checkTarget(ext.target, ['extensions', ext.number, 'target'])

  for (const group of config.ringGroups.values()) {
    const at = ['ringGroups', group.id]
    if (!positive(group.ringSeconds)) problem('invalid_value', [...at, 'ringSeconds'], 'ring time must be a positive number of seconds')
    const seen = new Set<string>()
    group.members.forEach((m, i) => {
      checkUser(m.user, [...at, 'members', i, 'user'])
      if (seen.has(m.user)) problem('duplicate', [...at, 'members', i, 'user'], `user ${JSON.stringify(m.user)} is already a member`)
      seen.add(m.user)
      if (!positive(m.ringSeconds)) problem('invalid_value', [...at, 'members', i, 'ringSeconds'], 'ring time must be a positive number of seconds')
    })
    checkTarget(group.noAnswerTarget, [...at, 'noAnswerTarget'])
  }

  for (const queue of config.queues.values()) {
    const at = ['queues', queue.id]
    if (!(Number.isFinite(queue.maxWaitSeconds) && queue.maxWaitSeconds >= 0))
      problem('invalid_value', [...at, 'maxWaitSeconds'], 'max wait must be 0 or more seconds')
    const seen = new Set<string>()
    queue.members.forEach((id, i) => {
      checkUser(id, [...at, 'members', i])
      if (seen.has(id)) problem('duplicate', [...at, 'members', i], `user ${JSON.stringify(id)} is already a member`)
      seen.add(id)
    })
    checkTarget(queue.timeoutTarget, [...at, 'timeoutTarget'])
  }

  for (const schedule of config.schedules.values()) {
    const at = ['schedules', schedule.id]
    if (!isValidTimeZone(schedule.timeZone)) problem('invalid_value', [...at, 'timeZone'], `${JSON.stringify(schedule.timeZone)} is not an IANA time zone`)
    schedule.hours.forEach((h, i) => {
      if (!isWeekday(h.day)) problem('invalid_value', [...at, 'hours', i, 'day'], 'day must be one of mon, tue, wed, thu, fri, sat, sun')
      const open = clockMinutes(h.open)
      const close = clockMinutes(h.close)
      if (Number.isNaN(open) || open >= 24 * 60) problem('invalid_value', [...at, 'hours', i, 'open'], 'open must be HH:MM, 00:00 to 23:59')
      else if (Number.isNaN(close) || close <= open) problem('invalid_value', [...at, 'hours', i, 'close'], 'close must be HH:MM after open, at most 24:00')
    })
    schedule.holidays.forEach((d, i) => {
      if (!DATE.test(d) || Number.isNaN(Date.parse(`${d}T00:00:00Z`))) problem('invalid_value', [...at, 'holidays', i], 'a holiday is a date YYYY-MM-DD')
    })
  }

  for (const app of config.voiceApps.values()) {
    if (app.kind === 'ai_agent' && !config.aiAgents.has(app.agent)) {
      problem('unknown_reference', ['voiceApps', app.id, 'agent'], `AI agent ${JSON.stringify(app.agent)} is not in this account`)
    }
  }

  for (const plan of config.dialPlans.values()) {
    const at = ['dialPlans', plan.id]
    const checkNode = (id: string | null | undefined, path: (string | number)[]) => {
      if (id !== null && id !== undefined && !nodeOf(plan, id)) problem('unknown_reference', path, `node ${JSON.stringify(id)} is not in this dial plan`)
    }
    checkNode(plan.entry, [...at, 'entry'])
    for (const [nodeId, node] of Object.entries(plan.nodes)) {
      const nat = [...at, 'nodes', nodeId]
      switch (node.kind) {
        case 'menu': {
          const digits = new Set<string>()
          node.options.forEach((o, i) => {
            if (!MENU_DIGIT.test(o.digit)) problem('invalid_value', [...nat, 'options', i, 'digit'], 'a menu digit is one of 0-9, * and #')
            else if (digits.has(o.digit)) problem('duplicate', [...nat, 'options', i, 'digit'], `digit ${o.digit} is already an option`)
            digits.add(o.digit)
            checkNode(o.next, [...nat, 'options', i, 'next'])
          })
          checkNode(node.default, [...nat, 'default'])
          break
        }
        case 'schedule':
          if (!config.schedules.has(node.schedule))
            problem('unknown_reference', [...nat, 'schedule'], `schedule ${JSON.stringify(node.schedule)} is not in this account`)
          checkNode(node.open, [...nat, 'open'])
          checkNode(node.closed, [...nat, 'closed'])
          break
        case 'play':
          checkNode(node.next, [...nat, 'next'])
          break
        case 'voice_app': {
          const app = config.voiceApps.get(node.app)
          if (!app) problem('unknown_reference', [...nat, 'app'], `voice app ${JSON.stringify(node.app)} is not in this account`)
          if (node.mode === 'notify') {
            if (app?.kind === 'ai_agent') problem('notify_ai_agent', [...nat, 'app'], 'a notify-mode voice_app node cannot point at an AI-agent voice app')
            checkNode(node.next, [...nat, 'next'])
          }
          break
        }
        case 'route':
          checkTarget(node.target, [...nat, 'target'])
          break
        case 'hangup':
          break
      }
    }
  }

  problems.push(...findLoops(config))
  return problems
}

/**
 * The problems a change brings: those of `after` that `before` did not have (same
 * code at the same path). A service validating one write uses this, so that an
 * older dangling reference elsewhere (say, a deleted user still named as a member)
 * does not block an unrelated change; a loop is always new, since a stored config
 * has none.
 */
export function validateChange(before: RoutingConfig, after: RoutingConfig): RoutingProblem[] {
  const key = (p: RoutingProblem) => `${p.code}\u0000${p.path.join('\u0000')}`
  const old = new Set(validateRouting(before).map(key))
  return validateRouting(after).filter((p) => p.code === 'routing_loop' || !old.has(key(p)))
}

export function targetExists(config: RoutingConfig, target: Target): boolean {
  switch (target.type) {
    case 'user':
      return config.users.has(target.id)
    case 'ring_group':
      return config.ringGroups.has(target.id)
    case 'queue':
      return config.queues.has(target.id)
    case 'dial_plan':
      return config.dialPlans.has(target.id)
    case 'voicemail_box':
      return config.voicemailBoxes.has(target.id)
    case 'voice_app':
      return config.voiceApps.has(target.id)
    case 'extension':
      return config.extensions.has(target.id)
    default:
      return false
  }
}

// ---------------------------------------------------------------- loops

interface Edge {
  to: string
  path: (string | number)[]
}

/** Targets that lead further (users, boxes and apps end a path, so they are not vertices). */
function vertexOf(target: Target | null | undefined): string | null {
  if (!target) return null
  if (target.type === 'extension' || target.type === 'ring_group' || target.type === 'queue' || target.type === 'dial_plan')
    return `${target.type}:${target.id}`
  return null
}

/** The routing graph: vertices are extensions, ring groups, queues, dial plans and dial plan nodes. */
export function routingGraph(config: RoutingConfig): Map<string, Edge[]> {
  const graph = new Map<string, Edge[]>()
  const add = (from: string, to: string | null, path: (string | number)[]) => {
    let edges = graph.get(from)
    if (!edges) graph.set(from, (edges = []))
    if (to !== null) edges.push({ to, path })
  }
  for (const ext of config.extensions.values()) add(`extension:${ext.number}`, vertexOf(ext.target), ['extensions', ext.number, 'target'])
  for (const g of config.ringGroups.values()) add(`ring_group:${g.id}`, vertexOf(g.noAnswerTarget), ['ringGroups', g.id, 'noAnswerTarget'])
  for (const q of config.queues.values()) add(`queue:${q.id}`, vertexOf(q.timeoutTarget), ['queues', q.id, 'timeoutTarget'])
  for (const plan of config.dialPlans.values()) {
    const self = `dial_plan:${plan.id}`
    const nodeVertex = (id: string | null | undefined) => (id === null || id === undefined || !nodeOf(plan, id) ? null : `${self}#${id}`)
    add(self, nodeVertex(plan.entry), ['dialPlans', plan.id, 'entry'])
    for (const [nodeId, node] of Object.entries(plan.nodes)) {
      const v = `${self}#${nodeId}`
      const at = ['dialPlans', plan.id, 'nodes', nodeId]
      add(v, null, at)
      switch (node.kind) {
        case 'menu':
          node.options.forEach((o, i) => {
            add(v, nodeVertex(o.next), [...at, 'options', i, 'next'])
          })
          add(v, nodeVertex(node.default), [...at, 'default'])
          break
        case 'schedule':
          add(v, nodeVertex(node.open), [...at, 'open'])
          add(v, nodeVertex(node.closed), [...at, 'closed'])
          break
        case 'play':
          add(v, nodeVertex(node.next), [...at, 'next'])
          break
        case 'voice_app':
          if (node.mode === 'notify') add(v, nodeVertex(node.next), [...at, 'next'])
          break
        case 'route':
          add(v, vertexOf(node.target), [...at, 'target'])
          break
        case 'hangup':
          break
      }
    }
  }
  return graph
}

/** One problem per reference that closes a cycle (depth-first search, iterative: a long chain must not overflow the stack). */
export function findLoops(config: RoutingConfig): RoutingProblem[] {
  const graph = routingGraph(config)
  const state = new Map<string, 'open' | 'done'>()
  const problems: RoutingProblem[] = []
  for (const start of graph.keys()) {
    if (state.has(start)) continue
    const stack: { vertex: string; next: number }[] = [{ vertex: start, next: 0 }]
    state.set(start, 'open')
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!
      const edges = graph.get(top.vertex) ?? []
      if (top.next >= edges.length) {
        state.set(top.vertex, 'done')
        stack.pop()
        continue
      }
      const edge = edges[top.next++]!
      const seen = state.get(edge.to)
      if (seen === 'open') {
        const from = stack.findIndex((f) => f.vertex === edge.to)
        const cycle = [...stack.slice(from).map((f) => f.vertex), edge.to]
        problems.push({ code: 'routing_loop', path: edge.path, message: `routing loop: ${cycle.join(' → ')}`, cycle })
      } else if (seen === undefined && graph.has(edge.to)) {
        state.set(edge.to, 'open')
        stack.push({ vertex: edge.to, next: 0 })
      }
    }
  }
  return problems
}
