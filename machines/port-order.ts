/**
 * The port order lifecycle (`port_order.v1`): the spec's "Port order (status)" state
 * table as a pure machine. Customer actions (update, approve, submit, cancel, a
 * document upload) and the carrier's answers (FOC confirmed, rejected, ported) are its
 * events; effects are named actions the actor supplies:
 *
 *   changed        a status change: history row + port_order.status_changed (outbox)
 *   project        the order as it now is (the port_orders row)
 *   carrierSubmit  hand the submitted order to the carrier (its answers come back as events)
 *   carrierCancel  withdraw it from the carrier (its pending answers are dropped)
 *   activateNumbers  the ported numbers become active phone numbers of the account
 *
 * | from      | event            | condition                         | to        |
 * |-----------|------------------|-----------------------------------|-----------|
 * | draft     | UPDATE           | any                               | draft     |
 * | draft     | APPROVE          | signature and ip                  | approved  |
 * | approved  | UPDATE           | changes a detail                  | draft (approval cleared) |
 * | approved  | SUBMIT           |                                   | submitted |
 * | submitted | CARRIER_FOC      |                                   | foc       |
 * | submitted | CARRIER_REJECTED |                                   | exception |
 * | foc       | CARRIER_PORTED   |                                   | complete  |
 * | exception | UPDATE           | any (marks the order corrected)   | exception |
 * | exception | SUBMIT           | corrected since the rejection     | submitted |
 * | submitted, foc | UPDATE      | only requested_foc_date/_time     | unchanged |
 * | any non-terminal | CANCEL    |                                   | cancelled |
 * | draft, exception | ADD_DOCUMENT |                                | unchanged |
 *
 * Everything else is refused (admitPortOrderCommand names the refusal for the API);
 * carrier events in other states are ignored.
 */
import { assign, type SnapshotFrom, setup } from 'xstate'

export const PORT_ORDER_STATUSES = ['draft', 'approved', 'submitted', 'exception', 'foc', 'complete', 'cancelled'] as const
export type PortOrderStatus = (typeof PORT_ORDER_STATUSES)[number]
export const TERMINAL_STATUSES: readonly PortOrderStatus[] = ['complete', 'cancelled']

/** details.rejection.code values (spec, "Number porting"). */
export const REJECTION_CODES = [
  'address_mismatch',
  'account_number_invalid',
  'name_mismatch',
  'business_name_mismatch',
  'btn_mismatch',
  'pin_required',
  'pin_invalid',
] as const
export type RejectionCode = (typeof REJECTION_CODES)[number]

export const DOCUMENT_KINDS = ['bill_copy', 'csr'] as const
export type PortOrderDocumentKind = (typeof DOCUMENT_KINDS)[number]

export interface PortOrderAddress {
  house_number: string | null
  street_name: string | null
  city: string | null
  state: string | null
  zip: string | null
}

export interface PortOrderSubscriber {
  btn: string | null
  business_name: string | null
  approver_name: string | null
  account_number: string | null
  pin: string | null
  address: PortOrderAddress | null
}

export interface PortOrderApproval {
  signature: string
  ip: string
  timestamp: string
}

export interface PortOrderRejection {
  code: RejectionCode
  message: string
}

export interface PortOrderDetails {
  phone_numbers: string[]
  subscriber: PortOrderSubscriber
  approval: PortOrderApproval | null
  requested_foc_date: string
  requested_foc_time: string | null
  rejection: PortOrderRejection | null
}

/** What a customer update may change; a field given replaces the old value (subscriber: field by field). */
export interface PortOrderChanges {
  phone_numbers?: string[]
  subscriber?: Partial<PortOrderSubscriber>
  requested_foc_date?: string
  requested_foc_time?: string | null
}
/** The only fields an update may carry once the order is with the carrier (submitted or foc). */
export const DATE_FIELDS = ['requested_foc_date', 'requested_foc_time'] as const

export interface PortOrderInput {
  order_id: string
  details: PortOrderDetails
  /** Creation time (ISO 8601). */
  at: string
  /** Opaque to the machine: what the actor needs to act for the order (its owner). */
  runtime?: unknown
}

