/**
 * What deskphones and DECT bases share: the list, create, get, update and delete of
 * one device type, and the device view with the SIP credentials the caller may see.
 * Each group keeps its own paths, operation ids and create body; the service calls,
 * the views and the error shapes are written once here, so the two cannot drift.
 */
import { Elysia, t } from 'elysia'
import type { Db } from '../../src/db/client'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/devices'
import { createDevice, deleteDevice, listDevices, updateDevice } from '../../src/services/devices/devices'
import { type DeviceExpansions, type DeviceRow, deviceView, getDevice } from '../../src/services/devices/records'
import { sealerFor } from '../../src/services/devices/sip-credentials'
import type { Principal } from '../../src/services/platform/principal'
import type { GatewayDeps } from '../context'
import { accountLevel, type OpDoc, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

/** Renders devices for this caller: the sealer is looked up once, and only platform secret keys get one (credentials shown). */
export async function deviceViewFor(db: Db, principal: Principal) {
  const sealer = await sealerFor(db, principal)
  return (row: DeviceRow, expanded: Omit<DeviceExpansions, 'sealer'> = {}) => deviceView(row, { ...expanded, sealer })
}

export interface DeviceRecordGroup {
  type: 'deskphone' | 'dect_base'
  /** The collection path, e.g. /v1/deskphones. */
  path: string
  /** Operation id stems: listDeskphones, createDeskphone, getDeskphone... */
  one: string
  many: string
  /** As the summaries name one: 'deskphone', 'DECT base'. */
  label: string
  tag: string
  notFound: 'deskphone_not_found' | 'dect_base_not_found'
  create: { body: typeof S.CreateDeskphoneRequest | typeof S.CreateDectBaseRequest; description: string; errors: OpDoc['errors'] }
  deleteSummary: string
}

export function deviceRecordRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>, g: DeviceRecordGroup) {
  const params = t.Object({ id: Id(`${g.label} ID`) })
  const rule = accountLevel()
  const notFound404 = { 404: [g.notFound] }
  const article = /^[aeiou]/i.test(g.label) ? 'an' : 'a'
  return new Elysia({ name: `routes/${g.type}-records` })
    .use(base)
    .get(
      g.path,
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const view = await deviceViewFor(deps.db, auth.principal)
        return listEnvelope(ctx, await listDevices(deps.db, auth.account!.id, { type: g.type }, pageRequest(ctx)), (r) => view(r))
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op(`list${g.many}`, { summary: `List ${g.label}s`, tag: g.tag, auth: rule, list: S.Device }),
      },
    )
    .post(
      g.path,
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createDevice(tx, deps, auth.account!.id, g.type, body)
          return { resource: row.id, body: (await deviceViewFor(tx, auth.principal))(row) }
        }),
      {
        body: g.create.body,
        detail: op(`create${g.one}`, {
          summary: `Create ${article} ${g.label}`,
          description: g.create.description,
          tag: g.tag,
          auth: rule,
          response: S.Device,
          errors: g.create.errors,
        }),
      },
    )
    .get(
      `${g.path}/:id`,
      async ({ auth, params }) => (await deviceViewFor(deps.db, auth.principal))(await getDevice(deps.db, auth.account!.id, params.id, g.type)),
      {
        params,
        detail: op(`get${g.one}`, { summary: `Get ${article} ${g.label}`, tag: g.tag, auth: rule, response: S.Device, errors: notFound404 }),
      },
    )
    .post(
      `${g.path}/:id`,
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateDevice(tx, deps, auth.account!.id, params.id, body, g.type)
          return { resource: row.id, body: (await deviceViewFor(tx, auth.principal))(row) }
        }),
      {
        params,
        body: S.UpdateDeviceRequest,
        detail: op(`update${g.one}`, {
          summary: `Update ${article} ${g.label} (and set it back to pending_sync)`,
          tag: g.tag,
          auth: rule,
          response: S.Device,
          errors: notFound404,
        }),
      },
    )
    .delete(
      `${g.path}/:id`,
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const row = await deleteDevice(tx, deps, auth.account!.id, params.id, g.type)
          return { resource: row.id, body: { id: row.id, object: 'device', deleted: true } }
        }),
      {
        params,
        detail: op(`delete${g.one}`, { summary: g.deleteSummary, tag: g.tag, auth: rule, response: Deleted('device'), errors: notFound404 }),
      },
    )
}
