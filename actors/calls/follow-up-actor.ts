/**
 * The follow-up actor of a simulated call (`call_sim.v1`): when a simulated call
 * ends, its call.end step creates one for what follows from how the call really
 * ended (planned by actors/calls/simulation.ts): the recording (recording.available,
 * then transcript and summary) for an answered recorded call, the voicemail
 * (voicemail.new, transcript, summary) for a stored message. Each step writes its
 * record and its event in the actor's step transaction. A voicemail step may name
 * the shared box the message was left in (`shared_voicemail_box_id`: a routed call
 * whose voicemail step is a shared box); the row keeps it.
 */
import { and, eq } from 'drizzle-orm'
import { callSimulationMachine, type SimStep } from '../../machines/call-simulation'
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import { calls, type RecordingPause as PauseInterval, recordings, sharedVoicemailBoxes, voicemails } from '../../src/db/schema'
import { defineActorKind, type Effects } from '../runtime/kinds'
import { type CallOwner, SIM_KIND } from './messages'

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

/**
 * The shared box a message is left in (the voicemail step's optional
 * `shared_voicemail_box_id`), if it still exists: a box deleted since the call was
 * routed leaves the message without a box rather than failing the step for ever.
 */
async function boxStillThere(tx: Db, accountId: string, boxId: unknown): Promise<string | null> {
  if (typeof boxId !== 'string') return null
  const [box] = await tx
    .select({ id: sharedVoicemailBoxes.id })
    .from(sharedVoicemailBoxes)
    .where(and(eq(sharedVoicemailBoxes.accountId, accountId), eq(sharedVoicemailBoxes.id, boxId)))
    .for('share')
  return box?.id ?? null
}

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
          // spec: user_id is omitted for a shared box (a routed sandbox call to one has no user)
          ...(a.user_id ? { user_id: a.user_id } : {}),
          call_id: a.call_id,
          from_number: a.from_number,
          from_name: a.from_name,
          duration_seconds: a.duration_seconds,
          created_at: a.created_at,
        })
        fx.write(async (tx) => {
          // A real call's message is stored already (media/b2bua); a simulated one gets its simulated audio now.
          const storageKey =
            typeof a.storage_key === 'string'
              ? a.storage_key
              : await storeAudio(`voicemails/${owner.accountId}/${a.voicemail_id as string}.wav`, a.voicemail_id as string, a.duration_seconds as number)
          await tx
            .insert(voicemails)
            .values({
              id: a.voicemail_id as string,
              accountId: owner.accountId,
              userId: a.user_id as string,
              sharedVoicemailBoxId: await boxStillThere(tx, owner.accountId, a.shared_voicemail_box_id),
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
          // A real call's recording is stored already (media/b2bua); a simulated one gets its simulated audio now.
          const storageKey =
            typeof a.storage_key === 'string'
              ? a.storage_key
              : await storeAudio(`recordings/${owner.accountId}/${recordingId}.wav`, a.call_id as string, a.duration_seconds as number, existing?.pauses)
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
          const [rec] = await tx
            .select({ d: recordings.durationSeconds })
            .from(recordings)
            .where(eq(recordings.callId, a.call_id as string))
          await tx
            .update(recordings)
            .set({ transcript: SAMPLE_TRANSCRIPT(rec?.d ?? 10), updatedAt: now() })
            .where(eq(recordings.callId, a.call_id as string))
        })
        return
      case 'event':
        // A routed sandbox call's queue.call.* event, computed by the queue machine when the call was planned (actors/calls/routed-simulation.ts).
        emit(a.event as string, a.data as A)
        return
      case 'recording_summary':
        emit('recording.summary.complete', { call_id: a.call_id })
        fx.write(async (tx) => {
          await tx
            .update(recordings)
            .set({ summary: SAMPLE_SUMMARY, sentiment: SAMPLE_SENTIMENT, updatedAt: now() })
            .where(eq(recordings.callId, a.call_id as string))
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
