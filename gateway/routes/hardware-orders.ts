/**
 * Hardware (spec, "Catalog", "Faxes, Files, Hardware Orders"): the catalog and
 * hardware orders. An order is an actor (actors/hardware-orders, machine
 * machines/hardware-order.ts): a route asks the order's machine whether it takes the
 * action (409 hardware_order_invalid_state otherwise), checks the fields, writes the
 * action as a durable command with the request, and answers the order as it will be
 * once the actor applied it. The reviewer's answers and the delivery reach the actor
 * on its durable timers; reading an order in progress first runs those that are due.
 */
import { Elysia, t } from 'elysia'
import {
  admitHardwareOrder,
  COMMAND_MESSAGE,
  HARDWARE_ORDER_KIND,
  type HardwareOrderActorInput,
  type HardwareOrderCommandMessage,
  hardwareOrderSnapshotOf,
  readActorState,
  sendCommand,
  spawnInTx,
  type TimerRow,
} from '../../actors/client'
import type { Db } from '../../src/db/client'
import { ApiError, notFound as notFoundError, ValidationError } from '../../src/errors'
import { newId } from '../../src/ids'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/hardware'
import { catalogItemView, catalogPage } from '../../src/services/hardware/catalog'
import {
  checkIntent,
  checkLocation,
  getHardwareOrder,
  type HardwareOrderRow,
  type HardwareOrderState,
  hardwareOrderView,
  insertHardwareOrder,
  isFinal,
  itemsOfRequest,
  listHardwareOrders,
  liveUsers,
  newHardwareOrderId,
  reviewerFor,
  stateOfRow,
} from '../../src/services/hardware/hardware-orders'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Hardware Orders'
const rule = accountLevel()
const params = t.Object({ order_id: Id('hardware order ID') })
const itemParams = t.Object({ order_id: Id('hardware order ID'), item_id: Id('hardware order item ID') })
const notFound = { 404: ['hardware_order_not_found' as const] }
const invalidState = { 409: ['hardware_order_invalid_state' as const] }
const expand = expandQuery('catalog_items')

const LIFECYCLE = [
  'Lifecycle: created submitted; the review approves (approved) or declines it (rejected, with rejection_reason); an approved order is delivered (fulfilled): each desk phone, DECT base and handset becomes a device of the account at the order’s location (GET /v1/devices; the item’s device field names it), with its MAC address (the item’s, or the unit’s) and assigned to the item’s intended user; handsets join their base. Accessories never become devices. A submitted or approved order can be cancelled (POST /v1/hardware-orders/{order_id} with status cancelled). rejected, fulfilled and cancelled are final. No order is ever draft. No webhook events are sent for hardware orders (the spec names none).',
  'Sandbox (sandbox keys; live keys get 502 hardware_supplier_unavailable, no supplier being configured): review 30 s after creation (approved), delivery 60 s after approval (fulfilled), simulated time (VOICE_CLOCK_SPEED applies), on durable timers that survive a restart. The order’s reference steers it: SANDBOX-REJECT rejected at review; SANDBOX-HOLD-REVIEW never reviewed (stays submitted); SANDBOX-HOLD-DELIVERY approved, never delivered (stays approved). Delivered units without a MAC address get a generated locally administered one (02…).',
].join('\n\n')

const inputOf = (row: HardwareOrderRow, platformId: string): HardwareOrderActorInput => ({
  order_id: row.id,
  items: row.items,
  location: row.locationId ?? '',
  reference: row.reference,
  at: row.createdAt.toISOString(),
  runtime: { owner: { platformId, accountId: row.accountId, mode: row.mode } },
})

type Expand = { 'expand[]'?: 'catalog_items'[] }
const expanding = (q: Expand) => ({ catalog_items: q['expand[]']?.includes('catalog_items') ?? false })

