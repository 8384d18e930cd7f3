// presence.v1: the presence of ONE user, as a pure XState v5 machine.
//
// The state shown to others is a function of four inputs and nothing else:
//   effectivePresence({ manual, live_calls, registered_devices, idle })
// - manual: what the user chose with PUT /v1/me/presence (available, dnd or away);
// - live_calls: the user's calls in flight (call ids, so a repeated start or end is harmless);
// - registered_devices: the user's devices with at least one live SIP binding;
// - idle: the idle timeout fired since the user's last activity.
// The machine only keeps those inputs up to date; its state value is always
// effectivePresence(context) (the property tests check exactly that).
//
// Precedence, and why:
//   on_call  a live call wins over everything: it is what callers and agents need to
//            know, and a sandbox user is on a (simulated) call without any device;
//   offline  no registered device: nothing can ring (spec: "no registration gives offline");
//   dnd / away as chosen by the user;
//   away     idle timeout since the last activity (spec: "idle timeout gives away");
//   available otherwise.
// Routing reads `manual` (dnd users are skipped) rather than the effective state.
//
// No clock reads: every event carries `at`. The idle timeout is a TIMER event from
// the durable scheduler, due at `idleDeadline(context)`; a fire that is stale (activity
// since) is dropped by its guard, so the scheduler need not cancel it.
// Effects: `emit` receives the PresenceStatus record whenever status or status_text changes.
import { enqueueActions, setup, type SnapshotFrom } from 'xstate'

export type PresenceState = 'available' | 'on_call' | 'dnd' | 'away' | 'offline'
export const PRESENCE_STATES: readonly PresenceState[] = ['available', 'on_call', 'dnd', 'away', 'offline']
export type ManualPresence = 'available' | 'dnd' | 'away'
export const MANUAL_PRESENCE: readonly ManualPresence[] = ['available', 'dnd', 'away']
export const STATUS_TEXT_MAX = 100

export interface PresenceInputs {
  manual: ManualPresence
  live_calls: readonly string[]
  registered_devices: readonly string[]
  idle: boolean
}

/** The one definition of what others see. */
export function effectivePresence(i: PresenceInputs): PresenceState {
  if (i.live_calls.length > 0) return 'on_call'
  if (i.registered_devices.length === 0) return 'offline'
  if (i.manual !== 'available') return i.manual
  return i.idle ? 'away' : 'available'
}

// ---------------------------------------------------------------- input

export interface PresenceInput {
  user_id: string
  /** seconds without activity before a user shows away; 0 disables the idle timeout. */
  idle_timeout_seconds: number
  /** when the actor starts (its first updated_at). */
  at: string
  manual?: ManualPresence
  status_text?: string | null
  live_calls?: readonly string[]
  registered_devices?: readonly string[]
}

type At = { at: string }
export type PresenceMachineEvent =
  /** PUT /v1/me/presence (admitted by admitPresenceCommand). Also counts as activity. */
  | ({ type: 'SET_MANUAL'; status: ManualPresence; status_text?: string | null } & At)
  | ({ type: 'CALL_STARTED'; call_id: string } & At)
  | ({ type: 'CALL_ENDED'; call_id: string } & At)
  /** one of the user's devices became registered / unregistered (device.v1 registrationChanged). */
  | ({ type: 'DEVICE_REGISTERED'; device_id: string } & At)
  | ({ type: 'DEVICE_UNREGISTERED'; device_id: string } & At)
  /**
   * the user did something in a client that reports activity: restarts the idle
   * timeout, set to `idle_timeout_seconds` (the account's setting, carried by each
   * report; 0 turns it off). Users whose clients never report keep it off.
   */
  | ({ type: 'ACTIVITY'; idle_timeout_seconds?: number } & At)
  /** fired by the durable scheduler. */
  | ({ type: 'TIMER'; timer: 'idle_timeout' } & At)

