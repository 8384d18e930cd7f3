/**
 * What the presence actor is spawned with and the commands it takes: the part of
 * the presence actor its senders (the gateway, the call actor) need, with no
 * dependency on how the actor runs.
 *
 * One presence actor per user, its id the user id, created lazily and durably. A
 * durable tell to an actor that does not exist yet is dropped, a spawn whose id is
 * taken does nothing, and a spawn and a tell written in one transaction are not
 * ordered. So every writer writes both: a spawn whose input already holds its
 * change, and the change itself (a command or a tell). The changes are idempotent
 * (a manual choice, call ids in a set), so whichever lands first the actor ends the
 * same.
 *
 * The actor's state is its persisted machine snapshot (no table of its own). A user
 * with no actor yet reads as the machine's initial state for that user.
 */
import { getInitialSnapshot, transition } from 'xstate'
import {
  admitPresenceCommand,
  type PresenceCommand,
  type PresenceCommandRefusal,
  type PresenceInput,
  type PresenceMachineEvent,
  type PresenceSnapshot,
  type PresenceStatusRecord,
  presenceMachine,
  presenceRecord,
} from '../../machines/presence'
import type { ActorState } from '../runtime/client'
import { type CommandMessage, restoreSnapshot } from '../runtime/commands'

export const PRESENCE_KIND = 'presence'
/** The presence machine's registered versions; new actors start on the first. */
export const PRESENCE_MACHINES = [presenceMachine] as const

/**
 * The idle timeout is off (0) until activity is reported from somewhere: today the
 * only activity the service sees is a PUT or a call, so an idle timer would only
 * turn every quiet user away.
 */
const IDLE_TIMEOUT_SECONDS = 0

/** PUT /v1/me/presence as a durable command for the user's presence actor. */
export interface PresenceCommandMessage extends CommandMessage {
  user_id: string
  command: PresenceCommand
}

/** The input a presence actor is spawned with: the user's initial inputs plus the writer's change. */
export function presenceInput(userId: string, at: string, change: Partial<Pick<PresenceInput, 'manual' | 'status_text'>> = {}): PresenceInput {
  return { user_id: userId, idle_timeout_seconds: IDLE_TIMEOUT_SECONDS, at, ...change }
}

/** A change another actor reports: a call of the user started or ended, a device of the user (un)registered. */
export type PresenceChange = { type: 'CALL_STARTED' | 'CALL_ENDED'; call_id: string } | { type: 'DEVICE_REGISTERED' | 'DEVICE_UNREGISTERED'; device_id: string }

/**
 * What a writer sends for one change: a spawn whose input already holds it, and the
 * event (`fx.spawnActor(PRESENCE_KIND, user, input)` then `fx.tell(PRESENCE_KIND, user, event)`).
 */
export function presenceMessages(userId: string, change: PresenceChange, at: string): { input: PresenceInput; event: PresenceMachineEvent } {
  const input = presenceInput(userId, at)
  if (change.type === 'CALL_STARTED') input.live_calls = [change.call_id]
  if (change.type === 'DEVICE_REGISTERED') input.registered_devices = [change.device_id]
  return { input, event: { ...change, at } }
}

/**
 * The user's presence as its machine holds it: the persisted snapshot, or, when the
 * user has no actor yet, the machine's initial state for the user since `since`
 * (the same function the actor would start with, so there is no second rule).
 */
export function presenceSnapshotOf(state: ActorState | undefined, userId: string, since: string): PresenceSnapshot {
  if (state) return restoreSnapshot(PRESENCE_MACHINES, state) as PresenceSnapshot
  return getInitialSnapshot(presenceMachine, presenceInput(userId, since))
}

/** The PresenceStatus record (without the webrtc object, which the service adds). */
export const presenceStatusOf = (state: ActorState | undefined, userId: string, since: string): PresenceStatusRecord =>
  presenceRecord(presenceSnapshotOf(state, userId, since))

export type PresenceAdmission =
  | {
      /** The command for the actor, when it exists. */
      event: PresenceMachineEvent
      /** The actor's input, when it does not exist yet: the change already applied. */
      input: PresenceInput
      /** The record as it will be once the change is applied (on_call stays on_call, offline stays offline). */
      after: PresenceStatusRecord
    }
  | { refused: PresenceCommandRefusal }

/**
 * Whether the user may set this presence now, judged by the machine on the user's
 * persisted state (machines/presence: admitPresenceCommand), and what it will show.
 * `since`: when a user with no actor yet has had its initial presence (its creation).
 */
export function admitPresence(state: ActorState | undefined, userId: string, command: PresenceCommand, at: string, since: string): PresenceAdmission {
  const snapshot = presenceSnapshotOf(state, userId, since)
  const admission = admitPresenceCommand(snapshot, command, at)
  if ('refused' in admission) return admission
  const after = presenceRecord(transition(presenceMachine, snapshot, admission.event as never)[0] as PresenceSnapshot)
  const change = {
    manual: command.status as PresenceInput['manual'],
    status_text: command.status_text === undefined ? snapshot.context.status_text : command.status_text,
  }
  // Started at the record's updated_at, a new actor shows exactly `after` (unchanged status and text keep `since`).
  return { event: admission.event, input: presenceInput(userId, after.updated_at, change), after }
}

/**
 * An activity report of the user's client (POST /v1/me/presence/activity): the event
 * for the actor, the input of an actor that does not exist yet (the report already
 * applied: started at `at` with that timeout), and the record as it will be.
 */
export function presenceActivity(state: ActorState | undefined, userId: string, idleTimeoutSeconds: number, at: string, since: string) {
  const snapshot = presenceSnapshotOf(state, userId, since)
  const event: PresenceMachineEvent = { type: 'ACTIVITY', idle_timeout_seconds: idleTimeoutSeconds, at }
  const after = presenceRecord(transition(presenceMachine, snapshot, event as never)[0] as PresenceSnapshot)
  const input: PresenceInput = { ...presenceInput(userId, at), idle_timeout_seconds: idleTimeoutSeconds }
  return { event, input, after }
}
