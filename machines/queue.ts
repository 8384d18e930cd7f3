// queue.v1: ONE call queue (waiting callers, its agents, callbacks), as a pure XState v5 machine.
//
// A queue holds many callers at once, so their lifecycles live in the context, and
// every event goes through one pure step, `stepQueue(context, event)`, which returns
// the next context and the effects in order. The machine's guard is `acceptsQueueEvent`
// (so `snapshot.can(event)` answers whether the queue takes an event) and its action
// applies the step and runs the effects as named actions supplied with `.provide(...)`:
//   - `emit`            receives `{ type: 'queue.call.*', data }` with the spec's fields
//                       (aliases are added by `withQueueAliases` when written to the outbox)
//   - `offer`           ring these agents for this caller (or for this callback)
//   - `cancelOffer`     stop ringing these agents (someone else answered, the caller left)
//   - `toTimeoutTarget` hand the call to the queue's timeout target
//   - `callBack`        an agent took a callback: call the caller back now
//   - `wake`            deliver this event back to the queue at a later time (a caller
//                       routed here that reaches the queue after earlier steps)
// Each caller may carry an `attachment` (ENQUEUE, CALLER_ARRIVED): whatever the runtime
// needs to reach that caller's call; the machine never reads it, keeps it with the
// entry and hands it back with the offer, timeout and callback effects.
// No clock reads: every event carries `at`. Durable delays arrive as TIMER events
// from the durable scheduler (due times: `maxWaitDeadline`, callback `not_before`,
// agent `wrap_until`); a stale fire fails its guard and is dropped.
//
// Ordering: callers wait in priority lanes (higher priority first), each lane in
// arrival order. A caller keeps its place while its agents ring (if nobody answers it
// is next again) and when it asks for a callback (the callback is made from that
// place). The head is the first caller in lane order that is waiting and not a
// callback due later, so a dispatch decision looks at no more entries than there are
// ringing callers and deferred callbacks, plus the agents: O(agents) in practice.
//
// Decisions (where the spec says "not shown"):
// - agents come from presence: available → available, on_call → busy, dnd / away /
//   offline → offline (logged out of the queue). Wrap-up after a queue call is the
//   queue's own: `available` from presence does not end it, its TIMER does.
// - leave-when-empty: when no agent is logged in (every agent offline or none), live
//   callers that are not ringing time out to the timeout target, and a caller arriving
//   then times out at once. Callbacks stay: the caller is not on the line.
// - max wait: measured from entering the queue; 0 means the one-hour ceiling; a ring in
//   progress finishes first (spec Limits). Callbacks have no max wait.
// - a callback is requested only by a caller who is waiting (not while agents ring).
//   When it reaches the head its agents are offered it (dispatched like a call, without
//   queue.call.dispatched, whose fields are a live caller's); the agent who takes it
//   (AGENT_ANSWERED) is kept, the runtime calls the caller back and reports
//   CALLBACK_RESULT. An offer nobody takes does not count as an attempt.
// - an agent who declines or lets an offer ring out counts as idle from then on (the
//   back of the longest-idle order), so the caller goes to someone else first.
// - an agent reported busy keeps a ringing offer (they may have just picked it up:
//   presence and the answer travel separately); offline or removed drops it.
import { enqueueActions, setup, type SnapshotFrom } from 'xstate'
import { CALLBACK_RESULTS, type CallbackResult, type QueueCallCommon, type QueueEmitted } from './queue-events'

// ---------------------------------------------------------------- input

export type DispatchStrategy = 'ring_all' | 'longest_idle'
export const DISPATCH_STRATEGIES: readonly DispatchStrategy[] = ['ring_all', 'longest_idle']
export type AgentStatus = 'available' | 'busy' | 'wrapping_up' | 'offline'
export const MAX_WAIT_CEILING_SECONDS = 3600

export interface QueueConfig {
  queue_id: string
  queue_name: string
  strategy: DispatchStrategy
  /** 0: the one-hour ceiling. */
  max_wait_seconds: number
  leave_when_empty: boolean
  wrap_up_seconds: number
  callback_max_attempts: number
  callback_retry_seconds: number
}

export type QueueInput = Pick<QueueConfig, 'queue_id' | 'queue_name' | 'strategy'> &
  Partial<QueueConfig> & {
    /** What the runtime needs to act for this queue (its owner); kept as `context.runtime`, never read by the machine. */
    runtime?: unknown
    /** Events the creator already has for the queue (the call whose arrival creates it): applied in order at start. */
    events?: QueueMachineEvent[]
  }

/** An agent's standing as a caller's router saw it (members, logged in or out, presence). */
export interface ArrivalAgent {
  user_id: string
  status: AgentStatus
}

