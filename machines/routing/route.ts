// route(config, call, now) → Plan: the one routing decision, pure.
import { type DialPlan, nodeOf, QUEUE_MAX_WAIT_CEILING_SECONDS, type RoutingConfig, type RoutingUser, type Target } from './config'
import type { FinalStep, HangupReason, Plan, Step, StepSource } from './plan'
import { isScheduleOpen } from './schedule'

/** Where the call enters the routing. */
export type CallEntry =
  /** Inbound to one of the account's numbers (E.164). */
  | { type: 'number'; number: string }
  /** An extension dialled internally. */
  | { type: 'extension'; number: string }
  /** Straight to a target (a transfer, a click-to-call to a ring group). */
  | { type: 'target'; target: Target }
  /** Resuming at a dial plan node after a `gather` step. */
  | { type: 'node'; dialPlan: string; node: string }

export interface RoutedCall {
  entry: CallEntry
  /**
   * The caller's menu input in order, one entry per menu reached: a digit, or null
   * for no input. Menus past the end of the list answer `gather`; a simulated
   * call carries its whole script here.
   */
  digits?: readonly (string | null)[]
}

export function route(config: RoutingConfig, call: RoutedCall, now: number | Date): Plan {
  const walk = new Walk(config, call.digits ?? [], typeof now === 'number' ? now : now.getTime())
  const entry = call.entry
  switch (entry.type) {
    case 'number':
      walk.number(entry.number)
      break
    case 'extension':
      walk.extension(entry.number, undefined)
      break
    case 'target':
      walk.target(entry.target, undefined)
      break
    case 'node': {
      const plan = config.dialPlans.get(entry.dialPlan)
      if (plan && walk.enter(plan)) walk.node(plan, entry.node)
      else walk.hangup('unknown_destination', undefined)
      break
    }
  }
  return { steps: walk.steps }
}

const notDnd = (u: RoutingUser | undefined): u is RoutingUser => u !== undefined && u.presence !== 'dnd'

/**
 * One routing walk. Every method ends the plan with exactly one final step,
 * directly or through the targets it follows, and returns that step: the return
 * type makes the compiler check that no path forgets to end the plan.
 */
class Walk {
  readonly steps: Step[] = []
  // A path is short (a handful of objects), so a list beats a Set of string keys.
  // Objects by identity; dial plan nodes as (plan, node id) pairs, since node ids repeat across plans.
  private readonly visited: object[] = []
  private readonly visitedNodes: { plan: DialPlan; node: string }[] = []
  private digitIndex = 0

  constructor(
    private readonly config: RoutingConfig,
    private readonly digits: readonly (string | null)[],
    private readonly epochMs: number,
  ) {}

  private end(step: FinalStep): FinalStep {
    this.steps.push(step)
    return step
  }

  hangup(reason: HangupReason, source: StepSource | undefined): FinalStep {
    return this.end(source ? { kind: 'hangup', reason, source } : { kind: 'hangup', reason })
  }

  /** False when the path comes back to `object`: a loop that validation should have refused. */
  enter(object: object): boolean {
    if (this.visited.includes(object)) return false
    this.visited.push(object)
    return true
  }

  private enterNode(plan: DialPlan, node: string): boolean {
    for (const v of this.visitedNodes) if (v.plan === plan && v.node === node) return false
    this.visitedNodes.push({ plan, node })
    return true
  }

  number(e164: string): FinalStep {
    const pn = this.config.phoneNumbers.get(e164)
    if (!pn) return this.hangup('unknown_destination', undefined)
    const source: StepSource = { type: 'phone_number', id: pn.id }
    const routing = pn.routing
    if (routing.mode === 'drop') return this.hangup('dropped', source)
    if (routing.mode === 'target') return this.target(routing.target, source)
    const users: string[] = []
    for (const u of this.config.userOrder) if (u.presence !== 'dnd') users.push(u.id)
    if (users.length > 0) this.steps.push({ kind: 'ring', users, timeoutSeconds: this.config.defaults.ringSeconds, source })
    return this.hangup('no_answer', source)
  }

  extension(number: string, from: StepSource | undefined): FinalStep {
    const ext = this.config.extensions.get(number)
    if (!ext) return this.hangup('unknown_destination', from)
    const source: StepSource = { type: 'extension', id: ext.number }
    if (!this.enter(ext)) return this.hangup('loop', source)
    if (ext.status !== 'active') return this.hangup('inactive_extension', source)
    return this.target(ext.target, source)
  }

