/**
 * The call actors of calls that SIP placed (media/b2bua): the B2BUA starts one and
 * tells it what the phones did. Both are durable messages (a spawn, then tells),
 * each committed before the promise resolves, so a phone is never told of a call
 * the call log does not hold, and a crash of the media process loses no event it
 * reported. The owner's poll delivers them; `wake` only saves the poll's wait.
 */
import type { EventObject } from 'xstate'
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import type { TimerRow } from '../../src/scheduler/durable-timers'
import { durableMessage, durableMessageSender } from '../runtime/commands'
import { QUEUE_KIND } from '../queues/messages'
import { CALL_KIND, type CallActorInput, type CallOwner, SIM_KIND } from './messages'
import { followUpId } from './simulation'
import type { CallContext, CallEndData } from '../../machines/call'
import type { SimStep } from '../../machines/call-simulation'
import type { ActorSpawn } from '../runtime/kinds'

export interface SipCallActorsDeps {
  db: Db
  clock: Clock
  /** Runs the actor's due messages now (ActorClient.wake); absent: the owner's poll delivers them. */
  wake?(kind: string, id: string, rows: TimerRow[]): Promise<void>
}

/** The call actor's input for a SIP call: what the B2BUA knows, and the media process holding its legs. */
export type SipCallInput = Omit<CallActorInput, 'sip' | 'end_watchers'> & {
  media_node: string
  /** The queues the call's plan may reach: each learns of the call's end (CALL_ENDED), a crash of the media process included. */
  queues?: string[]
}

export function sipCallActors(deps: SipCallActorsDeps) {
  const wake = (id: string, row: TimerRow) => {
    deps.wake?.(CALL_KIND, id, [row]).catch(() => {})
  }
  // Calls by the hundred per second, each a start and several tells: those of one turn of the event loop commit together.
  const send = durableMessageSender(deps.db, deps.clock)
  return {
    async start(call: SipCallInput): Promise<void> {
      const { media_node, queues, ...rest } = call
      const input: CallActorInput = {
        ...rest,
        sip: { media_node },
        ...(queues?.length ? { end_watchers: queues.map((id) => ({ kind: QUEUE_KIND, id })) } : {}),
      }
      wake(call.call_id, await send(CALL_KIND, call.call_id, durableMessage.spawn(input)))
    },
    /**
     * The call's recording is in storage: its follow-up actor (the one simulated calls
     * use) writes the record and recording.available in one step. Only the recording:
     * transcripts of real audio need a speech-to-text driver, which does not exist yet.
     */
    async recorded(
      call: { call_id: string; owner: CallOwner },
      recording: { recording_id: string; storage_key: string; duration_seconds: number },
    ): Promise<void> {
      const id = followUpId(call.call_id)
      const step = { at: deps.clock.now().toISOString(), action: { type: 'recording', call_id: call.call_id, ...recording } }
      const row = await send(SIM_KIND, id, durableMessage.spawn({ sim_id: id, steps: [step], owner: call.owner }))
      deps.wake?.(SIM_KIND, id, [row]).catch(() => {})
    },
    async tell(callId: string, event: EventObject & Record<string, unknown>): Promise<void> {
      wake(callId, await send(CALL_KIND, callId, durableMessage.tell(event)))
    },
  }
}

/**
 * What follows a SIP call's end (the call kind's onEnded): the recording and the
 * voicemail message the media role stored and named to the machine
 * (RECORDING_STORED, MESSAGE_STORED), written by the follow-up actor the simulated
 * calls use, created in the call.end step so their events come after call.end.
 */
export function planSipFollowUps(end: CallEndData, c: CallContext & { input: CallActorInput }): ActorSpawn[] {
  const input = c.input
  const steps: SimStep[] = []
  const recording = c.stored?.recording
  if (recording)
    steps.push({
      at: end.ended_at,
      action: {
        type: 'recording',
        call_id: input.call_id,
        recording_id: recording.id,
        storage_key: recording.storage_key,
        duration_seconds: recording.duration_seconds,
      },
    })
  const message = c.stored?.message
  if (message && end.status === 'voicemail') {
    // A box the plan named at the start, or the one that answered (a real call's menu may lead to a box the start could not know).
    const box = c.voicemail_box ?? input.voicemail_box
    steps.push({
      at: end.ended_at,
      action: {
        type: 'voicemail',
        voicemail_id: message.id,
        storage_key: message.storage_key,
        duration_seconds: message.duration_seconds,
        user_id: box ? (box.type === 'user' ? box.id : null) : (input.to_user_id ?? null),
        ...(box?.type === 'shared' ? { shared_voicemail_box_id: box.id } : {}),
        call_id: input.call_id,
        from_number: input.from_number,
        from_name: c.from_name ?? null,
        created_at: end.ended_at,
      },
    })
  }
  if (steps.length === 0) return []
  const id = followUpId(input.call_id)
  return [{ kind: SIM_KIND, id, input: { sim_id: id, steps, owner: input.owner } }]
}