type At = { at: string }
export type QueueMachineEvent =
  /** a call enters the queue (the router's plan said: enqueue). priority: higher first, default 0. */
  | ({ type: 'ENQUEUE'; call_id: string; from_number: string; from_name?: string | null; to_number: string; priority?: number; attachment?: unknown } & At)
  /**
   * A routed call reaches the queue: ENQUEUE, after bringing the agents up to date with
   * the members the router saw (`agents`: unknown ones join, absent ones leave; a busy,
   * wrapping-up or ringing agent keeps the queue's own status). With `arrives_at` later
   * than `at` the call gets here only then (earlier steps of its plan first): the
   * event comes back by `wake`.
   */
  | ({
      type: 'CALLER_ARRIVED'
      call_id: string
      from_number: string
      from_name?: string | null
      to_number: string
      priority?: number
      attachment?: unknown
      agents?: ArrivalAgent[]
      /** the queue's settings as the router read them (a queue's row may have changed since its actor started). */
      config?: Partial<Pick<QueueConfig, 'queue_name' | 'max_wait_seconds'>>
      arrives_at?: string
    } & At)
  /** the caller's call ended, whatever the queue thought of it: a waiting caller abandoned, a connected call completed. */
  | ({ type: 'CALL_ENDED'; call_id: string } & At)
  /** the caller hung up while waiting or ringing. */
  | ({ type: 'ABANDON'; call_id: string } & At)
  /** the ring of an offer ended and no agent answered (ring timeout, all declined). */
  | ({ type: 'OFFER_ENDED'; call_id: string; offered_at?: string } & At)
  /** one offered agent declined (or was busy): the offer goes on with the others. */
  | ({ type: 'AGENT_DECLINED'; call_id: string; user_id: string; offered_at?: string } & At)
  | ({ type: 'AGENT_ANSWERED'; call_id: string; user_id: string; endpoint_id?: string | null; offered_at?: string } & At)
  /** the answered queue call ended. */
  | ({ type: 'CALL_COMPLETED'; call_id: string } & At)
  | ({ type: 'CALLBACK_REQUESTED'; call_id: string; callback_id: string } & At)
  | ({ type: 'CALLBACK_RESULT'; callback_id: string; result: CallbackResult } & At)
  /** an agent's status (from presence), also how an agent joins the queue. */
  | ({ type: 'AGENT_STATUS'; user_id: string; status: AgentStatus; endpoint_id?: string | null } & At)
  /** an agent stops being a member of the queue. */
  | ({ type: 'AGENT_REMOVED'; user_id: string } & At)
  /** fired by the durable scheduler. */
  | ({ type: 'TIMER'; timer: 'max_wait'; call_id: string } & At)
  | ({ type: 'TIMER'; timer: 'callback_retry'; callback_id: string } & At)
  | ({ type: 'TIMER'; timer: 'wrap_up'; user_id: string } & At)

// ---------------------------------------------------------------- context

export interface QueueAgent {
  user_id: string
  endpoint_id: string | null
  status: AgentStatus
  /** since when the agent is available (longest idle goes first); null when not available. */
  idle_since: string | null
  /** the caller this agent is being offered, if any. */
  claimed_by: string | null
  wrap_until: string | null
  /**
   * when the status last changed (by a report, or by the queue itself: an answer makes
   * the agent busy). A report older than that is stale: presence travels separately
   * and may arrive after the queue already knows better.
   */
  status_at?: string
}

export interface QueueCallback {
  callback_id: string
  requested_at: string
  attempts: number
  /** not to be dispatched before this time (after a failed attempt). */
  not_before: string | null
}

export interface QueueEntry {
  call_id: string
  from_number: string
  from_name: string | null
  to_number: string
  priority: number
  entered_at: string
  position_at_admit: number
  /**
   * waiting: may be dispatched; offered: its agents are ringing; calling_back: an
   * agent took the callback offer and the caller is being called back.
   */
  phase: 'waiting' | 'offered' | 'calling_back'
  offered_to: string[]
  /**
   * when the current offer started. Ring events may name the offer they belong to
   * (`offered_at`): one of an earlier offer of the same caller is stale and dropped.
   */
  offered_at?: string
  /** max wait passed during a ring: time out if that ring ends unanswered. */
  timeout_due: boolean
  callback: QueueCallback | null
  /** the runtime's, opaque (see the top of the file). */
  attachment?: unknown
}

export interface QueueLane {
  priority: number
  /** callers of this priority in arrival order. */
  entries: QueueEntry[]
}

