/**
 * The E911 rule on an address, stricter than a service address's: on top of the
 * address validator's checks (country, state, a ZIP code that exists and is of that
 * state), a dispatcher must find it, so it needs a street and the city must be the
 * ZIP code's city (a city that is not is refused, naming the city to send).
 */
import type { FieldDetails } from '../../errors'
import type { AddressInput, StoredAddress } from '../accounts/account-types'
import { type AddressValidator, cityMismatchReason } from '../accounts/address-validator'

export type E911Check =
  | { ok: true; address: StoredAddress }
  /** `suggested`: the address with the ZIP code's city, when that is all that is wrong. */
  | { ok: false; details: FieldDetails; address: StoredAddress | null; suggested: StoredAddress | null }

export async function checkE911Address(validator: AddressValidator, input: AddressInput): Promise<E911Check> {
  const r = await validator.check(input)
  const details: FieldDetails = r.ok ? {} : { ...r.details }
  if (!input.street?.trim()) details.street = 'is required for E911: a dispatcher needs the street address'
  if (r.ok && r.suggestion) details.city = cityMismatchReason(r.suggestion, input.postal_code)
  if (Object.keys(details).length === 0 && r.ok) return { ok: true, address: r.address }
  const onlyCity = r.ok && r.suggestion !== null && Object.keys(details).length === 1
  return { ok: false, details, address: r.ok ? r.address : null, suggested: onlyCity && r.ok ? r.suggestion!.address : null }
}

/** A stored address as validator input again (to validate a location's address for E911). */
export const inputOf = (a: StoredAddress): AddressInput => ({
  ...(a.address_number ? { address_number: a.address_number } : {}),
  ...(a.street ? { street: a.street } : {}),
  ...(a.unit ? { unit: a.unit } : {}),
  city: a.city,
  state: a.state,
  postal_code: a.postal_code,
  country: a.country,
})
