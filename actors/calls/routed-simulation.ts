/**
 * A sandbox inbound call that follows the account's routing
 * (POST /v1/test_helpers/inbound_calls).
 *
 * The router's plan (machines/routing: route(config, call, now)) says what the call
 * goes through; the request says how each user reacts (answer, no-answer, busy).
 * `planRoutedCall` turns the two into the same kind of script as the plain test call
 * (actors/calls/simulation.ts): call machine events at absolute simulated times,
 * written as durable timers of the call actor, so every call.* event comes from the
 * call machine and nowhere else.
 *
 * A queue is an actor of its own (actors/queues/): when the plan reaches a queue step
 * the script stops there and the caller is handed to the queue actor (CALLER_ARRIVED,
 * due when the earlier steps are over), carrying how the caller and the agents behave
 * (`QueueCallerSim`). The queue actor then plays the queue part live, with every other
 * caller of that queue: it rings the agents it offers the call to, answers for them as
 * `outcomes` says, hangs the caller up, and on a timeout writes the rest of the plan
 * (`planAfterQueue`) as the call's timers. The answer's `expected` end plays the queue
 * as if the caller were alone in it (`simulateQueue`, the queue machine itself).
 *
 * Pure: no I/O, the time and the ids are given.
 */
import type { CallMachineEvent } from '../../machines/call'
import {
  acceptsQueueEvent,
  type ArrivalAgent,
  initialQueueContext,
  maxWaitDeadline,
  type QueueContext,
  type QueueMachineEvent,
  stepQueue,
} from '../../machines/queue'
import type { QueueEmitted } from '../../machines/queue-events'
import type { Plan as RoutePlan, Step } from '../../machines/routing'
import { type CallerArrived, QUEUE_KIND, type QueueHandoff, memberStatus, queueHandoff } from '../queues/messages'
import type { ScheduleRequest } from '../runtime/client'
import type { CallActorInput, CallOwner } from './messages'

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
  /** AI agent names by id: an AI agent's call summary names its agent. */
  ai_agent_names?: Readonly<Record<string, string>>
  /** Queue names by id (queue.call.* events carry queue_name). */
  queue_names: Readonly<Record<string, string>>
  /**
   * Each queue's members as the call finds them: queue-agent standing and the persisted
   * presence snapshot (undefined: no presence actor yet). A queue not listed: the plan
   * step's agents, available.
   */
  queue_members?: Readonly<Record<string, readonly QueueMemberNow[]>>
  /** The caller's priority in a queue (higher first); default 0. */
  queue_priority?: number
  /** The caller asks for a callback this many seconds after entering a queue, and hangs up keeping their place. */
  queue_callback_after_seconds?: number
}

export interface QueueMemberNow {
  user_id: string
  standing: 'available' | 'unavailable'
  presence: unknown
}

export interface RoutedCallScript {
  call: CallActorInput
  /** The call machine's scripted events, as durable timers of the call actor. */
  script: ScheduleRequest[]
  /** The call's arrival at a queue, when its plan reaches one: the queue actor plays it from there. */
  queue: QueueHandoff | null
  /** What the script leads to (as if the caller were alone in any queue), for the response: who answered and how the call ends. */
  outcome: { answered_by: string | null; status: 'completed' | 'no-answer' | 'busy' | 'voicemail'; steps_taken: number }
}

const iso = (t0: number, seconds: number) => new Date(t0 + seconds * 1000).toISOString()

/** An event without its time (distributes over the union, so each member keeps its own fields). */
type Unstamped<E> = E extends unknown ? Omit<E, 'at'> : never
type CallEvent = Unstamped<CallMachineEvent>

/** The call's single user when the number or extension targets one user directly (call.incoming's user_id). */
export function directUser(plan: RoutePlan): string | undefined {
  const first = plan.steps[0]
  if (first?.source?.type !== 'user') return undefined
  return first.source.id
}

/** How the simulated caller goes on from a point of its plan: what has happened so far. */
interface PlayState {
  /** someone was rung. */
  rang: boolean
  /** every ring step so far ended busy. */
  all_busy: boolean
  /** the first user rung: without `outcomes`, the one who answers. */
  first_rung: string | null
  steps: number
}

/**
 * What a routed sandbox caller carries into a queue (the queue machine's opaque
 * `attachment`): how the caller and the agents behave, and the rest of the plan, so
 * that the queue actor can play the queue part live (other callers wait in the same
 * queue) and, on a timeout, the steps after it.
 */
