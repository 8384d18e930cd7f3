/** Devices of every type: the record, its users, button overrides and effective buttons, compatible templates, check-sync. */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/devices'
import {
  effectiveButtons,
  listCompatibleTemplates,
  deleteOverride,
  listOverrides,
  overrideView,
  putOverride,
  templateView,
} from '../../src/services/devices/buttons'
import {
  assignUser,
  createAnyDevice,
  deleteDevice,
  listDevices,
  listDeviceUsers,
  requestCheckSync,
  unassignUser,
  updateDevice,
  usersOfDevices,
} from '../../src/services/devices/devices'
import { linesOf } from '../../src/services/devices/lines'
import { deviceUserView, getDevice } from '../../src/services/devices/records'
import type { GatewayDeps } from '../context'
import { deviceViewFor } from './device-records'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Devices'
const params = t.Object({ id: Id('device ID') })
const rule = accountLevel()
const notFound404 = { 404: ['device_not_found' as const] }

export function deviceRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/devices' })
    .use(base)
    .get(
      '/v1/devices',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listDevices(deps.db, auth.account!.id, { type: query.type }, pageRequest(ctx))
        const ids = page.rows.map((r) => r.id)
        const expand = query['expand[]'] ?? []
        const users = expand.includes('users') ? await usersOfDevices(deps.db, ids) : undefined
        const lines = expand.includes('lines') ? await linesOf(deps.db, ids) : undefined
        const view = await deviceViewFor(deps.db, auth.principal)
        return listEnvelope(ctx, page, (row) => view(row, { users: users?.get(row.id), lines: lines?.get(row.id) }))
      },
      {
        query: t.Object({ ...listQuery, type: t.Optional(S.DeviceTypeSchema), 'expand[]': expandQuery('users', 'lines') }, { additionalProperties: false }),
        detail: op('listDevices', {
          summary: 'List devices',
          description: 'Deskphones, DECT bases and handsets, newest first. expand[]=lines shows SIP credentials to platform secret keys only.',
          tag: TAG,
          auth: rule,
          list: S.Device,
        }),
      },
    )
    .post(
      '/v1/devices',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createAnyDevice(tx, deps, auth.account!.id, body)
          return { resource: row.id, body: (await deviceViewFor(tx, auth.principal))(row) }
        }),
      {
        body: S.CreateDeviceRequest,
        detail: op('createDevice', {
          summary: 'Create a device',
          description:
            'A deskphone or DECT base needs a unique MAC address (409 mac_address_taken); a DECT handset needs its base. A device created without a location stays unset. New deskphones and handsets inherit the account default_button_template when it fits them. An unknown vendor or model is 400 unsupported_vendor.',
          tag: TAG,
          auth: rule,
          response: S.Device,
          errors: { 400: ['unsupported_vendor'], 409: ['mac_address_taken', 'device_line_exists'] },
        }),
      },
    )
    .get('/v1/devices/:id', async ({ auth, params }) => (await deviceViewFor(deps.db, auth.principal))(await getDevice(deps.db, auth.account!.id, params.id)), {
      params,
      detail: op('getDevice', { summary: 'Get a device', tag: TAG, auth: rule, response: S.Device, errors: notFound404 }),
    })
    .post(
      '/v1/devices/:id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateDevice(tx, deps, auth.account!.id, params.id, body)
          return { resource: row.id, body: (await deviceViewFor(tx, auth.principal))(row) }
        }),
      {
        params,
        body: S.UpdateDeviceRequest,
        detail: op('updateDevice', {
          summary: 'Update a device (and set it back to pending_sync)',
          description:
            'Any update, including an empty one or status pending_sync, sets the device back to pending_sync: the phone must fetch its configuration again.',
          tag: TAG,
          auth: rule,
          response: S.Device,
          errors: notFound404,
        }),
      },
    )
    .delete(
      '/v1/devices/:id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const row = await deleteDevice(tx, deps, auth.account!.id, params.id)
          return { resource: row.id, body: { id: row.id, object: 'device', deleted: true } }
        }),
      {
        params,
        detail: op('deleteDevice', {
          summary: 'Delete a device',
          description: 'Deleting a DECT base deletes its handsets.',
          tag: TAG,
          auth: rule,
          response: Deleted('device'),
          errors: notFound404,
        }),
      },
    )
    .post(
      '/v1/devices/:id/status/check-sync',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const row = await requestCheckSync(tx, deps, auth.account!.id, params.id)
          return { resource: row.id, body: (await deviceViewFor(tx, auth.principal))(row) }
        }),
      {
        params,
        detail: op('checkSyncDevice', {
          summary: 'Ask the phone to reload its configuration',
          description:
            'Marks the device pending_sync and records a check_sync_requested provisioning event; a registered phone is also sent a SIP NOTIFY (Event: check-sync) at each live binding, best effort. The phone leaves pending_sync by fetching its file.',
          tag: TAG,
          auth: rule,
          response: S.Device,
          errors: notFound404,
        }),
      },
    )
    .get(
      '/v1/devices/:id/users',
      async ({ auth, params, query, listContext }) => {
        await getDevice(deps.db, auth.account!.id, params.id)
        const ctx = listContext(query)
        return listEnvelope(ctx, await listDeviceUsers(deps.db, params.id, pageRequest(ctx)), deviceUserView)
      },
      {
        params,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listDeviceUsers', { summary: 'List the users assigned to a device', tag: TAG, auth: rule, list: S.DeviceUser, errors: notFound404 }),
      },
    )
    .post(
      '/v1/devices/:id/users',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await assignUser(tx, deps, auth.account!.id, params.id, body.user)
          return { resource: params.id, body: deviceUserView(row) }
        }),
      {
        params,
        body: S.AssignDeviceUserRequest,
        detail: op('assignDeviceUser', {
          summary: 'Assign a user to a device',
          description: 'The user must be a user of the account; a DECT base takes no users (its handsets do).',
          tag: TAG,
          auth: rule,
          response: S.DeviceUser,
          errors: { 404: ['device_not_found'], 409: ['device_user_exists'] },
        }),
      },
    )
    .delete(
      '/v1/devices/:id/users/:user_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const row = await unassignUser(tx, auth.account!.id, params.id, params.user_id)
          return { resource: params.id, body: { id: row.id, object: 'device_user', deleted: true } }
        }),
      {
        params: t.Object({ id: Id('device ID'), user_id: Id() }),
        detail: op('removeDeviceUser', {
          summary: 'Remove a user from a device',
          tag: TAG,
          auth: rule,
          response: Deleted('device_user'),
          errors: { 404: ['device_not_found', 'device_user_not_found'] },
        }),
      },
    )
    .get(
      '/v1/devices/:id/button_overrides',
      async ({ auth, params, query, listContext }) => {
        await getDevice(deps.db, auth.account!.id, params.id)
        const ctx = listContext(query)
        return listEnvelope(ctx, await listOverrides(deps.db, params.id, pageRequest(ctx)), overrideView)
      },
      {
        params,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listButtonOverrides', { summary: 'List a device’s button overrides', tag: TAG, auth: rule, list: S.ButtonOverride, errors: notFound404 }),
      },
    )
    .post(
      '/v1/devices/:id/button_overrides',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const device = await getDevice(tx, auth.account!.id, params.id)
          const row = await putOverride(tx, deps, device, body)
          return { resource: device.id, body: overrideView(row) }
        }),
      {
        params,
        body: S.ButtonInput,
        detail: op('createButtonOverride', {
          summary: 'Override one key of a device',
          description:
            'Replaces what the template puts on the key (type none blanks it); a second override of the same key replaces the first. A key beyond the model’s keys is 400 (details.key).',
          tag: TAG,
          auth: rule,
          response: S.ButtonOverride,
          errors: notFound404,
        }),
      },
    )
    .delete(
      '/v1/devices/:id/button_overrides/:override_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteOverride(tx, deps, auth.account!.id, params.id, params.override_id)
          return { resource: params.id, body: { id: params.override_id, object: 'button_override', deleted: true } }
        }),
      {
        params: t.Object({ id: Id('device ID'), override_id: Id() }),
        detail: op('deleteButtonOverride', {
          summary: 'Delete a button override',
          tag: TAG,
          auth: rule,
          response: Deleted('button_override'),
          errors: { 404: ['device_not_found', 'button_override_not_found'] },
        }),
      },
    )
    .get(
      '/v1/devices/:id/buttons',
      async ({ auth, params }) => {
        const device = await getDevice(deps.db, auth.account!.id, params.id)
        return { object: 'device_buttons' as const, device: device.id, data: await effectiveButtons(deps.db, device) }
      },
      {
        params,
        detail: op('getDeviceButtons', {
          summary: 'The device’s effective buttons',
          description:
            'The template’s buttons replaced key by key by the device’s overrides, on the keys the model has, by key. Not paginated: a phone has a few dozen keys at most.',
          tag: TAG,
          auth: rule,
          response: S.EffectiveButtons,
          errors: notFound404,
        }),
      },
    )
    .get(
      '/v1/devices/:id/compatible_button_templates',
      async ({ auth, params, query, listContext }) => {
        const device = await getDevice(deps.db, auth.account!.id, params.id)
        const ctx = listContext(query)
        return listEnvelope(ctx, await listCompatibleTemplates(deps.db, auth.account!.id, device, pageRequest(ctx)), (r) => templateView(r))
      },
      {
        params,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listCompatibleButtonTemplates', {
          summary: 'Button templates the device can take',
          description: 'Templates of the device’s vendor that name its model or no model. A DECT base takes none.',
          tag: TAG,
          auth: rule,
          list: S.ButtonTemplate,
          errors: notFound404,
        }),
      },
    )
}
