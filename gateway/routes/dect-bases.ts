/** DECT bases, their handsets, and the extensions each handset carries (one SIP line per extension). */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/devices'
import { createHandset, deleteDevice, listDevices, updateDevice } from '../../src/services/devices/devices'
import { addHandsetExtension, deleteLine, handsetExtensionView, handsetLineForExtension, listLines } from '../../src/services/devices/lines'
import { getDevice, getHandset } from '../../src/services/devices/records'
import { sealerFor } from '../../src/services/devices/sip-credentials'
import type { GatewayDeps } from '../context'
import { deviceRecordRoutes, deviceViewFor } from './device-records'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'DECT Bases'
const params = t.Object({ id: Id('DECT base ID') })
const handsetParams = t.Object({ id: Id('DECT base ID'), handset_id: Id() })
const extensionParams = t.Object({ id: Id('DECT base ID'), handset_id: Id(), extension_id: Id('extension ID') })
const rule = accountLevel()
const baseNotFound = { 404: ['dect_base_not_found' as const] }
const handsetNotFound = { 404: ['dect_base_not_found' as const, 'handset_not_found' as const] }

export function dectBaseRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/dect-bases' })
    .use(base)
    .use(
      deviceRecordRoutes(deps, base, {
        type: 'dect_base',
        path: '/v1/dect-bases',
        one: 'DectBase',
        many: 'DectBases',
        label: 'DECT base',
        tag: TAG,
        notFound: 'dect_base_not_found',
        create: {
          body: S.CreateDectBaseRequest,
          description: 'vendor and model from the supported catalogue (400 unsupported_vendor otherwise); mac_address unique (409 mac_address_taken).',
          errors: { 400: ['unsupported_vendor'], 409: ['mac_address_taken'] },
        },
        deleteSummary: 'Delete a DECT base and its handsets',
      }),
    )
    .get(
      '/v1/dect-bases/:id/handsets',
      async ({ auth, params, query, listContext }) => {
        await getDevice(deps.db, auth.account!.id, params.id, 'dect_base')
        const ctx = listContext(query)
        const view = await deviceViewFor(deps.db, auth.principal)
        return listEnvelope(ctx, await listDevices(deps.db, auth.account!.id, { base: params.id }, pageRequest(ctx)), (r) => view(r))
      },
      {
        params,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listDectHandsets', { summary: 'List a base’s handsets', tag: TAG, auth: rule, list: S.Device, errors: baseNotFound }),
      },
    )
    .post(
      '/v1/dect-bases/:id/handsets',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createHandset(tx, deps, auth.account!.id, params.id, body)
          return { resource: row.id, body: (await deviceViewFor(tx, auth.principal))(row) }
        }),
      {
        params,
        body: S.CreateHandsetRequest,
        detail: op('createDectHandset', {
          summary: 'Add a handset to a base',
          description:
            'A handset model of the base’s vendor; at most the base model’s handset count (400, details.model). It inherits the account default_button_template when that fits it.',
          tag: TAG,
          auth: rule,
          response: S.Device,
          errors: { 400: ['unsupported_vendor'], 404: ['dect_base_not_found'] },
        }),
      },
    )
    .get(
      '/v1/dect-bases/:id/handsets/:handset_id',
      async ({ auth, params }) => (await deviceViewFor(deps.db, auth.principal))(await getHandsetOf(deps, auth.account!.id, params.id, params.handset_id)),
      { params: handsetParams, detail: op('getDectHandset', { summary: 'Get a handset', tag: TAG, auth: rule, response: S.Device, errors: handsetNotFound }) },
    )
    .post(
      '/v1/dect-bases/:id/handsets/:handset_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          await getHandsetOf({ db: tx }, auth.account!.id, params.id, params.handset_id)
          const row = await updateDevice(tx, deps, auth.account!.id, params.handset_id, body, 'dect_handset')
          return { resource: row.id, body: (await deviceViewFor(tx, auth.principal))(row) }
        }),
      {
        params: handsetParams,
        body: S.UpdateDeviceRequest,
        detail: op('updateDectHandset', {
          summary: 'Update a handset (name, location, button template)',
          tag: TAG,
          auth: rule,
          response: S.Device,
          errors: handsetNotFound,
        }),
      },
    )
    .delete(
      '/v1/dect-bases/:id/handsets/:handset_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await getHandsetOf({ db: tx }, auth.account!.id, params.id, params.handset_id)
          await deleteDevice(tx, deps, auth.account!.id, params.handset_id, 'dect_handset')
          return { resource: params.handset_id, body: { id: params.handset_id, object: 'device', deleted: true } }
        }),
      {
        params: handsetParams,
        detail: op('deleteDectHandset', {
          summary: 'Remove a handset from its base',
          tag: TAG,
          auth: rule,
          response: Deleted('device'),
          errors: handsetNotFound,
        }),
      },
    )
    .get(
      '/v1/dect-bases/:id/handsets/:handset_id/extensions',
      async ({ auth, params, query, listContext }) => {
        await getHandsetOf(deps, auth.account!.id, params.id, params.handset_id)
        const ctx = listContext(query)
        const sealer = await sealerFor(deps.db, auth.principal)
        return listEnvelope(ctx, await listLines(deps.db, params.handset_id, pageRequest(ctx)), (r) => handsetExtensionView(params.id, r, sealer))
      },
      {
        params: handsetParams,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listDectHandsetExtensions', {
          summary: 'List the extensions a handset carries',
          description: 'Each with its SIP line; sip_credentials appear for platform secret keys only.',
          tag: TAG,
          auth: rule,
          list: S.HandsetExtension,
          errors: handsetNotFound,
        }),
      },
    )
    .post(
      '/v1/dect-bases/:id/handsets/:handset_id/extensions',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const baseRow = await getDevice(tx, auth.account!.id, params.id, 'dect_base')
          const handset = await getHandset(tx, auth.account!.id, params.id, params.handset_id)
          const row = await addHandsetExtension(tx, deps, baseRow, handset, body)
          return { resource: handset.id, body: handsetExtensionView(baseRow.id, row, await sealerFor(tx, auth.principal)) }
        }),
      {
        params: handsetParams,
        body: S.CreateHandsetExtensionRequest,
        detail: op('addDectHandsetExtension', {
          summary: 'Put an extension on a handset',
          description:
            'The handset gets a SIP line for the extension, with new credentials. The base’s SIP account count bounds all its handsets together (400, details.extension); the same extension twice on a handset is 409 device_line_exists.',
          tag: TAG,
          auth: rule,
          response: S.HandsetExtension,
          errors: { 404: ['dect_base_not_found', 'handset_not_found'], 409: ['device_line_exists'] },
        }),
      },
    )
    .delete(
      '/v1/dect-bases/:id/handsets/:handset_id/extensions/:extension_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const handset = await getHandsetOf({ db: tx }, auth.account!.id, params.id, params.handset_id)
          const line = await handsetLineForExtension(tx, handset.id, params.extension_id)
          await deleteLine(tx, deps, handset, line.id)
          return { resource: params.handset_id, body: { id: params.extension_id, object: 'handset_extension', deleted: true } }
        }),
      {
        params: extensionParams,
        detail: op('removeDectHandsetExtension', {
          summary: 'Take an extension off a handset (its SIP line goes with it)',
          tag: TAG,
          auth: rule,
          response: Deleted('handset_extension'),
          errors: { 404: ['dect_base_not_found', 'handset_not_found', 'handset_extension_not_found'] },
        }),
      },
    )
}

/** The base first (404 dect_base_not_found), then the handset on it (404 handset_not_found). */
async function getHandsetOf(deps: Pick<GatewayDeps, 'db'>, accountId: string, baseId: string, handsetId: string) {
  await getDevice(deps.db, accountId, baseId, 'dect_base')
  return getHandset(deps.db, accountId, baseId, handsetId)
}
