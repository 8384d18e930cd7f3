/**
 * Port orders: the rules a request checks before the order's actor hears of it
 * (eligible numbers, the FOC date and time window, the number cap), the rows the
 * actor projects (the order, its status history), and the ported numbers'
 * activation. The lifecycle itself is the actor's machine (machines/port-order.ts,
 * actors/port-orders/); the gateway asks it whether an action is allowed.
 */
import { newId, newUlid } from '../../ids'
import { checkNumberCap as checkNumberCapOf, PORT_ORDERS_RESERVING } from '../numbers/number-cap'
import { numberSpaceOf } from '../numbers/number-space'
import { createHash } from 'node:crypto'
import { and, eq, inArray, ne, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { accounts, type PortOrderDetailsRow, phoneNumbers, portOrderDocuments, portOrderEvents, portOrders } from '../../db/schema'
import { scheduleBlobDeletions } from '../data-lifecycle/blob-deletions'
import { notFound, ValidationError } from '../../errors'
import { keysetPage, type PageRequest } from '../../pagination'
import type { BlobStorage } from '../../storage/blob-storage'
import { billableDids, billableNumberEvents } from '../numbers/billable-dids'
import { carrierUnavailable } from '../numbers/phone-numbers'
import { openSecret, sealSecret } from '../../auth/master-key'
import { easternDate, focDateProblem, focTimeProblem } from './business-days'
import { type Eligibility, type PortingCarrier, sandboxCarrier } from './carrier'
import { letterOfAuthorization } from './letter-of-authorization'

export type PortOrderRow = typeof portOrders.$inferSelect
export type PortOrderEventRow = typeof portOrderEvents.$inferSelect
export type PortOrderDocumentRow = typeof portOrderDocuments.$inferSelect
export type PortOrderStatusName = PortOrderRow['status']
type Mode = 'test' | 'live'

/** Orders still holding their numbers (spec, Limits: in-flight port reservations count against the cap). */
export const IN_FLIGHT: PortOrderStatusName[] = [...PORT_ORDERS_RESERVING]
const TERMINAL: PortOrderStatusName[] = ['complete', 'cancelled']

export const newPortOrderId = () => newId('portOrder')
const newEventId = () => newId('portOrderEvent')

/** The carrier of a mode: the sandbox carrier for sandbox accounts; live mode has none in this deployment. */
export function carrierFor(mode: Mode): PortingCarrier {
  if (mode === 'live') throw carrierUnavailable()
  return sandboxCarrier()
}

/** The order's state as the API shows it (from its row, or from the machine's state after an action). */
export interface PortOrderState {
  status: PortOrderStatusName
  details: PortOrderDetailsRow
  submitted_at: string | null
  updated_at: string
}

export const stateOfRow = (row: PortOrderRow): PortOrderState => ({
  status: row.status,
  details: row.details,
  submitted_at: row.submittedAt?.toISOString() ?? null,
  updated_at: row.updatedAt.toISOString(),
})

/**
 * The subscriber's port-out PIN is a secret of the customer's account with the losing
 * carrier: it is sealed under the master key (src/auth/) before it is written anywhere
 * (the order row, the actor's snapshot, a durable command) and opened only to show
 * the order to its account and to hand it to a carrier driver. The context binds it
 * to its order. A PIN written before sealing existed reads as it was.
 */
const pinContext = (orderId: string) => `port_orders.details.subscriber.pin:${orderId}`
export const sealPin = (orderId: string, pin: string | null): string | null => (pin === null ? null : sealSecret(pin, pinContext(orderId)))
export const openPin = (orderId: string, stored: string | null): string | null => (stored === null ? null : openSecret(stored, pinContext(orderId)))

export function portOrderView(row: Pick<PortOrderRow, 'id' | 'createdAt'>, state: PortOrderState) {
  const d = state.details
  return {
    id: row.id,
    object: 'port_order' as const,
    status: state.status,
    details: {
      phone_numbers: d.phone_numbers,
      subscriber: { ...d.subscriber, pin: openPin(row.id, d.subscriber.pin) },
      ...(d.approval ? { approval: d.approval } : {}),
      requested_foc_date: d.requested_foc_date,
      requested_foc_time: d.requested_foc_time,
      ...(state.status === 'exception' && d.rejection ? { rejection: d.rejection } : {}),
    },
    submitted_at: state.submitted_at,
    created_at: row.createdAt.toISOString(),
    updated_at: state.updated_at,
  }
}

export function portOrderEventView(row: PortOrderEventRow) {
  return {
    id: row.id,
    object: 'port_order_event' as const,
    port_order: row.orderId,
    status: row.status,
    previous_status: row.previousStatus,
    rejection: row.rejection ?? null,
    created_at: row.createdAt.toISOString(),
  }
}

/** A port's owner: its platform and mode say which numbers and orders it can meet (src/services/numbers/number-space.ts). */
export type PortOwner = { platformId: string; mode: Mode }

/** Numbers of this list live on any account of the owner's number space. */
async function liveNumbers(db: Db, owner: PortOwner, numbers: string[]): Promise<Set<string>> {
  if (numbers.length === 0) return new Set()
  const rows = await db
    .select({ number: phoneNumbers.number })
    .from(phoneNumbers)
    .where(and(eq(phoneNumbers.space, numberSpaceOf(owner)), inArray(phoneNumbers.number, numbers), ne(phoneNumbers.status, 'released')))
  return new Set(rows.map((r) => r.number))
}

/** POST /v1/port-in-eligibility. */
export async function portInEligibility(db: Db, owner: PortOwner, numbers: string[]): Promise<Eligibility> {
  const carrier = carrierFor(owner.mode)
  return carrier.eligibility([...new Set(numbers)], await liveNumbers(db, owner, numbers))
}

export interface OrderFieldsInput {
  phone_numbers?: string[]
  requested_foc_date?: string
  requested_foc_time?: string | null
}

/**
 * The field rules of a create or an update, each problem under its field: eligible
 * numbers only (portable, not repeated, in no other order still in flight), the FOC
 * date from 5 business days to 30 calendar days ahead (US Eastern today), the time
 * 08:00 to 20:00 Eastern.
 */
export async function checkOrderFields(db: Db, clock: Clock, owner: PortOwner, input: OrderFieldsInput, self?: string): Promise<void> {
  const problems: Record<string, string> = {}
  if (input.requested_foc_date !== undefined) {
    // A calendar date the carrier will hold the port on: today is the real one, whatever VOICE_CLOCK_SPEED does to simulated time.
    const p = focDateProblem(input.requested_foc_date, easternDate(clock.wallNow()))
    if (p) problems.requested_foc_date = p
  }
  if (input.requested_foc_time !== undefined && input.requested_foc_time !== null) {
    const p = focTimeProblem(input.requested_foc_time)
    if (p) problems.requested_foc_time = p
  }
  const numbers = input.phone_numbers
  if (numbers !== undefined) {
    const carrier = carrierFor(owner.mode)
    numbers.forEach((n, i) => {
      if (numbers.indexOf(n) !== i) problems[`phone_numbers[${i}]`] = `repeats ${n}`
    })
    const eligibility = carrier.eligibility(numbers, await liveNumbers(db, owner, numbers))
    const notPortable = new Set(eligibility.non_portable_numbers.map((n) => n.phone_number))
    const taken = await numbersInFlight(db, owner, numbers, self)
    numbers.forEach((n, i) => {
      if (notPortable.has(n)) problems[`phone_numbers[${i}]`] = `${n} is not portable (POST /v1/port-in-eligibility tells which numbers are)`
      else if (taken.has(n)) problems[`phone_numbers[${i}]`] = `${n} is already in another port order in progress`
    })
  }
  if (Object.keys(problems).length > 0) throw new ValidationError(problems)
}

/** Numbers of the list held by port orders in flight (other than `self`), on any account of the owner's number space. */
async function numbersInFlight(db: Db, owner: PortOwner, numbers: string[], self?: string): Promise<Set<string>> {
  if (numbers.length === 0) return new Set()
  const rows = await db
    .select({ details: portOrders.details })
    .from(portOrders)
    .innerJoin(accounts, eq(accounts.id, portOrders.accountId))
    .where(
      and(
        inArray(portOrders.status, IN_FLIGHT),
        eq(portOrders.mode, owner.mode),
        // Sandbox orders meet only their own platform's; live ones meet every platform's.
        owner.mode === 'test' ? eq(accounts.platformId, owner.platformId) : undefined,
        self ? ne(portOrders.id, self) : undefined,
        sql`jsonb_exists_any(${portOrders.details}->'phone_numbers', array[${sql.join(
          numbers.map((n) => sql`${n}`),
          sql`, `,
        )}]::text[])`,
      ),
    )
  const wanted = new Set(numbers)
  return new Set(rows.flatMap((r) => r.details.phone_numbers.filter((n) => wanted.has(n))))
}

/**
 * The number cap (spec, Limits): held numbers (every status but released) plus the
 * numbers of the account's other port orders in flight plus this order's numbers.
 * The account row is locked first, so that concurrent orders count one after the other.
 */
export async function checkNumberCap(tx: Db, accountId: string, numbers: number, self?: string): Promise<void> {
  await checkNumberCapOf(tx, accountId, numbers, `this port order's ${numbers}`, self)
}

export interface NewPortOrder {
  id: string
  accountId: string
  mode: Mode
  details: PortOrderDetailsRow
  at: Date
}

/** The order's row, draft, with the first line of its history. The actor is spawned beside it (the gateway). */
export async function insertPortOrder(tx: Db, o: NewPortOrder): Promise<PortOrderRow> {
  const [row] = await tx
    .insert(portOrders)
    .values({ id: o.id, accountId: o.accountId, mode: o.mode, status: 'draft', details: o.details, submittedAt: null, createdAt: o.at, updatedAt: o.at })
    .returning()
  await tx
    .insert(portOrderEvents)
    .values({ id: newEventId(), orderId: o.id, accountId: o.accountId, status: 'draft', previousStatus: null, rejection: null, createdAt: o.at })
  return row!
}

export async function getPortOrder(db: Db, accountId: string, id: string): Promise<PortOrderRow> {
  const [row] = await db
    .select()
    .from(portOrders)
    .where(and(eq(portOrders.accountId, accountId), eq(portOrders.id, id)))
  if (!row) throw notFound('port_order', id)
  return row
}

export const isTerminal = (s: PortOrderStatusName) => TERMINAL.includes(s)

export function listPortOrders(db: Db, accountId: string, filters: { status?: PortOrderStatusName }, page: PageRequest) {
  const where = and(eq(portOrders.accountId, accountId), filters.status ? eq(portOrders.status, filters.status) : undefined)
  return keysetPage<PortOrderRow>(db, portOrders, where, page)
}

export function listPortOrderEvents(db: Db, orderId: string, page: PageRequest) {
  return keysetPage<PortOrderEventRow>(db, portOrderEvents, eq(portOrderEvents.orderId, orderId), page)
}

// ---------------------------------------------------------------- the actor's writes

/** The order as its machine now holds it (the actor's `project` effect). */
export async function projectPortOrder(tx: Db, id: string, state: PortOrderState): Promise<void> {
  await tx
    .update(portOrders)
    .set({
      status: state.status,
      details: state.details,
      submittedAt: state.submitted_at ? new Date(state.submitted_at) : null,
      updatedAt: new Date(state.updated_at),
    })
    .where(eq(portOrders.id, id))
}

/** One status change in the order's history (the actor's `changed` effect); nothing for an order deleted with its account. */
export async function recordPortOrderStatus(
  tx: Db,
  c: { orderId: string; accountId: string; from: string; to: string; rejection: { code: string; message: string } | null; at: string },
): Promise<void> {
  await tx.execute(sql`
    insert into ${portOrderEvents} (id, order_id, account_id, status, previous_status, rejection, created_at)
    select ${newEventId()}, o.id, o.account_id, ${c.to}, ${c.from}, ${c.rejection ? JSON.stringify(c.rejection) : null}::jsonb, ${c.at}::timestamptz
    from ${portOrders} o where o.id = ${c.orderId}`)
}

/**
 * The port is done: the numbers become active phone numbers of the account (the
 * actor's `activateNumbers` effect), counted as billable DIDs from then on
 * (phone_number.activated with the order, on a live account). A number that went
 * live elsewhere meanwhile is left where it is; an order whose account is gone
 * activates nothing.
 */
export async function activatePortedNumbers(tx: Db, clock: Clock, o: { orderId: string; numbers: string[]; at: string }): Promise<number> {
  const [order] = await tx
    .select({ accountId: portOrders.accountId, mode: portOrders.mode, platformId: accounts.platformId })
    .from(portOrders)
    .innerJoin(accounts, eq(accounts.id, portOrders.accountId))
    .where(eq(portOrders.id, o.orderId))
  if (!order || o.numbers.length === 0) return 0
  const previous = await billableDids(tx, order.accountId)
  const at = new Date(o.at)
  const rows = await tx
    .insert(phoneNumbers)
    .values(
      [...o.numbers].sort().map((number) => ({
        id: newId('phoneNumber'),
        accountId: order.accountId,
        mode: order.mode,
        number,
        space: numberSpaceOf(order),
        status: 'active' as const,
        orderId: null,
        activatedAt: at,
        createdAt: at,
        updatedAt: at,
      })),
    )
    .onConflictDoNothing()
    .returning({ id: phoneNumbers.id, number: phoneNumbers.number })
  await billableNumberEvents(tx, clock, { id: order.accountId, platformId: order.platformId, mode: order.mode }, 'phone_number.activated', rows, {
    previous,
    order: o.orderId,
  })
  return rows.length
}

// ---------------------------------------------------------------- documents

export const MAX_DOCUMENT_BYTES = 3 * 1024 * 1024

/** The document's problem (under `file`), or undefined for a PDF: %PDF- at the start, %%EOF near the end. */
export function pdfProblem(bytes: Uint8Array): string | undefined {
  if (bytes.length === 0) return 'empty: the file is empty'
  if (bytes.length > MAX_DOCUMENT_BYTES) return `must be at most ${MAX_DOCUMENT_BYTES} bytes`
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 5))
  if (head !== '%PDF-') return 'not_pdf: the document must be a PDF file'
  const tail = new TextDecoder('latin1').decode(bytes.subarray(Math.max(0, bytes.length - 1024)))
  if (!tail.includes('%%EOF')) return 'not_pdf: the PDF is truncated (no %%EOF marker)'
  return undefined
}