export interface QueueCallerSim {
  owner: CallOwner
  /** when the call arrived: hang-up and callback times count from here. */
  started_at: string
  from_number: string
  from_name: string | null
  to_number: string
  outcomes?: Readonly<Record<string, UserOutcome>>
  talk_seconds: number
  hangup_after_seconds?: number
  /** the caller asks for a callback this many seconds after entering the queue (and hangs up, keeping their place). */
  callback_after_seconds?: number
  priority: number
  /** the plan's steps after the queue (its timeout target, and on). */
  rest: Step[]
  state: PlayState
  /** the members of every queue of the plan, as the call found them. */
  queue_agents: Readonly<Record<string, ArrivalAgent[]>>
  queue_names: Readonly<Record<string, string>>
}

/** One stretch of a routed call: from a step of the plan at second `t`, until it ends or reaches a queue. */
interface Stretch {
  steps: readonly Step[]
  t0: number
  t: number
  state: PlayState
  outcomes?: Readonly<Record<string, UserOutcome>>
  talk: number
  hangupAt?: number
  /** predict: play a queue as if the caller were alone in it (the answer's `expected`); stop: hand the caller to the queue actor. */
  atQueue: 'predict' | 'stop'
  /** for `predict`. */
  predictQueue?: (
    step: Extract<Step, { kind: 'enqueue' }>,
    t: number,
    answers: (u: string) => boolean,
    busy: (u: string) => boolean,
    noteRung: (u: string) => void,
  ) => QueueRun
}

interface StretchResult {
  events: { at: number; event: CallEvent }[]
  outcome: RoutedCallScript['outcome']
  /** the caller reached this queue at second `at`; `rest` is the plan after it. */
  queue?: { step: Extract<Step, { kind: 'enqueue' }>; at: number; rest: Step[]; state: PlayState }
}

