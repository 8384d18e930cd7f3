// call.v1: the lifecycle of ONE call, as a pure XState v5 machine.
//
// No I/O, no clock reads: every input event carries `at` (ISO 8601) and the
// machine stores timestamps from events. Effects are named actions supplied by
// the caller with `.provide(...)`:
//   - `emit`      receives `{ type: 'call.*', data }` with exactly the spec's fields
//   - `spawnCall` receives the request to start the new call of a blind transfer
//   - `placeConsultation` receives the request to place a warm transfer's consultation call
//   - `holdChanged` receives `{ held, at }` when the call goes on hold or resumes
//   - `handedOver` receives `{ to, from, at }` when a completed warm transfer resumes
//     the call with its target on it instead of the users in `from`
//   - `recordingPauseChanged` receives `{ paused, offset_ms }` (from the answer) when
//     the recording pauses or resumes, so the pause is written with the step that made it
// Durable delays (ring timeout) arrive as `TIMER` events from the durable
// scheduler; `after` timers are not used.
import { assign, setup, type SnapshotFrom } from 'xstate'

// ---------------------------------------------------------------- input

export type CallDirection = 'inbound' | 'outbound' | 'internal'
export type CallStatus = 'completed' | 'no-answer' | 'busy' | 'failed' | 'voicemail'
export const CALL_STATUSES: readonly CallStatus[] = ['completed', 'no-answer', 'busy', 'failed', 'voicemail']

export interface EmergencyInfo {
  device_id: string | null
  extension: string | null
  location_id: string | null
  location_name: string | null
  location_address: string | null
  e911_provisioned: boolean
}

export interface CallInput {
  call_id: string
  /** outbound and internal start as initiated (placed by a user); inbound as incoming. */
  direction: CallDirection
  from_number: string
  from_name?: string | null
  to_number: string
  /** ISO 8601: when the call was placed / arrived. */
  started_at: string
  /**
   * outbound/internal: the initiating user (never rung: rule 1).
   * inbound: the single user the number targets directly, else null.
   */
  user_id?: string | null
  /** omitted when that side is not a user of the account (rule 5). */
  from_user_id?: string
  to_user_id?: string
  /** this call is the consultation leg of a warm transfer; related_call is the primary call. */
  consultation?: { related_call: string | null }
  /** this call was placed by a blind transfer (no call.emergency: rule 7). */
  placed_by_transfer?: { related_call: string | null }
  /** set when this is emergency dialing (emergency number or carrier test number such as 933). */
  emergency?: EmergencyInfo
  /** start recording when the call is answered by a user. */
  record?: boolean
  /** the device (endpoint) that placed the call: a real phone's line, or the phone a click-to-call rang first. */
  from_endpoint?: string
}

// ---------------------------------------------------------------- input events

type At = { at: string }
export type CallMachineEvent =
  /** a user's devices (or, without user_id, the remote side) start ringing. */
  | ({ type: 'RING'; user_id?: string | null } & At)
  /** answered by a rung user (user_id) or, without user_id, by the remote non-user party; `endpoint_id`: the device that answered, when a phone did. */
  | ({ type: 'ANSWER'; user_id?: string | null; endpoint_id?: string | null } & At)
  /** answered by voicemail / a greeting: signalling answer with nobody connected; `box`: whose box, when the call's input could not say (a real call's menu led there). */
  | ({ type: 'VOICEMAIL'; box?: { type: 'user' | 'shared'; id: string } } & At)
  /**
   * answered by a voice app (`app`): a program in control of the call (a webhook app)
   * or, with `ai_agent`, an AI agent talking to the caller. A signalling answer with
   * nobody connected; the app follows the call from here (its events go to the app).
   */
  | ({ type: 'APP_ANSWER'; app: string; ai_agent?: string; ai_agent_name?: string } & At)
  /** a notify-mode voice app was told of the call, which goes on routing: the app follows it from here. */
  | ({ type: 'APP_NOTIFY'; app: string } & At)
  /** a voicemail message was stored for this call (`message`: where, when the media role stored the audio itself). */
  | ({ type: 'MESSAGE_STORED'; message?: StoredMedia } & At)
  /** the media role stored the call's recording (a real call): what follows the end names it. */
  | ({ type: 'RECORDING_STORED'; recording: StoredMedia } & At)
  /** `by_phone`: a phone put the call on hold itself (a re-INVITE); otherwise the API did. */
  | ({ type: 'HOLD'; by_phone?: boolean } & At)
  /**
   * `handed_to`: a completed warm transfer resumes the call with its target on it (the consultation call tells it).
   * `by_phone`: the phone took its own hold off; a hold a phone put on only it (or a hand-over) takes off.
   */
  | ({ type: 'RESUME'; handed_to?: string; by_phone?: boolean } & At)
  | ({ type: 'RECORDING_START' } & At)
  | ({ type: 'RECORDING_PAUSE' } & At)
  | ({ type: 'RECORDING_RESUME' } & At)
  | ({ type: 'RECORDING_STOP' } & At)
  | ({ type: 'BUSY' } & At)
  | ({ type: 'FAIL'; reason?: string } & At)
  /** fired by the durable scheduler. */
  | ({ type: 'TIMER'; timer: 'ring_timeout' } & At)
  | ({ type: 'HANGUP'; side: 'caller' | 'callee' } & At)
  /** blind transfer of this call; new_call_id is the id of the new, separate call. */
  | ({ type: 'BLIND_TRANSFER'; to: string; by: string; new_call_id: string } & At)
  /** warm transfer: hold this call and place a consultation call (consultation_call_id) from `by` to `to`. */
  | ({ type: 'WARM_TRANSFER'; to: string; by: string; consultation_call_id: string } & At)
  /**
   * complete a warm transfer: on a consultation call, or (`related_call`: the held
   * call the consultation is for) on a call a phone placed to consult (an attended
   * transfer, RFC 5589): the held call's party is handed to this call's target.
   */
  | ({ type: 'COMPLETE_WARM_TRANSFER'; to: string; by: string; related_call?: string } & At)

