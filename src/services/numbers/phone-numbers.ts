/**
 * Phone numbers and number orders. In sandbox, numbers come from the range
 * +15005550000..+15005559999, order instantly and are free; a number is live on
 * at most one account at a time (the partial unique index on phone_numbers.number
 * covers every status but released). Live mode has no carrier in this
 * deployment: searching and ordering answer 502 carrier_unavailable.
 */
import { billableDids, billableNumberEvents } from './billable-dids'
import { checkNumberCap } from './number-cap'
import { type NumberSpace, numberSpaceOf } from './number-space'
import { and, asc, eq, inArray, ne, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import { type Db, queryRows } from '../../db/client'
import { selectRows, selectRowsText, statement } from '../../db/statements'
import { accounts, phoneNumberOrders, phoneNumberRoutes, phoneNumbers } from '../../db/schema'
import { ApiError, badRequest, conflict, notFound, ValidationError } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'

export type PhoneNumberRow = typeof phoneNumbers.$inferSelect
export type PhoneNumberOrderRow = typeof phoneNumberOrders.$inferSelect
type Mode = 'test' | 'live'

export const SANDBOX_PREFIX = '+1500555'
export const SANDBOX_AREA_CODE = '500'
export const SANDBOX_NPA_NXX = '500555'
/** Destinations of the call simulator (+15005550100..0104): never offered, never orderable. */
export const SANDBOX_RESERVED = new Set(['+15005550100', '+15005550101', '+15005550102', '+15005550103', '+15005550104'])

export const isSandboxNumber = (n: string) => /^\+1500555\d{4}$/.test(n)

export const carrierUnavailable = () =>
  new ApiError(
    502,
    'No carrier is reachable from this deployment: live numbers cannot be searched or ordered. Sandbox keys order sandbox numbers.',
    'carrier_unavailable',
  )

export function phoneNumberView(row: PhoneNumberRow) {
  return {
    id: row.id,
    object: 'phone_number' as const,
    account: row.accountId,
    number: row.number,
    status: row.status,
    order: row.orderId,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export function phoneNumberOrderView(row: PhoneNumberOrderRow) {
  return {
    id: row.id,
    object: 'phone_number_order' as const,
    status: row.status,
    order_type: row.orderType,
    phone_numbers: row.numbers,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export interface AvailableQuery {
  area_code?: string
  npa_nxx?: string
  city?: string
  state?: string
  zip?: string
  quantity?: number
}

/**
 * Offers: the lowest sandbox numbers not live on any account of the platform, in ascending order
 * (deterministic). area_code must be 500 and npa_nxx 500555 to match anything;
 * city, state and zip do not narrow the sandbox range and are echoed as locality.
 * Offers are not reservations: ordering is first come, first served.
 */
export async function availablePhoneNumbers(db: Db, owner: { platformId: string; mode: Mode }, q: AvailableQuery) {
  if (owner.mode === 'live') throw carrierUnavailable()
  const space = numberSpaceOf(owner)
  const quantity = q.quantity ?? 10
  if (q.area_code !== undefined && q.area_code !== SANDBOX_AREA_CODE) return []
  if (q.npa_nxx !== undefined && q.npa_nxx !== SANDBOX_NPA_NXX) return []
  const reserved = [...SANDBOX_RESERVED]
  const list = await queryRows<{ number: string }>(
    db,
    sql`
    select ${SANDBOX_PREFIX} || lpad(g.n::text, 4, '0') as number
    from generate_series(0, 9999) as g(n)
    where not exists (
      select 1 from ${phoneNumbers} p
      where p.space = ${space} and p.number = ${SANDBOX_PREFIX} || lpad(g.n::text, 4, '0') and p.status <> 'released'
    )
    and (${SANDBOX_PREFIX} || lpad(g.n::text, 4, '0')) not in (${sql.join(
      reserved.map((r) => sql`${r}`),
      sql`, `,
    )})
    order by g.n
    limit ${quantity}
  `,
  )
  return list.map((r) => ({
    object: 'available_phone_number' as const,
    phone_number: r.number,
    area_code: SANDBOX_AREA_CODE,
    npa_nxx: SANDBOX_NPA_NXX,
    city: q.city ?? null,
    state: q.state?.toUpperCase() ?? null,
    zip: q.zip ?? null,
    country: 'US' as const,
  }))
}

async function claimedSplit(db: Db, accountId: string, space: NumberSpace, numbers: string[]) {
  const live = await db
    .select({ number: phoneNumbers.number, accountId: phoneNumbers.accountId })
    .from(phoneNumbers)
    .where(and(eq(phoneNumbers.space, space), inArray(phoneNumbers.number, numbers), ne(phoneNumbers.status, 'released')))
  const order = new Map(numbers.map((n, i) => [n, i]))
  const byOrder = (a: string, b: string) => order.get(a)! - order.get(b)!
  return {
    already_on_account: live
      .filter((r) => r.accountId === accountId)
      .map((r) => r.number)
      .sort(byOrder),
    in_service_elsewhere: live
      .filter((r) => r.accountId !== accountId)
      .map((r) => r.number)
      .sort(byOrder),
  }
}

const alreadyClaimed = (details: { already_on_account: string[]; in_service_elsewhere: string[] }) =>
  conflict(
    `Some numbers are already live: ${[...details.already_on_account, ...details.in_service_elsewhere].join(', ')}. Nothing was ordered.`,
    'phone_numbers_already_claimed',
    details,
  )

/**
 * Orders numbers, all or nothing. Sandbox numbers order instantly and free: the
 * order is complete and the numbers active. Runs inside the caller's transaction;
 * the account row is locked so concurrent orders of one account check the cap one
 * after the other, and the unique index settles races between accounts.
 */
export async function createPhoneNumberOrder(
  tx: Db,
  clock: Clock,
  account: { id: string; platformId: string; mode: Mode },
  input: { phone_numbers: string[] },
) {
  const numbers = input.phone_numbers
  const dups = numbers.filter((n, i) => numbers.indexOf(n) !== i)
  if (dups.length > 0) throw new ValidationError({ phone_numbers: `must not repeat a number (${[...new Set(dups)].join(', ')})` })
  if (account.mode === 'live') throw carrierUnavailable()
  const outside = numbers.filter((n) => !isSandboxNumber(n))
  if (outside.length > 0) {
    throw badRequest(`Not sandbox numbers (the sandbox range is +15005550000 to +15005559999): ${outside.join(', ')}.`, 'invalid_sandbox_phone_number')
  }
  const reserved = numbers.filter((n) => SANDBOX_RESERVED.has(n))
  if (reserved.length > 0) {
    throw badRequest(`Reserved as call simulator destinations, not orderable: ${reserved.join(', ')}.`, 'invalid_sandbox_phone_number')
  }

  const space = numberSpaceOf(account)
  const claimed = await claimedSplit(tx, account.id, space, numbers)
  if (claimed.already_on_account.length + claimed.in_service_elsewhere.length > 0) throw alreadyClaimed(claimed)
  await checkNumberCap(tx, account.id, numbers.length, `ordering ${numbers.length} more`)

  const now = clock.now()
  const [order] = await tx
    .insert(phoneNumberOrders)
    .values({ id: newId('phoneNumberOrder'), accountId: account.id, status: 'complete', orderType: 'order', numbers, createdAt: now, updatedAt: now })
    .returning()
  const inserted = await tx
    .insert(phoneNumbers)
    // Sorted, so that two orders taking the same numbers lock them in one order (no deadlock).
    .values(
      [...numbers].sort().map((number) => ({
        id: newId('phoneNumber'),
        accountId: account.id,
        mode: account.mode,
        number,
        space,
        status: 'active' as const,
        orderId: order!.id,
        createdAt: now,
        updatedAt: now,
      })),
    )
    .onConflictDoNothing()
    .returning()
  if (inserted.length !== numbers.length) {
    // Another account claimed some of them between our check and our insert: throwing rolls everything back.
    const again = await claimedSplit(tx, account.id, space, numbers)
    const mine = new Set(inserted.map((r) => r.number))
    throw alreadyClaimed({
      already_on_account: again.already_on_account.filter((n) => !mine.has(n)),
      in_service_elsewhere: again.in_service_elsewhere,
    })
  }
  return { order: order!, numbers: inserted }
}

export async function getPhoneNumberOrder(db: Db, accountId: string, id: string): Promise<PhoneNumberOrderRow> {
  const [row] = await db
    .select()
    .from(phoneNumberOrders)
    .where(and(eq(phoneNumberOrders.accountId, accountId), eq(phoneNumberOrders.id, id)))
  if (!row) throw notFound('phone_number_order', id)
  return row
}

export function listPhoneNumberOrders(
  db: Db,
  accountId: string,
  filters: { status?: PhoneNumberOrderRow['status']; order_type?: PhoneNumberOrderRow['orderType'] },
  page: PageRequest,
) {
  const where = and(
    eq(phoneNumberOrders.accountId, accountId),
    filters.status ? eq(phoneNumberOrders.status, filters.status) : undefined,
    filters.order_type ? eq(phoneNumberOrders.orderType, filters.order_type) : undefined,
  )
  return keysetPage<PhoneNumberOrderRow>(db, phoneNumberOrders, where, page)
}

export async function getPhoneNumber(db: Db, accountId: string, id: string): Promise<PhoneNumberRow> {
  const [row] = await db
    .select()
    .from(phoneNumbers)
    .where(and(eq(phoneNumbers.accountId, accountId), eq(phoneNumbers.id, id)))
  if (!row) throw notFound('phone_number', id)
  return row
}

export function listPhoneNumbers(db: Db, accountId: string, filters: { status?: PhoneNumberRow['status'] }, page: PageRequest) {
  const where = and(eq(phoneNumbers.accountId, accountId), filters.status ? eq(phoneNumbers.status, filters.status) : undefined)
  return keysetPage<PhoneNumberRow>(db, phoneNumbers, where, page)
}

/** The account's oldest active number (the call simulator's account side), if any. */
export async function firstActiveNumber(db: Db, accountId: string): Promise<PhoneNumberRow | undefined> {
  // Every test call and click-to-call without a caller ID reads it: a hot path (db/statements.ts).
  const [row] = await selectRowsText(db, phoneNumbers, "where account_id = $1 and status = 'active' order by created_at, id limit 1", [accountId])
  return row
}

// Every call out without a caller ID of its own reads it: one fixed statement.
const OUTBOUND_CALLER_ID = statement<{ number: string | null }>(
  `select coalesce(
      (select n.number from phone_numbers n where n.id = a.default_outbound_did and n.account_id = a.id and n.status = 'active'),
      (select n.number from phone_numbers n where n.account_id = a.id and n.status = 'active' order by n.created_at, n.id limit 1)) as number
    from accounts a where a.id = $1`,
)

/**
 * The number an account's calls out present when the call names none: the number
 * `default_outbound_did` names, else the account's first active number (the spec's
 * "first outbound-enabled number"); undefined when it holds none.
 */
export async function outboundCallerId(db: Db, accountId: string): Promise<string | undefined> {
  return (await OUTBOUND_CALLER_ID.rows(db, [accountId]))[0]?.number ?? undefined
}

/** The account's active number with this E.164 value, if it holds one. */
export async function activeNumberOfAccount(db: Db, accountId: string, number: string): Promise<PhoneNumberRow | undefined> {
  const [row] = await selectRows(db, phoneNumbers, sql`where account_id = ${accountId} and number = ${number} and status = 'active'`)
  return row
}

/**
 * POST /v1/phone-numbers/{id}/reassign: the number moves to another account of the
 * same platform and mode, counting against that account's cap. Its inbound routing
 * stays behind (it named the losing account's objects): on the gaining account the
 * number rings every user until it is routed there. Both accounts are locked in id
 * order, so two reassigns in opposite directions cannot deadlock and a cap is never
 * overrun by racing moves.
 */
export async function reassignPhoneNumber(
  tx: Db,
  clock: Clock,
  from: { id: string; platformId: string; mode: Mode },
  phoneNumberId: string,
  input: { account: string },
  requestId?: string,
): Promise<PhoneNumberRow> {
  const pn = await getPhoneNumber(tx, from.id, phoneNumberId)
  if (input.account === from.id) throw new ValidationError({ account: 'is already the account of this number' })
  const locked = await tx
    .select({ id: accounts.id, platformId: accounts.platformId, mode: accounts.mode, config: accounts.config })
    .from(accounts)
    .where(inArray(accounts.id, [from.id, input.account]))
    .orderBy(asc(accounts.id))
    .for('update')
  const to = locked.find((a) => a.id === input.account)
  // Another platform's account reads exactly like no account at all.
  if (!to || to.platformId !== from.platformId || to.mode !== from.mode) {
    throw new ValidationError({ account: `is not a ${from.mode === 'test' ? 'sandbox' : 'live'} account of this platform` })
  }
  await checkNumberCap(tx, to.id, 1, 'this number')
  // A pending number counts on neither side; an active or inactive one leaves one count and joins the other.
  const billable = pn.status === 'active' || pn.status === 'inactive'
  const counts = billable ? { from: await billableDids(tx, from.id), to: await billableDids(tx, to.id) } : null
  await tx.delete(phoneNumberRoutes).where(eq(phoneNumberRoutes.phoneNumberId, pn.id))
  // The losing account no longer presents it: its calls out fall back to its first active number.
  await tx
    .update(accounts)
    .set({ defaultOutboundDid: null })
    .where(and(eq(accounts.id, from.id), eq(accounts.defaultOutboundDid, pn.id)))
  const [moved] = await tx.update(phoneNumbers).set({ accountId: to.id, updatedAt: clock.now() }).where(eq(phoneNumbers.id, pn.id)).returning()
  if (counts) {
    // The spec: disconnected on the losing account and activated on the gaining one, with the same request.
    await billableNumberEvents(tx, clock, from, 'phone_number.disconnected', [moved!], { previous: counts.from, requestId })
    await billableNumberEvents(tx, clock, { id: to.id, platformId: to.platformId, mode: to.mode }, 'phone_number.activated', [moved!], {
      previous: counts.to,
      requestId,
    })
  }
  return moved!
}
