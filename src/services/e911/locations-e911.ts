/**
 * E911 of locations (spec "Locations": validate-e911, provision-e911). validate-e911
 * checks the location's address by the E911 rule (e911-address.ts) and records the
 * outcome on the location; provision-e911 registers the address for emergency
 * dispatch. Sandbox accounts are provisioned at once; live accounts need an E911
 * provider, which this deployment has none of (502 carrier_unavailable, as live
 * number ordering). The state holds for the address it was checked with: changing the
 * location's address makes it unvalidated again (locations.ts).
 */
import { and, eq } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { locationE911 } from '../../db/schema'
import { ApiError, conflict } from '../../errors'
import { getLocation, type LocationRow, locationView } from '../accounts/locations'
import type { Deps } from '../deps'
import { checkE911Address, inputOf } from './e911-address'
import { e911Applies, type LocationE911Row } from './location-state'

async function e911RowOf(tx: Db, accountId: string, locationId: string): Promise<LocationE911Row | undefined> {
  const [row] = await tx
    .select()
    .from(locationE911)
    .where(and(eq(locationE911.accountId, accountId), eq(locationE911.locationId, locationId)))
  return row
}

async function writeE911(tx: Db, values: typeof locationE911.$inferInsert): Promise<LocationE911Row> {
  const { locationId: _key, ...set } = values
  const [row] = await tx.insert(locationE911).values(values).onConflictDoUpdate({ target: locationE911.locationId, set }).returning()
  return row!
}

export async function validateLocationE911(tx: Db, deps: Pick<Deps, 'geocoder' | 'clock'>, accountId: string, locationId: string) {
  const location = await getLocation(tx, accountId, locationId)
  const before = await e911RowOf(tx, accountId, locationId)
  const check = await checkE911Address(deps.geocoder, inputOf(location.address))
  const now = deps.clock.now()
  // Validating again keeps a provisioning of this same address.
  const stillProvisioned = check.ok && e911Applies(before, location.address) && before.status === 'provisioned'
  const row = await writeE911(tx, {
    locationId,
    accountId,
    status: check.ok ? (stillProvisioned ? 'provisioned' : 'validated') : 'invalid',
    placeId: location.address.place_id,
    details: check.ok ? null : check.details,
    validatedAt: now,
    provisionedAt: stillProvisioned ? before!.provisionedAt : null,
    updatedAt: now,
  })
  return {
    object: 'e911_validation' as const,
    location: location.id,
    valid: check.ok,
    address: location.address,
    suggested_address: check.ok ? null : check.suggested,
    details: check.ok ? {} : check.details,
    e911_status: row.status,
    validated_at: now.toISOString(),
  }
}

export async function provisionLocationE911(
  tx: Db,
  deps: Pick<Deps, 'geocoder' | 'clock'>,
  account: { id: string; mode: 'test' | 'live' },
  locationId: string,
): Promise<{ location: LocationRow; e911: LocationE911Row }> {
  const location = await getLocation(tx, account.id, locationId)
  if (account.mode === 'live') {
    throw new ApiError(
      502,
      'No E911 provider is reachable from this deployment: live locations cannot be provisioned for emergency dispatch.',
      'carrier_unavailable',
    )
  }
  if (location.status !== 'active') throw conflict('The location is inactive; activate it before provisioning E911.', 'location_inactive')
  const check = await checkE911Address(deps.geocoder, inputOf(location.address))
  if (!check.ok) {
    throw new ApiError(
      422,
      'The location’s address cannot be provisioned for E911; details name each field (POST .../validate-e911 also answers a suggested address).',
      'emergency_address_invalid',
      check.details,
    )
  }
  const before = await e911RowOf(tx, account.id, locationId)
  const now = deps.clock.now()
  // Provisioning the same address again changes nothing: the first provisioning's time stays.
  const already = e911Applies(before, location.address) && before.status === 'provisioned'
  const e911 = await writeE911(tx, {
    locationId,
    accountId: account.id,
    status: 'provisioned',
    placeId: location.address.place_id,
    details: null,
    validatedAt: already ? before!.validatedAt : now,
    provisionedAt: already ? before!.provisionedAt : now,
    updatedAt: already ? before!.updatedAt : now,
  })
  return { location, e911 }
}

export const provisionedLocationView = (r: { location: LocationRow; e911: LocationE911Row }) => locationView(r.location, r.e911)