export interface QueueContext {
  config: QueueConfig
  /** the input's `runtime`, opaque. */
  runtime?: unknown
  /**
   * callers in the queue (waiting, ringing, or to be called back) in queue order:
   * lanes by descending priority. Arrays rather than a map by call id, so that a step
   * copies only the lane it changes (a dispatch must stay cheap with 1,000 waiting).
   */
  lanes: QueueLane[]
  /** callback id → call id. */
  callbacks: Record<string, string>
  agents: Record<string, QueueAgent>
  /** answered queue calls, until completed. */
  connected: Record<string, { entry: QueueEntry; agent_user: string; agent_endpoint: string | null; answered_at: string }>
  /**
   * The last calls that left the queue (at most DEPARTED_KEPT): a routed call's arrival
   * is written twice (the spawn of the queue's actor and a command for it), and the
   * copy may land after the caller already left; it is refused, not a second stay.
   */
  departed?: string[]
}

export const DEPARTED_KEPT = 256

// ---------------------------------------------------------------- effects

export interface QueueOffer {
  call_id: string
  /** set when this offer is a callback: the runtime calls the caller back once the agent takes it. */
  callback_id: string | null
  agents: { user_id: string; endpoint_id: string | null }[]
  at: string
  attachment?: unknown
}
export interface QueueCancelOffer {
  call_id: string
  agents: string[]
  at: string
  attachment?: unknown
}
export interface QueueTimeout {
  call_id: string
  reason: 'max_wait' | 'leave_when_empty'
  at: string
  attachment?: unknown
}
export interface QueueCallBack {
  call_id: string
  callback_id: string
  agent: { user_id: string; endpoint_id: string | null }
  at: string
  attachment?: unknown
}
export interface QueueWake {
  /** when to deliver `event` back to the queue (its own `at`). */
  at: string
  event: QueueMachineEvent
}

export type QueueEffect =
  | { type: 'emit'; params: QueueEmitted }
  | { type: 'offer'; params: QueueOffer }
  | { type: 'cancelOffer'; params: QueueCancelOffer }
  | { type: 'toTimeoutTarget'; params: QueueTimeout }
  | { type: 'callBack'; params: QueueCallBack }
  | { type: 'wake'; params: QueueWake }

// ---------------------------------------------------------------- pure helpers

const ms = (iso: string) => Date.parse(iso)
const iso = (t: number) => new Date(t).toISOString()
/** A ring event that names its offer belongs to the current one. */
const sameOffer = (e: QueueEntry, offered_at: string | undefined) => offered_at === undefined || e.offered_at === offered_at
const attachmentOf = (e: QueueEntry) => (e.attachment !== undefined ? { attachment: e.attachment } : {})
const validAt = (at: unknown): at is string => typeof at === 'string' && !Number.isNaN(Date.parse(at))
const nonEmpty = (s: unknown): s is string => typeof s === 'string' && s !== ''
const waitSeconds = (from: string, to: string) => Math.max(0, Math.floor((ms(to) - ms(from)) / 1000))

export function queueConfig(input: QueueInput): QueueConfig {
  const { runtime: _runtime, events: _events, ...config } = input
  return {
    max_wait_seconds: 0,
    leave_when_empty: false,
    wrap_up_seconds: 0,
    callback_max_attempts: 3,
    callback_retry_seconds: 300,
    ...config,
  }
}

export function initialQueueContext(input: QueueInput): QueueContext {
  return {
    config: queueConfig(input),
    ...(input.runtime !== undefined ? { runtime: input.runtime } : {}),
    lanes: [],
    callbacks: {},
    agents: {},
    connected: {},
  }
}

/** When a live caller's max wait runs out. */
export function maxWaitDeadline(config: QueueConfig, entry: Pick<QueueEntry, 'entered_at'>): string {
  const seconds = config.max_wait_seconds > 0 ? Math.min(config.max_wait_seconds, MAX_WAIT_CEILING_SECONDS) : MAX_WAIT_CEILING_SECONDS
  return iso(ms(entry.entered_at) + seconds * 1000)
}

/** Agents status from the user's effective presence. */
export function agentStatusFromPresence(p: 'available' | 'on_call' | 'dnd' | 'away' | 'offline'): AgentStatus {
  return p === 'available' ? 'available' : p === 'on_call' ? 'busy' : 'offline'
}

/** The caller with this call id, if in the queue. O(callers), for events about one caller. */
export function findEntry(c: QueueContext, call_id: string | undefined): QueueEntry | undefined {
  if (call_id === undefined) return undefined
  for (const lane of c.lanes) for (const e of lane.entries) if (e.call_id === call_id) return e
  return undefined
}

/** Callers in queue order (priority, then arrival), including ringing and callback entries. */
export function queueOrder(c: QueueContext): QueueEntry[] {
  const out: QueueEntry[] = []
  for (const lane of c.lanes) for (const e of lane.entries) out.push(e)
  return out
}

const dispatchable = (e: QueueEntry, now: number) =>
  e.phase === 'waiting' && (e.callback === null || e.callback.not_before === null || ms(e.callback.not_before) <= now)

