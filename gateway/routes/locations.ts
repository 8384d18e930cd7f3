/** Locations of an account (the main one is made from the address at account creation). */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/accounts'
import { createLocation, deleteLocation, getLocation, listLocations, locationView, updateLocation } from '../../src/services/accounts/locations'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Locations'
const params = t.Object({ location_id: Id() })
const rule = accountLevel()

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
        return listEnvelope(ctx, await listLocations(deps.db, auth.account!.id, pageRequest(ctx)), locationView)
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
      { body: S.CreateLocationRequest, detail: op('createLocation', { summary: 'Create a location', tag: TAG, auth: rule, response: S.Location }) },
    )
    .get('/v1/locations/:location_id', async ({ auth, params }) => locationView(await getLocation(deps.db, auth.account!.id, params.location_id)), {
      params,
      detail: op('getLocation', { summary: 'Get a location', tag: TAG, auth: rule, response: S.Location, errors: { 404: ['location_not_found'] } }),
    })
    .post(
      '/v1/locations/:location_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateLocation(tx, deps, auth.account!.id, params.location_id, body)
          return { resource: row.id, body: locationView(row) }
        }),
      {
        params,
        body: S.UpdateLocationRequest,
        detail: op('updateLocation', {
          summary: 'Update a location',
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
          description: 'The main location, or a location with devices, cannot be deleted (409 location_in_use).',
          tag: TAG,
          auth: rule,
          response: Deleted('location'),
          errors: { 404: ['location_not_found'], 409: ['location_in_use'] },
        }),
      },
    )
}
