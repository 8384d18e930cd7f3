/**
 * What the fax actor is spawned with and the commands it takes: the part of the
 * actor its senders (the fax routes) need, with no dependency on how it runs. One
 * actor per outbound fax, its id the fax id, spawned with the fax (in the request's
 * transaction) and finished when the fax is delivered or failed. The carrier's
 * answers are its own durable timers (./fax-actor.ts); a DELETE of a fax in flight
 * reaches it as a durable cancel command. Its row (faxes) is its projection.
 */
import { getInitialSnapshot } from 'xstate'
import { admitFaxCommand, type FaxCommand, type FaxEvent, type FaxInput, type FaxRefusal, type FaxSnapshot, faxMachine } from '../../machines/fax'
import type { ActorState } from '../runtime/client'
import { type CommandMessage, restoreSnapshot } from '../runtime/commands'

export const FAX_KIND = 'fax'
/** The fax machine's registered versions; new faxes start on the first. */
export const FAX_MACHINES = [faxMachine] as const

export interface FaxOwner {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
}

export interface FaxActorInput extends FaxInput {
  runtime: { owner: FaxOwner }
}

/** A customer action as a durable command for the fax's actor. */
export interface FaxCommandMessage extends CommandMessage {
  fax_id: string
  command: FaxCommand
}

/** The fax's machine state: the persisted snapshot, or (before the actor's first step) the initial state of its input. */
export function faxSnapshotOf(state: ActorState | undefined, input: FaxActorInput): FaxSnapshot {
  if (state) return restoreSnapshot(FAX_MACHINES, state) as FaxSnapshot
  return getInitialSnapshot(faxMachine, input)
}

/** Whether the fax takes the action now (its machine decides). */
export function admitFax(snapshot: FaxSnapshot, command: FaxCommand, at: string): { event: FaxEvent } | { refused: FaxRefusal } {
  return admitFaxCommand(snapshot, command, at)
}
