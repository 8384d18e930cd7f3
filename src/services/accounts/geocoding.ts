/**
 * Address validation and geocoding. Production deployments plug in a geocoding
 * vendor behind `AddressGeocoder`; this machine reaches none, so the built-in
 * driver validates offline (US state and ZIP rules, ISO country codes) and places
 * the address at its state's centroid with a stable place_id.
 */
import { createHash } from 'node:crypto'
import type { AddressInput, StoredAddress } from './account-types'
import type { FieldDetails } from '../../errors'

export interface AddressGeocoder {
  /** The stored form of a valid address, or field reasons why it is not valid. */
  geocode(input: AddressInput): Promise<{ ok: true; address: StoredAddress } | { ok: false; details: FieldDetails }>
}

const US_STATES: Record<string, [number, number]> = {
  AL: [32.8, -86.8],
  AK: [64.7, -152.0],
  AZ: [34.3, -111.7],
  AR: [34.9, -92.4],
  CA: [37.2, -119.4],
  CO: [39.0, -105.5],
  CT: [41.6, -72.7],
  DE: [39.0, -75.5],
  DC: [38.9, -77.0],
  FL: [28.6, -82.4],
  GA: [32.7, -83.4],
  HI: [20.3, -156.4],
  ID: [44.4, -114.6],
  IL: [40.0, -89.2],
  IN: [39.9, -86.3],
  IA: [42.1, -93.5],
  KS: [38.5, -98.4],
  KY: [37.5, -85.3],
  LA: [31.1, -92.0],
  ME: [45.4, -69.2],
  MD: [39.0, -76.8],
  MA: [42.3, -71.8],
  MI: [44.3, -85.4],
  MN: [46.3, -94.3],
  MS: [32.7, -89.7],
  MO: [38.4, -92.5],
  MT: [47.0, -109.6],
  NE: [41.5, -99.8],
  NV: [39.3, -116.6],
  NH: [43.7, -71.6],
  NJ: [40.2, -74.7],
  NM: [34.4, -106.1],
  NY: [42.9, -75.5],
  NC: [35.6, -79.4],
  ND: [47.5, -100.5],
  OH: [40.3, -82.8],
  OK: [35.6, -97.5],
  OR: [43.9, -120.6],
  PA: [40.9, -77.8],
  RI: [41.7, -71.5],
  SC: [33.9, -80.9],
  SD: [44.4, -100.2],
  TN: [35.9, -86.4],
  TX: [31.5, -99.3],
  UT: [39.3, -111.7],
  VT: [44.1, -72.7],
  VA: [37.5, -78.9],
  WA: [47.4, -120.5],
  WV: [38.6, -80.6],
  WI: [44.6, -89.9],
  WY: [43.0, -107.6],
  PR: [18.2, -66.5],
  GU: [13.4, 144.8],
  VI: [18.3, -64.9],
  AS: [-14.3, -170.7],
  MP: [15.2, 145.7],
}

/** Countries the service can place numbers in today: North American Numbering Plan members we serve. */
const SUPPORTED_COUNTRIES = new Set(['US'])

export function offlineGeocoder(): AddressGeocoder {
  return {
    async geocode(input) {
      const details: FieldDetails = {}
      const country = (input.country ?? 'US').toUpperCase()
      const state = input.state.toUpperCase()
      if (!SUPPORTED_COUNTRIES.has(country)) details.country = `must be one of ${[...SUPPORTED_COUNTRIES].join(', ')}`
      else if (!(state in US_STATES)) details.state = 'must be a two-letter US state or territory code'
      if (country === 'US' && !/^\d{5}(-\d{4})?$/.test(input.postal_code)) details.postal_code = 'must be a US ZIP code (12345 or 12345-6789)'
      if (input.city.trim() === '') details.city = 'must not be blank'
      if (Object.keys(details).length > 0) return { ok: false, details }
      const [lat, lng] = US_STATES[state]!
      const line1 = [input.address_number, input.street].filter(Boolean).join(' ')
      const formatted = [line1 + (input.unit ? ` ${input.unit}` : ''), input.city.trim(), `${state} ${input.postal_code}`, country]
        .filter((p) => p.trim() !== '')
        .join(', ')
      const placeId = `place_${createHash('sha256').update(formatted.toLowerCase()).digest('hex').slice(0, 24)}`
      return {
        ok: true,
        address: {
          address_number: input.address_number ?? null,
          street: input.street ?? null,
          unit: input.unit ?? null,
          city: input.city.trim(),
          state,
          postal_code: input.postal_code,
          country,
          place_id: placeId,
          latitude: lat,
          longitude: lng,
          formatted_address: formatted,
        },
      }
    },
  }
}