export interface PortOrderContext {
  order_id: string
  details: PortOrderDetails
  submitted_at: string | null
  updated_at: string
  /** Since the last rejection, the order was updated (exception → submit needs it). */
  corrected: boolean
  /** How many times the order went to the carrier. */
  submissions: number
  /** The date and time the carrier committed to (set in foc). */
  foc: { date: string; time: string | null } | null
  runtime?: unknown
}

export type PortOrderEvent =
  | { type: 'UPDATE'; changes: PortOrderChanges; at: string }
  | { type: 'APPROVE'; signature: string; ip: string; at: string }
  | { type: 'SUBMIT'; at: string; documents?: PortOrderDocumentRef[] }
  | { type: 'CANCEL'; at: string }
  | { type: 'ADD_DOCUMENT'; document: PortOrderDocumentKind; at: string }
  | { type: 'CARRIER_FOC'; foc_date: string; foc_time: string | null; at: string }
  | { type: 'CARRIER_REJECTED'; code: RejectionCode; message: string; at: string }
  | { type: 'CARRIER_PORTED'; at: string }

/** A status change, as the `changed` action receives it. */
export interface PortOrderStatusChange {
  order_id: string
  from: PortOrderStatus
  to: PortOrderStatus
  at: string
  rejection: PortOrderRejection | null
  foc: { date: string; time: string | null } | null
}

/**
 * An authorization document handed to the carrier with a submission (the letter of
 * authorization generated at submit, the bill copy and CSR when uploaded): where its
 * bytes are, and their digest, so the carrier gets exactly what was approved.
 */
export interface PortOrderDocumentRef {
  type: 'loa' | 'bill_copy' | 'csr'
  storage_key: string
  sha256: string
}

/** The submitted order, as the carrier gets it. */
export interface PortOrderSubmission {
  order_id: string
  details: PortOrderDetails
  /** 1 for the first submission, 2 after a corrected resubmission, ... */
  submission: number
  documents: PortOrderDocumentRef[]
  at: string
}

const onlyDateFields = (c: PortOrderChanges) => Object.keys(c).every((k) => (DATE_FIELDS as readonly string[]).includes(k))

/** The details with the changes applied. */
export function applyChanges(d: PortOrderDetails, c: PortOrderChanges): PortOrderDetails {
  return {
    ...d,
    ...(c.phone_numbers !== undefined ? { phone_numbers: [...c.phone_numbers] } : {}),
    ...(c.subscriber !== undefined ? { subscriber: { ...d.subscriber, ...c.subscriber } } : {}),
    ...(c.requested_foc_date !== undefined ? { requested_foc_date: c.requested_foc_date } : {}),
    ...(c.requested_foc_time !== undefined ? { requested_foc_time: c.requested_foc_time } : {}),
  }
}

/** Whether the changes alter any detail (the same values given again change nothing). */
export const changesSomething = (d: PortOrderDetails, c: PortOrderChanges) => JSON.stringify(applyChanges(d, c)) !== JSON.stringify(d)

type Ev<T extends PortOrderEvent['type']> = Extract<PortOrderEvent, { type: T }>
const status = (s: PortOrderStatus) => s

/** The `project` effect's params: the order as it is once the transition is taken. */
export interface PortOrderProjection {
  status: PortOrderStatus
  context: PortOrderContext
}
function project(to: PortOrderStatus) {
  return { type: 'project' as const, params: ({ context }: { context: PortOrderContext }): PortOrderProjection => ({ status: to, context }) }
}

function change(from: PortOrderStatus, to: PortOrderStatus) {
  return {
    type: 'changed' as const,
    params: ({ context, event }: { context: PortOrderContext; event: PortOrderEvent }): PortOrderStatusChange => ({
      order_id: context.order_id,
      from,
      to,
      at: event.at,
      rejection: context.details.rejection,
      foc: context.foc,
    }),
  }
}

