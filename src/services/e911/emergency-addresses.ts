/**
 * A user's emergency addresses (spec "User Profile": /v1/me/emergency-addresses):
 * where a softphone user is, for emergency dispatch. Each is validated by the E911
 * rule before it is stored (e911-address.ts); `registered_ip` binds one to the
 * network a softphone presented it from, so that an emergency call from that network
 * carries it (emergency-info.ts).
 */
import { newId } from '../../ids'
import { and, eq, ne } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { emergencyAddresses } from '../../db/schema'
import { notFound, ValidationError } from '../../errors'
import { keysetPage, type PageRequest } from '../../pagination'
import type { AddressInput } from '../accounts/account-types'
import type { Deps } from '../deps'
import { checkE911Address } from './e911-address'

export type EmergencyAddressRow = typeof emergencyAddresses.$inferSelect

const newEmergencyAddressId = () => newId('emergencyAddress')

export function emergencyAddressView(row: EmergencyAddressRow) {
  const a = row.address
  return {
    id: row.id,
    object: 'emergency_address' as const,
    address: {
      address_number: a.address_number,
      street: a.street,
      unit: a.unit,
      city: a.city,
      state: a.state,
      postal_code: a.postal_code,
      country: a.country,
      formatted_address: a.formatted_address,
      latitude: a.latitude,
      longitude: a.longitude,
    },
    registered_ip: row.registeredIp,
    created_at: row.createdAt.toISOString(),
  }
}

type Owner = { accountId: string; userId: string }
const ofOwner = (o: Owner) => and(eq(emergencyAddresses.accountId, o.accountId), eq(emergencyAddresses.userId, o.userId))

export function listEmergencyAddresses(db: Db, owner: Owner, page: PageRequest) {
  return keysetPage<EmergencyAddressRow>(db, emergencyAddresses, ofOwner(owner), page)
}

export async function getEmergencyAddress(db: Db, owner: Owner, id: string): Promise<EmergencyAddressRow> {
  const [row] = await db
    .select()
    .from(emergencyAddresses)
    .where(and(ofOwner(owner), eq(emergencyAddresses.id, id)))
  if (!row) throw notFound('emergency_address', id)
  return row
}

/** Validated by the E911 rule first: nothing is stored unless the whole address passes (400 validation_error with each field's reason). */
export async function createEmergencyAddress(tx: Db, deps: Pick<Deps, 'geocoder' | 'clock'>, owner: Owner, input: AddressInput) {
  const check = await checkE911Address(deps.geocoder, { ...input, country: input.country ?? 'US' })
  if (!check.ok) throw new ValidationError(check.details, 'The emergency address could not be validated; details name each field.')
  const now = deps.clock.now()
  const [row] = await tx
    .insert(emergencyAddresses)
    .values({ id: newEmergencyAddressId(), accountId: owner.accountId, userId: owner.userId, address: check.address, createdAt: now, updatedAt: now })
    .returning()
  return row!
}

export async function deleteEmergencyAddress(tx: Db, owner: Owner, id: string): Promise<void> {
  await getEmergencyAddress(tx, owner, id)
  await tx.delete(emergencyAddresses).where(and(ofOwner(owner), eq(emergencyAddresses.id, id)))
}

/** Clears the network binding (registered_ip null); the address stays. */
export async function clearRegisteredIp(tx: Db, deps: Pick<Deps, 'clock'>, owner: Owner, id: string) {
  await getEmergencyAddress(tx, owner, id)
  const [row] = await tx
    .update(emergencyAddresses)
    .set({ registeredIp: null, updatedAt: deps.clock.now() })
    .where(and(ofOwner(owner), eq(emergencyAddresses.id, id)))
    .returning()
  return row!
}

/**
 * A softphone presented this address on connect from `ip`: binds it there. One
 * network has one address per user, so the user's other addresses bound to `ip` are
 * unbound. (For the WebRTC signalling channel's connect, which calls it.)
 */
export async function registerEmergencyAddressIp(tx: Db, deps: Pick<Deps, 'clock'>, owner: Owner, id: string, ip: string) {
  await getEmergencyAddress(tx, owner, id)
  const now = deps.clock.now()
  await tx
    .update(emergencyAddresses)
    .set({ registeredIp: null, updatedAt: now })
    .where(and(ofOwner(owner), eq(emergencyAddresses.registeredIp, ip), ne(emergencyAddresses.id, id)))
  const [row] = await tx
    .update(emergencyAddresses)
    .set({ registeredIp: ip, updatedAt: now })
    .where(and(ofOwner(owner), eq(emergencyAddresses.id, id)))
    .returning()
  return row!
}