// ---------------------------------------------------------------- emitted events

export interface CallInitiatedData {
  call_id: string
  direction: CallDirection
  from_number: string
  to_number: string
  user_id: string | null
  from_user_id?: string
  started_at: string
}
export interface CallIncomingData {
  call_id: string
  direction: CallDirection
  from_number: string
  from_name: string | null
  to_number: string
  user_id: string | null
  from_user_id?: string
  to_user_id?: string
  started_at: string
}
export interface CallRingingData {
  call_id: string
  /** absent when the far end rings, not a user's phone (an outbound call to a number). */
  user_id?: string
  direction: CallDirection
  from_number: string
  from_name: string | null
  to_number: string
  ringing_at: string
}
export interface CallAnsweredData {
  call_id: string
  direction: CallDirection
  from_number: string
  from_name: string | null
  to_number: string
  user_id?: string
  to_user_id?: string
  started_at: string
  answered_at: string | null
  connected_at: string | null
}
export interface CallEndData extends CallAnsweredData {
  ended_at: string
  duration_seconds: number
  status: CallStatus
}
export interface CallTransferData {
  call_id: string
  direction: CallDirection
  from_number: string
  to_number: string
  transferred_to: string
  transferred_by: string
  related_call: string | null
  transferred_at: string
}
export interface CallEmergencyData {
  call_id: string
  to_number: string
  user_id: string | null
  device_id: string | null
  extension: string | null
  location_id?: string | null
  location_name?: string | null
  location_address: string | null
  e911_provisioned: boolean
  placed_at: string
}

export type CallEmitted =
  | { type: 'call.initiated'; data: CallInitiatedData }
  | { type: 'call.incoming'; data: CallIncomingData }
  | { type: 'call.ringing'; data: CallRingingData }
  | { type: 'call.answered'; data: CallAnsweredData }
  | { type: 'call.end'; data: CallEndData }
  | { type: 'call.transfer'; data: CallTransferData }
  | { type: 'call.emergency'; data: CallEmergencyData }

/** The consultation call of a warm transfer, placed while this (the primary) call is held. */
export interface ConsultationRequest {
  call_id: string
  /** the held primary call. */
  related_call: string
  to: string
  by: string
  at: string
}

export interface SpawnCallRequest {
  /** id for the new call (chosen by the caller of BLIND_TRANSFER). */
  call_id: string
  related_call: string
  transferred_to: string
  transferred_by: string
  from_number: string
  from_name: string | null
  at: string
}

// ---------------------------------------------------------------- context

/** Audio the media role stored for a call: the record it becomes (recording or voicemail), once the call has ended. */
export interface StoredMedia {
  id: string
  storage_key: string
  duration_seconds: number
}