export const portOrderMachine = setup({
  types: {
    context: {} as PortOrderContext,
    events: {} as PortOrderEvent,
    input: {} as PortOrderInput,
  },
  actions: {
    changed: (_, _params: PortOrderStatusChange) => {},
    project: (_, _params: PortOrderProjection) => {},
    carrierSubmit: (_, _params: PortOrderSubmission) => {},
    carrierCancel: (_, _params: { order_id: string; at: string }) => {},
    activateNumbers: (_, _params: { order_id: string; phone_numbers: string[]; at: string }) => {},
    // Transitions that change nothing still name an action: a transition with neither
    // target nor action is one that snapshot.can() does not count as taken.
    documentAccepted: () => {},
    unchanged: () => {},
    applyUpdate: assign(({ context, event }) => {
      const e = event as Ev<'UPDATE'>
      return { details: applyChanges(context.details, e.changes), updated_at: e.at }
    }),
    markCorrected: assign({ corrected: true }),
    clearApproval: assign(({ context }) => ({ details: { ...context.details, approval: null } })),
    approve: assign(({ context, event }) => {
      const e = event as Ev<'APPROVE'>
      return { details: { ...context.details, approval: { signature: e.signature, ip: e.ip, timestamp: e.at } }, updated_at: e.at }
    }),
    submitted: assign(({ context, event }) => ({
      details: { ...context.details, rejection: null },
      submitted_at: event.at,
      updated_at: event.at,
      corrected: false,
      submissions: context.submissions + 1,
      foc: null,
    })),
    focConfirmed: assign(({ event }) => {
      const e = event as Ev<'CARRIER_FOC'>
      return { foc: { date: e.foc_date, time: e.foc_time }, updated_at: e.at }
    }),
    rejected: assign(({ context, event }) => {
      const e = event as Ev<'CARRIER_REJECTED'>
      return { details: { ...context.details, rejection: { code: e.code, message: e.message } }, updated_at: e.at, corrected: false }
    }),
    touched: assign(({ event }) => ({ updated_at: event.at })),
  },
  guards: {
    onlyDates: ({ event }) => onlyDateFields((event as Ev<'UPDATE'>).changes),
    changesDetails: ({ context, event }) => changesSomething(context.details, (event as Ev<'UPDATE'>).changes),
    corrected: ({ context }) => context.corrected,
  },
}).createMachine({
  id: 'port_order.v1',
  context: ({ input }) => ({
    order_id: input.order_id,
    details: input.details,
    submitted_at: null,
    updated_at: input.at,
    corrected: false,
    submissions: 0,
    foc: null,
    runtime: input.runtime,
  }),
  initial: 'draft',
  states: {
    draft: {
      on: {
        UPDATE: { actions: ['applyUpdate', project('draft')] },
        APPROVE: {
          target: 'approved',
          actions: ['approve', change('draft', 'approved'), project('approved')],
        },
        CANCEL: { target: 'cancelled', actions: ['touched', change('draft', 'cancelled'), project('cancelled')] },
        ADD_DOCUMENT: { actions: 'documentAccepted' },
      },
    },
    approved: {
      on: {
        UPDATE: [
          {
            guard: 'changesDetails',
            target: 'draft',
            actions: ['applyUpdate', 'clearApproval', change('approved', 'draft'), project('draft')],
          },
          // The same values again: nothing changed, the approval stands.
          { actions: 'unchanged' },
        ],
        SUBMIT: {
          target: 'submitted',
          actions: [
            'submitted',
            change('approved', 'submitted'),
            project('submitted'),
            {
              type: 'carrierSubmit',
              params: ({ context, event }) => ({
                order_id: context.order_id,
                details: context.details,
                submission: context.submissions,
                documents: (event as Extract<PortOrderEvent, { type: 'SUBMIT' }>).documents ?? [],
                at: event.at,
              }),
            },
          ],
        },
        CANCEL: { target: 'cancelled', actions: ['touched', change('approved', 'cancelled'), project('cancelled')] },
      },
    },
    submitted: {
      on: {
        UPDATE: { guard: 'onlyDates', actions: ['applyUpdate', project('submitted')] },
        CARRIER_FOC: { target: 'foc', actions: ['focConfirmed', change('submitted', 'foc'), project('foc')] },
        CARRIER_REJECTED: {
          target: 'exception',
          actions: ['rejected', change('submitted', 'exception'), project('exception')],
        },
        CANCEL: {
          target: 'cancelled',
          actions: [
            'touched',
            change('submitted', 'cancelled'),
            project('cancelled'),
            { type: 'carrierCancel', params: ({ context, event }) => ({ order_id: context.order_id, at: event.at }) },
          ],
        },
      },
    },
    foc: {
      on: {
        UPDATE: { guard: 'onlyDates', actions: ['applyUpdate', project('foc')] },
        CARRIER_PORTED: {
          target: 'complete',
          actions: [
            'touched',
            change('foc', 'complete'),
            project('complete'),
            {
              type: 'activateNumbers',
              params: ({ context, event }) => ({ order_id: context.order_id, phone_numbers: context.details.phone_numbers, at: event.at }),
            },
          ],
        },
        CANCEL: {
          target: 'cancelled',
          actions: [
            'touched',
            change('foc', 'cancelled'),
            project('cancelled'),
            { type: 'carrierCancel', params: ({ context, event }) => ({ order_id: context.order_id, at: event.at }) },
          ],
        },
      },
    },
    exception: {
      on: {
        UPDATE: { actions: ['applyUpdate', 'markCorrected', project('exception')] },
        SUBMIT: {
          guard: 'corrected',
          target: 'submitted',
          actions: [
            'submitted',
            change('exception', 'submitted'),
            project('submitted'),
            {
              type: 'carrierSubmit',
              params: ({ context, event }) => ({
                order_id: context.order_id,
                details: context.details,
                submission: context.submissions,
                documents: (event as Extract<PortOrderEvent, { type: 'SUBMIT' }>).documents ?? [],
                at: event.at,
              }),
            },
          ],
        },
        CANCEL: { target: 'cancelled', actions: ['touched', change('exception', 'cancelled'), project('cancelled')] },
        ADD_DOCUMENT: { actions: 'documentAccepted' },
      },
    },
    complete: { type: 'final' },
    cancelled: { type: 'final' },
  },
})