/** The first caller in queue order that may be dispatched now. */
export function headOfQueue(c: QueueContext, now: string): QueueEntry | null {
  const t = ms(now)
  for (const lane of c.lanes) for (const e of lane.entries) if (dispatchable(e, t)) return e
  return null
}

const free = (a: QueueAgent) => a.status === 'available' && a.claimed_by === null

const idleBefore = (a: QueueAgent, b: QueueAgent) => {
  const ta = a.idle_since === null ? -Infinity : ms(a.idle_since)
  const tb = b.idle_since === null ? -Infinity : ms(b.idle_since)
  return ta < tb || (ta === tb && a.user_id < b.user_id)
}

/** The next dispatch: who is next and which agents ring for them, or null. O(agents + ringing callers). */
export function nextDispatch(c: QueueContext, now: string): { entry: QueueEntry; agents: QueueAgent[] } | null {
  let chosen: QueueAgent[] = []
  let best: QueueAgent | null = null
  for (const id in c.agents) {
    const a = c.agents[id]!
    if (!free(a)) continue
    if (c.config.strategy === 'ring_all') chosen.push(a)
    else if (best === null || idleBefore(a, best)) best = a
  }
  if (best) chosen = [best]
  if (chosen.length === 0) return null
  const entry = headOfQueue(c, now)
  return entry ? { entry, agents: chosen } : null
}

const loggedIn = (c: QueueContext) => {
  for (const id in c.agents) if (c.agents[id]!.status !== 'offline') return true
  return false
}

const AGENT_STATUSES: readonly AgentStatus[] = ['available', 'busy', 'wrapping_up', 'offline']

/** Whether the caller in an ENQUEUE or CALLER_ARRIVED may enter now. */
const admissible = (c: QueueContext, e: Extract<QueueMachineEvent, { type: 'ENQUEUE' | 'CALLER_ARRIVED' }>) =>
  nonEmpty(e.call_id) &&
  !findEntry(c, e.call_id) &&
  !(e.call_id in c.connected) &&
  typeof e.from_number === 'string' &&
  typeof e.to_number === 'string' &&
  (e.priority === undefined || Number.isSafeInteger(e.priority))

/** A CALLER_ARRIVED that is early: it comes back by `wake` at arrives_at. */
const arrivesLater = (e: Extract<QueueMachineEvent, { type: 'CALLER_ARRIVED' }>) => e.arrives_at !== undefined && ms(e.arrives_at) > ms(e.at)

/** Whether the queue takes this event now (the machine's only guard). */
export function acceptsQueueEvent(c: QueueContext, e: QueueMachineEvent): boolean {
  if (!e || !validAt(e.at)) return false
  switch (e.type) {
    case 'ENQUEUE':
      return admissible(c, e)
    case 'CALLER_ARRIVED':
      return (
        !c.departed?.includes(e.call_id) &&
        (e.arrives_at === undefined || validAt(e.arrives_at)) &&
        (e.agents === undefined || (Array.isArray(e.agents) && e.agents.every((a) => nonEmpty(a?.user_id) && AGENT_STATUSES.includes(a.status)))) &&
        admissible(c, e)
      )
    case 'CALL_ENDED': {
      if (e.call_id in c.connected) return true
      const entry = findEntry(c, e.call_id)
      return !!entry && entry.callback === null
    }
    case 'ABANDON': {
      const entry = findEntry(c, e.call_id)
      return !!entry && entry.callback === null
    }
    case 'OFFER_ENDED': {
      const entry = findEntry(c, e.call_id)
      return entry?.phase === 'offered' && sameOffer(entry, e.offered_at)
    }
    case 'AGENT_DECLINED':
    case 'AGENT_ANSWERED': {
      const entry = findEntry(c, e.call_id)
      return !!entry && entry.phase === 'offered' && entry.offered_to.includes(e.user_id) && sameOffer(entry, e.offered_at)
    }
    case 'CALL_COMPLETED':
      return e.call_id in c.connected
    case 'CALLBACK_REQUESTED': {
      const entry = findEntry(c, e.call_id)
      return !!entry && entry.callback === null && entry.phase === 'waiting' && nonEmpty(e.callback_id) && !(e.callback_id in c.callbacks)
    }
    case 'CALLBACK_RESULT': {
      const entry = findEntry(c, c.callbacks[e.callback_id])
      return !!entry && entry.phase === 'calling_back' && CALLBACK_RESULTS.includes(e.result)
    }
    case 'AGENT_STATUS': {
      const known = c.agents[e.user_id]?.status_at
      return nonEmpty(e.user_id) && AGENT_STATUSES.includes(e.status) && (known === undefined || ms(e.at) >= ms(known))
    }
    case 'AGENT_REMOVED':
      return e.user_id in c.agents
    case 'TIMER':
      switch (e.timer) {
        case 'max_wait': {
          const entry = findEntry(c, e.call_id)
          return !!entry && entry.callback === null && !entry.timeout_due && ms(e.at) >= ms(maxWaitDeadline(c.config, entry))
        }
        case 'callback_retry': {
          const entry = findEntry(c, c.callbacks[e.callback_id])
          const nb = entry?.callback?.not_before
          return !!entry && entry.phase === 'waiting' && !!nb && ms(e.at) >= ms(nb)
        }
        case 'wrap_up': {
          const a = c.agents[e.user_id]
          return !!a && a.status === 'wrapping_up' && a.wrap_until !== null && ms(e.at) >= ms(a.wrap_until)
        }
      }
      return false
  }
  return false
}