export interface CallContext {
  input: CallInput
  from_name: string | null
  /** users whose devices rang (call.ringing emitted once each), in order. */
  rung_users: string[]
  /** the far end of a call to a number rang (its call.ringing, without user_id, was emitted); absent in older snapshots. */
  remote_rang?: boolean
  ringing_at: string | null
  answered_at: string | null
  connected_at: string | null
  /** the user who took the call, null when nobody (remote party, voicemail or unanswered). */
  answered_by: string | null
  /** the device that took the call, when a phone did (absent otherwise, and in older snapshots). */
  answered_endpoint?: string
  /** the user a completed warm transfer handed the call to (absent when none, and in older snapshots). */
  handed_to?: string
  /** on hold because a phone put it there (absent when not, and in older snapshots): the API cannot take that hold off. */
  held_by_phone?: boolean
  message_stored: boolean
  /** the voice app that answered the call (absent when none, and in older snapshots). */
  handled_by?: { app: string; ai_agent?: string; ai_agent_name?: string }
  /** the voicemail box that answered, when the VOICEMAIL event named it (absent otherwise, and in older snapshots). */
  voicemail_box?: { type: 'user' | 'shared'; id: string }
  /** voice apps following the call (notified or answering), in order: its events from then on go to them too (absent: none). */
  apps?: string[]
  /** what the media role stored of a real call (absent for simulated calls and in older snapshots). */
  stored?: { recording?: StoredMedia; message?: StoredMedia }
  recording: { on: boolean; paused: boolean }
  ended_at: string | null
  status: CallStatus | null
  duration_seconds: number | null
}

// ---------------------------------------------------------------- pure helpers

const validAt = (at: unknown): at is string => typeof at === 'string' && !Number.isNaN(Date.parse(at))

export function durationSeconds(from: string, to: string): number {
  return Math.max(0, Math.floor((Date.parse(to) - Date.parse(from)) / 1000))
}

/** Rule 4 (applied to call.answered and call.end). */
export function reportedUserId(c: CallContext): string | undefined {
  if (c.input.direction === 'outbound') return c.input.user_id ?? undefined
  if (c.answered_by) return c.answered_by
  if (c.rung_users.length === 1) return c.rung_users[0]
  if (c.rung_users.length === 0 && c.input.direction === 'inbound' && c.input.user_id) return c.input.user_id
  return undefined
}

const initiatingUser = (c: CallContext): string | null => (c.input.direction === 'inbound' ? null : (c.input.user_id ?? c.input.from_user_id ?? null))

function withOptional<T extends object>(base: T, extra: Record<string, string | null | undefined>): T {
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) }
  for (const [k, v] of Object.entries(extra)) if (v !== undefined && v !== null) out[k] = v
  return out as T
}

export function answeredData(c: CallContext): CallAnsweredData {
  const i = c.input
  return withOptional(
    {
      call_id: i.call_id,
      direction: i.direction,
      from_number: i.from_number,
      from_name: c.from_name,
      to_number: i.to_number,
      started_at: i.started_at,
      answered_at: c.answered_at,
      connected_at: c.connected_at,
    } as CallAnsweredData,
    { user_id: reportedUserId(c), to_user_id: c.answered_by ?? i.to_user_id },
  )
}

function startEvent(c: CallContext): CallEmitted {
  const i = c.input
  if (i.direction === 'inbound') {
    return {
      type: 'call.incoming',
      data: withOptional(
        {
          call_id: i.call_id,
          direction: i.direction,
          from_number: i.from_number,
          from_name: c.from_name,
          to_number: i.to_number,
          user_id: i.user_id ?? null,
          started_at: i.started_at,
        } as CallIncomingData,
        { from_user_id: i.from_user_id, to_user_id: i.to_user_id },
      ),
    }
  }
  return {
    type: 'call.initiated',
    data: withOptional(
      {
        call_id: i.call_id,
        direction: i.direction,
        from_number: i.from_number,
        to_number: i.to_number,
        user_id: i.user_id ?? null,
        started_at: i.started_at,
      } as CallInitiatedData,
      { from_user_id: i.from_user_id },
    ),
  }
}

function emergencyEvent(c: CallContext): CallEmitted {
  const i = c.input
  const e = i.emergency!
  const data: CallEmergencyData = {
    call_id: i.call_id,
    to_number: i.to_number,
    user_id: i.user_id ?? i.from_user_id ?? null,
    device_id: e.device_id,
    extension: e.extension,
    location_address: e.location_address,
    e911_provisioned: e.e911_provisioned,
    placed_at: i.started_at,
  }
  // rule 7: location_id and location_name are omitted when not provisioned
  if (e.e911_provisioned) {
    data.location_id = e.location_id
    data.location_name = e.location_name
  }
  return { type: 'call.emergency', data }
}

