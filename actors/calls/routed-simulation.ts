/**
 * A sandbox inbound call that follows the account's routing
 * (POST /v1/test_helpers/inbound_calls).
 *
 * The router's plan (machines/routing: route(config, call, now)) says what the call
 * goes through; the request says how each user reacts (answer, no-answer, busy).
 * `planRoutedCall` turns the two into the same kind of script as the plain test call
 * (actors/calls/simulation.ts): call machine events at absolute simulated times,
 * written as durable timers of the call actor, so every call.* event comes from the
 * call machine and nowhere else. A queue step is played through the queue machine
 * itself (`stepQueue`), so its queue.call.* events are the machine's, in its order,
 * with its fields; they are delivered on durable timers by a `call_sim` actor of
 * their own (the call machine knows nothing of queues: spec rule 8).
 *
 * Pure: no I/O, the time and the ids are given.
 */
import type { CallMachineEvent } from '../../machines/call'
import { acceptsQueueEvent, initialQueueContext, maxWaitDeadline, type QueueContext, type QueueMachineEvent, stepQueue } from '../../machines/queue'
import { type QueueEmitted, withQueueAliases } from '../../machines/queue-events'
import type { Plan as RoutePlan, Step } from '../../machines/routing'
import type { ScheduleRequest } from '../runtime/client'
import type { ActorSpawn } from '../runtime/kinds'
import { type CallActorInput, type CallOwner, SIM_KIND } from './messages'

export const USER_OUTCOMES = ['answer', 'no-answer', 'busy', 'dnd'] as const
export type UserOutcome = (typeof USER_OUTCOMES)[number]

/** Seconds a rung user takes to pick up. */
export const ANSWER_AFTER_SECONDS = 3
/** Seconds until a busy user's leg gives up (the busy signal). */
export const BUSY_AFTER_SECONDS = 1
/** How long a queue offer rings its agents before it ends unanswered. */
export const QUEUE_OFFER_RING_SECONDS = 15
/** A played clip or a menu prompt, as the simulated caller hears it. */
export const PROMPT_SECONDS = 5
/** A simulated caller never waits longer than this in a queue: then they hang up (abandoned). */
export const MAX_QUEUE_WAIT_SIM_SECONDS = 600
/** A menu the simulated caller gives no digit for is re-routed as "no input", at most this many times. */
export const MAX_SIMULATED_MENUS = 10

export interface RoutedCallRequest {
  owner: CallOwner
  plan: RoutePlan
  /** What was dialled: one of the account's numbers (E.164) or an extension number. */
  to_number: string
  from_number: string
  from_name: string | null
  /**
   * How each user reacts when rung. Omitted: the first user rung answers. Given:
   * only users marked 'answer' answer; everyone else lets it ring out.
   */
  outcomes?: Readonly<Record<string, UserOutcome>>
  /** Seconds of talk once answered, or the length of a voicemail message. */
  talk_seconds: number
  /** The caller hangs up this many seconds after the call arrives, if it is not answered by then. */
  hangup_after_seconds?: number
  /** Queue names by id (queue.call.* events carry queue_name). */
  queue_names: Readonly<Record<string, string>>
}

export interface RoutedCallScript {
  call: CallActorInput
  /** The call machine's scripted events, as durable timers of the call actor. */
  script: ScheduleRequest[]
  /** The queue.call.* events, delivered by a call_sim actor, when the call went through a queue. */
  queue_events: ActorSpawn | null
  /** What the script leads to, for the response: who answered and how the call ends. */
  outcome: { answered_by: string | null; status: 'completed' | 'no-answer' | 'busy' | 'voicemail'; steps_taken: number }
}

/** The call_sim actor that delivers a routed call's queue events. */
export const queueEventsActorId = (callId: string) => `${callId}_queue`

const iso = (t0: number, seconds: number) => new Date(t0 + seconds * 1000).toISOString()