/**
 * A working copy of the context: maps and the lanes written are copied (copy on
 * write), entries and agents are replaced, never mutated, so the previous snapshot
 * is untouched.
 */
class Step {
  readonly c: QueueContext
  readonly effects: QueueEffect[] = []
  constructor(
    from: QueueContext,
    readonly at: string,
  ) {
    this.c = {
      config: from.config,
      ...(from.runtime !== undefined ? { runtime: from.runtime } : {}),
      lanes: from.lanes.map((l) => ({ priority: l.priority, entries: l.entries })),
      callbacks: { ...from.callbacks },
      agents: { ...from.agents },
      connected: { ...from.connected },
      ...(from.departed ? { departed: from.departed } : {}),
    }
  }

  common(e: QueueEntry, until = this.at): QueueCallCommon {
    return {
      call_id: e.call_id,
      queue: this.c.config.queue_id,
      queue_name: this.c.config.queue_name,
      from_number: e.from_number,
      from_name: e.from_name,
      to_number: e.to_number,
      position_at_admit: e.position_at_admit,
      wait_seconds: waitSeconds(e.entered_at, until),
    }
  }
  callbackCommon(e: QueueEntry) {
    return { queue: this.c.config.queue_id, from_number: e.from_number, to_number: e.to_number, callback: e.callback!.callback_id }
  }
  emit(e: QueueEmitted) {
    this.effects.push({ type: 'emit', params: e })
  }
  private readonly copied = new Set<QueueLane>()
  /** the lane's entries, safe to change in this step. */
  private writable(lane: QueueLane): QueueEntry[] {
    if (!this.copied.has(lane)) {
      lane.entries = lane.entries.slice()
      this.copied.add(lane)
    }
    return lane.entries
  }
  /** replace the caller's entry in its place. */
  setEntry(e: QueueEntry) {
    const lane = this.c.lanes.find((l) => l.priority === e.priority)!
    const i = lane.entries.findIndex((x) => x.call_id === e.call_id)
    this.writable(lane)[i] = e
  }
  setAgent(a: QueueAgent) {
    const before = this.c.agents[a.user_id]
    this.c.agents[a.user_id] = before && before.status === a.status ? a : { ...a, status_at: this.at }
  }

  enqueue(e: QueueEntry) {
    let lane = this.c.lanes.find((l) => l.priority === e.priority)
    if (!lane) {
      lane = { priority: e.priority, entries: [] }
      this.c.lanes.push(lane)
      this.c.lanes.sort((a, b) => b.priority - a.priority)
    }
    let ahead = 0
    for (const l of this.c.lanes) if (l.priority >= e.priority) ahead += l.entries.length
    this.writable(lane).push({ ...e, position_at_admit: ahead + 1 })
  }

  /** Take a caller out of the queue (answered, abandoned, timed out, callback done). */
  dequeue(e: QueueEntry) {
    this.c.departed = [...(this.c.departed ?? []).slice(1 - DEPARTED_KEPT), e.call_id]
    if (e.callback) delete this.c.callbacks[e.callback.callback_id]
    const lane = this.c.lanes.find((l) => l.priority === e.priority)
    if (!lane) return
    const entries = this.writable(lane)
    entries.splice(
      entries.findIndex((x) => x.call_id === e.call_id),
      1,
    )
    if (entries.length === 0) this.c.lanes = this.c.lanes.filter((l) => l !== lane)
  }

  /** Stop ringing these agents for e; they are free again (their status is unchanged). */
  release(e: QueueEntry, agents: string[], cancel: boolean, missed = false) {
    for (const id of agents) {
      const a = this.c.agents[id]
      if (!a || a.claimed_by !== e.call_id) continue
      // an agent who let an offer pass goes to the back of the longest-idle order,
      // so the caller is offered to someone else before them again
      const idle_since = missed && a.status === 'available' ? this.at : a.idle_since
      this.setAgent({ ...a, claimed_by: null, idle_since })
    }
    if (cancel && agents.length > 0) this.effects.push({ type: 'cancelOffer', params: { call_id: e.call_id, agents, at: this.at, ...attachmentOf(e) } })
  }

