/**
 * Address validation and geocoding. Production deployments plug in a geocoding
 * vendor behind `AddressGeocoder`; this machine reaches none, so the built-in
 * driver is the offline address validator (address-validator.ts: the country, the
 * state, a ZIP code that exists and is of that state) and places the address at its
 * ZIP code's centroid with a stable place_id. A service address (an account's, a
 * location's) whose city is not its ZIP code's city keeps the city given: the ZIP
 * code decides the tax jurisdiction, and the E911 operations say when a city must
 * be corrected.
 */
import type { AddressInput, StoredAddress } from './account-types'
import { type AddressValidator, offlineAddressValidator } from './address-validator'
import type { FieldDetails } from '../../errors'

export interface AddressGeocoder extends AddressValidator {
  /** The stored form of a valid address, or field reasons why it is not valid. */
  geocode(input: AddressInput): Promise<{ ok: true; address: StoredAddress } | { ok: false; details: FieldDetails }>
}

export function offlineGeocoder(validator: AddressValidator = offlineAddressValidator()): AddressGeocoder {
  return {
    check: (input) => validator.check(input),
    async geocode(input) {
      const r = await validator.check(input)
      return r.ok ? { ok: true, address: r.address } : r
    },
  }
}
