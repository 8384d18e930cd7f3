/**
 * The outbound fax lifecycle (`fax.v1`): the spec's "Fax" state as a pure machine.
 * The spec fixes one rule: a fax produces exactly one of fax.delivered or
 * fax.failed, with no intermediate events; its status values are not shown, so
 * these are the service's:
 *
 *   queued     accepted, waiting for the carrier to dial
 *   sending    the carrier dialled and is transmitting pages
 *   delivered  every page confirmed by the far end (final)
 *   failed     not delivered: busy, no answer, line dropped, cancelled (final)
 *
 * Inbound faxes arrive whole (status received, no machine: a received fax has no
 * lifecycle left to run). Effects are named actions the actor supplies:
 *
 *   transmit        hand the fax to the carrier (its answers come back as timed events)
 *   transmitCancel  drop the carrier's answers still due
 *   project         the fax as it now is (the faxes row)
 *   finished        the one final event: fax.delivered or fax.failed
 *
 * | from    | event     | to        | also                          |
 * |---------|-----------|-----------|-------------------------------|
 * | (none)  | create    | queued    | transmit                      |
 * | queued  | DIALLED   | sending   | project                       |
 * | queued  | FAILED    | failed    | project, finished (failed)    |
 * | queued  | CANCEL    | failed    | error_code cancelled, pages null |
 * | sending | DELIVERED | delivered | project, finished (delivered) |
 * | sending | FAILED    | failed    | project, finished (failed)    |
 * | sending | CANCEL    | failed    | error_code cancelled, pages 0 |
 *
 * Every other event is ignored (carrier answers after the end) or, for CANCEL,
 * refused (admitFaxCommand: 409 fax_invalid_state). delivered and failed are final,
 * and `finished` runs only on the transitions into them: one final event per fax.
 */
import { assign, type SnapshotFrom, setup } from 'xstate'

export const FAX_STATUSES = ['queued', 'sending', 'delivered', 'failed', 'received'] as const
export type FaxStatus = (typeof FAX_STATUSES)[number]
export const FAX_FINAL_STATUSES: readonly FaxStatus[] = ['delivered', 'failed', 'received']
export type FaxTransport = 't38' | 'g711'
export const FAX_ERROR_CODES = ['dial_busy', 'dial_no_answer', 'max_attempts_exceeded', 'fax_failed', 'cancelled'] as const
export type FaxErrorCode = (typeof FAX_ERROR_CODES)[number]

export interface FaxInput {
  fax_id: string
  from_number: string
  to_number: string
  /** Pages of the document (counted from it). */
  pages: number
  /** Creation time (ISO 8601). */
  at: string
  runtime?: unknown
}

export interface FaxContext {
  fax_id: string
  from_number: string
  to_number: string
  pages: number
  /** Pages confirmed sent (null: never transmitted). */
  pages_sent: number | null
  transport: FaxTransport | null
  error_code: FaxErrorCode | null
  updated_at: string
  completed_at: string | null
  runtime?: unknown
}

export type FaxEvent =
  | { type: 'DIALLED'; transport: FaxTransport; at: string }
  | { type: 'DELIVERED'; at: string }
  | { type: 'FAILED'; error_code: Exclude<FaxErrorCode, 'cancelled'>; pages_sent: number | null; transport: FaxTransport | null; at: string }
  | { type: 'CANCEL'; at: string }

/** The `project` effect's params. */
export interface FaxProjection {
  status: FaxStatus
  context: FaxContext
}

/** The `finished` effect's params: the one final event of the fax. */
export interface FaxOutcome {
  type: 'fax.delivered' | 'fax.failed'
  fax_id: string
  from_number: string
  to_number: string
  pages: number | null
  transport: FaxTransport | null
  error_code?: FaxErrorCode | null
}

/** What the carrier gets. */
export interface FaxTransmission {
  fax_id: string
  to_number: string
  pages: number
  at: string
}

type Ev<T extends FaxEvent['type']> = Extract<FaxEvent, { type: T }>
type Args = { context: FaxContext }