  /** The ring for e ended unanswered: back to its place, or out if max wait passed meanwhile. */
  offerFailed(e: QueueEntry) {
    this.release(e, e.offered_to, false, true)
    const back: QueueEntry = { ...e, phase: 'waiting', offered_to: [], timeout_due: false }
    if (e.timeout_due) this.timeOut(back, 'max_wait')
    else this.setEntry(back)
  }

  timeOut(e: QueueEntry, reason: QueueTimeout['reason']) {
    this.dequeue(e)
    this.emit({ type: 'queue.call.timed_out', data: { ...this.common(e), timed_out_at: this.at } })
    this.effects.push({ type: 'toTimeoutTarget', params: { call_id: e.call_id, reason, at: this.at, ...attachmentOf(e) } })
  }

  /** One agent stops being offered e (declined, went busy or offline, left the queue). */
  dropFromOffer(e: QueueEntry, user_id: string) {
    const rest = e.offered_to.filter((id) => id !== user_id)
    if (rest.length === 0) this.offerFailed(e)
    else {
      this.release(e, [user_id], false, true)
      this.setEntry({ ...e, offered_to: rest })
    }
  }

  leaveWhenEmpty() {
    if (!this.c.config.leave_when_empty || loggedIn(this.c)) return
    for (const e of queueOrder(this.c)) if (e.callback === null && e.phase === 'waiting') this.timeOut(e, 'leave_when_empty')
  }

  dispatch() {
    for (let d = nextDispatch(this.c, this.at); d; d = nextDispatch(this.c, this.at)) {
      const { entry, agents } = d
      const ids = agents.map((a) => a.user_id)
      for (const a of agents) this.setAgent({ ...a, claimed_by: entry.call_id })
      this.setEntry({ ...entry, phase: 'offered', offered_to: ids, offered_at: this.at })
      if (entry.callback === null)
        this.emit({
          type: 'queue.call.dispatched',
          data: { ...this.common(entry), agents_claimed: ids.length, targets_dispatched: ids.length, dispatched_at: this.at },
        })
      this.effects.push({
        type: 'offer',
        params: {
          call_id: entry.call_id,
          callback_id: entry.callback?.callback_id ?? null,
          agents: agents.map((a) => ({ user_id: a.user_id, endpoint_id: a.endpoint_id })),
          at: this.at,
          ...attachmentOf(entry),
        },
      })
    }
  }

  /** the agent's queue call ended (a claim made meanwhile, when presence said available, stays). */
  agentFree(a: QueueAgent) {
    const wrap = this.c.config.wrap_up_seconds
    this.setAgent(
      wrap > 0
        ? { ...a, status: 'wrapping_up', idle_since: null, wrap_until: iso(ms(this.at) + wrap * 1000) }
        : { ...a, status: 'available', idle_since: this.at, wrap_until: null },
    )
  }

  /** A caller enters (ENQUEUE, or a CALLER_ARRIVED that is due). */
  admit(e: Extract<QueueMachineEvent, { type: 'ENQUEUE' | 'CALLER_ARRIVED' }>) {
    const priority = e.priority ?? 0
    this.enqueue({
      call_id: e.call_id,
      from_number: e.from_number,
      from_name: e.from_name ?? null,
      to_number: e.to_number,
      priority,
      entered_at: this.at,
      position_at_admit: 0,
      phase: 'waiting',
      offered_to: [],
      timeout_due: false,
      callback: null,
      ...(e.attachment !== undefined ? { attachment: e.attachment } : {}),
    })
    const lane = this.c.lanes.find((l) => l.priority === priority)!
    this.emit({ type: 'queue.call.queued', data: { ...this.common(lane.entries[lane.entries.length - 1]!), queued_at: this.at } })
  }

  /**
   * The members as a caller's router saw them. The queue's own knowledge wins where it
   * has some: an agent it made busy, wrapping up or ringing keeps that (presence tells
   * the queue when that ends); otherwise the router's view, read more recently, applies.
   */
  syncAgents(agents: readonly ArrivalAgent[]) {
    const seen = new Set<string>()
    for (const a of agents) {
      seen.add(a.user_id)
      const known = this.c.agents[a.user_id]
      if (known && (known.status === 'busy' || known.status === 'wrapping_up' || known.claimed_by !== null)) continue
      if (known?.status_at && ms(known.status_at) > ms(this.at)) continue
      if (!known || known.status !== a.status) this.agentStatus(a.user_id, a.status, undefined)
    }
    for (const id of Object.keys(this.c.agents)) {
      if (seen.has(id)) continue
      this.agentStatus(id, 'offline', undefined)
      delete this.c.agents[id]
    }
  }

