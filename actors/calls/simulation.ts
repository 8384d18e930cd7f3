/**
 * The sandbox call simulator (POST /v1/test_helpers/calls).
 *
 * A request becomes a plan: the `call.v1` input and a script of call events at
 * absolute simulated times (ring, answer, hang up), written as durable timers of the
 * call actor together with its first snapshot. Each scripted event is then one step
 * of the call actor that claims its timer, so a crash never loses or repeats one,
 * and a command that ends the call early (hangup, transfer) drops the rest of the
 * script with the call's timers. Time is the injected clock's: with
 * VOICE_CLOCK_SPEED=100 a 30 s call ends in about 0.3 s of real time while
 * timestamps and duration_seconds say 30 s.
 *
 * Everything here is pure planning (no I/O, the time is given): the gateway plans a
 * test call with it, and the call actor's owner plans a transfer's new leg, a warm
 * transfer's consultation call and what follows a simulated call's end (the
 * follow-up actor, actors/calls/follow-up-actor.ts) with it.
 */
import type { CallContext, CallEndData, CallMachineEvent, ConsultationRequest, SpawnCallRequest } from '../../machines/call'
import { durationSeconds } from '../../machines/call'
import type { SimStep } from '../../machines/call-simulation'
import { isE164 } from '../../src/schemas/common'
import { idKind, newId } from '../../src/ids'
import type { ScheduleRequest } from '../runtime/client'
import type { ActorSpawn } from '../runtime/kinds'
import { SIM_KIND, type CallActorInput, type CallOwner } from './messages'
import { magicOf, type Magic } from '../../src/services/calls/sandbox-numbers'

export const SIM_OUTCOMES = ['answered', 'no-answer', 'busy', 'voicemail'] as const
export type SimOutcome = (typeof SIM_OUTCOMES)[number]
export const MAX_SIM_SECONDS = 120

export interface Scenario {
  outcome: SimOutcome
  ring_seconds: number
  talk_seconds: number
  voicemail_seconds: number
  recording: boolean
}

export const DEFAULT_SCENARIO: Scenario = { outcome: 'answered', ring_seconds: 5, talk_seconds: 10, voicemail_seconds: 15, recording: true }

export interface SimulateRequest {
  owner: CallOwner
  user: string
  direction: 'inbound' | 'outbound'
  /** The account side: the account's first phone number. */
  account_number: string
  to_number?: string
  from_number?: string
  from_name?: string | null
  scenario?: Partial<Scenario>
}

export { type Magic, magicOf } from '../../src/services/calls/sandbox-numbers'

const clamp = (n: number | undefined, dflt: number) => Math.min(MAX_SIM_SECONDS, Math.max(0, Math.round(n ?? dflt)))

/** The scenario that will run: defaults, request fields clamped to 120 s, then the magic-number and direction rules. */
export function effectiveScenario(
  direction: 'inbound' | 'outbound',
  toNumber: string | undefined,
  requested: Partial<Scenario> = {},
): { scenario: Scenario; magic?: Magic } {
  const s: Scenario = {
    outcome: requested.outcome ?? DEFAULT_SCENARIO.outcome,
    ring_seconds: clamp(requested.ring_seconds, DEFAULT_SCENARIO.ring_seconds),
    talk_seconds: clamp(requested.talk_seconds, DEFAULT_SCENARIO.talk_seconds),
    voicemail_seconds: clamp(requested.voicemail_seconds, DEFAULT_SCENARIO.voicemail_seconds),
    recording: requested.recording ?? DEFAULT_SCENARIO.recording,
  }
  if (direction !== 'outbound') return { scenario: s }
  const magic = magicOf(toNumber)
  switch (magic) {
    case 'answered_long':
      Object.assign(s, { outcome: 'answered', ring_seconds: 5, talk_seconds: 30, recording: true })
      break
    case 'no_answer':
      Object.assign(s, { outcome: 'no-answer', ring_seconds: 20, recording: false })
      break
    case 'busy':
      Object.assign(s, { outcome: 'busy', recording: false })
      break
    case 'machine':
    case 'transfer':
    case 'emergency':
      s.outcome = 'answered'
      break
  }
  // a voicemail outcome on an outbound call collapses to answered
  if (s.outcome === 'voicemail') s.outcome = 'answered'
  if (s.outcome !== 'answered') s.recording = false
  return { scenario: s, magic }
}

const plus = (t0: number, seconds: number) => new Date(t0 + seconds * 1000).toISOString()

