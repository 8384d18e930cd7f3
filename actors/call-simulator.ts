/**
 * The sandbox call simulator (POST /v1/test_helpers/calls).
 *
 * A request becomes a plan: the `call.v1` input and a list of steps at absolute
 * simulated times (ring, answer, hang up, then recording / voicemail follow-ups).
 * The call actor runs the call; a `call_sim.v1` actor walks the steps on durable
 * timers (the injected clock: with VOICE_CLOCK_SPEED=100 a 30 s call ends in about
 * 0.3 s of real time while timestamps and duration_seconds say 30 s).
 */
import { and, eq } from 'drizzle-orm'
import type { Clock } from '../src/clock'
import type { Db } from '../src/db/client'
import { calls, recordings, voicemails } from '../src/db/schema'
import { appendEvents } from '../src/events/outbox'
import { newId } from '../src/ids'
import type { CallMachineEvent, SpawnCallRequest } from '../machines/call'
import { callSimulationMachine, type SimInput, type SimStep } from '../machines/call-simulation'
import { CALL_KIND, type CallActorInput, type CallOwner } from './call-actor'
import { ActorDone, ActorNotFound, defineActorKind, type ActorClient, type Effects } from './runtime'
import type { PauseInterval } from '../media/simulated-audio'
import { keyedSerialQueue } from './keyed-serial-queue'

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

export interface Plan {
  call: CallActorInput
  sim: SimInput & { owner: CallOwner }
  scenario: Scenario
}

/** Pure: the call input and the timed steps for a request started at `now`. */
export function planSimulation(req: SimulateRequest, now: Date, ids: { call: string; recording: string; voicemail: string; transferCall: string }): Plan {
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
  const steps: SimStep[] = []
  const send = (at: number, event: Omit<CallMachineEvent, 'at'> & Record<string, unknown>) =>
    steps.push({ at: plus(t0, at), action: { type: 'call', call_id: ids.call, event: { ...event, at: plus(t0, at) } } })
  // Follow-up steps carry the planned end (ends_at): when a command ended the call at
  // another time (hangup, transfer), they are stale and dropped (see `run`).
  let endsAt = 0
  const after = (at: number, action: SimStep['action']) => steps.push({ at: plus(t0, at), action: { ...action, ends_at: plus(t0, endsAt) } })
  const ringUser = outbound ? undefined : req.user
  send(0, { type: 'RING', ...(ringUser ? { user_id: ringUser } : {}) })
  const ring = scenario.ring_seconds
  if (scenario.outcome === 'busy') {
    send(Math.min(ring, 1), { type: 'BUSY' })
  } else if (scenario.outcome === 'no-answer') {
    send(ring, { type: 'TIMER', timer: 'ring_timeout' })
  } else if (scenario.outcome === 'voicemail') {
    const end = ring + scenario.voicemail_seconds
    endsAt = end
    send(ring, { type: 'VOICEMAIL' })
    send(end, { type: 'MESSAGE_STORED' })
    send(end, { type: 'HANGUP', side: 'caller' })
    const base = { voicemail_id: ids.voicemail, user_id: req.user, call_id: ids.call }
    after(end, {
      type: 'voicemail',
      ...base,
      from_number: call.from_number,
      from_name: call.from_name ?? null,
      duration_seconds: scenario.voicemail_seconds,
      created_at: plus(t0, end),
    })
    after(end + 3, { type: 'voicemail_transcript', ...base })
    after(end + 5, { type: 'voicemail_summary', ...base })
  } else {
    const end = ring + scenario.talk_seconds
    endsAt = end
    send(ring, { type: 'ANSWER', ...(ringUser ? { user_id: ringUser } : {}) })
    if (magic === 'transfer') {
      send(end, { type: 'BLIND_TRANSFER', to: '+15005550100', by: req.user, new_call_id: ids.transferCall })
    } else {
      send(end, { type: 'HANGUP', side: outbound ? 'callee' : 'caller' })
    }
    if (scenario.recording) {
      after(end + 2, { type: 'recording', recording_id: ids.recording, call_id: ids.call, duration_seconds: scenario.talk_seconds })
      after(end + 4, { type: 'recording_transcript', recording_id: ids.recording, call_id: ids.call })
      after(end + 6, { type: 'recording_summary', recording_id: ids.recording, call_id: ids.call })
    }
  }
  return { call, sim: { sim_id: ids.call, steps, owner: req.owner }, scenario }
}

// ---------------------------------------------------------------- the simulation actor

const SAMPLE_TRANSCRIPT = (seconds: number) => ({
  segments: [
    { speaker: 'remote', start_seconds: 0, end_seconds: Math.min(seconds, 3), text: 'Hello, this is a simulated call.' },
    { speaker: 'local', start_seconds: Math.min(seconds, 3), end_seconds: seconds, text: 'Thanks, this is the sandbox answering.' },
  ],
})
const SAMPLE_SUMMARY = 'Simulated sandbox call: the caller greeted and the sandbox answered.'
const SAMPLE_SENTIMENT = { overall: 'positive', local: { overall: 'positive' }, remote: { overall: 'neutral' } }