/** The record GET /v1/users/{id}/presence shows (the webrtc object is added by the service). */
export interface PresenceStatusRecord {
  user: string
  status: PresenceState
  status_text: string | null
  updated_at: string
}

export interface PresenceContext extends PresenceInputs {
  user_id: string
  idle_timeout_seconds: number
  status_text: string | null
  last_activity_at: string
  /** the last published record: status is always effectivePresence(this context). */
  status: PresenceState
  updated_at: string
}

// ---------------------------------------------------------------- pure helpers

const ms = (iso: string) => Date.parse(iso)
const validAt = (at: unknown): at is string => typeof at === 'string' && !Number.isNaN(Date.parse(at))
const add = (list: readonly string[], id: string) => (list.includes(id) ? list : [...list, id])
const remove = (list: readonly string[], id: string) => (list.includes(id) ? list.filter((x) => x !== id) : list)

/** When the durable scheduler should fire the idle timeout, or null when it cannot apply. */
export function idleDeadline(c: PresenceContext): string | null {
  if (c.idle_timeout_seconds <= 0 || c.idle) return null
  return new Date(ms(c.last_activity_at) + c.idle_timeout_seconds * 1000).toISOString()
}

/** The inputs after one event (events that fail validation are refused by guards before this). */
export function nextInputs(c: PresenceContext, e: PresenceMachineEvent): Partial<PresenceContext> {
  const activity = { last_activity_at: e.at, idle: false }
  switch (e.type) {
    case 'SET_MANUAL':
      return { ...activity, manual: e.status, status_text: e.status_text === undefined ? c.status_text : e.status_text }
    case 'CALL_STARTED':
      return { ...activity, live_calls: add(c.live_calls, e.call_id) }
    case 'CALL_ENDED':
      return { ...activity, live_calls: remove(c.live_calls, e.call_id) }
    case 'DEVICE_REGISTERED':
      return { registered_devices: add(c.registered_devices, e.device_id) }
    case 'DEVICE_UNREGISTERED':
      return { registered_devices: remove(c.registered_devices, e.device_id) }
    case 'ACTIVITY':
      return e.idle_timeout_seconds === undefined ? activity : { ...activity, idle_timeout_seconds: e.idle_timeout_seconds }
    case 'TIMER':
      return { idle: true }
  }
}

const isManual = (s: unknown): s is ManualPresence => MANUAL_PRESENCE.includes(s as ManualPresence)
const validText = (t: unknown) => t === undefined || t === null || (typeof t === 'string' && t.length <= STATUS_TEXT_MAX)

// ---------------------------------------------------------------- machine

/** eventless moves into `target` whenever the inputs say so (from any other state). */
const follow = (self: PresenceState) => ({
  always: PRESENCE_STATES.filter((s) => s !== self).map((target) => ({ guard: { type: 'effectiveIs' as const, params: { status: target } }, target })),
})

