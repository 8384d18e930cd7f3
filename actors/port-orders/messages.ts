/**
 * What the port order actor is spawned with and the commands it takes: the part of
 * the actor its senders (the port order routes) need, with no dependency on how it
 * runs. One actor per port order, its id the order id, spawned with the order (in
 * the request's transaction) and finished when the order completes or is cancelled.
 * Customer actions reach it as durable commands; the carrier's answers are its own
 * durable timers (./port-order-actor.ts). Its row (port_orders) is its projection.
 */
import { getInitialSnapshot, transition } from 'xstate'
import {
  admitPortOrderCommand,
  type PortOrderCommand,
  type PortOrderContext,
  type PortOrderEvent,
  type PortOrderInput,
  type PortOrderRefusal,
  type PortOrderSnapshot,
  type PortOrderStatus,
  portOrderMachine,
  statusOf,
} from '../../machines/port-order'
import type { ActorState } from '../runtime/client'
import { type CommandMessage, restoreSnapshot } from '../runtime/commands'

export const PORT_ORDER_KIND = 'port_order'
/** The port order machine's registered versions; new orders start on the first. */
export const PORT_ORDER_MACHINES = [portOrderMachine] as const

export interface PortOrderOwner {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
}

export interface PortOrderActorInput extends PortOrderInput {
  runtime: { owner: PortOrderOwner }
}

/** A customer action as a durable command for the order's actor. */
export interface PortOrderCommandMessage extends CommandMessage {
  order_id: string
  command: PortOrderCommand
}

/** The order's machine state: the persisted snapshot, or (before the actor's first step) the initial state of its input. */
export function portOrderSnapshotOf(state: ActorState | undefined, input: PortOrderActorInput): PortOrderSnapshot {
  if (state) return restoreSnapshot(PORT_ORDER_MACHINES, state) as PortOrderSnapshot
  return getInitialSnapshot(portOrderMachine, input)
}

export interface PortOrderAfter {
  status: PortOrderStatus
  context: PortOrderContext
}

export type PortOrderAdmission = { event: PortOrderEvent; after: PortOrderAfter } | { refused: PortOrderRefusal }

/** Whether the order takes the action now (its machine decides), and the order as it will be once the actor applied it. */
export function admitPortOrder(snapshot: PortOrderSnapshot, command: PortOrderCommand, at: string): PortOrderAdmission {
  const a = admitPortOrderCommand(snapshot, command, at)
  if ('refused' in a) return a
  const next = transition(portOrderMachine, snapshot, a.event as never)[0] as PortOrderSnapshot
  return { event: a.event, after: { status: statusOf(next), context: next.context } }
}