  abandon(entry: QueueEntry) {
    this.dequeue(entry)
    this.release(entry, entry.offered_to, true)
    this.emit({ type: 'queue.call.abandoned', data: { ...this.common(entry), abandoned_at: this.at } })
  }

  complete(call_id: string) {
    const done = this.c.connected[call_id]!
    delete this.c.connected[call_id]
    const agent = this.c.agents[done.agent_user]
    if (agent && agent.status === 'busy') this.agentFree(agent)
    this.emit({
      type: 'queue.call.completed',
      data: { ...this.common(done.entry, done.answered_at), agent_user: done.agent_user, agent_endpoint: done.agent_endpoint, completed_at: this.at },
    })
  }

  agentStatus(user_id: string, status: AgentStatus, endpoint_id: string | null | undefined) {
    const was = this.c.agents[user_id]
    const base: QueueAgent = was ?? { user_id, endpoint_id: null, status: 'offline', idle_since: null, claimed_by: null, wrap_until: null }
    const endpoint = endpoint_id === undefined ? base.endpoint_id : endpoint_id
    // wrap-up is the queue's: presence saying available does not end it
    const next: AgentStatus = base.status === 'wrapping_up' && status === 'available' ? 'wrapping_up' : status
    const idle_since = next === 'available' ? (base.status === 'available' ? base.idle_since : this.at) : null
    const claimed = base.claimed_by
    this.setAgent({ ...base, endpoint_id: endpoint, status: next, idle_since, wrap_until: next === 'wrapping_up' ? base.wrap_until : null })
    // Busy keeps a claim: the agent may be busy because they just picked up this very
    // offer (presence and the answer travel separately); a ring ends by OFFER_ENDED
    // or AGENT_DECLINED. Logging out (offline) drops it.
    const e = claimed ? findEntry(this.c, claimed) : undefined
    if (e && next === 'offline') {
      if (e.phase === 'calling_back') this.offerFailed(e)
      else {
        this.dropFromOffer(e, user_id)
        this.effects.push({ type: 'cancelOffer', params: { call_id: e.call_id, agents: [user_id], at: this.at, ...attachmentOf(e) } })
      }
    }
  }
}

/**
 * The queue's one step: the next context and the effects, in order. The event must
 * be accepted (`acceptsQueueEvent`); the machine guarantees it.
 */