export const presenceMachine = setup({
  types: {
    context: {} as PresenceContext,
    events: {} as PresenceMachineEvent,
    input: {} as PresenceInput,
  },
  actions: {
    emit: (_: unknown, _params: PresenceStatusRecord) => {},
    /** apply an admitted event to the inputs; publish when status or status_text changed. */
    apply: enqueueActions(({ context, event, enqueue }) => {
      const next = { ...context, ...nextInputs(context, event) }
      const status = effectivePresence(next)
      if (status !== context.status || next.status_text !== context.status_text) {
        next.status = status
        next.updated_at = event.at
        enqueue({ type: 'emit', params: { user: context.user_id, status, status_text: next.status_text, updated_at: event.at } })
      }
      enqueue.assign(next)
    }),
  },
  guards: {
    effectiveIs: ({ context }, params: { status: PresenceState }) => effectivePresence(context) === params.status,
    validAt: ({ event }) => validAt(event.at),
    activityValid: ({ event }) =>
      event.type === 'ACTIVITY' &&
      validAt(event.at) &&
      (event.idle_timeout_seconds === undefined || (Number.isInteger(event.idle_timeout_seconds) && event.idle_timeout_seconds >= 0)),
    manualAllowed: ({ event }) => event.type === 'SET_MANUAL' && validAt(event.at) && isManual(event.status) && validText(event.status_text),
    hasId: ({ event }) =>
      validAt(event.at) && ('call_id' in event ? typeof event.call_id === 'string' && event.call_id !== '' : 'device_id' in event && !!event.device_id),
    /** the timer is due: no activity since it was scheduled (a stale fire is dropped). */
    idleDue: ({ context, event }) => {
      const deadline = idleDeadline(context)
      return event.type === 'TIMER' && event.timer === 'idle_timeout' && validAt(event.at) && deadline !== null && ms(event.at) >= ms(deadline)
    },
  },
}).createMachine({
  id: 'presence.v1',
  context: ({ input }) => {
    const base = {
      user_id: input.user_id,
      idle_timeout_seconds: input.idle_timeout_seconds,
      manual: input.manual ?? 'available',
      status_text: input.status_text ?? null,
      live_calls: input.live_calls ?? [],
      registered_devices: input.registered_devices ?? [],
      idle: false,
      last_activity_at: input.at,
      updated_at: input.at,
    }
    return { ...base, status: effectivePresence(base) }
  },
  // the first state is picked by `follow` from the inputs
  initial: 'offline',
  states: {
    available: follow('available'),
    on_call: follow('on_call'),
    dnd: follow('dnd'),
    away: follow('away'),
    offline: follow('offline'),
  },
  on: {
    SET_MANUAL: { guard: 'manualAllowed', actions: 'apply' },
    CALL_STARTED: { guard: 'hasId', actions: 'apply' },
    CALL_ENDED: { guard: 'hasId', actions: 'apply' },
    DEVICE_REGISTERED: { guard: 'hasId', actions: 'apply' },
    DEVICE_UNREGISTERED: { guard: 'hasId', actions: 'apply' },
    ACTIVITY: { guard: 'activityValid', actions: 'apply' },
    TIMER: { guard: 'idleDue', actions: 'apply' },
  },
})

// ---------------------------------------------------------------- commands

/** PUT /v1/me/presence. */
export interface PresenceCommand {
  status: string
  status_text?: string | null
}

export interface PresenceCommandRefusal {
  code: 'presence_status_not_settable' | 'validation_error'
  /** the offending field, for a field-level validation detail. */
  field: 'status' | 'status_text'
  reason: string
}

export type PresenceSnapshot = SnapshotFrom<typeof presenceMachine>

export const presenceRecord = (s: PresenceSnapshot): PresenceStatusRecord => ({
  user: s.context.user_id,
  status: s.value as PresenceState,
  status_text: s.context.status_text,
  updated_at: s.context.updated_at,
})

/**
 * Whether the user may set this presence. The machine decides (snapshot.can of the
 * SET_MANUAL event); this only names the refusal: on_call and offline are set by
 * the service, never by hand.
 */
export function admitPresenceCommand(
  snapshot: PresenceSnapshot,
  c: PresenceCommand,
  at: string,
): { event: PresenceMachineEvent } | { refused: PresenceCommandRefusal } {
  const event = { type: 'SET_MANUAL', status: c.status, status_text: c.status_text, at } as PresenceMachineEvent
  if (snapshot.can(event)) return { event }
  if (c.status === 'on_call' || c.status === 'offline')
    return { refused: { code: 'presence_status_not_settable', field: 'status', reason: `${c.status} is set by the service and cannot be set manually` } }
  if (!isManual(c.status)) return { refused: { code: 'validation_error', field: 'status', reason: 'must be one of available, dnd, away' } }
  if (!validText(c.status_text))
    return { refused: { code: 'validation_error', field: 'status_text', reason: `must be a string of at most ${STATUS_TEXT_MAX} characters, or null` } }
  return { refused: { code: 'validation_error', field: 'status', reason: 'is not accepted now' } }
}
