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
 * When the call ends, its call.end step creates a `call_sim.v1` actor for what
 * follows from how the call really ended: the recording (recording.available, then
 * transcript and summary) for an answered recorded call, the voicemail
 * (voicemail.new, transcript, summary) for a stored message. Each follow-up step
 * writes its record and its event in that actor's step transaction.
 */
import { and, eq } from 'drizzle-orm'
import type { Clock } from '../src/clock'
import { calls, recordings, voicemails } from '../src/db/schema'
import { newId } from '../src/ids'
import { durationSeconds, type CallContext, type CallEndData, type CallMachineEvent, type SpawnCallRequest } from '../machines/call'
import { callSimulationMachine, type SimStep } from '../machines/call-simulation'
import { CALL_KIND, type ActorSpawn, type CallActorInput, type CallOwner } from './call-actor'
import { defineActorKind, type ActorClient, type Effects, type ScheduleRequest } from './runtime'
import type { RecordingPause as PauseInterval } from '../src/db/schema'

export const SIM_KIND = 'call_sim'

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

/** Magic outbound destinations (digits matched, formatting ignored). */
export type Magic = 'answered_long' | 'no_answer' | 'busy' | 'machine' | 'transfer' | 'emergency'
export function magicOf(number: string | undefined): Magic | undefined {
  if (!number) return undefined
  const digits = number.replace(/\D/g, '')
  if (digits === '933') return 'emergency'
  const m = /^1?5005550(10[0-4])$/.exec(digits)
  if (!m) return undefined
  return (['answered_long', 'no_answer', 'busy', 'machine', 'transfer'] as const)[Number(m[1]) - 100]
}

const clamp = (n: number | undefined, dflt: number) => Math.min(MAX_SIM_SECONDS, Math.max(0, Math.round(n ?? dflt)))

