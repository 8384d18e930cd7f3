/** E911 of locations (spec "Locations"): POST /v1/locations/{id}/validate-e911 and .../provision-e911. */
import { Elysia, t } from 'elysia'
import * as S from '../../src/schemas/accounts'
import { Id } from '../../src/schemas/common'
import * as E from '../../src/schemas/e911'
import { provisionedLocationView, provisionLocationE911, validateLocationE911 } from '../../src/services/e911/locations-e911'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Locations'
const params = t.Object({ location_id: Id() })
const rule = accountLevel()

const ADDRESS_RULE =
  'The E911 rule: the country must be US; the state a US state or territory code; postal_code a ZIP code that exists (checked offline against a US ZIP code table) and belongs to that state; the street present; and the city the ZIP code’s own city (its USPS preferred name; case, punctuation and abbreviations such as “St.” for “Saint” do not matter). A service address may keep another city name (the ZIP code decides tax jurisdiction), but an emergency address may not: a dispatcher must find it.'

export function e911Routes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/e911' })
    .use(base)
    .post(
      '/v1/locations/:location_id/validate-e911',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const body = await validateLocationE911(tx, deps, auth.account!.id, params.location_id)
          return { resource: params.location_id, body }
        }),
      {
        params,
        detail: op('validateLocationE911', {
          summary: 'Validate a location’s address for E911',
          description: `${ADDRESS_RULE} Checks the location’s current address and records the outcome on the location (e911_status validated or invalid, e911_validated_at; a location already provisioned for this address stays provisioned). A problem is an answer, not an error: valid false with details naming each field, and, when the city is the only problem, suggested_address: the same address with the ZIP code’s city, to send back with POST /v1/locations/{id} before provisioning. No body.`,
          tag: TAG,
          auth: rule,
          response: E.E911Validation,
          errors: { 404: ['location_not_found'] },
        }),
      },
    )
    .post(
      '/v1/locations/:location_id/provision-e911',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const r = await provisionLocationE911(tx, deps, auth.account!, params.location_id)
          return { resource: params.location_id, body: provisionedLocationView(r) }
        }),
      {
        params,
        detail: op('provisionLocationE911', {
          summary: 'Provision a location for E911',
          description: `Registers the location’s address for emergency dispatch and answers the location with e911_status provisioned, e911_provisioned true and e911_provisioned_at. The address is validated first by the E911 rule (validate-e911 need not be called before, though it answers the suggested address): 422 emergency_address_invalid with details naming each field when it fails, and nothing changes. ${ADDRESS_RULE} Provisioning an address already provisioned changes nothing (same e911_provisioned_at). Changing the location’s address later makes it unvalidated again: provision the new address. Emergency calls from devices at a provisioned location (and, for numbers and users with no location, from the main location) carry e911_provisioned true with location_id and location_name; an account’s onboarding needs its main location provisioned and an active number. Sandbox accounts are provisioned at once; with a live key the answer is 502 carrier_unavailable (no E911 provider is reachable from this deployment). 409 location_inactive for an inactive location. No body.`,
          tag: TAG,
          auth: rule,
          response: S.Location,
          errors: { 404: ['location_not_found'], 409: ['location_inactive'], 422: ['emergency_address_invalid'], 502: ['carrier_unavailable'] },
        }),
      },
    )
}
