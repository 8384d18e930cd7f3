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
import { locationHasPendingHardwareOrders } from '../hardware/hardware-orders'
import { e911Fields, forgetLocationE911, type LocationE911Row, locationE911Rows } from '../e911/location-state'

export type LocationRow = typeof locations.$inferSelect

/** `e911`: the location's E911 row (services/e911), if it has one. */
export function locationView(row: LocationRow, e911?: LocationE911Row) {
  return {
    id: row.id,
    object: 'location' as const,
    account: row.accountId,
    name: row.name,
    status: row.status,
    address: row.address,
    ...e911Fields(row.address, e911),
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

/** Views of locations of one account with their E911 state (one query for them all). */
export async function locationViews(db: Db, accountId: string, rows: LocationRow[]) {
  const e911 = await locationE911Rows(
    db,
    accountId,
    rows.map((r) => r.id),
  )
  return rows.map((r) => locationView(r, e911.get(r.id)))
}

export async function locationResource(db: Db, row: LocationRow) {
  return (await locationViews(db, row.accountId, [row]))[0]!
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
  const before = await getLocation(tx, accountId, id)
  const set: Partial<typeof locations.$inferInsert> = { updatedAt: deps.clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.address !== undefined) {
    set.address = await geocodeOrThrow(deps, 'address', input.address)
    // E911 validation and provisioning were of the old address.
    if (set.address.place_id !== before.address.place_id) await forgetLocationE911(tx, accountId, id)
  }
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
  // Hardware on its way there would arrive at no location (spec: pending hardware orders block the deletion).
  if (await locationHasPendingHardwareOrders(tx, accountId, id)) {
    throw conflict('Hardware orders still pending (submitted or approved) ship to this location; wait for them or cancel them first.', 'location_in_use')
  }
  await tx.delete(locations).where(and(eq(locations.accountId, accountId), eq(locations.id, id)))
}