function transferData(c: CallContext, to: string, by: string, related: string | null, at: string): CallTransferData {
  const i = c.input
  return {
    call_id: i.call_id,
    direction: i.direction,
    from_number: i.from_number,
    to_number: i.to_number,
    transferred_to: to,
    transferred_by: by,
    related_call: related,
    transferred_at: at,
  }
}

const endWith = (c: CallContext, status: CallStatus, at: string): Partial<CallContext> => ({
  status,
  ended_at: at,
  duration_seconds: durationSeconds(c.answered_at ?? c.input.started_at, at),
  recording: { on: false, paused: false },
})

/** The apps following the call once `app` does too. */
const following = (c: CallContext, app: string): string[] => (c.apps?.includes(app) ? c.apps : [...(c.apps ?? []), app])

// ---------------------------------------------------------------- machine

type Ev<T extends CallMachineEvent['type']> = Extract<CallMachineEvent, { type: T }>

export const callMachine = setup({
  types: {
    context: {} as CallContext,
    events: {} as CallMachineEvent,
    input: {} as CallInput,
  },
  actions: {
    emit: (_: unknown, _params: CallEmitted) => {},
    spawnCall: (_: unknown, _params: SpawnCallRequest) => {},
    placeConsultation: (_: unknown, _params: ConsultationRequest) => {},
    /** The call went on hold or resumed (a real call's media role carries it out when a phone did not ask for it itself). */
    holdChanged: (_: unknown, _params: { held: boolean; at: string }) => {},
    /** The recording paused or resumed, `offset_ms` after the answer. */
    recordingPauseChanged: (_: unknown, _params: RecordingPauseChange) => {},
    /** A completed warm transfer handed the call to `to`; the users in `from` are no longer on it. */
    handedOver: (_: unknown, _params: HandOver) => {},
  },
  guards: {
    validAt: ({ event }) => validAt(event.at),
    handOver: ({ event }) => event.type === 'RESUME' && validAt(event.at) && typeof event.handed_to === 'string' && event.handed_to.length > 0,
    /**
     * A resume this hold admits. A phone's hold is its own: the API's resume would
     * take the music off while the phone still holds (it answers any offer of ours
     * with its hold), so only the phone ends it.
     */
    resumable: ({ context, event }) => validAt(event.at) && (!context.held_by_phone || (event.type === 'RESUME' && event.by_phone === true)),
    isInbound: ({ context }) => context.input.direction === 'inbound',
    emergencyApplies: ({ context }) => context.input.direction !== 'inbound' && !!context.input.emergency && !context.input.placed_by_transfer,
    /** a ring of a new user, not the initiating user (rule 1). */
    newUserRing: ({ context, event }) => {
      if (event.type !== 'RING' || !validAt(event.at) || !event.user_id) return false
      return event.user_id !== initiatingUser(context) && !context.rung_users.includes(event.user_id)
    },
    /**
     * The far end of an outbound call rings: one call.ringing without user_id (the
     * simulator's answered sequence has it). A consultation call's events are the
     * spec's own list (initiated, answered, transfer), so its far end rings silently.
     */
    remoteRing: ({ context, event }) => {
      if (event.type !== 'RING' || !validAt(event.at) || event.user_id) return false
      return context.input.direction !== 'inbound' && !context.input.consultation && !context.remote_rang
    },
    /** a repeated remote ring, a duplicate ring, or the initiator's own phone: no event. */
    silentRing: ({ context, event }) => {
      if (event.type !== 'RING' || !validAt(event.at)) return false
      return !event.user_id || event.user_id === initiatingUser(context) || context.rung_users.includes(event.user_id)
    },
    /** only a user whose phones rang can answer; without user_id the remote (non-user) party answered. */
    canAnswer: ({ context, event }) => {
      if (event.type !== 'ANSWER' || !validAt(event.at)) return false
      if (!event.user_id) return context.input.direction !== 'inbound'
      return context.rung_users.includes(event.user_id)
    },
    ringTimeout: ({ event }) => event.type === 'TIMER' && event.timer === 'ring_timeout' && validAt(event.at),
    recordingOn: ({ context, event }) => validAt(event.at) && context.recording.on && !context.recording.paused,
    recordingPaused: ({ context, event }) => validAt(event.at) && context.recording.on && context.recording.paused,
    recordingOff: ({ context, event }) => validAt(event.at) && !context.recording.on,
    recordingAny: ({ context, event }) => validAt(event.at) && context.recording.on,
    blindAllowed: ({ context, event }) =>
      event.type === 'BLIND_TRANSFER' &&
      validAt(event.at) &&
      (context.connected_at !== null || context.handled_by !== undefined) &&
      !context.input.consultation &&
      !!event.to &&
      !!event.by &&
      !!event.new_call_id,
    appEvent: ({ event }) =>
      (event.type === 'APP_ANSWER' || event.type === 'APP_NOTIFY') && validAt(event.at) && typeof event.app === 'string' && event.app.length > 0,
    warmTransferAllowed: ({ context, event }) =>
      event.type === 'WARM_TRANSFER' && validAt(event.at) && !context.input.consultation && !!event.to && !!event.by && !!event.consultation_call_id,
    warmAllowed: ({ context, event }) =>
      event.type === 'COMPLETE_WARM_TRANSFER' &&
      validAt(event.at) &&
      (!!context.input.consultation || !!event.related_call) &&
      event.related_call !== context.input.call_id &&
      !!event.to &&
      !!event.by,
  },
}).createMachine({
  id: 'call.v1',
  context: ({ input }) => ({
    input,
    from_name: input.from_name ?? null,
    rung_users: [],
    ringing_at: null,
    answered_at: null,
    connected_at: null,
    answered_by: null,
    message_stored: false,
    recording: { on: false, paused: false },
    ended_at: null,
    status: null,
    duration_seconds: null,
  }),
  initial: 'start',
  states: {
    /** transient: picks initiated or incoming and emits the start event(s). */
    start: {
      always: [
        {
          guard: 'isInbound',
          target: 'unanswered.incoming',
          actions: { type: 'emit', params: ({ context }) => startEvent(context) },
        },
        {
          guard: 'emergencyApplies',
          target: 'unanswered.initiated',
          actions: [
            { type: 'emit', params: ({ context }) => startEvent(context) },
            { type: 'emit', params: ({ context }) => emergencyEvent(context) },
          ],
        },
        { target: 'unanswered.initiated', actions: { type: 'emit', params: ({ context }) => startEvent(context) } },
      ],
    },
    /** not yet answered: initiated (outbound/internal), incoming (inbound), ringing. */
    unanswered: {
      initial: 'initiated',
      states: { initiated: {}, incoming: {}, ringing: {} },
      on: {
        RING: [
          {
            guard: 'newUserRing',
            target: '.ringing',
            actions: [
              assign(({ context, event }) => ({
                rung_users: [...context.rung_users, (event as Ev<'RING'>).user_id!],
                ringing_at: context.ringing_at ?? event.at,
              })),
              {
                type: 'emit',
                params: ({ context, event }) => ({
                  type: 'call.ringing' as const,
                  data: {
                    call_id: context.input.call_id,
                    user_id: (event as Ev<'RING'>).user_id!,
                    direction: context.input.direction,
                    from_number: context.input.from_number,
                    from_name: context.from_name,
                    to_number: context.input.to_number,
                    ringing_at: event.at,
                  },
                }),
              },
            ],
          },
          {
            guard: 'remoteRing',
            target: '.ringing',
            actions: [
              assign(({ context, event }) => ({ remote_rang: true, ringing_at: context.ringing_at ?? event.at })),
              {
                type: 'emit',
                params: ({ context, event }) => ({
                  type: 'call.ringing' as const,
                  data: {
                    call_id: context.input.call_id,
                    direction: context.input.direction,
                    from_number: context.input.from_number,
                    from_name: context.from_name,
                    to_number: context.input.to_number,
                    ringing_at: event.at,
                  },
                }),
              },
            ],
          },
          {
            guard: 'silentRing',
            target: '.ringing',
            actions: assign(({ context, event }) => ({ ringing_at: context.ringing_at ?? event.at })),
          },
        ],
        ANSWER: {
          guard: 'canAnswer',
          target: 'answered.connected',
          actions: [
            assign(({ context, event }) => ({
              answered_at: event.at,
              connected_at: event.at,
              answered_by: (event as Ev<'ANSWER'>).user_id ?? null,
              ...((event as Ev<'ANSWER'>).endpoint_id ? { answered_endpoint: (event as Ev<'ANSWER'>).endpoint_id! } : {}),
              recording: context.input.record ? { on: true, paused: false } : context.recording,
            })),
            { type: 'emit', params: ({ context }) => ({ type: 'call.answered' as const, data: answeredData(context) }) },
          ],
        },
        VOICEMAIL: {
          guard: 'validAt',
          target: 'answered.voicemail',
          actions: [
            assign(({ event }) => {
              const box = (event as Ev<'VOICEMAIL'>).box
              return { answered_at: event.at, ...(box ? { voicemail_box: { type: box.type, id: box.id } } : {}) }
            }),
            { type: 'emit', params: ({ context }) => ({ type: 'call.answered' as const, data: answeredData(context) }) },
          ],
        },
        APP_NOTIFY: {
          guard: 'appEvent',
          actions: assign(({ context, event }) => ({ apps: following(context, (event as Ev<'APP_NOTIFY'>).app) })),
        },
        APP_ANSWER: {
          guard: 'appEvent',
          target: 'answered.app',
          actions: [
            assign(({ context, event }) => {
              const e = event as Ev<'APP_ANSWER'>
              const agent = e.ai_agent ? { ai_agent: e.ai_agent, ...(e.ai_agent_name ? { ai_agent_name: e.ai_agent_name } : {}) } : {}
              return { answered_at: e.at, handled_by: { app: e.app, ...agent }, apps: following(context, e.app) }
            }),
            { type: 'emit', params: ({ context }) => ({ type: 'call.answered' as const, data: answeredData(context) }) },
          ],
        },
        BUSY: { guard: 'validAt', target: 'ended', actions: assign(({ context, event }) => endWith(context, 'busy', event.at)) },
        FAIL: { guard: 'validAt', target: 'ended', actions: assign(({ context, event }) => endWith(context, 'failed', event.at)) },
        TIMER: {
          guard: 'ringTimeout',
          target: 'ended',
          actions: assign(({ context, event }) => endWith(context, 'no-answer', event.at)),
        },
        HANGUP: {
          guard: 'validAt',
          target: 'ended',
          actions: assign(({ context, event }) => endWith(context, 'no-answer', event.at)),
        },
      },
    },
    answered: {
      initial: 'connected',
      states: {
        connected: {
          initial: 'active',
          states: {
            active: {
              on: {
                HOLD: {
                  guard: 'validAt',
                  target: 'held',
                  actions: [
                    { type: 'holdChanged', params: ({ event }) => ({ held: true, at: event.at }) },
                    assign({ held_by_phone: ({ event }) => (event as Ev<'HOLD'>).by_phone === true }),
                  ],
                },
              },
            },
            held: {
              on: {
                RESUME: [
                  {
                    // A completed warm transfer: its target takes the call over from whoever held it.
                    guard: 'handOver',
                    target: 'active',
                    actions: [
                      { type: 'holdChanged', params: ({ event }) => ({ held: false, at: event.at }) },
                      {
                        type: 'handedOver',
                        params: ({ context, event }) => {
                          const to = (event as Ev<'RESUME'>).handed_to!
                          return { to, from: usersOnCall(context).filter((u) => u !== to), at: event.at }
                        },
                      },
                      assign({ handed_to: ({ event }) => (event as Ev<'RESUME'>).handed_to, held_by_phone: false }),
                    ],
                  },
                  {
                    guard: 'resumable',
                    target: 'active',
                    actions: [{ type: 'holdChanged', params: ({ event }) => ({ held: false, at: event.at }) }, assign({ held_by_phone: false })],
                  },
                ],
              },
            },
          },
          on: {
            RECORDING_START: {
              guard: 'recordingOff',
              actions: assign({ recording: { on: true, paused: false } }),
            },
            RECORDING_PAUSE: {
              guard: 'recordingOn',
              actions: [
                assign({ recording: { on: true, paused: true } }),
                { type: 'recordingPauseChanged', params: ({ context, event }) => pauseChange(context, event.at, true) },
              ],
            },
            RECORDING_RESUME: {
              guard: 'recordingPaused',
              actions: [
                assign({ recording: { on: true, paused: false } }),
                { type: 'recordingPauseChanged', params: ({ context, event }) => pauseChange(context, event.at, false) },
              ],
            },
            RECORDING_STOP: {
              guard: 'recordingAny',
              actions: assign({ recording: { on: false, paused: false } }),
            },
            RECORDING_STORED: {
              guard: 'validAt',
              actions: assign(({ context, event }) => ({ stored: { ...context.stored, recording: (event as Ev<'RECORDING_STORED'>).recording } })),
            },
            WARM_TRANSFER: {
              guard: 'warmTransferAllowed',
              target: '.held',
              actions: {
                type: 'placeConsultation',
                params: ({ context, event }) => {
                  const e = event as Ev<'WARM_TRANSFER'>
                  return { call_id: e.consultation_call_id, related_call: context.input.call_id, to: e.to, by: e.by, at: e.at }
                },
              },
            },
            COMPLETE_WARM_TRANSFER: {
              guard: 'warmAllowed',
              target: '#call-transferred',
              actions: {
                type: 'emit',
                params: ({ context, event }) => {
                  const e = event as Ev<'COMPLETE_WARM_TRANSFER'>
                  return {
                    type: 'call.transfer' as const,
                    data: transferData(context, e.to, e.by, e.related_call ?? context.input.consultation?.related_call ?? null, e.at),
                  }
                },
              },
            },
          },
        },
        /** a voice app has the call (handled_by): it may hang up or transfer it; the caller may hang up. */
        app: {},
        voicemail: {
          on: {
            MESSAGE_STORED: {
              guard: 'validAt',
              actions: assign(({ context, event }) => {
                const message = (event as Ev<'MESSAGE_STORED'>).message
                return message ? { message_stored: true, stored: { ...context.stored, message } } : { message_stored: true }
              }),
            },
          },
        },
      },
      on: {
        /** A blind transfer of a call someone took (connected, held or not) or a voice app answered. */
        BLIND_TRANSFER: {
          guard: 'blindAllowed',
          target: '#call-ended',
          actions: [
            assign(({ context, event }) => endWith(context, 'completed', event.at)),
            {
              type: 'emit',
              params: ({ context, event }) => {
                const e = event as Ev<'BLIND_TRANSFER'>
                return {
                  type: 'call.transfer' as const,
                  data: transferData(context, e.to, e.by, e.new_call_id, e.at),
                }
              },
            },
            {
              type: 'spawnCall',
              params: ({ context, event }) => {
                const e = event as Ev<'BLIND_TRANSFER'>
                return {
                  call_id: e.new_call_id,
                  related_call: context.input.call_id,
                  transferred_to: e.to,
                  transferred_by: e.by,
                  from_number: context.input.from_number,
                  from_name: context.from_name,
                  at: e.at,
                }
              },
            },
          ],
        },
        HANGUP: {
          guard: 'validAt',
          target: 'ended',
          actions: assign(({ context, event }) =>
            endWith(context, context.connected_at || context.handled_by ? 'completed' : context.message_stored ? 'voicemail' : 'no-answer', event.at),
          ),
        },
        /** The call was lost under way (the media process holding its legs died): it ends failed, whatever was said. */
        FAIL: { guard: 'validAt', target: 'ended', actions: assign(({ context, event }) => endWith(context, 'failed', event.at)) },
      },
    },
    /** final: call.end was emitted. */
    ended: {
      id: 'call-ended',
      type: 'final',
      entry: {
        type: 'emit',
        params: ({ context }) => ({
          type: 'call.end' as const,
          data: {
            ...answeredData(context),
            ended_at: context.ended_at!,
            duration_seconds: context.duration_seconds!,
            status: context.status!,
          },
        }),
      },
    },
    /** final: a warm-transfer consultation call (or a phone's call to consult) whose last event is call.transfer. */
    transferred: { id: 'call-transferred', type: 'final' },
  },
})

