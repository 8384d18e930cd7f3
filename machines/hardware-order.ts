/**
 * The hardware order lifecycle (`hardware_order.v1`): the spec's "Hardware order"
 * states as a pure machine. Orders are created submitted; the reviewer's answers
 * (approved, rejected) and the delivery are events the actor receives on its
 * durable timers; customer actions (replace the items, set an item's pre-assignment
 * intent, cancel) are commands. Effects are named actions the actor supplies:
 *
 *   review          hand the new order to the reviewer (its answers come back as timed events)
 *   reviewCancel    drop the reviewer's answers still due
 *   project         the order as it now is (the hardware_orders row)
 *   fulfil          the delivered phones become devices of the account
 *
 * | from      | event           | condition              | to        |
 * |-----------|-----------------|------------------------|-----------|
 * | (none)    | create          |                        | submitted |
 * | submitted | UPDATE_ITEMS    |                        | submitted |
 * | submitted | SET_INTENT      | the item is the order's | submitted |
 * | approved  | SET_INTENT      | the item is the order's | approved  |
 * | submitted | REVIEW_APPROVED |                        | approved  |
 * | submitted | REVIEW_REJECTED |                        | rejected (rejection_reason set) |
 * | approved  | DELIVERED       |                        | fulfilled |
 * | submitted | CANCEL          |                        | cancelled |
 * | approved  | CANCEL          |                        | cancelled |
 *
 * Everything else is refused (admitHardwareOrderCommand names the refusal for the
 * API: 409 hardware_order_invalid_state); reviewer and delivery events in other
 * states are ignored. draft is in the spec's enum but no move into it is shown:
 * no order is ever draft here. fulfilled, rejected and cancelled are final.
 */
import { assign, type SnapshotFrom, setup } from 'xstate'

export const HARDWARE_ORDER_STATUSES = ['draft', 'submitted', 'approved', 'rejected', 'fulfilled', 'cancelled'] as const
export type HardwareOrderStatus = (typeof HARDWARE_ORDER_STATUSES)[number]
export const FINAL_STATUSES: readonly HardwareOrderStatus[] = ['rejected', 'fulfilled', 'cancelled']
/** Orders still open: their location cannot be deleted. */
export const PENDING_STATUSES: readonly HardwareOrderStatus[] = ['draft', 'submitted', 'approved']

export type HardwareDeviceType = 'deskphone' | 'dect_base' | 'dect_handset' | 'accessory'

/** One physical unit. */
export interface HardwareOrderItem {
  id: string
  catalog_item: string
  device_type: HardwareDeviceType
  /** Pre-assignment intent: the user the unit is meant for (phones and handsets only). */
  user: string | null
  /** The unit's MAC address when the customer knows it (deskphones and bases); else assigned at delivery. */
  mac_address: string | null
  /** Handsets: an existing DECT base of the account to join; null: a base of the same order. */
  base: string | null
  /** The device the unit became (set at fulfilment; always null for accessories). */
  device: string | null
}

export interface ItemIntent {
  user?: string | null
  mac_address?: string | null
  base?: string | null
}

export interface HardwareOrderInput {
  order_id: string
  items: HardwareOrderItem[]
  location: string
  reference: string | null
  /** Creation time (ISO 8601). */
  at: string
  runtime?: unknown
}

export interface HardwareOrderContext {
  order_id: string
  items: HardwareOrderItem[]
  location: string
  reference: string | null
  rejection_reason: string | null
  updated_at: string
  runtime?: unknown
}

export type HardwareOrderEvent =
  | { type: 'UPDATE_ITEMS'; items: HardwareOrderItem[]; at: string }
  | { type: 'SET_INTENT'; item_id: string; intent: ItemIntent; at: string }
  | { type: 'CANCEL'; at: string }
  | { type: 'REVIEW_APPROVED'; at: string }
  | { type: 'REVIEW_REJECTED'; reason: string; at: string }
  | { type: 'DELIVERED'; at: string }

/** The `project` effect's params: the order as it is once the transition is taken. */
export interface HardwareOrderProjection {
  status: HardwareOrderStatus
  context: HardwareOrderContext
}

/** The order as the reviewer gets it. */
export interface HardwareOrderReview {
  order_id: string
  reference: string | null
  items: HardwareOrderItem[]
  at: string
}

type Ev<T extends HardwareOrderEvent['type']> = Extract<HardwareOrderEvent, { type: T }>

/** The item with the intent applied (a field given replaces the old value). */
export function applyIntent(item: HardwareOrderItem, intent: ItemIntent): HardwareOrderItem {
  return {
    ...item,
    ...(intent.user !== undefined ? { user: intent.user } : {}),
    ...(intent.mac_address !== undefined ? { mac_address: intent.mac_address } : {}),
    ...(intent.base !== undefined ? { base: intent.base } : {}),
  }
}

function project(to: HardwareOrderStatus) {
  return {
    type: 'project' as const,
    params: ({ context }: { context: HardwareOrderContext }): HardwareOrderProjection => ({ status: to, context }),
  }
}
const reviewCancel = { type: 'reviewCancel' as const, params: ({ context }: { context: HardwareOrderContext }) => ({ order_id: context.order_id }) }

