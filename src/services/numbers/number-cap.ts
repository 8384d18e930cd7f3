/**
 * The account's phone number cap (config max_phone_numbers): the numbers it holds
 * (not released) plus those its port orders in progress reserve. One check for every
 * way a number arrives: ordering, porting, recovering a released one.
 */
import { and, eq, inArray, ne, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { accounts, phoneNumbers, portOrders } from '../../db/schema'
import { conflict, notFound } from '../../errors'
import { DEFAULT_ACCOUNT_CONFIG } from '../accounts/account-types'

/** Port order statuses that still reserve their numbers. */
export const PORT_ORDERS_RESERVING = ['draft', 'approved', 'submitted', 'exception', 'foc'] as const

/**
 * Locks the account row (concurrent additions are judged one after the other) and
 * refuses with 409 phone_number_limit_exceeded when `adding` more would pass the cap.
 * `exceptPortOrder`: an order being edited, whose own numbers are not counted twice.
 */
export async function checkNumberCap(tx: Db, accountId: string, adding: number, what: string, exceptPortOrder?: string): Promise<void> {
  const [locked] = await tx.select({ config: accounts.config }).from(accounts).where(eq(accounts.id, accountId)).for('update')
  if (!locked) throw notFound('account', accountId)
  const cap = locked.config.max_phone_numbers ?? DEFAULT_ACCOUNT_CONFIG.max_phone_numbers
  const held = await heldCount(tx, accountId)
  const [r] = await tx
    .select({ n: sql<number>`coalesce(sum(jsonb_array_length(${portOrders.details}->'phone_numbers')), 0)::int` })
    .from(portOrders)
    .where(
      and(
        eq(portOrders.accountId, accountId),
        inArray(portOrders.status, [...PORT_ORDERS_RESERVING]),
        exceptPortOrder ? ne(portOrders.id, exceptPortOrder) : undefined,
      ),
    )
  const reserved = Number(r?.n ?? 0)
  if (held + reserved + adding > cap)
    throw conflict(
      `This account holds ${held} phone number${held === 1 ? '' : 's'}${reserved > 0 ? ` and reserves ${reserved} more in port orders in progress,` : ''} and its cap is ${cap}; ${what} would exceed it.`,
      'phone_number_limit_exceeded',
    )
}

/** Numbers held against the cap: every status but released (active, inactive, pending). */
export async function heldCount(db: Db, accountId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(phoneNumbers)
    .where(and(eq(phoneNumbers.accountId, accountId), ne(phoneNumbers.status, 'released')))
  return Number(row?.n ?? 0)
}