/** Plays the plan's steps as call machine events at seconds from t0: the one rule set for the whole call and for what follows a queue. */
function playStretch(p: Stretch): StretchResult {
  const events: StretchResult['events'] = []
  const send = (at: number, event: CallEvent) => events.push({ at, event })
  const state = { ...p.state }
  const outcomes = p.outcomes
  const answers = (u: string) => (outcomes ? outcomes[u] === 'answer' : u === state.first_rung)
  const busy = (u: string) => outcomes?.[u] === 'busy'
  const noteRung = (u: string) => {
    state.first_rung ??= u
  }
  const hangupAt = p.hangupAt
  const talk = p.talk
  let t = p.t
  const result = (status: RoutedCallScript['outcome']['status'], answered_by: string | null): StretchResult => ({
    events,
    outcome: { status, answered_by, steps_taken: state.steps },
  })
  /** The caller gives up before `until`: hang up then. */
  const callerLeavesBefore = (until: number) => hangupAt !== undefined && hangupAt < until
  const callerHangsUp = () => {
    send(Math.max(t, hangupAt!), { type: 'HANGUP', side: 'caller' })
    return result('no-answer', null)
  }

  /**
   * The plan ends without anyone connected. Rung and unanswered: the ring times out
   * (no-answer) or, when every leg was busy, busy. Never rung (dropped, a hangup
   * node): the system hangs up. A menu still waiting for a digit (past
   * MAX_SIMULATED_MENUS): the caller hangs up after talk_seconds.
   */
  const finalHangup = (step: Step | undefined): StretchResult => {
    if (step?.kind === 'gather') {
      if (!callerLeavesBefore(t + talk)) t += talk
      return callerHangsUp()
    }
    if (callerLeavesBefore(t)) return callerHangsUp()
    if (!state.rang) {
      send(t, { type: 'HANGUP', side: 'callee' })
      return result('no-answer', null)
    }
    if (state.all_busy) {
      send(t, { type: 'BUSY' })
      return result('busy', null)
    }
    send(t, { type: 'TIMER', timer: 'ring_timeout' })
    return result('no-answer', null)
  }

  for (let i = 0; i < p.steps.length; i++) {
    const step = p.steps[i]!
    state.steps++
    switch (step.kind) {
      case 'ring': {
        for (const u of step.users) {
          noteRung(u)
          send(t, { type: 'RING', user_id: u })
        }
        state.rang = true
        const answerer = step.users.find(answers)
        const answerAt = t + Math.min(ANSWER_AFTER_SECONDS, step.timeoutSeconds)
        const everyoneBusy = step.users.every(busy)
        const end = answerer ? answerAt : everyoneBusy ? t + Math.min(BUSY_AFTER_SECONDS, step.timeoutSeconds) : t + step.timeoutSeconds
        if (callerLeavesBefore(end)) return callerHangsUp()
        if (!everyoneBusy) state.all_busy = false
        if (answerer) {
          send(answerAt, { type: 'ANSWER', user_id: answerer })
          send(answerAt + talk, { type: 'HANGUP', side: 'caller' })
          return result('completed', answerer)
        }
        t = end
        break
      }
      case 'enqueue': {
        if (callerLeavesBefore(t)) return callerHangsUp()
        if (p.atQueue === 'stop') {
          // The queue actor plays the rest: the caller's outcome depends on the other callers.
          return {
            events,
            outcome: { status: 'no-answer', answered_by: null, steps_taken: state.steps },
            queue: { step, at: t, rest: p.steps.slice(i + 1), state },
          }
        }
        const q = p.predictQueue!(step, t, answers, busy, noteRung)
        for (const r of q.rings) send(r.at, { type: 'RING', user_id: r.user })
        if (q.rings.length > 0) {
          state.rang = true
          state.all_busy = false
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
        // The app follows the call from here (its events go to the app's URL); the plan goes on.
        send(t, { type: 'APP_NOTIFY', app: step.app })
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
      case 'ai_agent': {
        // The app (or its AI agent) answers at once and talks until the caller hangs up; a control app may end or move it first (POST /v1/calls/{id}).
        if (callerLeavesBefore(t)) return callerHangsUp()
        send(t, { type: 'APP_ANSWER', app: step.app, ...(step.kind === 'ai_agent' ? { ai_agent: step.agent } : {}) })
        send(callerLeavesBefore(t + talk) ? Math.max(t, hangupAt!) : t + talk, { type: 'HANGUP', side: 'caller' })
        return result('completed', null)
      }
      case 'gather':
      case 'hangup':
        return finalHangup(step)
    }
  }
  return finalHangup(undefined)
}

/** The members of a queue as the call found them; a queue the request says nothing of: the plan's agents, available. */
function agentsOf(req: Pick<RoutedCallRequest, 'queue_members' | 'outcomes'>, step: Extract<Step, { kind: 'enqueue' }>): ArrivalAgent[] {
  const members = req.queue_members?.[step.queue]
  const listed: ArrivalAgent[] = members
    ? members.map((m) => ({ user_id: m.user_id, status: memberStatus(m.standing, m.presence) }))
    : step.agents.map((user_id) => ({ user_id, status: 'available' as const }))
  // dnd for this call (outcomes) is dnd to the queue too: logged out of it
  return listed.map((a) => (req.outcomes?.[a.user_id] === 'dnd' ? { ...a, status: 'offline' as const } : a))
}

/** The caller's arrival at a queue reached at second `at` of the call (`now`: when the arrival is written). */
function arrivalAt(
  sim: Omit<QueueCallerSim, 'rest' | 'state'>,
  reached: NonNullable<StretchResult['queue']>,
  t0: number,
  callId: string,
  now: string,
  commandId: string,
): QueueHandoff {
  const step = reached.step
  const attachment: QueueCallerSim = { ...sim, rest: reached.rest, state: reached.state }
  const arrives = iso(t0, reached.at)
  const arrival: CallerArrived = {
    type: 'CALLER_ARRIVED',
    call_id: callId,
    from_number: sim.from_number,
    from_name: sim.from_name,
    to_number: sim.to_number,
    priority: sim.priority,
    attachment,
    agents: sim.queue_agents[step.queue] ?? step.agents.map((user_id) => ({ user_id, status: 'available' as const })),
    config: { queue_name: sim.queue_names[step.queue] ?? step.queue, max_wait_seconds: step.maxWaitSeconds },
    at: now,
    ...(Date.parse(arrives) > Date.parse(now) ? { arrives_at: arrives } : {}),
  }
  return queueHandoff(
    { queue_id: step.queue, queue_name: sim.queue_names[step.queue] ?? step.queue, max_wait_seconds: step.maxWaitSeconds },
    sim.owner,
    arrival,
    commandId,
  )
}

/** Pure: the call actor input, its script and, when the plan reaches a queue, its arrival there, for a routed call arriving at `now`. */
export function planRoutedCall(req: RoutedCallRequest, now: Date, ids: { call: string; command?: string }): RoutedCallScript {
  const t0 = now.getTime()
  const user = directUser(req.plan)
  const last = req.plan.steps[req.plan.steps.length - 1]
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
    ...(last?.kind === 'voicemail' ? { voicemail_box: { type: last.box.type, id: last.box.id } } : {}),
    ...(last?.kind === 'ai_agent' ? { ai_agent: { id: last.agent, name: req.ai_agent_names?.[last.agent] ?? last.agent } } : {}),
  }
  // The queues the call may wait in learn when it ends, however it ends (a hangup command included).
  const queues = [...new Set(req.plan.steps.flatMap((s) => (s.kind === 'enqueue' ? [s.queue] : [])))]
  if (queues.length > 0) call.end_watchers = queues.map((id) => ({ kind: QUEUE_KIND, id }))
  const hangupAt = req.hangup_after_seconds
  const queue_agents: Record<string, ArrivalAgent[]> = {}
  for (const s of req.plan.steps) if (s.kind === 'enqueue') queue_agents[s.queue] = agentsOf(req, s)
  const base = {
    steps: req.plan.steps,
    t0,
    t: 0,
    state: { rang: false, all_busy: true, first_rung: null, steps: 0 },
    outcomes: req.outcomes,
    talk: req.talk_seconds,
  }

  // What the caller would live through alone in the queue (the answer's expected end).
  const expected = playStretch({
    ...base,
    hangupAt,
    atQueue: 'predict',
    predictQueue: (step, t, answers, busy, noteRung) => {
      const agents = queue_agents[step.queue]!.filter((a) => a.status === 'available').map((a) => a.user_id)
      const leaves = req.queue_callback_after_seconds !== undefined ? t + req.queue_callback_after_seconds : undefined
      const hangup = leaves !== undefined && (hangupAt === undefined || leaves < hangupAt) ? leaves : hangupAt
      return simulateQueue({ ...step, agents }, { ...req, hangup_after_seconds: hangup }, ids.call, t0, t, answers, busy, noteRung)
    },
  })
  const played = playStretch({ ...base, hangupAt, atQueue: 'stop' })
  const script: ScheduleRequest[] = played.events.map((e, i) => ({ name: `script_${i}`, at: iso(t0, e.at), event: { ...e.event, at: iso(t0, e.at) } }))
  const queue = played.queue
    ? arrivalAt(
        {
          owner: req.owner,
          started_at: now.toISOString(),
          from_number: req.from_number,
          from_name: req.from_name,
          to_number: req.to_number,
          ...(req.outcomes ? { outcomes: req.outcomes } : {}),
          talk_seconds: req.talk_seconds,
          ...(hangupAt !== undefined ? { hangup_after_seconds: hangupAt } : {}),
          ...(req.queue_callback_after_seconds !== undefined ? { callback_after_seconds: req.queue_callback_after_seconds } : {}),
          priority: req.queue_priority ?? 0,
          queue_agents,
          queue_names: req.queue_names,
        },
        played.queue,
        t0,
        ids.call,
        now.toISOString(),
        ids.command ?? `cmd_${ids.call}_queue`,
      )
    : null
  return { call, script, queue, outcome: expected.outcome }
}

/**
 * Pure: the call after its queue timed out at `at`: the rest of its plan (the queue's
 * timeout target, and on) as call machine events from then on, written as the call's
 * own timers (`name` prefix `prefix`), and the arrival at a next queue if the rest
 * reaches one.
 */
export function planAfterQueue(
  sim: QueueCallerSim,
  callId: string,
  at: string,
  ids: { command: string },
): { script: ScheduleRequest[]; queue: QueueHandoff | null } {
  const t0 = Date.parse(sim.started_at)
  const played = playStretch({
    steps: sim.rest,
    t0,
    t: (Date.parse(at) - t0) / 1000,
    state: sim.state,
    outcomes: sim.outcomes,
    talk: sim.talk_seconds,
    hangupAt: sim.hangup_after_seconds,
    atQueue: 'stop',
  })
  const prefix = `after_queue_${Date.parse(at)}`
  const script = played.events.map((e, i) => ({ name: `${prefix}_${i}`, at: iso(t0, e.at), event: { ...e.event, at: iso(t0, e.at) } }))
  const queue = played.queue ? arrivalAt(sim, played.queue, t0, callId, at, ids.command) : null
  return { script, queue }
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
  req: Pick<RoutedCallRequest, 'queue_names' | 'from_number' | 'from_name' | 'to_number' | 'hangup_after_seconds' | 'talk_seconds'>,
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
