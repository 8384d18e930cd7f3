/**
 * What the call actor is spawned with and the commands it takes: the part of the
 * call actor its senders (gateways, other actors) need, with no dependency on how
 * the actor runs.
 *
 * Commands (POST /v1/calls/{id}) are durable messages (actors/runtime/commands),
 * written in the transaction of the request's audit and idempotency records. The
 * call actor runs each in a step of its own and reports it, in that same step:
 *
 *   call.command_succeeded  {call_id, command, command_id[, consultation_call_id]}
 *   call.command_failed     {call_id, command, command_id, reason}
 *
 * so an accepted (202) command is never lost by a crash and is reported exactly once.
 */
import {
  admitCallCommand,
  type CallCommand,
  type CallCommandRefusal,
  type CallContext,
  type CallInput,
  type CallMachineEvent,
  type CallSnapshot,
  callMachine,
} from '../../machines/call'
import type { ActorState, StepResult } from '../runtime/client'
import { type CommandMessage, restoreSnapshot } from '../runtime/commands'

export const CALL_KIND = 'call'
/** The call machine's registered versions; new calls start on the first. */
export const CALL_MACHINES = [callMachine] as const
/** What follows a simulated call's end (its recording or voicemail): actors/calls/follow-up-actor.ts. */
export const SIM_KIND = 'call_sim'

export interface CallOwner {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
}

/** What the call actor is spawned with: the machine input plus who owns the call. */
export interface CallActorInput extends CallInput {
  owner: CallOwner
  simulated?: boolean
  /**
   * The voicemail box a routed call ends in, when its plan ends in one: whose message
   * it is (voicemail.new's user_id for a user's box, none for a shared box), as the
   * call itself may have rung others first (a ring group's no-answer target).
   */
  voicemail_box?: { type: 'user' | 'shared'; id: string }
  /** The AI agent a routed call ends with, when its plan ends in one: its name goes into the call's summary. */
  ai_agent?: { id: string; name: string }
  /**
   * A call SIP placed (media/b2bua), held by the media process `media_node`: its end
   * is told to the media role, which takes down legs still up (an API hang-up); a
   * media process that stops beating has its calls failed (src/services/calls/media-watchdog.ts).
   */
  sip?: { media_node: string }
  /** Actors told `{type: 'CALL_ENDED', call_id, at}` when the call ends, however it ends (the queues a routed call may wait in). */
  end_watchers?: { kind: string; id: string }[]
}

/** A command for a call actor. */
export interface CallCommandMessage extends CommandMessage {
  call_id: string
  owner: CallOwner
  command: CallCommand
}

export type CallAdmission = { event: CallMachineEvent; snapshot: CallSnapshot } | { refused: CallCommandRefusal }

/**
 * Whether the call takes the command now, judged on its persisted state by its
 * machine (machines/call: admitCallCommand), as the call actor will judge it again
 * when the command arrives. A call whose actor has finished (or never ran) is not active.
 */
export function admitCall(state: ActorState | undefined, command: CallCommand, at: string): CallAdmission {
  const snapshot = callSnapshotOf(state)
  if (!snapshot) return { refused: { code: 'call_not_active', reason: 'has ended' } }
  const admission = admitActorCommand(snapshot, command, at)
  return 'event' in admission ? { ...admission, snapshot } : admission
}

/**
 * The call actor's admission of a command: its machine's (admitCallCommand), less
 * what the runtime cannot carry out. A real call's warm transfer consults from its
 * user's phone: a call with no user (a voice app's) cannot.
 */
export function admitActorCommand(snapshot: CallSnapshot, command: CallCommand, at: string): ReturnType<typeof admitCallCommand> {
  const admission = admitCallCommand(snapshot, command, at)
  const input = snapshot.context.input as CallActorInput
  if ('event' in admission && command.command === 'transfer' && command.mode === 'warm' && input.sip && !input.user_id && !snapshot.context.answered_by)
    return { refused: { code: 'call_transfer_not_allowed', reason: 'has no user on a phone to consult from: use a blind transfer' } }
  return admission
}

/** The call as its machine sees it, from its persisted state; undefined when the call actor has finished or never ran. */
export function callSnapshotOf(state: ActorState | undefined): CallSnapshot | undefined {
  if (!state || state.status === 'done') return undefined
  const snapshot = restoreSnapshot(CALL_MACHINES, state) as CallSnapshot
  return snapshot.status === 'active' ? snapshot : undefined
}

/** Whether a recording pause (or resume) took effect, judged on the step that ran it: the call may have moved first. */
export function recordingToggled(result: StepResult, pause: boolean): boolean {
  const recording = (result.context as CallContext).recording
  return result.status === 'active' && recording.on && recording.paused === pause
}