  target(target: Target, from: StepSource | undefined): FinalStep {
    const { config } = this
    switch (target.type) {
      case 'extension':
        return this.extension(target.id, from)
      case 'user': {
        const user = config.users.get(target.id)
        if (!user) return this.hangup('unknown_destination', from)
        const source: StepSource = { type: 'user', id: user.id }
        if (user.presence !== 'dnd')
          this.steps.push({ kind: 'ring', users: [user.id], timeoutSeconds: user.ringSeconds ?? config.defaults.ringSeconds, source })
        if (user.voicemail) return this.end({ kind: 'voicemail', box: { type: 'user', id: user.id }, source })
        return this.hangup('no_answer', source)
      }
      case 'ring_group': {
        const group = config.ringGroups.get(target.id)
        if (!group) return this.hangup('unknown_destination', from)
        const source: StepSource = { type: 'ring_group', id: group.id }
        if (!this.enter(group)) return this.hangup('loop', source)
        if (group.strategy === 'simultaneous') {
          const users: string[] = []
          for (const m of group.members) if (notDnd(config.users.get(m.user))) users.push(m.user)
          if (users.length > 0) this.steps.push({ kind: 'ring', users, timeoutSeconds: group.ringSeconds, source })
        } else {
          for (const m of group.members) {
            if (notDnd(config.users.get(m.user))) this.steps.push({ kind: 'ring', users: [m.user], timeoutSeconds: m.ringSeconds ?? group.ringSeconds, source })
          }
        }
        if (group.noAnswerTarget) return this.target(group.noAnswerTarget, source)
        return this.hangup('no_answer', source)
      }
      case 'queue': {
        const queue = config.queues.get(target.id)
        if (!queue) return this.hangup('unknown_destination', from)
        const source: StepSource = { type: 'queue', id: queue.id }
        if (!this.enter(queue)) return this.hangup('loop', source)
        const agents: string[] = []
        for (const id of queue.members) if (notDnd(config.users.get(id))) agents.push(id)
        const maxWaitSeconds = queue.maxWaitSeconds > 0 ? queue.maxWaitSeconds : QUEUE_MAX_WAIT_CEILING_SECONDS
        this.steps.push({ kind: 'enqueue', queue: queue.id, agents, maxWaitSeconds, source })
        if (queue.timeoutTarget) return this.target(queue.timeoutTarget, source)
        return this.hangup('no_answer', source)
      }
      case 'dial_plan': {
        const plan = config.dialPlans.get(target.id)
        if (!plan) return this.hangup('unknown_destination', from)
        if (!this.enter(plan)) return this.hangup('loop', { type: 'dial_plan', id: plan.id })
        return this.node(plan, plan.entry)
      }
      case 'voicemail_box': {
        const box = config.voicemailBoxes.get(target.id)
        if (!box) return this.hangup('unknown_destination', from)
        return this.end({ kind: 'voicemail', box: { type: 'shared', id: box.id }, source: { type: 'voicemail_box', id: box.id } })
      }
      case 'voice_app':
        return this.voiceApp(target.id, from, { type: 'voice_app', id: target.id })
    }
  }

  private voiceApp(appId: string, from: StepSource | undefined, source: StepSource): FinalStep {
    const app = this.config.voiceApps.get(appId)
    if (!app) return this.hangup('unknown_destination', from)
    if (app.kind === 'webhook') return this.end({ kind: 'voice_app', app: app.id, source })
    if (!this.config.aiAgents.has(app.agent)) return this.hangup('unknown_destination', source)
    return this.end({ kind: 'ai_agent', agent: app.agent, app: app.id, source })
  }

  node(plan: DialPlan, nodeId: string): FinalStep {
    const source: StepSource = { type: 'dial_plan', id: plan.id, node: nodeId }
    const node = nodeOf(plan, nodeId)
    if (!node) return this.hangup('unknown_destination', source)
    if (!this.enterNode(plan, nodeId)) return this.hangup('loop', source)
    switch (node.kind) {
      case 'menu': {
        const prompt = node.prompt ?? null
        if (this.digitIndex >= this.digits.length) {
          const options = node.options.map((o) => o.digit)
          return this.end({ kind: 'gather', prompt, dialPlan: plan.id, node: nodeId, options, source })
        }
        const digit = this.digits[this.digitIndex++] ?? null
        const chosen = digit === null ? undefined : node.options.find((o) => o.digit === digit)
        this.steps.push({ kind: 'menu', prompt, digit: chosen ? digit : null, source })
        const next = chosen ? chosen.next : node.default
        if (next === undefined || next === null) return this.hangup('hangup_node', source)
        return this.node(plan, next)
      }
      case 'schedule': {
        const schedule = this.config.schedules.get(node.schedule)
        if (!schedule) return this.hangup('unknown_destination', source)
        return this.node(plan, isScheduleOpen(schedule, this.epochMs) ? node.open : node.closed)
      }
      case 'play':
        this.steps.push({ kind: 'play', clip: node.clip, source })
        return this.node(plan, node.next)
      case 'voice_app':
        if (node.mode === 'control') return this.voiceApp(node.app, source, source)
        if (!this.config.voiceApps.has(node.app)) return this.hangup('unknown_destination', source)
        this.steps.push({ kind: 'notify', app: node.app, source })
        return this.node(plan, node.next)
      case 'route':
        return this.target(node.target, source)
      case 'hangup':
        return this.hangup('hangup_node', source)
    }
  }
}