export interface SimKindOptions {
  db: Db
  clock: Clock
  /** Where recording and voicemail audio go; without it, no audio is stored. */
  storage?: { put(key: string, bytes: Uint8Array, contentType: string): Promise<void> }
  /** The simulated audio (WAV) of a recording or message: same seed, same audio. */
  audio?: (seed: string, durationMs: number, pauses?: PauseInterval[]) => { bytes: Uint8Array; contentType: string }
  client: () => ActorClient
  outboxCommitted?: () => void
  onError?: (err: unknown) => void
}

type A = Record<string, unknown>

export function createSimKind(opts: SimKindOptions) {
  const { db, clock } = opts
  // Each simulation's effects run in step order, one after the other, after the step
  // committed: a call message is acknowledged before the next record and event are
  // written, so (for example) call.end is always in the outbox before voicemail.new.
  const queue = keyedSerialQueue(opts.onError)

  /** One transaction: the record change and its event. */
  const write = async (owner: CallOwner, type: string, data: A, change: (tx: Db) => Promise<unknown>) => {
    await db.transaction(async (txRaw) => {
      const tx = txRaw as unknown as Db
      await change(tx)
      await appendEvents(tx, clock, [{ platformId: owner.platformId, accountId: owner.accountId, mode: owner.mode, type, data }])
    })
    opts.outboxCommitted?.()
  }

  /** Stores the simulated audio first (a retry overwrites it), so the row never points at nothing. */
  const storeAudio = async (key: string, seed: string, seconds: number, pauses?: PauseInterval[]): Promise<string | null> => {
    if (!opts.storage || !opts.audio) return null
    const { bytes, contentType } = opts.audio(seed, seconds * 1000, pauses)
    await opts.storage.put(key, bytes, contentType)
    return key
  }

  /** When the call actually ended (the call actor's committed state), or null while in flight. */
  const endedAt = async (callId: string): Promise<string | null> => {
    const row = await opts.client().inspect(CALL_KIND, callId)
    return ((row?.snapshot as { context?: { ended_at?: string | null } } | undefined)?.context?.ended_at as string | null | undefined) ?? null
  }

  const run = async (owner: CallOwner, step: SimStep) => {
    const a = step.action as A
    const now = () => clock.now()
    if (step.action.type === 'call') {
      try {
        await opts.client().send(CALL_KIND, a.call_id as string, a.event as CallMachineEvent)
      } catch (err) {
        // the call already ended (a command hung it up or transferred it): a stale step, dropped
        if (err instanceof ActorDone || err instanceof ActorNotFound) return
        throw err
      }
      return
    }
    if (typeof a.ends_at === 'string' && (await endedAt(a.call_id as string)) !== a.ends_at) return
    switch (step.action.type) {
      case 'voicemail': {
        const storageKey = await storeAudio(`voicemails/${owner.accountId}/${a.voicemail_id as string}.wav`, a.voicemail_id as string, a.duration_seconds as number)
        await write(
          owner,
          'voicemail.new',
          {
            voicemail_id: a.voicemail_id,
            user_id: a.user_id,
            call_id: a.call_id,
            from_number: a.from_number,
            from_name: a.from_name,
            duration_seconds: a.duration_seconds,
            created_at: a.created_at,
          },
          (tx) =>
            tx
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
              .onConflictDoNothing(),
        )
        return
      }
      case 'voicemail_transcript':
        await write(owner, 'voicemail.transcription.complete', { voicemail_id: a.voicemail_id, user_id: a.user_id, call_id: a.call_id, status: 'completed' }, (tx) =>
          tx
            .update(voicemails)
            .set({ transcript: { text: 'Hi, this is a simulated voicemail. Please call me back.' }, updatedAt: now() })
            .where(eq(voicemails.id, a.voicemail_id as string)),
        )
        return
      case 'voicemail_summary':
        await write(owner, 'voicemail.summary.complete', { voicemail_id: a.voicemail_id, user_id: a.user_id, call_id: a.call_id }, (tx) =>
          tx
            .update(voicemails)
            .set({ summary: 'The caller asks for a call back.', sentiment: { overall: 'neutral' }, updatedAt: now() })
            .where(eq(voicemails.id, a.voicemail_id as string)),
        )
        return
      case 'recording': {
        // A row may exist already: pause/resume during the call wrote its pauses there.
        const [existing] = await db
          .select({ id: recordings.id, pauses: recordings.pauses })
          .from(recordings)
          .where(and(eq(recordings.callId, a.call_id as string), eq(recordings.accountId, owner.accountId)))
        const recordingId = existing?.id ?? (a.recording_id as string)
        const storageKey = await storeAudio(`recordings/${owner.accountId}/${recordingId}.wav`, a.call_id as string, a.duration_seconds as number, existing?.pauses)
        if (existing) {
          await write(owner, 'recording.available', { call_id: a.call_id, duration_seconds: a.duration_seconds }, (tx) =>
            tx
              .update(recordings)
              .set({ status: 'available', storageKey, durationSeconds: a.duration_seconds as number, updatedAt: now() })
              .where(eq(recordings.id, recordingId)),
          )
          return
        }
        await write(owner, 'recording.available', { call_id: a.call_id, duration_seconds: a.duration_seconds }, (tx) =>
          tx
            .insert(recordings)
            .values({
              id: a.recording_id as string,
              callId: a.call_id as string,
              accountId: owner.accountId,
              status: 'available',
              storageKey,
              durationSeconds: a.duration_seconds as number,
              createdAt: new Date(step.at),
              updatedAt: now(),
            })
            .onConflictDoNothing(),
        )
        return
      }
      case 'recording_transcript':
        await write(owner, 'recording.transcription.complete', { call_id: a.call_id, status: 'completed' }, async (tx) => {
          const [rec] = await tx.select({ d: recordings.durationSeconds }).from(recordings).where(eq(recordings.callId, a.call_id as string))
          await tx
            .update(recordings)
            .set({ transcript: SAMPLE_TRANSCRIPT(rec?.d ?? 10), updatedAt: now() })
            .where(eq(recordings.callId, a.call_id as string))
        })
        return
      case 'recording_summary':
        await write(owner, 'recording.summary.complete', { call_id: a.call_id }, async (tx) => {
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
    actions: (fx: Effects, ctx) => ({
      schedule: (_: unknown, params: { name: string; at: string; event: { type: string } & A }) => fx.schedule(params),
      perform: ({ context }: { context: unknown }, step: SimStep) => {
        const owner = (context as { input: { owner: CallOwner } }).input.owner
        fx.afterCommit(() => queue.run(ctx.id, () => run(owner, step)))
      },
    }),
  })
  return { kind, settled: queue.settled }
}

// ---------------------------------------------------------------- starting a simulation

export interface CallSimulator {
  /** Decides the call (ids, input, steps) without starting it. */
  plan(req: SimulateRequest): Plan
  /** Starts the call actor and its script; resolves once the call row exists. */
  run(plan: Plan): Promise<void>
  /** A blind transfer from a simulated call: the new leg, answered after 2 s, 10 s talk. */
  spawnTransferLeg(req: SpawnCallRequest, parent: CallActorInput): Promise<void>
  /**
   * A command (hangup, transfer) ended the call at `ended_at`, not as planned: the planned
   * follow-ups are stale (dropped), so this schedules the recording follow-ups for the real end.
   */
  followUpAfterCommand(f: { owner: CallOwner; call_id: string; answered_at: string | null; ended_at: string; recorded: boolean }): Promise<void>
  /** The actor client the simulated calls run on (call control sends commands through it). */
  readonly client: ActorClient
}

export function createCallSimulator(opts: { clock: Clock; client: ActorClient; settled: (callId: string) => Promise<void> }): CallSimulator {
  const ids = () => ({ call: newId('call'), recording: newId('recording'), voicemail: newId('voicemail'), transferCall: newId('call') })
  const run = async (plan: Plan) => {
    await opts.client.spawn(CALL_KIND, plan.call.call_id, plan.call)
    await opts.settled(plan.call.call_id)
    await opts.client.spawn(SIM_KIND, plan.sim.sim_id, plan.sim)
  }
  return {
    client: opts.client,
    plan: (req) => planSimulation(req, opts.clock.now(), ids()),
    run,
    async followUpAfterCommand(f) {
      if (!f.recorded || !f.answered_at) return
      const end = Date.parse(f.ended_at)
      const duration = Math.max(0, Math.floor((end - Date.parse(f.answered_at)) / 1000))
      const recording_id = newId('recording')
      const at = (s: number) => new Date(end + s * 1000).toISOString()
      const base = { recording_id, call_id: f.call_id, ends_at: f.ended_at }
      const steps: SimStep[] = [
        { at: at(2), action: { type: 'recording', ...base, duration_seconds: duration } },
        { at: at(4), action: { type: 'recording_transcript', ...base } },
        { at: at(6), action: { type: 'recording_summary', ...base } },
      ]
      await opts.client.spawn(SIM_KIND, `${f.call_id}.after_command`, { sim_id: `${f.call_id}.after_command`, steps, owner: f.owner })
    },
    async spawnTransferLeg(req, parent) {
      const at = new Date(req.at)
      const plan = planSimulation(
        {
          owner: parent.owner,
          user: req.transferred_by,
          direction: 'outbound',
          account_number: parent.direction === 'outbound' ? parent.from_number : parent.to_number,
          to_number: '+15555550100',
          scenario: { outcome: 'answered', ring_seconds: 2, talk_seconds: 10, recording: false },
        },
        at,
        { ...ids(), call: req.call_id },
      )
      plan.call.placed_by_transfer = { related_call: req.related_call }
      await run(plan)
    },
  }
}