export function portOrderDocumentView(row: PortOrderDocumentRow) {
  return {
    object: 'port_order_document' as const,
    port_order: row.orderId,
    type: row.kind,
    filename: row.filename,
    content_type: row.contentType,
    size: row.sizeBytes,
    sha256: row.sha256,
    created_at: row.createdAt.toISOString(),
  }
}

/** Stores the document (replacing the previous one of its kind, whose blob is deleted after the commit by the sweeper). */
export async function putPortOrderDocument(
  tx: Db,
  fx: { clock: Clock; storage: BlobStorage },
  order: Pick<PortOrderRow, 'id' | 'accountId'>,
  kind: PortOrderDocumentRow['kind'],
  file: { bytes: Uint8Array; filename: string | null },
): Promise<PortOrderDocumentRow> {
  const problem = pdfProblem(file.bytes)
  if (problem) throw new ValidationError({ file: problem })
  const [old] = await tx
    .select({ storageKey: portOrderDocuments.storageKey })
    .from(portOrderDocuments)
    .where(and(eq(portOrderDocuments.orderId, order.id), eq(portOrderDocuments.kind, kind)))
    .for('update')
  const storageKey = `port-orders/${order.accountId}/${order.id}/${kind}_${newUlid()}.pdf`
  const values = {
    orderId: order.id,
    kind,
    accountId: order.accountId,
    filename: file.filename,
    contentType: 'application/pdf',
    sizeBytes: file.bytes.length,
    sha256: createHash('sha256').update(file.bytes).digest('hex'),
    storageKey,
    createdAt: fx.clock.now(),
  }
  const [row] = await tx
    .insert(portOrderDocuments)
    .values(values)
    .onConflictDoUpdate({ target: [portOrderDocuments.orderId, portOrderDocuments.kind], set: values })
    .returning()
  if (old) await scheduleBlobDeletions(tx, [old.storageKey], order.accountId)
  await fx.storage.put(storageKey, file.bytes, 'application/pdf')
  return row!
}

