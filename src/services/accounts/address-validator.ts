/**
 * Address validation against postal reference data. `AddressValidator` is the job:
 * say whether an address exists as given (country, state, ZIP code, and the ZIP
 * code's city), standardize it and place it. A deployment with an address
 * verification vendor plugs one in behind this interface; the built-in driver,
 * `offlineAddressValidator()`, reads the US ZIP code table that the `zipcodes`
 * package ships (about 42,000 ZIP codes, each with its USPS preferred city, its
 * state and its centroid), so it needs no network.
 *
 * What is refused (field reasons): a country other than the supported ones, a state
 * that is not a US state, territory or military code, a postal code that is not a
 * ZIP code, a ZIP code that does not exist, and a ZIP code of another state. A city
 * that is not the ZIP code's city is not refused here: the check answers the
 * address as given with a suggestion (the same address with the ZIP code's city),
 * and each caller decides (service addresses keep the given city; E911 addresses,
 * which a dispatcher must find, are refused with the suggestion named).
 */
import { createHash } from 'node:crypto'
import type { FieldDetails } from '../../errors'
import type { AddressInput, StoredAddress } from './account-types'

export interface AddressValidator {
  /** Field reasons why the address is not valid, or its stored form and, when its city is not the ZIP code's, a suggestion. */
  check(input: AddressInput): Promise<AddressCheck>
}

export type AddressCheck = { ok: false; details: FieldDetails } | { ok: true; address: StoredAddress; suggestion: CitySuggestion | null }

/** The given city is not the ZIP code's city: `address` is the input with `city` in its place. */
export interface CitySuggestion {
  given: string
  city: string
  address: StoredAddress
}

/** Countries the service has addresses for: the United States (its territories included, as USPS states). */
export const SUPPORTED_COUNTRIES: readonly string[] = ['US']

const ZIP = /^(\d{5})(-\d{4})?$/

interface ZipTable {
  codes: Record<string, { city: string; state: string; latitude: number; longitude: number }>
  stateMap: Record<string, string[]>
}
let table: Promise<ZipTable> | undefined
/** The table is 5 MB of JavaScript: loaded on the first check, not at every process start. */
const zipTable = () => (table ??= import('zipcodes/lib/codes').then((m) => ({ codes: m.codes, stateMap: m.stateMap })))

/** Words that postal city names spell out and people abbreviate. */
const CITY_WORDS: Record<string, string> = {
  ST: 'SAINT',
  STE: 'SAINTE',
  FT: 'FORT',
  MT: 'MOUNT',
  PT: 'POINT',
  N: 'NORTH',
  S: 'SOUTH',
  E: 'EAST',
  W: 'WEST',
  HTS: 'HEIGHTS',
  SPGS: 'SPRINGS',
  JCT: 'JUNCTION',
  VLG: 'VILLAGE',
  CTR: 'CENTER',
}

/** A city name as compared: case, accents, punctuation and common abbreviations set aside ("St. Louis" is "Saint Louis"). */
export function cityKey(city: string): string {
  return city
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toUpperCase()
    .replace(/[.,'’-]/g, ' ')
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => CITY_WORDS[w] ?? w)
    .join(' ')
}

function stored(input: AddressInput, fields: { city: string; state: string; country: string; latitude: number; longitude: number }): StoredAddress {
  const street = input.street?.trim() || null
  const number = input.address_number?.trim() || null
  const unit = input.unit?.trim() || null
  const line1 = [number, street].filter(Boolean).join(' ')
  const formatted = [line1 + (unit ? ` ${unit}` : ''), fields.city, `${fields.state} ${input.postal_code}`, fields.country]
    .filter((p) => p.trim() !== '')
    .join(', ')
  return {
    address_number: number,
    street,
    unit,
    city: fields.city,
    state: fields.state,
    postal_code: input.postal_code,
    country: fields.country,
    place_id: `place_${createHash('sha256').update(formatted.toLowerCase()).digest('hex').slice(0, 24)}`,
    latitude: fields.latitude,
    longitude: fields.longitude,
    formatted_address: formatted,
  }
}

export function offlineAddressValidator(): AddressValidator {
  return {
    async check(input) {
      const { codes, stateMap } = await zipTable()
      const details: FieldDetails = {}
      const country = (input.country ?? 'US').toUpperCase()
      const state = input.state.toUpperCase()
      const city = input.city.trim()
      if (city === '') details.city = 'must not be blank'
      if (!SUPPORTED_COUNTRIES.includes(country)) {
        details.country = `must be one of ${SUPPORTED_COUNTRIES.join(', ')} (ISO 3166-1 alpha-2): addresses outside the United States are not supported`
        return { ok: false, details }
      }
      if (!(state in stateMap)) details.state = 'must be a two-letter US state or territory code'
      const zip = ZIP.exec(input.postal_code)
      const record = zip ? codes[zip[1]!] : undefined
      if (!zip) details.postal_code = 'must be a US ZIP code (12345 or 12345-6789)'
      else if (!record) details.postal_code = `is not a known US ZIP code`
      else if (!details.state && record.state !== state) {
        details.postal_code = `is a ZIP code of ${record.state}, not of ${state}`
        details.state = `does not match postal_code ${zip[1]}, which is in ${record.state}`
      }
      if (Object.keys(details).length > 0 || !record) return { ok: false, details }
      const place = { state, country, latitude: record.latitude, longitude: record.longitude }
      if (cityKey(city) === cityKey(record.city)) return { ok: true, address: stored(input, { ...place, city: record.city }), suggestion: null }
      return {
        ok: true,
        address: stored(input, { ...place, city }),
        suggestion: { given: city, city: record.city, address: stored(input, { ...place, city: record.city }) },
      }
    },
  }
}

/** The field reason for a city that is not its ZIP code's, naming the suggested city. */
export const cityMismatchReason = (s: CitySuggestion, postalCode: string) =>
  `does not match postal_code ${postalCode}, whose city is ${s.city}; send city "${s.city}" (or correct the ZIP code)`