// ---------------------------------------------------------------- commands (call control)

/** What a platform can ask of a call (POST /v1/calls/{id}, recording pause/resume). */
export type CallCommand =
  | { command: 'hangup' }
  | { command: 'hold' }
  | { command: 'resume' }
  | { command: 'transfer'; to: string; mode: 'blind'; new_call_id: string }
  | { command: 'transfer'; to: string; mode: 'warm'; consultation_call_id: string }
  | { command: 'complete_transfer' }
  | { command: 'recording_pause' }
  | { command: 'recording_resume' }

export type CallCommandName = CallCommand['command']

/** Why a call does not take a command, as the API reports it (a stable error code and a reason). */
export interface CallCommandRefusal {
  code: 'call_not_active' | 'call_transfer_not_allowed' | 'recording_not_active' | 'recording_not_paused'
  reason: string
}

export type CallSnapshot = SnapshotFrom<typeof callMachine>

/** The user a command acts for: the call's user (transfers are made by them). */
export const actingUser = (i: CallInput): string | null => i.user_id ?? i.from_user_id ?? i.to_user_id ?? null

/** The machine event a command asks for. */
export function commandEvent(c: CallCommand, context: CallContext, at: string): CallMachineEvent {
  const i = context.input
  // A call with no user of its own is moved by whoever has it: the user who took it, else the voice app that answered.
  const by = actingUser(i) ?? context.answered_by ?? context.handled_by?.app ?? 'api'
  switch (c.command) {
    case 'hangup':
      return { type: 'HANGUP', side: i.direction === 'inbound' ? 'callee' : 'caller', at }
    case 'hold':
      return { type: 'HOLD', at }
    case 'resume':
      return { type: 'RESUME', at }
    case 'transfer':
      return c.mode === 'warm'
        ? { type: 'WARM_TRANSFER', to: c.to, by, consultation_call_id: c.consultation_call_id, at }
        : { type: 'BLIND_TRANSFER', to: c.to, by, new_call_id: c.new_call_id, at }
    case 'complete_transfer':
      return { type: 'COMPLETE_WARM_TRANSFER', to: i.to_user_id ?? i.to_number, by, at }
    case 'recording_pause':
      return { type: 'RECORDING_PAUSE', at }
    case 'recording_resume':
      return { type: 'RECORDING_RESUME', at }
  }
}

