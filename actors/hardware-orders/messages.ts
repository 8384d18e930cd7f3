/**
 * What the hardware order actor is spawned with and the commands it takes: the part
 * of the actor its senders (the hardware order routes) need, with no dependency on
 * how it runs. One actor per order, its id the order id, spawned with the order (in
 * the request's transaction) and finished when the order is fulfilled, rejected or
 * cancelled. Customer actions reach it as durable commands; the reviewer's answers
 * and the delivery are its own durable timers (./hardware-order-actor.ts). Its row
 * (hardware_orders) is its projection.
 */
import { getInitialSnapshot, transition } from 'xstate'
import {
  admitHardwareOrderCommand,
  type HardwareOrderCommand,
  type HardwareOrderContext,
  type HardwareOrderEvent,
  type HardwareOrderInput,
  type HardwareOrderRefusal,
  type HardwareOrderSnapshot,
  type HardwareOrderStatus,
  hardwareOrderMachine,
  statusOf,
} from '../../machines/hardware-order'
import type { ActorState } from '../runtime/client'
import { type CommandMessage, restoreSnapshot } from '../runtime/commands'

export const HARDWARE_ORDER_KIND = 'hardware_order'
/** The hardware order machine's registered versions; new orders start on the first. */
export const HARDWARE_ORDER_MACHINES = [hardwareOrderMachine] as const

export interface HardwareOrderOwner {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
}

export interface HardwareOrderActorInput extends HardwareOrderInput {
  runtime: { owner: HardwareOrderOwner }
}

/** A customer action as a durable command for the order's actor. */
export interface HardwareOrderCommandMessage extends CommandMessage {
  order_id: string
  command: HardwareOrderCommand
}

/** The order's machine state: the persisted snapshot, or (before the actor's first step) the initial state of its input. */
export function hardwareOrderSnapshotOf(state: ActorState | undefined, input: HardwareOrderActorInput): HardwareOrderSnapshot {
  if (state) return restoreSnapshot(HARDWARE_ORDER_MACHINES, state) as HardwareOrderSnapshot
  return getInitialSnapshot(hardwareOrderMachine, input)
}

export interface HardwareOrderAfter {
  status: HardwareOrderStatus
  context: HardwareOrderContext
}

export type HardwareOrderAdmission = { event: HardwareOrderEvent; after: HardwareOrderAfter } | { refused: HardwareOrderRefusal }

/** Whether the order takes the action now (its machine decides), and the order as it will be once the actor applied it. */
export function admitHardwareOrder(snapshot: HardwareOrderSnapshot, command: HardwareOrderCommand, at: string): HardwareOrderAdmission {
  const a = admitHardwareOrderCommand(snapshot, command, at)
  if ('refused' in a) return a
  const next = transition(hardwareOrderMachine, snapshot, a.event as never)[0] as HardwareOrderSnapshot
  return { event: a.event, after: { status: statusOf(next), context: next.context } }
}
