/**
 * The phone-number lifecycle after ordering: status changes (active, inactive),
 * recovering a released number, disconnecting (a disconnect order, refused within
 * the 30-day minimum hold) and the SMS port-out window. Release and recovery are
 * records of the platform (the number ages in its pool), so they work with live
 * and sandbox keys alike.
 *
 * Billable DIDs are the numbers an account holds active or inactive. A change of
 * that count on a live account emits phone_number.activated / .disconnected in the
 * change's own transaction (./billable-dids.ts; none for sandbox accounts).
 */
import { checkNumberCap } from './number-cap'
import { and, eq, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { accounts, phoneNumberOrders, phoneNumberRoutes, phoneNumbers } from '../../db/schema'
import { conflict, notFound } from '../../errors'
import { billableDids, billableNumberEvents } from './billable-dids'
import { newId } from '../../ids'
import { getPhoneNumber, type PhoneNumberRow } from './phone-numbers'

export const MINIMUM_HOLD_DAYS = 30
export const SMS_PORT_OUT_WINDOW_HOURS = 72
const DAY_MS = 86_400_000

export interface LifecycleAccount {
  id: string
  platformId: string
  mode: 'test' | 'live'
}

/** Locks the account row: changes of one account's numbers (and their billable counts) are made one after the other. */
async function lockAccount(tx: Db, accountId: string): Promise<void> {
  const [row] = await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).for('update')
  if (!row) throw notFound('account', accountId)
}

export const holdEndsAt = (pn: PhoneNumberRow) => new Date((pn.activatedAt ?? pn.createdAt).getTime() + MINIMUM_HOLD_DAYS * DAY_MS)

/**
 * POST /v1/phone-numbers/{id}. status active on a released number recovers it:
 * the cap (held numbers plus port reservations) must leave room, and the number
 * must not have gone live anywhere since (409, no code). active and inactive switch
 * freely; a pending number waits for its order; released is reached only by a
 * disconnect. Setting the current status changes nothing.
 */
export async function updatePhoneNumber(
  tx: Db,
  clock: Clock,
  account: LifecycleAccount,
  id: string,
  input: { status?: 'active' | 'inactive' },
  requestId: string,
): Promise<PhoneNumberRow> {
  await lockAccount(tx, account.id)
  const pn = await getPhoneNumber(tx, account.id, id)
  const to = input.status
  if (to === undefined || to === pn.status) return pn
  if (pn.status === 'pending') throw conflict(`Phone number ${pn.id} is pending: its status changes when its order completes.`)
  const now = clock.now()
  if (pn.status !== 'released') {
    const [row] = await tx.update(phoneNumbers).set({ status: to, updatedAt: now }).where(eq(phoneNumbers.id, pn.id)).returning()
    return row!
  }
  if (to !== 'active') throw conflict(`Phone number ${pn.id} is released: it can only be recovered with status active.`)
  await checkNumberCap(tx, account.id, 1, 'recovering 1 more')
  const previous = await billableDids(tx, account.id)
  const [live] = await tx
    .select({ id: phoneNumbers.id })
    .from(phoneNumbers)
    .where(and(eq(phoneNumbers.space, pn.space), eq(phoneNumbers.number, pn.number), sql`${phoneNumbers.status} <> 'released'`))
  if (live) throw conflict(`Phone number ${pn.number} is not recoverable: it is live again since it was released.`)
  const [row] = await tx
    .update(phoneNumbers)
    .set({ status: 'active', releasedAt: null, activatedAt: now, updatedAt: now })
    .where(and(eq(phoneNumbers.id, pn.id), eq(phoneNumbers.status, 'released')))
    .returning()
    .catch((e: unknown) => {
      // Another account took the number between the check and the update (the unique index on live numbers).
      if (String((e as { code?: string })?.code ?? e).includes('23505')) throw conflict(`Phone number ${pn.number} is not recoverable: it went live elsewhere.`)
      throw e
    })
  if (!row) throw conflict(`Phone number ${pn.number} is not recoverable.`)
  await billableNumberEvents(tx, clock, account, 'phone_number.activated', [row], { previous, requestId })
  return row
}