export function hardwareOrderRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  const wake = (id: string, rows?: TimerRow[]) => (deps.actors ? deps.actors.wake(HARDWARE_ORDER_KIND, id, rows).catch(() => {}) : Promise.resolve())

  const view = async (db: Db, row: HardwareOrderRow, state: HardwareOrderState, ex: { catalog_items: boolean } = { catalog_items: false }) =>
    hardwareOrderView(row, state, await liveUsers(db, row.accountId, [state]), ex)

  /** A customer action: admitted by the order's machine, checked, written as a command; answers the order as it will be. */
  async function act(
    auth: { account?: { id: string }; principal: { platformId: string } },
    id: string,
    mutate: (work: (tx: Db) => Promise<{ resource: string; body: unknown }>) => Promise<Response>,
    command: (tx: Db, row: HardwareOrderRow) => Promise<HardwareOrderCommandMessage['command']>,
  ) {
    await wake(id)
    const written: TimerRow[] = []
    const response = await mutate(async (tx) => {
      const row = await getHardwareOrder(tx, auth.account!.id, id)
      const at = deps.clock.now().toISOString()
      const snapshot = hardwareOrderSnapshotOf(await readActorState(tx, HARDWARE_ORDER_KIND, row.id), inputOf(row, auth.principal.platformId))
      const items = snapshot.context.items
      // The state first (a finished order refuses whatever the body), then the fields.
      const probe = await command(tx, { ...row, items })
      const admission = admitHardwareOrder(snapshot, probe, at)
      if ('refused' in admission) throw new ApiError(admission.refused.status, admission.refused.reason, admission.refused.code)
      const message: HardwareOrderCommandMessage = { type: COMMAND_MESSAGE, command_id: newId('command'), at, order_id: row.id, command: probe }
      written.push(await sendCommand(tx, deps.clock, HARDWARE_ORDER_KIND, row.id, message))
      const c = admission.after.context
      const after: HardwareOrderState = { status: admission.after.status, items: c.items, rejection_reason: c.rejection_reason, updated_at: c.updated_at }
      return { resource: row.id, body: await view(tx, row, after) }
    })
    if (written.length > 0) await wake(id, written)
    return response
  }

  /** Refuses the action before the fields are checked when the order's state does not allow it (409 over 400). */
  async function stateAllows(tx: Db, row: HardwareOrderRow, platformId: string, command: HardwareOrderCommandMessage['command']) {
    const snapshot = hardwareOrderSnapshotOf(await readActorState(tx, HARDWARE_ORDER_KIND, row.id), inputOf(row, platformId))
    const a = admitHardwareOrder(snapshot, command, deps.clock.now().toISOString())
    if ('refused' in a) throw new ApiError(a.refused.status, a.refused.reason, a.refused.code)
  }

  return new Elysia({ name: 'routes/hardware-orders' })
    .use(base)
    .get(
      '/v1/catalog',
      ({ query, listContext }) => {
        const ctx = listContext(query)
        return listEnvelope(ctx, catalogPage(pageRequest(ctx), { device_type: query.device_type, active: query.active }), catalogItemView)
      },
      {
        query: t.Object(
          {
            ...listQuery,
            device_type: t.Optional(S.HardwareDeviceType),
            active: t.Optional(t.Boolean({ description: 'true: only items sold today' })),
          },
          { additionalProperties: false },
        ),
        detail: op('listCatalog', {
          summary: 'List the hardware catalog',
          description:
            'The phones this service provisions (every vendor and model POST /v1/devices accepts: Yealink desk phones, the Yealink W60B DECT base and its handsets, Polycom VVX desk phones) and the accessories that ship with them (expansion modules, headsets, power supplies, a PoE injector). The same list for every account. An item is never removed, only made inactive (active false: no longer sold, still provisioned). Beyond the spec’s fields each item has unit_price (US cents, list price of one unit), currency and description; a price is not a bill (billing is not part of this API).',
          tag: TAG,
          auth: rule,
          list: S.CatalogItem,
        }),
      },
    )
    .get(
      '/v1/hardware-orders',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listHardwareOrders(deps.db, auth.account!.id, { status: query.status }, pageRequest(ctx))
        const users = await liveUsers(deps.db, auth.account!.id, page.rows)
        return listEnvelope(ctx, page, (row) => hardwareOrderView(row, stateOfRow(row), users, expanding(query)))
      },
      {
        query: t.Object({ ...listQuery, status: t.Optional(S.HardwareOrderStatus), 'expand[]': expand }, { additionalProperties: false }),
        detail: op('listHardwareOrders', {
          summary: 'List hardware orders',
          description: 'Newest first. expand[]=catalog_items inlines the catalog items each order names.',
          tag: TAG,
          auth: rule,
          list: S.HardwareOrder,
        }),
      },
    )
    .post(
      '/v1/hardware-orders',
      async ({ auth, body, mutate }) => {
        const account = auth.account!
        reviewerFor(account.mode)
        const written: TimerRow[] = []
        const id = newHardwareOrderId()
        const response = await mutate(async (tx) => {
          const problems: Record<string, string> = {}
          await checkLocation(tx, account.id, body.location).catch((e) => {
            if (e instanceof ValidationError) Object.assign(problems, e.details)
            else throw e
          })
          const items = await itemsOfRequest(tx, account.id, body.items).catch((e) => {
            if (e instanceof ValidationError) Object.assign(problems, e.details)
            else throw e
            return []
          })
          if (Object.keys(problems).length > 0) throw new ValidationError(problems)
          const row = await insertHardwareOrder(tx, {
            id,
            accountId: account.id,
            mode: account.mode,
            locationId: body.location,
            reference: body.reference ?? null,
            items,
            at: deps.clock.now(),
          })
          written.push(await spawnInTx(tx, deps.clock, HARDWARE_ORDER_KIND, row.id, inputOf(row, auth.principal.platformId)))
          return { resource: row.id, body: await view(tx, row, stateOfRow(row)) }
        })
        if (written.length > 0) await wake(id, written)
        return response
      },
      {
        body: S.CreateHardwareOrderRequest,
        detail: op('createHardwareOrder', {
          summary: 'Order hardware',
          description: `Created submitted, one item per unit (a line of quantity 3 gives three items), each with its pre-assignment intents (user, mac_address, base). 400 validation_error with details per field, nothing stored: a location that is not the account's (location), a catalog item that does not exist or is no longer sold (items[i].catalog_item), a quantity outside 1 to 50 (items[i].quantity) or more than 100 units in all (items), an intended user not of the account or on an item that is no one's phone (items[i].user), a MAC address malformed, registered to a device, repeated or on a line of several units (items[i].mac_address), a base that is not a DECT base of the account or has no room, or handsets with no base to join (items[i].base).\n\n${LIFECYCLE}`,
          tag: TAG,
          auth: rule,
          response: S.HardwareOrder,
          errors: { 502: ['hardware_supplier_unavailable'] },
        }),
      },
    )
    .get(
      '/v1/hardware-orders/:order_id',
      async ({ auth, params, query }) => {
        const first = await getHardwareOrder(deps.db, auth.account!.id, params.order_id)
        if (!isFinal(first.status)) await wake(first.id)
        const row = isFinal(first.status) ? first : await getHardwareOrder(deps.db, auth.account!.id, params.order_id)
        return view(deps.db, row, stateOfRow(row), expanding(query))
      },
      {
        params,
        query: t.Object({ 'expand[]': expand }, { additionalProperties: false }),
        detail: op('getHardwareOrder', {
          summary: 'Get a hardware order',
          description: `An order in progress is brought up to date (its due review or delivery runs) when read. expand[]=catalog_items inlines the catalog items it names.\n\n${LIFECYCLE}`,
          tag: TAG,
          auth: rule,
          response: S.HardwareOrder,
          errors: notFound,
        }),
      },
    )
    .post(
      '/v1/hardware-orders/:order_id',
      ({ auth, params, body, mutate }) => {
        if (body.status !== undefined && body.items !== undefined) throw new ValidationError({ status: 'cancels the order: give it without items' })
        if (body.status === undefined && body.items === undefined) throw new ValidationError({ items: 'is required (or status cancelled)' })
        return act(auth, params.order_id, mutate, async (tx, row) => {
          if (body.status === 'cancelled') return { type: 'cancel' }
          await stateAllows(tx, row, auth.principal.platformId, { type: 'update_items', items: row.items })
          return { type: 'update_items', items: await itemsOfRequest(tx, row.accountId, body.items!) }
        })
      },
      {
        params,
        body: S.UpdateHardwareOrderRequest,
        detail: op('updateHardwareOrder', {
          summary: 'Update a hardware order’s items, or cancel it',
          description:
            'items replaces every item of the order (one item per unit again, new item IDs; the same field rules as on create, 400 validation_error and nothing changed on a problem); allowed only while the order is submitted, otherwise 409 hardware_order_invalid_state. status cancelled cancels a submitted or approved order (the review and delivery still due are dropped); otherwise 409 hardware_order_invalid_state.',
          tag: TAG,
          auth: rule,
          response: S.HardwareOrder,
          errors: { ...notFound, ...invalidState },
        }),
      },
    )
    .post(
      '/v1/hardware-orders/:order_id/items/:item_id',
      ({ auth, params, body, mutate }) =>
        act(auth, params.order_id, mutate, async (tx, row) => {
          const item = row.items.find((i) => i.id === params.item_id)
          if (!item) throw notFoundError('hardware_order_item', params.item_id)
          await stateAllows(tx, row, auth.principal.platformId, { type: 'set_intent', item_id: item.id, intent: {} })
          const intent = await checkIntent(tx, row.accountId, item, row.items, body)
          return { type: 'set_intent', item_id: item.id, intent }
        }),
      {
        params: itemParams,
        body: S.UpdateHardwareOrderItemRequest,
        detail: op('updateHardwareOrderItem', {
          summary: 'Update an item’s pre-staging intents',
          description:
            'Sets who the unit is meant for (user), its MAC address (mac_address) and, for a DECT handset, the existing base it joins (base); a field given replaces the old value, null clears it. Allowed while the order is submitted or approved (otherwise 409 hardware_order_invalid_state). The same field rules as on create (400 validation_error, nothing changed). Answers the whole order.',
          tag: TAG,
          auth: rule,
          response: S.HardwareOrder,
          errors: { 404: ['hardware_order_not_found', 'hardware_order_item_not_found'], ...invalidState },
        }),
      },
    )
}