export function stepQueue(from: QueueContext, e: QueueMachineEvent): { context: QueueContext; effects: QueueEffect[] } {
  const s = new Step(from, e.at)
  const c = s.c
  switch (e.type) {
    case 'ENQUEUE':
      s.admit(e)
      break
    case 'CALLER_ARRIVED':
      if (arrivesLater(e)) {
        const { arrives_at, ...rest } = e
        s.effects.push({ type: 'wake', params: { at: arrives_at!, event: { ...rest, at: arrives_at! } } })
        break
      }
      if (e.config) c.config = { ...c.config, ...e.config }
      if (e.agents) s.syncAgents(e.agents)
      s.admit(e)
      break
    case 'CALL_ENDED':
      if (e.call_id in c.connected) s.complete(e.call_id)
      else s.abandon(findEntry(c, e.call_id)!)
      break
    case 'ABANDON':
      s.abandon(findEntry(c, e.call_id)!)
      break
    case 'OFFER_ENDED':
      s.offerFailed(findEntry(c, e.call_id)!)
      break
    case 'AGENT_DECLINED':
      s.dropFromOffer(findEntry(c, e.call_id)!, e.user_id)
      break
    case 'AGENT_ANSWERED': {
      const entry = findEntry(c, e.call_id)!
      const agent = c.agents[e.user_id]!
      const endpoint = e.endpoint_id !== undefined ? e.endpoint_id : agent.endpoint_id
      if (entry.callback) {
        // the agent took the callback: keep them, the runtime now calls the caller back
        s.release(
          entry,
          entry.offered_to.filter((id) => id !== e.user_id),
          true,
        )
        s.setEntry({ ...entry, phase: 'calling_back', offered_to: [e.user_id] })
        s.effects.push({
          type: 'callBack',
          params: {
            call_id: entry.call_id,
            callback_id: entry.callback.callback_id,
            agent: { user_id: e.user_id, endpoint_id: endpoint },
            at: e.at,
            ...attachmentOf(entry),
          },
        })
        break
      }
      s.dequeue(entry)
      s.release(
        entry,
        entry.offered_to.filter((id) => id !== e.user_id),
        true,
      )
      s.setAgent({ ...agent, endpoint_id: endpoint, status: 'busy', idle_since: null, claimed_by: null, wrap_until: null })
      c.connected[e.call_id] = { entry, agent_user: e.user_id, agent_endpoint: endpoint, answered_at: e.at }
      s.emit({ type: 'queue.call.answered', data: { ...s.common(entry), agent_user: e.user_id, agent_endpoint: endpoint, answered_at: e.at } })
      break
    }
    case 'CALL_COMPLETED':
      s.complete(e.call_id)
      break
    case 'CALLBACK_REQUESTED': {
      const entry = findEntry(c, e.call_id)!
      const callback: QueueCallback = { callback_id: e.callback_id, requested_at: e.at, attempts: 0, not_before: null }
      const next = { ...entry, callback }
      s.setEntry(next)
      c.callbacks[e.callback_id] = e.call_id
      s.emit({
        type: 'queue.call.callback_requested',
        data: {
          ...s.callbackCommon(next),
          queue_name: c.config.queue_name,
          original_priority: entry.priority,
          original_entered_at: entry.entered_at,
          requested_at: e.at,
        },
      })
      break
    }
    case 'CALLBACK_RESULT': {
      const entry = findEntry(c, c.callbacks[e.callback_id])!
      const cb = entry.callback!
      const attempts = cb.attempts + 1
      const answered = e.result === 'answered'
      const more = !answered && attempts < c.config.callback_max_attempts
      const next_attempt_at = more ? iso(ms(e.at) + c.config.callback_retry_seconds * 1000) : null
      const taker = entry.offered_to[0]
      s.release(entry, entry.offered_to, false)
      // the agent who took the callback is now talking to the caller
      if (answered && taker && c.agents[taker]) s.setAgent({ ...c.agents[taker]!, status: 'busy', idle_since: null })
      s.emit({
        type: 'queue.call.callback_attempted',
        data: { ...s.callbackCommon(entry), attempt_number: attempts, result: e.result, next_attempt_at },
      })
      if (more) s.setEntry({ ...entry, phase: 'waiting', offered_to: [], callback: { ...cb, attempts, not_before: next_attempt_at } })
      else {
        s.dequeue(entry)
        if (!answered) s.emit({ type: 'queue.call.callback_failed', data: { ...s.callbackCommon(entry), attempts, reason: 'max_attempts_exceeded' } })
      }
      break
    }
    case 'AGENT_STATUS':
      s.agentStatus(e.user_id, e.status, e.endpoint_id)
      break
    case 'AGENT_REMOVED':
      s.agentStatus(e.user_id, 'offline', undefined)
      delete c.agents[e.user_id]
      break
    case 'TIMER':
      if (e.timer === 'max_wait') {
        const entry = findEntry(c, e.call_id)!
        if (entry.phase === 'offered') s.setEntry({ ...entry, timeout_due: true })
        else s.timeOut(entry, 'max_wait')
      } else if (e.timer === 'wrap_up') {
        const a = c.agents[e.user_id]!
        s.setAgent({ ...a, status: 'available', idle_since: e.at, wrap_until: null })
      }
      // callback_retry: only a chance to dispatch, below
      break
  }
  s.leaveWhenEmpty()
  s.dispatch()
  return { context: c, effects: s.effects }
}

// ---------------------------------------------------------------- machine

export const queueMachine = setup({
  types: {
    context: {} as QueueContext,
    events: {} as QueueMachineEvent,
    input: {} as QueueInput,
  },
  actions: {
    emit: (_: unknown, _params: QueueEmitted) => {},
    offer: (_: unknown, _params: QueueOffer) => {},
    cancelOffer: (_: unknown, _params: QueueCancelOffer) => {},
    toTimeoutTarget: (_: unknown, _params: QueueTimeout) => {},
    callBack: (_: unknown, _params: QueueCallBack) => {},
    wake: (_: unknown, _params: QueueWake) => {},
    step: enqueueActions(({ context, event, enqueue }) => {
      const { context: next, effects } = stepQueue(context, event)
      enqueue.assign(() => next)
      for (const f of effects) enqueue(f)
    }),
    /** the input's events, each as if sent (those the queue does not take are left out). */
    start: enqueueActions(({ context, event, enqueue }) => {
      // the entry of the initial state runs with xstate's init event, which carries the input
      const events = (event as unknown as { input?: QueueInput }).input?.events ?? []
      let c = context
      const effects: QueueEffect[] = []
      for (const e of events) {
        if (!acceptsQueueEvent(c, e)) continue
        const next = stepQueue(c, e)
        c = next.context
        effects.push(...next.effects)
      }
      enqueue.assign(() => c)
      for (const f of effects) enqueue(f)
    }),
  },
  guards: {
    accepts: ({ context, event }) => acceptsQueueEvent(context, event),
  },
}).createMachine({
  id: 'queue.v1',
  context: ({ input }) => initialQueueContext(input),
  initial: 'open',
  states: {
    open: {
      entry: 'start',
      on: {
        '*': { guard: 'accepts', actions: 'step' },
      },
    },
  },
})

export type QueueSnapshot = SnapshotFrom<typeof queueMachine>