export async function getPortOrderDocument(db: Db, orderId: string, kind: PortOrderDocumentRow['kind']): Promise<PortOrderDocumentRow | undefined> {
  const [row] = await db
    .select()
    .from(portOrderDocuments)
    .where(and(eq(portOrderDocuments.orderId, orderId), eq(portOrderDocuments.kind, kind)))
  return row
}

export interface PortOrderDocumentRef {
  type: PortOrderDocumentRow['kind']
  storage_key: string
  sha256: string
}

/**
 * At submit (spec: "authorization documents generated and forwarded to the carrier"):
 * writes the letter of authorization from the order as approved, in the submit's
 * transaction, and answers every document the carrier gets with the submission.
 * A resubmission after an exception writes a new letter (the old one's blob goes to
 * the sweeper).
 */
export async function prepareSubmission(
  tx: Db,
  fx: { clock: Clock; storage: BlobStorage },
  order: Pick<PortOrderRow, 'id' | 'accountId' | 'mode'>,
  details: PortOrderDetailsRow,
): Promise<PortOrderDocumentRef[]> {
  const carriers = carrierFor(order.mode).eligibility(details.phone_numbers, new Set()).portable_numbers
  const pdf = await letterOfAuthorization({ order_id: order.id, details, carriers, generated_at: fx.clock.now() })
  await putPortOrderDocument(tx, fx, order, 'loa', { bytes: pdf, filename: `loa-${order.id}.pdf` })
  const rows = await tx
    .select({ kind: portOrderDocuments.kind, storageKey: portOrderDocuments.storageKey, sha256: portOrderDocuments.sha256 })
    .from(portOrderDocuments)
    .where(eq(portOrderDocuments.orderId, order.id))
  const rank: PortOrderDocumentRow['kind'][] = ['loa', 'bill_copy', 'csr']
  return rows.sort((a, b) => rank.indexOf(a.kind) - rank.indexOf(b.kind)).map((r) => ({ type: r.kind, storage_key: r.storageKey, sha256: r.sha256 }))
}
