/**
 * A location's E911 state as its resource shows it (the Location's e911_* fields),
 * and the reads that other parts need of it: onboarding's "an active phone number
 * with E911 provisioned" and the location of an emergency call. Only tables here, so
 * that the locations and accounts services can read it without importing them back.
 */
import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { accounts, locationE911, locations, phoneNumbers } from '../../db/schema'
import type { StoredAddress } from '../accounts/account-types'

export type LocationE911Row = typeof locationE911.$inferSelect
export type E911Status = 'unvalidated' | 'validated' | 'invalid' | 'provisioned'

/** The row applies while the location's address is the one it was checked with. */
export const e911Applies = (row: LocationE911Row | undefined, address: StoredAddress): row is LocationE911Row =>
  row !== undefined && row.placeId === address.place_id

export function e911Fields(address: StoredAddress, row: LocationE911Row | undefined) {
  const applies = e911Applies(row, address)
  const status: E911Status = applies ? row.status : 'unvalidated'
  return {
    e911_status: status,
    e911_provisioned: status === 'provisioned',
    e911_validated_at: applies ? row.validatedAt.toISOString() : null,
    e911_provisioned_at: applies && status === 'provisioned' ? (row.provisionedAt?.toISOString() ?? null) : null,
  }
}

/** The E911 rows of these locations of an account, by location id. */
export async function locationE911Rows(db: Db, accountId: string, locationIds: string[]): Promise<Map<string, LocationE911Row>> {
  if (locationIds.length === 0) return new Map()
  const rows = await db
    .select()
    .from(locationE911)
    .where(and(eq(locationE911.accountId, accountId), inArray(locationE911.locationId, locationIds)))
  return new Map(rows.map((r) => [r.locationId, r]))
}

/** A location's address changed: its E911 validation and provisioning no longer hold. */
export async function forgetLocationE911(tx: Db, accountId: string, locationId: string): Promise<void> {
  await tx.delete(locationE911).where(and(eq(locationE911.accountId, accountId), eq(locationE911.locationId, locationId)))
}

const provisionedHere = sql`${locationE911.status} = 'provisioned' and ${locationE911.placeId} = ${locations.address} ->> 'place_id'`

/**
 * Onboarding condition 3, for a page of accounts: an active phone number whose E911
 * location is provisioned. Numbers carry no location of their own yet, so a number's
 * E911 location is the account's main location (the spec's fallback "for users and
 * numbers with no specific location").
 */
export async function accountsWithE911Number(db: Db, accountIds: string[]): Promise<Set<string>> {
  if (accountIds.length === 0) return new Set()
  const rows = await db
    .selectDistinct({ accountId: accounts.id })
    .from(accounts)
    .innerJoin(locations, eq(locations.id, accounts.mainLocation))
    .innerJoin(locationE911, and(eq(locationE911.locationId, locations.id), provisionedHere))
    .innerJoin(phoneNumbers, and(eq(phoneNumbers.accountId, accounts.id), eq(phoneNumbers.status, 'active')))
    .where(inArray(accounts.id, accountIds))
  return new Set(rows.map((r) => r.accountId))
}