/**
 * Whether the call takes the command now. The machine decides (snapshot.can: its
 * states and guards are the only statement of which state admits which command);
 * this only names a refusal for the API. The gateway asks it of the persisted
 * snapshot before accepting a command, and the call actor again when the command
 * arrives, since the call may have moved in between.
 */
export function admitCallCommand(snapshot: CallSnapshot, c: CallCommand, at: string): { event: CallMachineEvent } | { refused: CallCommandRefusal } {
  const event = commandEvent(c, snapshot.context, at)
  if (snapshot.status === 'active' && snapshot.can(event)) return { event }
  return { refused: refusalOf(snapshot, c) }
}

function refusalOf(snapshot: CallSnapshot, c: CallCommand): CallCommandRefusal {
  const notActive = (reason: string): CallCommandRefusal => ({ code: 'call_not_active', reason })
  if (snapshot.status !== 'active') return notActive('has ended')
  const connected = isConnected(snapshot)
  const consultation = !!snapshot.context.input.consultation
  // A voice app's call takes hangup and a blind transfer, nothing that needs a person on it.
  if (snapshot.matches({ answered: 'app' })) return notActive('is handled by a voice app: only hangup and a blind transfer apply')
  switch (c.command) {
    case 'transfer':
      if (!connected) return notActive('is not answered')
      if (consultation)
        return { code: 'call_transfer_not_allowed', reason: 'is the consultation call of a warm transfer: complete or hang up that transfer instead' }
      break
    case 'complete_transfer':
      if (!consultation) return { code: 'call_transfer_not_allowed', reason: 'is not the consultation call of a warm transfer' }
      break
    case 'hold':
      if (connected) return notActive('is already on hold')
      break
    case 'resume':
      if (connected && snapshot.context.held_by_phone) return notActive('was put on hold from a phone, which takes it off hold itself')
      if (connected) return notActive('is not on hold')
      break
    case 'recording_pause':
      if (connected) return { code: 'recording_not_active', reason: 'is not recording, or its recording is already paused' }
      break
    case 'recording_resume':
      if (connected) return { code: 'recording_not_paused', reason: 'has no paused recording' }
      break
  }
  return notActive(connected ? 'does not take this command now' : 'is not answered')
}

/** A warm transfer's hand-over: `to` is on the call from `at`, the users in `from` no longer. */
export interface HandOver {
  to: string
  from: string[]
  at: string
}

/**
 * The users on the call: who placed it (outbound or internal), who took it, and whom
 * a warm transfer handed it to. Presence counts them on the call until it ends.
 */
export function usersOnCall(c: CallContext): string[] {
  const placed = c.input.direction === 'inbound' ? undefined : (c.input.user_id ?? c.input.from_user_id ?? undefined)
  return [...new Set([placed, c.answered_by, c.handed_to].filter((u): u is string => !!u))]
}

/** A recording's pause or resume, at `offset_ms` from the answer (never before it). */
export interface RecordingPauseChange {
  paused: boolean
  offset_ms: number
}

function pauseChange(context: CallContext, at: string, paused: boolean): RecordingPauseChange {
  const answered = Date.parse(context.answered_at ?? context.input.started_at)
  return { paused, offset_ms: Math.max(0, Date.parse(at) - answered) }
}

/** Answered by a person and still going (held or not): listeners may join, recording runs. */
export const isConnected = (snapshot: CallSnapshot): boolean => snapshot.status === 'active' && snapshot.matches({ answered: 'connected' })