/** An event without its time (distributes over the union, so each member keeps its own fields). */
type Unstamped<E> = E extends unknown ? Omit<E, 'at'> : never
type CallEvent = Unstamped<CallMachineEvent>

/** The call's single user when the number or extension targets one user directly (call.incoming's user_id). */
function directUser(plan: RoutePlan): string | undefined {
  const first = plan.steps[0]
  if (first?.source?.type !== 'user') return undefined
  return first.source.id
}

/** Pure: the call actor input, its script and the queue events of a routed call arriving at `now`. */
export function planRoutedCall(req: RoutedCallRequest, now: Date, ids: { call: string }): RoutedCallScript {
  const t0 = now.getTime()
  const user = directUser(req.plan)
  const call: CallActorInput = {
    call_id: ids.call,
    direction: 'inbound',
    from_number: req.from_number,
    from_name: req.from_name,
    to_number: req.to_number,
    started_at: now.toISOString(),
    user_id: user ?? null,
    ...(user ? { to_user_id: user } : {}),
    record: false,
    owner: req.owner,
    simulated: true,
  }
  const script: ScheduleRequest[] = []
  const send = (at: number, event: CallEvent & Record<string, unknown>) =>
    script.push({ name: `script_${script.length}`, at: iso(t0, at), event: { ...event, at: iso(t0, at) } })
  const queueSteps: { at: string; action: { type: 'event'; event: string; data: Record<string, unknown> } }[] = []

  const outcomes = req.outcomes
  let firstRung: string | undefined
  /** Whether this user picks up: the request's outcome, or by default the first user rung. */
  const answers = (u: string) => (outcomes ? outcomes[u] === 'answer' : u === firstRung)
  const busy = (u: string) => outcomes?.[u] === 'busy'
  const hangupAt = req.hangup_after_seconds
  const talk = req.talk_seconds

  let t = 0
  let rang = false
  let allBusy = true
  let steps = 0
  const result = (status: RoutedCallScript['outcome']['status'], answered_by: string | null) => ({ status, answered_by, steps_taken: steps })
  /** The caller gives up before `until`: hang up then. */
  const callerLeavesBefore = (until: number) => hangupAt !== undefined && hangupAt < until
  const callerHangsUp = () => {
    send(Math.max(t, hangupAt!), { type: 'HANGUP', side: 'caller' })
    return result('no-answer', null)
  }

  const run = (): RoutedCallScript['outcome'] => {
    for (const step of req.plan.steps) {
      steps++
      switch (step.kind) {
        case 'ring': {
          for (const u of step.users) {
            firstRung ??= u
            send(t, { type: 'RING', user_id: u })
          }
          rang = true
          const answerer = step.users.find(answers)
          const answerAt = t + Math.min(ANSWER_AFTER_SECONDS, step.timeoutSeconds)
          const everyoneBusy = step.users.every(busy)
          const end = answerer ? answerAt : everyoneBusy ? t + Math.min(BUSY_AFTER_SECONDS, step.timeoutSeconds) : t + step.timeoutSeconds
          if (callerLeavesBefore(end)) return callerHangsUp()
          if (!everyoneBusy) allBusy = false
          if (answerer) {
            send(answerAt, { type: 'ANSWER', user_id: answerer })
            send(answerAt + talk, { type: 'HANGUP', side: 'caller' })
            return result('completed', answerer)
          }
          t = end
          break
        }
        case 'enqueue': {
          const q = simulateQueue(step, req, ids.call, t0, t, answers, busy, (u) => (firstRung ??= u))
          for (const r of q.rings) send(r.at, { type: 'RING', user_id: r.user })
          for (const e of q.events) queueSteps.push({ at: iso(t0, e.at), action: { type: 'event', event: e.event.type, data: withQueueAliases(e.event) } })
          if (q.rings.length > 0) {
            rang = true
            allBusy = false
          }
          if (q.result === 'answered') {
            send(q.answeredAt!, { type: 'ANSWER', user_id: q.agent! })
            send(q.end, { type: 'HANGUP', side: 'caller' })
            return result('completed', q.agent!)
          }
          t = q.end
          if (q.result === 'abandoned') {
            send(t, { type: 'HANGUP', side: 'caller' })
            return result('no-answer', null)
          }
          break
        }
        case 'play':
        case 'menu':
          if (callerLeavesBefore(t + PROMPT_SECONDS)) return callerHangsUp()
          t += PROMPT_SECONDS
          break
        case 'notify':
          break
        case 'voicemail': {
          if (callerLeavesBefore(t)) return callerHangsUp()
          send(t, { type: 'VOICEMAIL' })
          // A caller who hangs up during the greeting leaves no message.
          if (callerLeavesBefore(t + talk)) {
            t = Math.max(t, hangupAt!)
            send(t, { type: 'HANGUP', side: 'caller' })
            return result('no-answer', null)
          }
          send(t + talk, { type: 'MESSAGE_STORED' })
          send(t + talk, { type: 'HANGUP', side: 'caller' })
          return result('voicemail', null)
        }
        case 'voice_app':
        case 'ai_agent':
        case 'gather':
        case 'hangup':
          return finalHangup(step)
      }
    }
    return finalHangup(undefined)
  }

  /**
   * The plan ends without anyone connected. Rung and unanswered: the ring times out
   * (no-answer) or, when every leg was busy, busy. Never rung (dropped, a hangup
   * node): the system hangs up. A voice app or AI agent is not simulated: the
   * caller hangs up after talk_seconds.
   */
  const finalHangup = (step: Step | undefined): RoutedCallScript['outcome'] => {
    if (step && (step.kind === 'voice_app' || step.kind === 'ai_agent' || step.kind === 'gather')) {
      if (!callerLeavesBefore(t + talk)) t += talk
      return callerHangsUp()
    }
    if (callerLeavesBefore(t)) return callerHangsUp()
    if (!rang) {
      send(t, { type: 'HANGUP', side: 'callee' })
      return result('no-answer', null)
    }
    if (allBusy) {
      send(t, { type: 'BUSY' })
      return result('busy', null)
    }
    send(t, { type: 'TIMER', timer: 'ring_timeout' })
    return result('no-answer', null)
  }

  const outcome = run()
  const queue_events: ActorSpawn | null =
    queueSteps.length === 0
      ? null
      : { kind: SIM_KIND, id: queueEventsActorId(ids.call), input: { sim_id: queueEventsActorId(ids.call), steps: queueSteps, owner: req.owner } }
  return { call, script, queue_events, outcome }
}