const project = (to: FaxStatus) => ({ type: 'project' as const, params: ({ context }: Args): FaxProjection => ({ status: to, context }) })
const finished = {
  type: 'finished' as const,
  params: ({ context }: Args): FaxOutcome => {
    const base = { fax_id: context.fax_id, from_number: context.from_number, to_number: context.to_number, transport: context.transport }
    return context.error_code === null
      ? { type: 'fax.delivered', ...base, pages: context.pages_sent }
      : { type: 'fax.failed', ...base, pages: context.pages_sent, error_code: context.error_code }
  },
}
const transmitCancel = { type: 'transmitCancel' as const, params: ({ context }: Args) => ({ fax_id: context.fax_id }) }

export const faxMachine = setup({
  types: { context: {} as FaxContext, events: {} as FaxEvent, input: {} as FaxInput },
  actions: {
    transmit: (_, _params: FaxTransmission) => {},
    transmitCancel: (_, _params: { fax_id: string }) => {},
    project: (_, _params: FaxProjection) => {},
    finished: (_, _params: FaxOutcome) => {},
    dialled: assign(({ event }) => {
      const e = event as Ev<'DIALLED'>
      return { transport: e.transport, pages_sent: 0, updated_at: e.at }
    }),
    delivered: assign(({ context, event }) => ({ pages_sent: context.pages, updated_at: event.at, completed_at: event.at })),
    failed: assign(({ event }) => {
      const e = event as Ev<'FAILED'>
      return { error_code: e.error_code, pages_sent: e.pages_sent, transport: e.transport, updated_at: e.at, completed_at: e.at }
    }),
    cancelled: assign(({ event }) => ({ error_code: 'cancelled' as const, updated_at: event.at, completed_at: event.at })),
  },
}).createMachine({
  id: 'fax.v1',
  context: ({ input }) => ({
    fax_id: input.fax_id,
    from_number: input.from_number,
    to_number: input.to_number,
    pages: input.pages,
    pages_sent: null,
    transport: null,
    error_code: null,
    updated_at: input.at,
    completed_at: null,
    runtime: input.runtime,
  }),
  // Handed to the carrier as the actor starts (once; a restored actor does not re-run it).
  entry: {
    type: 'transmit',
    params: ({ context }) => ({ fax_id: context.fax_id, to_number: context.to_number, pages: context.pages, at: context.updated_at }),
  },
  initial: 'queued',
  states: {
    queued: {
      on: {
        DIALLED: { target: 'sending', actions: ['dialled', project('sending')] },
        FAILED: { target: 'failed', actions: ['failed', project('failed'), finished] },
        CANCEL: { target: 'failed', actions: ['cancelled', project('failed'), transmitCancel, finished] },
      },
    },
    sending: {
      on: {
        DELIVERED: { target: 'delivered', actions: ['delivered', project('delivered'), finished] },
        FAILED: { target: 'failed', actions: ['failed', project('failed'), finished] },
        CANCEL: { target: 'failed', actions: ['cancelled', project('failed'), transmitCancel, finished] },
      },
    },
    delivered: { type: 'final' },
    failed: { type: 'final' },
  },
})

export type FaxSnapshot = SnapshotFrom<typeof faxMachine>
export const faxStatusOf = (s: FaxSnapshot): FaxStatus => s.value as FaxStatus

// ---------------------------------------------------------------- command admission

/** A customer action, as the API takes it (DELETE of a fax still in flight). */
export type FaxCommand = { type: 'cancel' }

export interface FaxRefusal {
  status: 409
  code: 'fax_invalid_state'
  reason: string
}

export function faxEvent(_command: FaxCommand, at: string): FaxEvent {
  return { type: 'CANCEL', at }
}

/** Whether the fax takes the command in this state: the machine decides (`snapshot.can`); this only names the refusal. */
export function admitFaxCommand(snapshot: FaxSnapshot, command: FaxCommand, at: string): { event: FaxEvent } | { refused: FaxRefusal } {
  const event = faxEvent(command, at)
  if (snapshot.status === 'active' && snapshot.can(event)) return { event }
  return {
    refused: {
      status: 409,
      code: 'fax_invalid_state',
      reason: `The fax is ${faxStatusOf(snapshot)}: it cannot be cancelled (only a queued or sending fax can).`,
    },
  }
}