/**
 * POST /v1/phone-numbers/{id}/disconnect: a disconnect order (order_type
 * disconnect, complete at once) releases the number. Refused (409, no code) within
 * the 30-day minimum hold from when the number became active on the account, for a
 * pending number and for one already released. The number's routing goes with it,
 * its SMS port-out window locks, and an account whose default outbound caller ID it
 * was falls back to the first outbound-enabled number.
 */
export async function disconnectPhoneNumber(tx: Db, clock: Clock, account: LifecycleAccount, id: string, requestId: string) {
  await lockAccount(tx, account.id)
  const pn = await getPhoneNumber(tx, account.id, id)
  if (pn.status === 'released') throw conflict(`Phone number ${pn.id} is already released.`)
  if (pn.status === 'pending') throw conflict(`Phone number ${pn.id} is pending: it can be disconnected once its order completes.`)
  const now = clock.now()
  const ends = holdEndsAt(pn)
  if (now < ends) {
    throw conflict(`Phone number ${pn.number} is within its ${MINIMUM_HOLD_DAYS}-day minimum hold: it can be disconnected from ${ends.toISOString()}.`)
  }
  const previous = await billableDids(tx, account.id)
  const [order] = await tx
    .insert(phoneNumberOrders)
    .values({
      id: newId('phoneNumberOrder'),
      accountId: account.id,
      status: 'complete',
      orderType: 'disconnect',
      numbers: [pn.number],
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  const [row] = await tx
    .update(phoneNumbers)
    .set({ status: 'released', releasedAt: now, smsPortOutOpenedAt: null, smsPortOutExpiresAt: null, updatedAt: now })
    .where(eq(phoneNumbers.id, pn.id))
    .returning()
  await tx.delete(phoneNumberRoutes).where(eq(phoneNumberRoutes.phoneNumberId, pn.id))
  await tx
    .update(accounts)
    .set({ defaultOutboundDid: null })
    .where(and(eq(accounts.id, account.id), eq(accounts.defaultOutboundDid, pn.id)))
  await billableNumberEvents(tx, clock, account, 'phone_number.disconnected', [row!], { previous, requestId, order: order!.id })
  return { order: order!, phoneNumber: row! }
}

export function smsPortOutView(pn: PhoneNumberRow, now: Date) {
  const open = pn.smsPortOutExpiresAt !== null && pn.smsPortOutExpiresAt > now
  return {
    object: 'sms_port_out' as const,
    phone_number: pn.id,
    number: pn.number,
    status: open ? ('open' as const) : ('locked' as const),
    opened_at: open ? pn.smsPortOutOpenedAt!.toISOString() : null,
    expires_at: open ? pn.smsPortOutExpiresAt!.toISOString() : null,
  }
}

/**
 * POST /v1/phone-numbers/{id}/sms-port-out: open (or renew) the window for
 * SMS_PORT_OUT_WINDOW_HOURS, or lock it. Only a number in service on the account
 * (active or inactive) can open its window (409, no code, otherwise); locking is
 * always allowed.
 */
export async function setSmsPortOut(tx: Db, clock: Clock, accountId: string, id: string, input: { status: 'open' | 'locked' }) {
  const pn = await getPhoneNumber(tx, accountId, id)
  const now = clock.now()
  if (input.status === 'open' && (pn.status === 'released' || pn.status === 'pending')) {
    throw conflict(`Phone number ${pn.id} is ${pn.status}: its SMS port-out window cannot be opened.`)
  }
  const values =
    input.status === 'open'
      ? { smsPortOutOpenedAt: now, smsPortOutExpiresAt: new Date(now.getTime() + SMS_PORT_OUT_WINDOW_HOURS * 3_600_000), updatedAt: now }
      : { smsPortOutOpenedAt: null, smsPortOutExpiresAt: null, updatedAt: now }
  const [row] = await tx.update(phoneNumbers).set(values).where(eq(phoneNumbers.id, pn.id)).returning()
  return smsPortOutView(row!, now)
}
