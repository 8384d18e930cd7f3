/** Locations of an account: physical sites, the main one used for tax and as a fallback. */
import { and, eq } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { accounts, devices, locations } from '../../db/schema'
import { conflict, notFound } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import type { AddressInput } from './account-types'
import { geocodeOrThrow } from './accounts'
import type { Deps } from '../deps'

export type LocationRow = typeof locations.$inferSelect

export function locationView(row: LocationRow) {
  return {
    id: row.id,
    object: 'location' as const,
    account: row.accountId,
    name: row.name,
    status: row.status,
    address: row.address,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export async function createLocation(tx: Db, deps: Deps, accountId: string, input: { name?: string | null; address: AddressInput }) {
  const address = await geocodeOrThrow(deps, 'address', input.address)
  const now = deps.clock.now()
  const [row] = await tx
    .insert(locations)
    .values({ id: newId('location'), accountId, name: input.name ?? null, address, status: 'active', createdAt: now, updatedAt: now })
    .returning()
  return row!
}

export async function getLocation(db: Db, accountId: string, id: string): Promise<LocationRow> {
  const [row] = await db
    .select()
    .from(locations)
    .where(and(eq(locations.accountId, accountId), eq(locations.id, id)))
  if (!row) throw notFound('location', id)
  return row
}

/** `status` is deprecated as a filter: accepted, and it no longer narrows the results. */
export function listLocations(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<LocationRow>(db, locations, eq(locations.accountId, accountId), page)
}

async function isMainLocation(db: Db, accountId: string, id: string) {
  const [acct] = await db.select({ main: accounts.mainLocation }).from(accounts).where(eq(accounts.id, accountId))
  return acct?.main === id
}

export async function updateLocation(
  tx: Db,
  deps: Deps,
  accountId: string,
  id: string,
  input: { name?: string | null; address?: AddressInput; status?: 'active' | 'inactive' },
) {
  await getLocation(tx, accountId, id)
  const set: Partial<typeof locations.$inferInsert> = { updatedAt: deps.clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.address !== undefined) set.address = await geocodeOrThrow(deps, 'address', input.address)
  if (input.status !== undefined) {
    if (input.status === 'inactive' && (await isMainLocation(tx, accountId, id))) {
      throw conflict('The main location cannot be deactivated; make another location the main one first.', 'location_in_use')
    }
    set.status = input.status
  }
  const [row] = await tx
    .update(locations)
    .set(set)
    .where(and(eq(locations.accountId, accountId), eq(locations.id, id)))
    .returning()
  return row!
}

export async function deleteLocation(tx: Db, accountId: string, id: string) {
  await getLocation(tx, accountId, id)
  if (await isMainLocation(tx, accountId, id)) {
    throw conflict('The main location cannot be deleted; make another location the main one first.', 'location_in_use')
  }
  // Devices keep a location for E911 dispatch; deleting it under them would leave them without one.
  const [device] = await tx
    .select({ id: devices.id })
    .from(devices)
    .where(and(eq(devices.accountId, accountId), eq(devices.locationId, id)))
    .limit(1)
  if (device) throw conflict('Devices are placed at this location; move or delete them first.', 'location_in_use')
  await tx.delete(locations).where(and(eq(locations.accountId, accountId), eq(locations.id, id)))
}
