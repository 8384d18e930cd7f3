/**
 * A phone number's inbound routing (`POST /v1/phone-numbers/{id}/route`): a
 * routing target of the account, no target (the spec's default: every user of the
 * account rings), or nothing (inbound calls are dropped).
 */
import { eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { phoneNumberRoutes } from '../../db/schema'
import { ValidationError } from '../../errors'
import { getPhoneNumber } from '../numbers/phone-numbers'
import { guardedWrite, type RoutingCheck, targetOf } from './config'

export type RouteMode = 'target' | 'ring_all' | 'drop'

export interface NumberRoute {
  object: 'phone_number_route'
  phone_number: string
  number: string
  mode: RouteMode
  target: string | null
  updated_at: string | null
}

export async function getNumberRoute(db: Db, accountId: string, phoneNumberId: string): Promise<NumberRoute> {
  const pn = await getPhoneNumber(db, accountId, phoneNumberId)
  const [row] = await db.select().from(phoneNumberRoutes).where(eq(phoneNumberRoutes.phoneNumberId, pn.id))
  return {
    object: 'phone_number_route',
    phone_number: pn.id,
    number: pn.number,
    mode: row?.mode ?? 'ring_all',
    target: row?.target ?? null,
    updated_at: row ? row.updatedAt.toISOString() : null,
  }
}

/**
 * `mode` defaults from `target`: a target routes there, none (or null) rings every
 * user. `drop` takes no target.
 */
export async function setNumberRoute(
  tx: Db,
  clock: Clock,
  check: RoutingCheck,
  accountId: string,
  phoneNumberId: string,
  input: { mode?: RouteMode; target?: string | null },
) {
  const pn = await getPhoneNumber(tx, accountId, phoneNumberId)
  const target = input.target ?? null
  const mode: RouteMode = input.mode ?? (target ? 'target' : 'ring_all')
  if (mode === 'target' && !target) throw new ValidationError({ target: 'is required when mode is target' })
  if (mode !== 'target' && target) throw new ValidationError({ target: `must be omitted or null when mode is ${mode}` })
  if (target && !targetOf(target)) throw new ValidationError({ target: 'is not a routable resource of this account' })
  const now = clock.now()
  await guardedWrite(tx, check, accountId, { collection: 'phoneNumbers', id: pn.id }, () =>
    tx
      .insert(phoneNumberRoutes)
      .values({ phoneNumberId: pn.id, accountId, mode, target, updatedAt: now })
      .onConflictDoUpdate({ target: phoneNumberRoutes.phoneNumberId, set: { mode, target, updatedAt: now } }),
  )
  return getNumberRoute(tx, accountId, pn.id)
}