export const hardwareOrderMachine = setup({
  types: {
    context: {} as HardwareOrderContext,
    events: {} as HardwareOrderEvent,
    input: {} as HardwareOrderInput,
  },
  actions: {
    review: (_, _params: HardwareOrderReview) => {},
    reviewCancel: (_, _params: { order_id: string }) => {},
    project: (_, _params: HardwareOrderProjection) => {},
    fulfil: (_, _params: { order_id: string; location: string; items: HardwareOrderItem[]; at: string }) => {},
    replaceItems: assign(({ event }) => {
      const e = event as Ev<'UPDATE_ITEMS'>
      return { items: e.items.map((i) => ({ ...i })), updated_at: e.at }
    }),
    setIntent: assign(({ context, event }) => {
      const e = event as Ev<'SET_INTENT'>
      return { items: context.items.map((i) => (i.id === e.item_id ? applyIntent(i, e.intent) : i)), updated_at: e.at }
    }),
    rejected: assign(({ event }) => {
      const e = event as Ev<'REVIEW_REJECTED'>
      return { rejection_reason: e.reason, updated_at: e.at }
    }),
    touched: assign(({ event }) => ({ updated_at: event.at })),
  },
  guards: {
    itemOfOrder: ({ context, event }) => context.items.some((i) => i.id === (event as Ev<'SET_INTENT'>).item_id),
  },
}).createMachine({
  id: 'hardware_order.v1',
  context: ({ input }) => ({
    order_id: input.order_id,
    items: input.items,
    location: input.location,
    reference: input.reference,
    rejection_reason: null,
    updated_at: input.at,
    runtime: input.runtime,
  }),
  // Created submitted: the reviewer gets the order as the actor starts (once; a restored actor does not re-run it).
  entry: {
    type: 'review',
    params: ({ context }) => ({ order_id: context.order_id, reference: context.reference, items: context.items, at: context.updated_at }),
  },
  initial: 'submitted',
  states: {
    // In the spec's enum; no move into it is shown, so nothing reaches it.
    draft: {},
    submitted: {
      on: {
        UPDATE_ITEMS: { actions: ['replaceItems', project('submitted')] },
        SET_INTENT: { guard: 'itemOfOrder', actions: ['setIntent', project('submitted')] },
        REVIEW_APPROVED: { target: 'approved', actions: ['touched', project('approved')] },
        REVIEW_REJECTED: { target: 'rejected', actions: ['rejected', project('rejected')] },
        CANCEL: { target: 'cancelled', actions: ['touched', project('cancelled'), reviewCancel] },
      },
    },
    approved: {
      on: {
        SET_INTENT: { guard: 'itemOfOrder', actions: ['setIntent', project('approved')] },
        DELIVERED: {
          target: 'fulfilled',
          actions: [
            'touched',
            project('fulfilled'),
            {
              type: 'fulfil',
              params: ({ context, event }) => ({ order_id: context.order_id, location: context.location, items: context.items, at: event.at }),
            },
          ],
        },
        CANCEL: { target: 'cancelled', actions: ['touched', project('cancelled'), reviewCancel] },
      },
    },
    rejected: { type: 'final' },
    fulfilled: { type: 'final' },
    cancelled: { type: 'final' },
  },
})

export type HardwareOrderSnapshot = SnapshotFrom<typeof hardwareOrderMachine>

export const statusOf = (s: HardwareOrderSnapshot): HardwareOrderStatus => s.value as HardwareOrderStatus

// ---------------------------------------------------------------- command admission

/** A customer action, as the API takes it. */
export type HardwareOrderCommand =
  | { type: 'update_items'; items: HardwareOrderItem[] }
  | { type: 'set_intent'; item_id: string; intent: ItemIntent }
  | { type: 'cancel' }

export interface HardwareOrderRefusal {
  status: 409
  code: 'hardware_order_invalid_state'
  reason: string
}

export function hardwareOrderEvent(command: HardwareOrderCommand, at: string): HardwareOrderEvent {
  switch (command.type) {
    case 'update_items':
      return { type: 'UPDATE_ITEMS', items: command.items, at }
    case 'set_intent':
      return { type: 'SET_INTENT', item_id: command.item_id, intent: command.intent, at }
    case 'cancel':
      return { type: 'CANCEL', at }
  }
}

const ACTION_NAMES: Record<HardwareOrderCommand['type'], string> = {
  update_items: 'have its items changed (only a submitted order can)',
  set_intent: 'have its items’ pre-assignment intents changed (only a submitted or approved order can)',
  cancel: 'be cancelled (only a submitted or approved order can)',
}

/**
 * Whether the order takes the command in this state: the machine decides
 * (`snapshot.can`); this only names the refusal for the API (409
 * hardware_order_invalid_state, the message naming the status and the action).
 * An intent for an item not in the order is the route's 404, checked before.
 */
export function admitHardwareOrderCommand(
  snapshot: HardwareOrderSnapshot,
  command: HardwareOrderCommand,
  at: string,
): { event: HardwareOrderEvent } | { refused: HardwareOrderRefusal } {
  const event = hardwareOrderEvent(command, at)
  if (snapshot.status === 'active' && snapshot.can(event)) return { event }
  return {
    refused: {
      status: 409,
      code: 'hardware_order_invalid_state',
      reason: `The hardware order is ${statusOf(snapshot)}: it cannot ${ACTION_NAMES[command.type]}.`,
    },
  }
}
