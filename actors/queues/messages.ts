/**
 * What the queue actor is spawned with and the messages it takes: the part of the
 * queue actor its senders (the gateway's sandbox call, the presence actor, the call
 * actor) need, with no dependency on how the actor runs.
 *
 * One queue actor per queue, its id the queue id, created lazily by the first call
 * that reaches the queue. A spawn whose id is taken does nothing and a message to an
 * actor that does not exist yet is dropped, so a caller's arrival is written twice:
 * in the spawn's input (`events`) and as a command for an existing actor. The queue
 * machine takes a caller once (a second CALLER_ARRIVED for a call it holds is refused),
 * so whichever lands first, the queue ends the same.
 *
 * The actor's state is its persisted machine snapshot (no table of its own).
 */
import { queueMachine, type AgentStatus, type QueueInput, type QueueMachineEvent } from '../../machines/queue'
import type { PresenceContext } from '../../machines/presence'
import type { CallOwner } from '../calls/messages'
import type { Admission } from '../runtime/kinds'
import { COMMAND_MESSAGE, type CommandMessage } from '../runtime/commands'

export const QUEUE_KIND = 'queue'
/** The queue machine's registered versions; new actors start on the first. */
export const QUEUE_MACHINES = [queueMachine] as const

/** What the queue actor needs to act for its queue (the machine keeps it as `context.runtime`). */
export interface QueueRuntime {
  owner: CallOwner
}

export type CallerArrived = Extract<QueueMachineEvent, { type: 'CALLER_ARRIVED' }>

/** A caller's arrival as a command: the way a gateway reaches an existing queue actor. */
export interface QueueArrivalCommand extends CommandMessage {
  queue_id: string
  arrival: CallerArrived
}

/** How a call reaches a queue: the spawn (for a queue with no actor yet) and the command (for one that has). */
export interface QueueHandoff {
  kind: typeof QUEUE_KIND
  id: string
  input: QueueInput & { runtime: QueueRuntime }
  command: QueueArrivalCommand
}

/** The queue actor's input and arrival command for one caller; `command_id` names the command (unique). */
export function queueHandoff(
  queue: { queue_id: string; queue_name: string; max_wait_seconds: number },
  owner: CallOwner,
  arrival: CallerArrived,
  command_id: string,
): QueueHandoff {
  return {
    kind: QUEUE_KIND,
    id: queue.queue_id,
    // Queue rows have no dispatch strategy yet: every free agent rings (the spec's ring-all).
    input: { ...queue, strategy: 'ring_all', runtime: { owner }, events: [arrival] },
    command: { type: COMMAND_MESSAGE, command_id, at: arrival.at, queue_id: queue.queue_id, arrival },
  }
}

/** An arrival for an actor that does not exist yet was carried by its spawn: the command has nothing left to do. */
export function admitQueueCommand(m: QueueArrivalCommand, exists: boolean): Admission {
  return exists ? { event: m.arrival } : { refused: { code: 'queue_not_started', reason: 'the queue actor does not exist yet' } }
}

/**
 * An agent's status in the queues, from their queue-agent standing and presence.
 * Logged out (standing unavailable), dnd or away: offline. On a call: busy. Otherwise
 * available. A user with no registered device is not logged out by that: routing
 * rings such users too (simulated calls reach users without devices), so queues do
 * the same; the manual choice and live calls are what count.
 */
export function queueAgentStatus(
  standing: 'available' | 'unavailable',
  presence: { manual: 'available' | 'dnd' | 'away'; live_calls: readonly string[] } | undefined,
): AgentStatus {
  if (standing === 'unavailable') return 'offline'
  if (!presence) return 'available'
  if (presence.manual !== 'available') return 'offline'
  return presence.live_calls.length > 0 ? 'busy' : 'available'
}

/** A member's status from their standing and their presence actor's persisted snapshot (undefined: no presence actor yet). */
export const memberStatus = (standing: 'available' | 'unavailable', presenceSnapshot: unknown): AgentStatus =>
  queueAgentStatus(standing, (presenceSnapshot as { context?: PresenceContext } | undefined)?.context)
