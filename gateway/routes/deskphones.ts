/** Deskphones: devices of type deskphone, with their lines (SIP accounts) and provisioning history. */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/devices'
import { listProvisioningEvents, provisioningEventView } from '../../src/services/devices/devices'
import { addDeskphoneLine, deleteLine, listLines, updateLine } from '../../src/services/devices/lines'
import { getDevice, lineView } from '../../src/services/devices/records'
import { sealerFor } from '../../src/services/devices/sip-credentials'
import type { GatewayDeps } from '../context'
import { deviceRecordRoutes } from './device-records'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Deskphones'
const params = t.Object({ id: Id('deskphone ID') })
const lineParams = t.Object({ id: Id('deskphone ID'), line_id: Id() })
const rule = accountLevel()
const notFound404 = { 404: ['deskphone_not_found' as const] }
const CREDENTIALS = 'SIP credentials (sip_credentials) appear for platform secret keys only, never for account sessions.'

export function deskphoneRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/deskphones' })
    .use(base)
    .use(
      deviceRecordRoutes(deps, base, {
        type: 'deskphone',
        path: '/v1/deskphones',
        one: 'Deskphone',
        many: 'Deskphones',
        label: 'deskphone',
        tag: TAG,
        notFound: 'deskphone_not_found',
        create: {
          body: S.CreateDeskphoneRequest,
          description:
            'vendor and model from the supported catalogue (400 unsupported_vendor otherwise); mac_address unique (409 mac_address_taken); lines at most the model’s line count, each with a user and an extension of the account. Starts pending_sync.',
          errors: { 400: ['unsupported_vendor'], 409: ['mac_address_taken', 'device_line_exists'] },
        },
        deleteSummary: 'Delete a deskphone',
      }),
    )
    .get(
      '/v1/deskphones/:id/lines',
      async ({ auth, params, query, listContext }) => {
        await getDevice(deps.db, auth.account!.id, params.id, 'deskphone')
        const ctx = listContext(query)
        const sealer = await sealerFor(deps.db, auth.principal)
        return listEnvelope(ctx, await listLines(deps.db, params.id, pageRequest(ctx)), (r) => lineView(r, sealer))
      },
      {
        params,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listDeskphoneLines', {
          summary: 'List a deskphone’s lines',
          description: CREDENTIALS,
          tag: TAG,
          auth: rule,
          list: S.DeviceLine,
          errors: notFound404,
        }),
      },
    )
    .post(
      '/v1/deskphones/:id/lines',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const device = await getDevice(tx, auth.account!.id, params.id, 'deskphone')
          const row = await addDeskphoneLine(tx, deps, device, body)
          return { resource: device.id, body: lineView(row, await sealerFor(tx, auth.principal)) }
        }),
      {
        params,
        body: S.CreateLineRequest,
        detail: op('createDeskphoneLine', {
          summary: 'Add a line to a deskphone',
          description: `The line gets new SIP credentials. A line number beyond the model’s count, or a line past it, is 400 (details.line_number); a number in use is 409 device_line_exists. ${CREDENTIALS}`,
          tag: TAG,
          auth: rule,
          response: S.DeviceLine,
          errors: { 404: ['deskphone_not_found'], 409: ['device_line_exists'] },
        }),
      },
    )
    .post(
      '/v1/deskphones/:id/lines/:line_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const device = await getDevice(tx, auth.account!.id, params.id, 'deskphone')
          const row = await updateLine(tx, deps, device, params.line_id, body)
          return { resource: device.id, body: lineView(row, await sealerFor(tx, auth.principal)) }
        }),
      {
        params: lineParams,
        body: S.UpdateLineRequest,
        detail: op('updateDeskphoneLine', {
          summary: 'Update a deskphone line (user, extension, label)',
          description: CREDENTIALS,
          tag: TAG,
          auth: rule,
          response: S.DeviceLine,
          errors: { 404: ['deskphone_not_found', 'device_line_not_found'] },
        }),
      },
    )
    .delete(
      '/v1/deskphones/:id/lines/:line_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const device = await getDevice(tx, auth.account!.id, params.id, 'deskphone')
          await deleteLine(tx, deps, device, params.line_id)
          return { resource: params.id, body: { id: params.line_id, object: 'device_line', deleted: true } }
        }),
      {
        params: lineParams,
        detail: op('deleteDeskphoneLine', {
          summary: 'Remove a line (its SIP credentials stop working)',
          tag: TAG,
          auth: rule,
          response: Deleted('device_line'),
          errors: { 404: ['deskphone_not_found', 'device_line_not_found'] },
        }),
      },
    )
    .get(
      '/v1/deskphones/:id/provisioning-events',
      async ({ auth, params, query, listContext }) => {
        await getDevice(deps.db, auth.account!.id, params.id, 'deskphone')
        const ctx = listContext(query)
        return listEnvelope(ctx, await listProvisioningEvents(deps.db, params.id, pageRequest(ctx)), provisioningEventView)
      },
      {
        params,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listDeskphoneProvisioningEvents', {
          summary: 'A deskphone’s provisioning history',
          description: 'Configuration fetches, provisioning and its failures, and check-sync requests, newest first.',
          tag: TAG,
          auth: rule,
          list: S.ProvisioningEvent,
          errors: notFound404,
        }),
      },
    )
}
