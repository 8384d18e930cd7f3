/**
 * What call.emergency carries about where the caller is (machines/call.ts
 * EmergencyInfo, filled in by whoever starts an emergency call): the device and its
 * E911 location, the caller's extension, and whether that location is provisioned
 * for emergency dispatch. Only tables here, so any role's starter of calls can use it.
 */
import { and, asc, eq } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { accounts, devices, deviceUsers, emergencyAddresses, extensions, locationE911, locations } from '../../db/schema'
import { e911Applies } from './location-state'

/** The shape of machines/call.ts EmergencyInfo (src/ does not import machines/). */
export interface EmergencyCallInfo {
  device_id: string | null
  extension: string | null
  location_id: string | null
  location_name: string | null
  location_address: string | null
  e911_provisioned: boolean
}

/**
 * The emergency information of a call placed by `userId`:
 * - from a softphone whose network (`sourceIp`) one of the user's emergency
 *   addresses is bound to (registered_ip): that address, provisioned (emergency
 *   addresses are validated before they are stored), no location;
 * - else from `deviceId` (or, without it, the user's first assigned device): the
 *   device's location, or the account's main location when the device has none
 *   (or the user has no device): the spec's fallback for users with no specific
 *   location. e911_provisioned is that location's provisioning (provision-e911) for
 *   its current address, on an active location.
 * The call machine leaves location_id and location_name out when not provisioned.
 */
export async function emergencyInfoFor(
  db: Db,
  accountId: string,
  userId: string | null,
  opts: { deviceId?: string | null; sourceIp?: string | null } = {},
): Promise<EmergencyCallInfo> {
  const extension = userId ? await firstActiveExtension(db, accountId, userId) : null
  if (userId && opts.sourceIp) {
    const [bound] = await db
      .select({ address: emergencyAddresses.address })
      .from(emergencyAddresses)
      .where(and(eq(emergencyAddresses.accountId, accountId), eq(emergencyAddresses.userId, userId), eq(emergencyAddresses.registeredIp, opts.sourceIp)))
      .orderBy(asc(emergencyAddresses.createdAt))
      .limit(1)
    if (bound) {
      return {
        device_id: opts.deviceId ?? null,
        extension,
        location_id: null,
        location_name: null,
        location_address: bound.address.formatted_address,
        e911_provisioned: true,
      }
    }
  }
  let device: { id: string; locationId: string | null } | undefined
  if (opts.deviceId) {
    ;[device] = await db
      .select({ id: devices.id, locationId: devices.locationId })
      .from(devices)
      .where(and(eq(devices.accountId, accountId), eq(devices.id, opts.deviceId)))
  } else if (userId) {
    ;[device] = await db
      .select({ id: devices.id, locationId: devices.locationId })
      .from(deviceUsers)
      .innerJoin(devices, eq(devices.id, deviceUsers.deviceId))
      .where(and(eq(deviceUsers.accountId, accountId), eq(deviceUsers.userId, userId)))
      .orderBy(asc(deviceUsers.createdAt), asc(deviceUsers.id))
      .limit(1)
  }
  let locationId = device?.locationId ?? null
  if (!locationId) {
    const [acct] = await db.select({ main: accounts.mainLocation }).from(accounts).where(eq(accounts.id, accountId))
    locationId = acct?.main ?? null
  }
  const [loc] = locationId
    ? await db
        .select({ location: locations, e911: locationE911 })
        .from(locations)
        .leftJoin(locationE911, eq(locationE911.locationId, locations.id))
        .where(and(eq(locations.accountId, accountId), eq(locations.id, locationId)))
    : []
  const provisioned =
    !!loc && loc.location.status === 'active' && e911Applies(loc.e911 ?? undefined, loc.location.address) && loc.e911?.status === 'provisioned'
  return {
    device_id: device?.id ?? null,
    extension,
    location_id: loc?.location.id ?? null,
    location_name: loc?.location.name ?? null,
    location_address: loc?.location.address.formatted_address ?? null,
    e911_provisioned: provisioned,
  }
}

async function firstActiveExtension(db: Db, accountId: string, userId: string): Promise<string | null> {
  const [ext] = await db
    .select({ number: extensions.number })
    .from(extensions)
    .where(and(eq(extensions.accountId, accountId), eq(extensions.target, userId), eq(extensions.status, 'active')))
    .orderBy(asc(extensions.createdAt), asc(extensions.id))
    .limit(1)
  return ext?.number ?? null
}