export type PortOrderSnapshot = SnapshotFrom<typeof portOrderMachine>

export const statusOf = (s: PortOrderSnapshot): PortOrderStatus => status(s.value as PortOrderStatus)

// ---------------------------------------------------------------- command admission

/** A customer action, as the API takes it. */
export type PortOrderCommand =
  | { type: 'update'; changes: PortOrderChanges }
  | { type: 'approve'; signature: string; ip: string }
  | { type: 'submit'; documents?: PortOrderDocumentRef[] }
  | { type: 'cancel' }
  | { type: 'add_document'; document: PortOrderDocumentKind }

export interface PortOrderRefusal {
  status: 409 | 422
  code: 'port_order_invalid_state' | 'port_order_approval_required'
  reason: string
}

export function portOrderEvent(command: PortOrderCommand, at: string): PortOrderEvent {
  switch (command.type) {
    case 'update':
      return { type: 'UPDATE', changes: command.changes, at }
    case 'approve':
      return { type: 'APPROVE', signature: command.signature, ip: command.ip, at }
    case 'submit':
      return command.documents ? { type: 'SUBMIT', at, documents: command.documents } : { type: 'SUBMIT', at }
    case 'cancel':
      return { type: 'CANCEL', at }
    case 'add_document':
      return { type: 'ADD_DOCUMENT', document: command.document, at }
  }
}

const ACTION_NAMES: Record<PortOrderCommand['type'], string> = {
  update: 'be updated',
  approve: 'be approved',
  submit: 'be submitted',
  cancel: 'be cancelled',
  add_document: 'take documents',
}

/**
 * Whether the order takes the command in this state: the machine decides
 * (`snapshot.can`); this only names the refusal for the API (spec: approving an
 * order not in draft, cancelling a finished one, an update beyond the date and time
 * once submitted, a document outside draft and exception: 409 port_order_invalid_state;
 * submitting an order not approved: 422 port_order_approval_required).
 */
export function admitPortOrderCommand(
  snapshot: PortOrderSnapshot,
  command: PortOrderCommand,
  at: string,
): { event: PortOrderEvent } | { refused: PortOrderRefusal } {
  const event = portOrderEvent(command, at)
  if (snapshot.status === 'active' && snapshot.can(event)) return { event }
  const s = statusOf(snapshot)
  if (command.type === 'submit' && s === 'draft') {
    return { refused: { status: 422, code: 'port_order_approval_required', reason: 'The port order is draft: it must be approved before it is submitted.' } }
  }
  let why = `The port order is ${s}: it cannot ${ACTION_NAMES[command.type]}.`
  if (command.type === 'submit' && s === 'exception') why = 'The port order is exception: correct it (update) before it is submitted again.'
  if (command.type === 'update' && (s === 'submitted' || s === 'foc'))
    why = `The port order is ${s}: only requested_foc_date and requested_foc_time can be updated.`
  return { refused: { status: 409, code: 'port_order_invalid_state', reason: why } }
}
