/** The signed-in user's emergency addresses (spec "User Profile": /v1/me/emergency-addresses), user tokens only. */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as E from '../../src/schemas/e911'
import {
  clearRegisteredIp,
  createEmergencyAddress,
  deleteEmergencyAddress,
  emergencyAddressView,
  getEmergencyAddress,
  listEmergencyAddresses,
} from '../../src/services/e911/emergency-addresses'
import type { GatewayDeps } from '../context'
import { op, userLevel } from '../docs'
import { signedInUser } from '../plugins/auth'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'User Profile'
const rule = userLevel()
const params = t.Object({ emergency_address_id: Id('emergency address ID') })
const notFound = { 404: ['emergency_address_not_found' as const] }

export function emergencyAddressRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/emergency-addresses' })
    .use(base)
    .get(
      '/v1/me/emergency-addresses',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        return listEnvelope(ctx, await listEmergencyAddresses(deps.db, signedInUser(auth.principal), pageRequest(ctx)), emergencyAddressView)
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listMyEmergencyAddresses', { summary: 'The signed-in user’s emergency addresses', tag: TAG, auth: rule, list: E.EmergencyAddress }),
      },
    )
    .post(
      '/v1/me/emergency-addresses',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createEmergencyAddress(tx, deps, signedInUser(auth.principal), body)
          return { resource: row.id, body: emergencyAddressView(row) }
        }),
      {
        body: E.CreateEmergencyAddressRequest,
        detail: op('createMyEmergencyAddress', {
          summary: 'Add an emergency address',
          description:
            'Validated before it is stored, offline against a US ZIP code table: country defaults to US and must be US; state a US state or territory code; postal_code a ZIP code (12345 or 12345-6789) that exists and belongs to that state; street present; city the ZIP code’s own city (its USPS preferred name; case, punctuation and abbreviations such as “St.” for “Saint” do not matter, and the stored address uses the preferred spelling). Any failure is 400 validation_error with details naming each field (a city that is not the ZIP code’s names the city to send), and nothing is stored. The address is stored unbound (registered_ip null); a softphone binds it to its network when it presents it on connect.',
          tag: TAG,
          auth: rule,
          response: E.EmergencyAddress,
        }),
      },
    )
    .get(
      '/v1/me/emergency-addresses/:emergency_address_id',
      async ({ auth, params }) => emergencyAddressView(await getEmergencyAddress(deps.db, signedInUser(auth.principal), params.emergency_address_id)),
      {
        params,
        detail: op('getMyEmergencyAddress', { summary: 'Get an emergency address', tag: TAG, auth: rule, response: E.EmergencyAddress, errors: notFound }),
      },
    )
    .delete(
      '/v1/me/emergency-addresses/:emergency_address_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteEmergencyAddress(tx, signedInUser(auth.principal), params.emergency_address_id)
          return { resource: params.emergency_address_id, body: { id: params.emergency_address_id, object: 'emergency_address', deleted: true } }
        }),
      {
        params,
        detail: op('deleteMyEmergencyAddress', {
          summary: 'Delete an emergency address',
          tag: TAG,
          auth: rule,
          response: Deleted('emergency_address'),
          errors: notFound,
        }),
      },
    )
    .delete(
      '/v1/me/emergency-addresses/:emergency_address_id/registered_ip',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const row = await clearRegisteredIp(tx, deps, signedInUser(auth.principal), params.emergency_address_id)
          return { resource: row.id, body: emergencyAddressView(row) }
        }),
      {
        params,
        detail: op('clearMyEmergencyAddressIp', {
          summary: 'Clear an emergency address’s network binding',
          description: 'Sets registered_ip to null (the address stays); answers the emergency address. Clearing an unbound address changes nothing.',
          tag: TAG,
          auth: rule,
          response: E.EmergencyAddress,
          errors: notFound,
        }),
      },
    )
}