/** The scenario that will run: defaults, request fields clamped to 120 s, then the magic-number and direction rules. */
export function effectiveScenario(direction: 'inbound' | 'outbound', toNumber: string | undefined, requested: Partial<Scenario> = {}): { scenario: Scenario; magic?: Magic } {
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
const E164 = /^\+[1-9]\d{1,14}$/

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
  const toUser = E164.test(r.to) ? undefined : r.to
  const input: CallActorInput = {
    call_id: r.call_id,
    direction: toUser ? 'internal' : 'outbound',
    from_number: accountNumber,
    from_name: null,
    to_number: toUser ? accountNumber : r.to,
    started_at: r.at,
    user_id: r.by,
    from_user_id: r.by,
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

/** How long a consultation call waits for the transfer to be completed before its target hangs up. */
export const CONSULTATION_SECONDS = MAX_SIM_SECONDS

/**
 * Pure: the consultation call of a warm transfer: the transferring user calls the
 * target while the primary call is held; the target hangs up after
 * CONSULTATION_SECONDS unless the transfer is completed first.
 */
export function planConsultation(r: { call_id: string; primary: CallActorInput; to: string; by: string }, now: Date): Leg {
  return placedLeg(
    { call_id: r.call_id, parent: r.primary, to: r.to, by: r.by, at: now.toISOString(), talkSeconds: CONSULTATION_SECONDS },
    { consultation: { related_call: r.primary.call_id } },
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
export function planFollowUps(end: CallEndData, call: CallContext & { input: CallActorInput }, ids = { recording: newId('recording'), voicemail: newId('voicemail') }): ActorSpawn[] {
  const input = call.input
  if (!input.simulated) return []
  const t0 = Date.parse(end.ended_at)
  const steps: SimStep[] = []
  const step = (s: number, action: SimStep['action']) => steps.push({ at: plus(t0, s), action })
  if (end.status === 'voicemail') {
    const base = { voicemail_id: ids.voicemail, user_id: input.to_user_id ?? input.user_id ?? null, call_id: input.call_id }
    step(0, {
      type: 'voicemail',
      ...base,
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

// ---------------------------------------------------------------- the follow-up actor

const SAMPLE_TRANSCRIPT = (seconds: number) => ({
  segments: [
    { speaker: 'remote', start_seconds: 0, end_seconds: Math.min(seconds, 3), text: 'Hello, this is a simulated call.' },
    { speaker: 'local', start_seconds: Math.min(seconds, 3), end_seconds: seconds, text: 'Thanks, this is the sandbox answering.' },
  ],
})
const SAMPLE_SUMMARY = 'Simulated sandbox call: the caller greeted and the sandbox answered.'
const SAMPLE_SENTIMENT = { overall: 'positive', local: { overall: 'positive' }, remote: { overall: 'neutral' } }

export interface SimKindOptions {
  clock: Clock
  /** Where recording and voicemail audio go; without it, no audio is stored. */
  storage?: { put(key: string, bytes: Uint8Array, contentType: string): Promise<void> }
  /** The simulated audio (WAV) of a recording or message: same seed, same audio. */
  audio?: (seed: string, durationMs: number, pauses?: PauseInterval[]) => { bytes: Uint8Array; contentType: string }
}

type A = Record<string, unknown>

export function createSimKind(opts: SimKindOptions) {
  const { clock } = opts

  /** Stores the simulated audio first (a retried step overwrites it), so the row never points at nothing. */
  const storeAudio = async (key: string, seed: string, seconds: number, pauses?: PauseInterval[]): Promise<string | null> => {
    if (!opts.storage || !opts.audio) return null
    const { bytes, contentType } = opts.audio(seed, seconds * 1000, pauses)
    await opts.storage.put(key, bytes, contentType)
    return key
  }

  /** One follow-up step: its event (known now) and its record change (in the step's transaction). */
  const perform = (fx: Effects, owner: CallOwner, step: SimStep) => {
    const a = step.action as A
    const emit = (type: string, data: A) => fx.emit({ platformId: owner.platformId, accountId: owner.accountId, mode: owner.mode, type, data })
    const now = () => clock.now()
    switch (step.action.type) {
      case 'voicemail':
        emit('voicemail.new', {
          voicemail_id: a.voicemail_id,
          user_id: a.user_id,
          call_id: a.call_id,
          from_number: a.from_number,
          from_name: a.from_name,
          duration_seconds: a.duration_seconds,
          created_at: a.created_at,
        })
        fx.write(async (tx) => {
          const storageKey = await storeAudio(`voicemails/${owner.accountId}/${a.voicemail_id as string}.wav`, a.voicemail_id as string, a.duration_seconds as number)
          await tx
            .insert(voicemails)
            .values({
              id: a.voicemail_id as string,
              accountId: owner.accountId,
              userId: a.user_id as string,
              callId: a.call_id as string,
              fromNumber: a.from_number as string,
              fromName: (a.from_name as string | null) ?? null,
              durationSeconds: a.duration_seconds as number,
              storageKey,
              createdAt: new Date(a.created_at as string),
              updatedAt: now(),
            })
            .onConflictDoNothing()
        })
        return
      case 'voicemail_transcript':
        emit('voicemail.transcription.complete', { voicemail_id: a.voicemail_id, user_id: a.user_id, call_id: a.call_id, status: 'completed' })
        fx.write((tx) =>
          tx
            .update(voicemails)
            .set({ transcript: { text: 'Hi, this is a simulated voicemail. Please call me back.' }, updatedAt: now() })
            .where(eq(voicemails.id, a.voicemail_id as string)),
        )
        return
      case 'voicemail_summary':
        emit('voicemail.summary.complete', { voicemail_id: a.voicemail_id, user_id: a.user_id, call_id: a.call_id })
        fx.write((tx) =>
          tx
            .update(voicemails)
            .set({ summary: 'The caller asks for a call back.', sentiment: { overall: 'neutral' }, updatedAt: now() })
            .where(eq(voicemails.id, a.voicemail_id as string)),
        )
        return
      case 'recording':
        emit('recording.available', { call_id: a.call_id, duration_seconds: a.duration_seconds })
        fx.write(async (tx) => {
          // A row may exist already: pause/resume during the call wrote its pauses there.
          const [existing] = await tx
            .select({ id: recordings.id, pauses: recordings.pauses })
            .from(recordings)
            .where(and(eq(recordings.callId, a.call_id as string), eq(recordings.accountId, owner.accountId)))
          const recordingId = existing?.id ?? (a.recording_id as string)
          const storageKey = await storeAudio(`recordings/${owner.accountId}/${recordingId}.wav`, a.call_id as string, a.duration_seconds as number, existing?.pauses)
          const values = { status: 'available' as const, storageKey, durationSeconds: a.duration_seconds as number, updatedAt: now() }
          if (existing) await tx.update(recordings).set(values).where(eq(recordings.id, recordingId))
          else
            await tx
              .insert(recordings)
              .values({ id: recordingId, callId: a.call_id as string, accountId: owner.accountId, createdAt: new Date(step.at), ...values })
              .onConflictDoNothing()
        })
        return
      case 'recording_transcript':
        emit('recording.transcription.complete', { call_id: a.call_id, status: 'completed' })
        fx.write(async (tx) => {
          const [rec] = await tx.select({ d: recordings.durationSeconds }).from(recordings).where(eq(recordings.callId, a.call_id as string))
          await tx
            .update(recordings)
            .set({ transcript: SAMPLE_TRANSCRIPT(rec?.d ?? 10), updatedAt: now() })
            .where(eq(recordings.callId, a.call_id as string))
        })
        return
      case 'recording_summary':
        emit('recording.summary.complete', { call_id: a.call_id })
        fx.write(async (tx) => {
          await tx.update(recordings).set({ summary: SAMPLE_SUMMARY, sentiment: SAMPLE_SENTIMENT, updatedAt: now() }).where(eq(recordings.callId, a.call_id as string))
          await tx
            .update(calls)
            .set({ summary: SAMPLE_SUMMARY, sentiment: SAMPLE_SENTIMENT, updatedAt: now() })
            .where(and(eq(calls.id, a.call_id as string), eq(calls.accountId, owner.accountId)))
        })
        return
    }
  }

  const kind = defineActorKind({
    kind: SIM_KIND,
    machines: [callSimulationMachine],
    actions: (fx: Effects) => ({
      schedule: (_: unknown, params: { name: string; at: string; event: { type: string } & A }) => fx.schedule(params),
      perform: ({ context }: { context: unknown }, step: SimStep) => perform(fx, (context as { input: { owner: CallOwner } }).input.owner, step),
    }),
  })
  return { kind }
}

// ---------------------------------------------------------------- starting a simulation

export interface CallSimulator {
  /** Decides the call (ids, input, script) without starting it. */
  plan(req: SimulateRequest): Plan
  /** Starts the call actor with its script; resolves once the call (and its call log row) is committed. */
  run(plan: Plan): Promise<void>
  /** The actor client the simulated calls run on (call control sends commands through it). */
  readonly client: ActorClient
}

export function createCallSimulator(opts: { clock: Clock; client: ActorClient }): CallSimulator {
  return {
    client: opts.client,
    plan: (req) => planSimulation(req, opts.clock.now(), { call: newId('call'), transferCall: newId('call') }),
    async run(plan) {
      await opts.client.spawn(CALL_KIND, plan.call.call_id, plan.call, { timers: plan.script })
    },
  }
}