interface QueueRun {
  events: { at: number; event: QueueEmitted }[]
  rings: { at: number; user: string }[]
  result: 'answered' | 'abandoned' | 'timed_out'
  agent?: string
  answeredAt?: number
  /** When the call leaves the queue: completed, abandoned or timed out. */
  end: number
}

/**
 * Plays one caller through the queue machine: its agents log in available, the
 * caller enters at `start`, each offer rings its agents (the call machine's RING)
 * and is answered, declined (busy) or rings out; the caller hangs up at
 * hangup_after_seconds (abandoned) or reaches the queue's max wait (timed_out).
 * Every queue.call.* event is the machine's own output.
 */
function simulateQueue(
  step: Extract<Step, { kind: 'enqueue' }>,
  req: RoutedCallRequest,
  callId: string,
  t0: number,
  start: number,
  answers: (u: string) => boolean,
  busy: (u: string) => boolean,
  noteRung: (u: string) => void,
): QueueRun {
  const at = (s: number) => iso(t0, s)
  const secondsOf = (isoAt: string) => (Date.parse(isoAt) - t0) / 1000
  let ctx: QueueContext = initialQueueContext({
    queue_id: step.queue,
    queue_name: req.queue_names[step.queue] ?? step.queue,
    // Queue rows have no dispatch strategy yet: every free agent rings (the spec's ring-all).
    strategy: 'ring_all',
    max_wait_seconds: step.maxWaitSeconds,
  })
  const run: QueueRun = { events: [], rings: [], result: 'timed_out', end: start }
  // Pending machine events in time order; ties keep insertion order.
  const pending: { s: number; seq: number; e: QueueMachineEvent }[] = []
  let seq = 0
  const push = (s: number, e: Unstamped<QueueMachineEvent>) => {
    pending.push({ s, seq: seq++, e: { ...e, at: at(s) } as QueueMachineEvent })
    pending.sort((a, b) => a.s - b.s || a.seq - b.seq)
  }
  for (const user of step.agents) push(start, { type: 'AGENT_STATUS', user_id: user, status: 'available' })
  push(start, { type: 'ENQUEUE', call_id: callId, from_number: req.from_number, from_name: req.from_name, to_number: req.to_number })
  const deadline = secondsOf(maxWaitDeadline(ctx.config, { entered_at: at(start) }))
  const leaveAt =
    req.hangup_after_seconds !== undefined
      ? Math.max(start, req.hangup_after_seconds)
      : deadline - start > MAX_QUEUE_WAIT_SIM_SECONDS
        ? start + MAX_QUEUE_WAIT_SIM_SECONDS
        : undefined
  if (leaveAt !== undefined) push(leaveAt, { type: 'ABANDON', call_id: callId })
  push(deadline, { type: 'TIMER', timer: 'max_wait', call_id: callId })

  // Bounded: each offer either ends the run or is followed by another at least a ring later.
  for (let i = 0; i < 10_000 && pending.length > 0; i++) {
    const { s, e } = pending.shift()!
    if (!acceptsQueueEvent(ctx, e)) continue
    const next = stepQueue(ctx, e)
    ctx = next.context
    for (const fx of next.effects) {
      if (fx.type === 'offer') {
        for (const a of fx.params.agents) {
          noteRung(a.user_id)
          run.rings.push({ at: s, user: a.user_id })
        }
        const offered = fx.params.agents.map((a) => a.user_id)
        const taker = offered.find(answers)
        if (taker) push(s + ANSWER_AFTER_SECONDS, { type: 'AGENT_ANSWERED', call_id: callId, user_id: taker })
        else {
          for (const u of offered) if (busy(u)) push(s + BUSY_AFTER_SECONDS, { type: 'AGENT_DECLINED', call_id: callId, user_id: u })
          push(s + QUEUE_OFFER_RING_SECONDS, { type: 'OFFER_ENDED', call_id: callId })
        }
      } else if (fx.type === 'emit') {
        run.events.push({ at: s, event: fx.params })
        switch (fx.params.type) {
          case 'queue.call.answered':
            run.result = 'answered'
            run.agent = fx.params.data.agent_user
            run.answeredAt = s
            push(s + req.talk_seconds, { type: 'CALL_COMPLETED', call_id: callId })
            break
          case 'queue.call.completed':
            run.end = s
            return run
          case 'queue.call.abandoned':
            run.result = 'abandoned'
            run.end = s
            return run
          case 'queue.call.timed_out':
            run.result = 'timed_out'
            run.end = s
            return run
        }
      }
    }
  }
  return run
}

/**
 * Routes a simulated call to the end: a menu waiting for a digit the script does not
 * carry is taken as "no input" (null), as a caller who keys nothing would. `routeOnce`
 * is route() with the config and time bound.
 */
export function routeSimulated(routeOnce: (digits: readonly (string | null)[]) => RoutePlan, digits: readonly (string | null)[]): RoutePlan {
  const script = [...digits]
  let plan = routeOnce(script)
  for (let i = 0; i < MAX_SIMULATED_MENUS && plan.steps[plan.steps.length - 1]?.kind === 'gather'; i++) {
    script.push(null)
    plan = routeOnce(script)
  }
  return plan
}
