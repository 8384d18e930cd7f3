/** Locations of an account (the main one is made from the address at account creation). */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/accounts'
import {
  createLocation,
  deleteLocation,
  getLocation,
  listLocations,
  locationResource,
  locationView,
  locationViews,
  updateLocation,
} from '../../src/services/accounts/locations'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Locations'
const params = t.Object({ location_id: Id() })
const rule = accountLevel()
const ADDRESS_NOTE =
  'The address is validated offline against a US ZIP code table: 400 validation_error when the country is not US, the state is not a US state or territory code, or postal_code is not a ZIP code that exists in that state (details name each field). A city other than the ZIP code’s own is kept as given (the ZIP code decides the tax jurisdiction); E911 is stricter: POST .../validate-e911 answers the city to use. A new location’s e911_status is unvalidated.'

export function locationRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/locations' })
    .use(base)
    .get(
      '/v1/locations',
      async ({ auth, query, listContext }) => {
        // `status` is deprecated: accepted, and no longer narrows the results; it is
        // left out of the list's identity so cursors work with or without it.
        const { status: _deprecated, ...rest } = query
        const ctx = listContext(rest)
        const page = await listLocations(deps.db, auth.account!.id, pageRequest(ctx))
        const views = new Map((await locationViews(deps.db, auth.account!.id, page.rows)).map((v) => [v.id, v]))
        return listEnvelope(ctx, page, (row) => views.get(row.id)!)
      },
      {
        query: t.Object(
          {
            ...listQuery,
            status: t.Optional(t.Union([t.Literal('active'), t.Literal('inactive')], { deprecated: true, description: 'deprecated; accepted, no effect' })),
          },
          { additionalProperties: false },
        ),
        detail: op('listLocations', { summary: 'List locations', tag: TAG, auth: rule, list: S.Location }),
      },
    )
    .post(
      '/v1/locations',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createLocation(tx, deps, auth.account!.id, body)
          return { resource: row.id, body: locationView(row) }
        }),
      {
        body: S.CreateLocationRequest,
        detail: op('createLocation', {
          summary: 'Create a location',
          description: ADDRESS_NOTE,
          tag: TAG,
          auth: rule,
          response: S.Location,
        }),
      },
    )
    .get(
      '/v1/locations/:location_id',
      async ({ auth, params }) => locationResource(deps.db, await getLocation(deps.db, auth.account!.id, params.location_id)),
      {
        params,
        detail: op('getLocation', { summary: 'Get a location', tag: TAG, auth: rule, response: S.Location, errors: { 404: ['location_not_found'] } }),
      },
    )
    .post(
      '/v1/locations/:location_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateLocation(tx, deps, auth.account!.id, params.location_id, body)
          return { resource: row.id, body: await locationResource(tx, row) }
        }),
      {
        params,
        body: S.UpdateLocationRequest,
        detail: op('updateLocation', {
          summary: 'Update a location',
          description: `${ADDRESS_NOTE} A new address makes the location’s E911 state unvalidated (e911_provisioned false): provision it again.`,
          tag: TAG,
          auth: rule,
          response: S.Location,
          errors: { 404: ['location_not_found'], 409: ['location_in_use'] },
        }),
      },
    )
    .delete(
      '/v1/locations/:location_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteLocation(tx, auth.account!.id, params.location_id)
          return { resource: params.location_id, body: { id: params.location_id, object: 'location', deleted: true } }
        }),
      {
        params,
        detail: op('deleteLocation', {
          summary: 'Delete a location',
          description: 'The main location, a location with devices, or one that pending hardware orders ship to cannot be deleted (409 location_in_use).',
          tag: TAG,
          auth: rule,
          response: Deleted('location'),
          errors: { 404: ['location_not_found'], 409: ['location_in_use'] },
        }),
      },
    )
}