export interface Plan {
  call: CallActorInput
  /** The call's scripted events, as durable timers of the call actor. */
  script: ScheduleRequest[]
  scenario: Scenario
}

/** Collects scripted call events at offsets (seconds) from t0. */
function scriptFrom(t0: number) {
  const script: ScheduleRequest[] = []
  const send = (at: number, event: Omit<CallMachineEvent, 'at'> & Record<string, unknown>) =>
    script.push({ name: `script_${script.length}`, at: plus(t0, at), event: { ...event, at: plus(t0, at) } })
  return { script, send }
}

/** Pure: the call input and its script for a request started at `now`. */
export function planSimulation(req: SimulateRequest, now: Date, ids: { call: string; transferCall: string }): Plan {
  const { scenario, magic } = effectiveScenario(req.direction, req.to_number, req.scenario)
  const t0 = now.getTime()
  const outbound = req.direction === 'outbound'
  const call: CallActorInput = {
    call_id: ids.call,
    direction: req.direction,
    from_number: outbound ? req.account_number : (req.from_number ?? '+15555550123'),
    from_name: outbound ? null : (req.from_name ?? null),
    to_number: outbound ? (req.to_number ?? '+15555550199') : req.account_number,
    started_at: now.toISOString(),
    user_id: req.user,
    ...(outbound ? { from_user_id: req.user } : { to_user_id: req.user }),
    record: scenario.recording,
    owner: req.owner,
    simulated: true,
  }
  if (magic === 'emergency') {
    call.emergency = { device_id: null, extension: null, location_id: null, location_name: null, location_address: null, e911_provisioned: false }
  }
  const { script, send } = scriptFrom(t0)
  const ringUser = outbound ? undefined : req.user
  send(0, { type: 'RING', ...(ringUser ? { user_id: ringUser } : {}) })
  const ring = scenario.ring_seconds
  if (scenario.outcome === 'busy') {
    send(Math.min(ring, 1), { type: 'BUSY' })
  } else if (scenario.outcome === 'no-answer') {
    send(ring, { type: 'TIMER', timer: 'ring_timeout' })
  } else if (scenario.outcome === 'voicemail') {
    const end = ring + scenario.voicemail_seconds
    send(ring, { type: 'VOICEMAIL' })
    send(end, { type: 'MESSAGE_STORED' })
    send(end, { type: 'HANGUP', side: 'caller' })
  } else {
    const end = ring + scenario.talk_seconds
    send(ring, { type: 'ANSWER', ...(ringUser ? { user_id: ringUser } : {}) })
    if (magic === 'transfer') send(end, { type: 'BLIND_TRANSFER', to: '+15005550100', by: req.user, new_call_id: ids.transferCall })
    else send(end, { type: 'HANGUP', side: outbound ? 'callee' : 'caller' })
  }
  return { call, script, scenario }
}

type Leg = { input: CallActorInput; opts: { timers: ScheduleRequest[] } }

/**
 * A simulated call placed by a user of the account on behalf of `parent`'s call: to
 * a number (dialled out) or to another user (rung, internal). Answered after 2 s,
 * hung up by the far side after `talkSeconds` of talk.
 */
function placedLeg(
  r: { call_id: string; parent: CallActorInput; to: string; by: string; at: string; talkSeconds: number },
  link: Pick<CallActorInput, 'placed_by_transfer' | 'consultation'>,
): Leg {
  const accountNumber = r.parent.direction === 'outbound' ? r.parent.from_number : r.parent.to_number
  const toUser = isE164(r.to) ? undefined : r.to
  const input: CallActorInput = {
    call_id: r.call_id,
    direction: toUser ? 'internal' : 'outbound',
    from_number: accountNumber,
    from_name: null,
    to_number: toUser ? accountNumber : r.to,
    started_at: r.at,
    // A voice app's transfer (by names the app) places a call of no user's.
    user_id: idKind(r.by) === 'user' ? r.by : null,
    ...(idKind(r.by) === 'user' ? { from_user_id: r.by } : {}),
    ...(toUser ? { to_user_id: toUser } : {}),
    record: false,
    ...link,
    owner: r.parent.owner,
    simulated: true,
  }
  const { script, send } = scriptFrom(Date.parse(r.at))
  send(0, { type: 'RING', ...(toUser ? { user_id: toUser } : {}) })
  send(2, { type: 'ANSWER', ...(toUser ? { user_id: toUser } : {}) })
  send(2 + r.talkSeconds, { type: 'HANGUP', side: 'callee' })
  return { input, opts: { timers: script } }
}

