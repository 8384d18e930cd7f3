/**
 * Billable DIDs (spec, "phone_number.activated, phone_number.disconnected"): the
 * numbers an account holds active or inactive. A change of that count on a live
 * account emits one event per number in the change's own transaction, with the
 * count before and after; sandbox accounts get none. Every path that changes the
 * count (recovery, disconnect, reassign, a completed port) goes through here.
 */
import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { phoneNumbers } from '../../db/schema'
import { appendEvents } from '../../events/outbox'

export interface BillableAccount {
  id: string
  platformId: string
  mode: 'test' | 'live'
}

export async function billableDids(tx: Db, accountId: string): Promise<number> {
  const [row] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(phoneNumbers)
    .where(and(eq(phoneNumbers.accountId, accountId), inArray(phoneNumbers.status, ['active', 'inactive'])))
  return Number(row?.n ?? 0)
}

/**
 * The events of numbers that just joined or left the account's billable count, one
 * per number, counted one after the other from `previous` (the count before the
 * change, read in the same transaction).
 */
export async function billableNumberEvents(
  tx: Db,
  clock: Clock,
  account: BillableAccount,
  type: 'phone_number.activated' | 'phone_number.disconnected',
  numbers: { id: string; number: string }[],
  c: { previous: number; requestId?: string; order?: string },
): Promise<void> {
  if (account.mode !== 'live' || numbers.length === 0) return
  const step = type === 'phone_number.activated' ? 1 : -1
  const at = clock.now().toISOString()
  await appendEvents(
    tx,
    clock,
    numbers.map((pn, i) => ({
      platformId: account.platformId,
      accountId: account.id,
      mode: account.mode,
      type,
      data: {
        phone_number: pn.id,
        number: pn.number,
        ...(c.order ? { order: c.order } : {}),
        previous_billable_dids: c.previous + i * step,
        current_billable_dids: c.previous + (i + 1) * step,
        changed_at: at,
        ...(c.requestId ? { request: c.requestId } : {}),
      },
    })),
  )
}
