/**
 * Billable-count events (user.created, user.deleted; phone numbers later): live
 * accounts only, one per resource, with the counts before and after and the
 * request that caused the change. Written in the change's own transaction.
 */
import { count, eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { accounts, users } from '../../db/schema'
import { appendEvents } from '../../events/outbox'

export interface BillableAccount {
  id: string
  platformId: string
  mode: 'test' | 'live'
}

/**
 * Runs `change` (which adds or removes users) and records the event. The account
 * row is locked first so concurrent changes count one after the other.
 */
export async function withBillableUserEvent<T>(
  tx: Db,
  clock: Clock,
  account: BillableAccount,
  type: 'user.created' | 'user.deleted',
  requestId: string,
  change: () => Promise<{ userId: string; result: T }>,
): Promise<T> {
  if (account.mode !== 'live') return (await change()).result
  await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, account.id)).for('update')
  const countUsers = async () => (await tx.select({ n: count() }).from(users).where(eq(users.accountId, account.id)))[0]!.n
  const previous = await countUsers()
  const { userId, result } = await change()
  const current = await countUsers()
  await appendEvents(tx, clock, [
    {
      platformId: account.platformId,
      accountId: account.id,
      mode: account.mode,
      type,
      data: { user: userId, previous_billable_users: previous, current_billable_users: current, request: requestId, changed_at: clock.now().toISOString() },
    },
  ])
  return result
}