/** Pure: the new leg of a blind transfer of a simulated call (10 s of talk). */
export function planTransferLeg(req: SpawnCallRequest, parent: CallActorInput): Leg {
  return placedLeg(
    { call_id: req.call_id, parent, to: req.transferred_to, by: req.transferred_by, at: req.at, talkSeconds: 10 },
    { placed_by_transfer: { related_call: req.related_call } },
  )
}

/** Seconds a called-back caller takes to pick up. */
export const CALLBACK_ANSWER_SECONDS = 2

/**
 * Pure: a queue's callback in the sandbox: the agent who took it calls the caller back
 * from the number the caller dialled; the caller picks up after
 * CALLBACK_ANSWER_SECONDS and the far side hangs up after `talkSeconds`.
 */
export function planCallbackCall(r: {
  call_id: string
  owner: CallOwner
  /** the account side: the number the caller had dialled. */
  account_number: string
  caller_number: string
  agent: string
  at: string
  talkSeconds: number
}): Leg {
  const input: CallActorInput = {
    call_id: r.call_id,
    direction: 'outbound',
    from_number: r.account_number,
    from_name: null,
    to_number: r.caller_number,
    started_at: r.at,
    user_id: r.agent,
    from_user_id: r.agent,
    record: false,
    owner: r.owner,
    simulated: true,
  }
  const { script, send } = scriptFrom(Date.parse(r.at))
  send(0, { type: 'RING' })
  send(CALLBACK_ANSWER_SECONDS, { type: 'ANSWER' })
  send(CALLBACK_ANSWER_SECONDS + r.talkSeconds, { type: 'HANGUP', side: 'callee' })
  return { input, opts: { timers: script } }
}

/** How long a consultation call waits for the transfer to be completed before its target hangs up. */
export const CONSULTATION_SECONDS = MAX_SIM_SECONDS

/**
 * Pure: the consultation call of a warm transfer: the transferring user calls the
 * target while the primary call is held; the target hangs up after
 * CONSULTATION_SECONDS unless the transfer is completed first.
 */
export function planConsultation(req: ConsultationRequest, primary: CallActorInput): Leg {
  return placedLeg(
    { call_id: req.call_id, parent: primary, to: req.to, by: req.by, at: req.at, talkSeconds: CONSULTATION_SECONDS },
    { consultation: { related_call: req.related_call } },
  )
}

/** The follow-up actor of a call (one per call: its id is derived from the call's). */
export const followUpId = (callId: string) => `${callId}_followup`

/**
 * Pure but for fresh record ids: what follows a simulated call's end. An answered
 * call that was recording gets its recording 2 s after the end, the transcript at
 * 4 s and the summary at 6 s; a stored voicemail message is deposited at the end,
 * transcribed at 3 s and summarised at 5 s.
 */
export function planFollowUps(
  end: CallEndData,
  call: CallContext & { input: CallActorInput },
  ids = { recording: newId('recording'), voicemail: newId('voicemail') },
): ActorSpawn[] {
  const input = call.input
  if (!input.simulated) return []
  const t0 = Date.parse(end.ended_at)
  const steps: SimStep[] = []
  const step = (s: number, action: SimStep['action']) => steps.push({ at: plus(t0, s), action })
  if (end.status === 'voicemail') {
    // A routed call names the box it reached: a user's box is that user's message, a shared box nobody's.
    const box = input.voicemail_box
    const owner = box ? (box.type === 'user' ? box.id : null) : (input.to_user_id ?? input.user_id ?? null)
    const base = { voicemail_id: ids.voicemail, user_id: owner, call_id: input.call_id }
    step(0, {
      type: 'voicemail',
      ...base,
      ...(box?.type === 'shared' ? { shared_voicemail_box_id: box.id } : {}),
      from_number: input.from_number,
      from_name: call.from_name ?? null,
      duration_seconds: end.answered_at ? durationSeconds(end.answered_at, end.ended_at) : 0,
      created_at: end.ended_at,
    })
    step(3, { type: 'voicemail_transcript', ...base })
    step(5, { type: 'voicemail_summary', ...base })
  } else if (end.connected_at && input.record) {
    const base = { recording_id: ids.recording, call_id: input.call_id }
    step(2, { type: 'recording', ...base, duration_seconds: durationSeconds(end.connected_at, end.ended_at) })
    step(4, { type: 'recording_transcript', ...base })
    step(6, { type: 'recording_summary', ...base })
  }
  if (steps.length === 0) return []
  const id = followUpId(input.call_id)
  return [{ kind: SIM_KIND, id, input: { sim_id: id, steps, owner: input.owner } }]
}
