/** Phone numbers, number orders and number search. Sandbox numbers: +15005550000..+15005559999. */
import { Elysia, t } from 'elysia'
import { Id, ListOf } from '../../src/schemas/common'
import * as S from '../../src/schemas/numbers'
import {
  availablePhoneNumbers,
  createPhoneNumberOrder,
  getPhoneNumber,
  getPhoneNumberOrder,
  listPhoneNumberOrders,
  listPhoneNumbers,
  phoneNumberOrderView,
  phoneNumberView,
  reassignPhoneNumber,
} from '../../src/services/numbers/phone-numbers'
import { disconnectPhoneNumber, setSmsPortOut, smsPortOutView, updatePhoneNumber } from '../../src/services/numbers/lifecycle'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'
import * as R from '../../src/schemas/routing'
import { setNumberRoute } from '../../src/services/routing/number-routes'
import { buildRoutingConfig, route } from '../../actors/client'
import { loadRoutingRows } from '../../src/services/routing/config'
import { digitsOf, planView } from '../../src/services/routing/route-preview'

const TAG = 'Phone Numbers'
const rule = accountLevel()
/** Query strings need Elysia's `t` (it reads numbers from text). */
const AvailableQuery = t.Object(
  {
    area_code: t.Optional(t.String({ pattern: '^[2-9][0-9]{2}$', description: 'three-digit area code (NPA); the sandbox range has area code 500' })),
    npa_nxx: t.Optional(t.String({ pattern: '^[2-9][0-9]{2}[2-9][0-9]{2}$', description: 'six digits, area code and exchange; the sandbox range is 500555' })),
    city: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'echoed in each offer as locality' })),
    state: t.Optional(t.String({ pattern: '^[A-Za-z]{2}$', description: 'two-letter state code, echoed upper-case in each offer' })),
    zip: t.Optional(t.String({ pattern: '^[0-9]{5}$', description: 'five-digit ZIP code, echoed in each offer' })),
    quantity: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 10, description: 'how many offers, 1 to 100 (default 10)' })),
  },
  { additionalProperties: false },
)
const RoutePreviewQuery = t.Object(
  {
    at: t.Optional(t.String({ format: 'date-time', description: 'when the call would arrive (schedules are read at this time); default now' })),
    digits: t.Optional(
      t.String({ pattern: '^[0-9*#-]{0,20}$', description: 'the caller’s menu input, one character per menu reached in order; "-" is no input' }),
    ),
  },
  { additionalProperties: false },
)
const CARRIER =
  'Live keys: no carrier is reachable from this deployment, so the answer is 502 carrier_unavailable (not transient: retrying does not help until a carrier is configured).'

export function phoneNumberRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/phone-numbers' })
    .use(base)
    .get(
      '/v1/available-phone-numbers',
      async ({ auth, query, path }) => {
        const data = await availablePhoneNumbers(deps.db, auth.account!, query)
        return { object: 'list' as const, url: path, next_page_url: null, previous_page_url: null, data }
      },
      {
        query: AvailableQuery,
        detail: op('searchAvailablePhoneNumbers', {
          summary: 'Search numbers available to order',
          description:
            'A list envelope of at most `quantity` offers, never paged (next_page_url and previous_page_url are always null; search again for more). ' +
            'Sandbox: the lowest numbers of +15005550000..+15005559999 that are live on no account, in ascending order, leaving out the call simulator destinations +15005550100..+15005550104. ' +
            'area_code must be 500 and npa_nxx 500555 to match anything (otherwise the list is empty); city, state and zip do not narrow the sandbox range and are echoed in each offer as locality. ' +
            'An offer is not a reservation: ordering is first come, first served. ' +
            CARRIER,
          tag: TAG,
          auth: rule,
          response: ListOf(S.AvailablePhoneNumber),
          errors: { 502: ['carrier_unavailable'] },
        }),
      },
    )
    .get(
      '/v1/phone-number-orders',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listPhoneNumberOrders(deps.db, auth.account!.id, { status: query.status, order_type: query.order_type }, pageRequest(ctx))
        return listEnvelope(ctx, page, phoneNumberOrderView)
      },
      {
        query: t.Object({ ...listQuery, status: t.Optional(S.OrderStatus), order_type: t.Optional(S.OrderType) }, { additionalProperties: false }),
        detail: op('listPhoneNumberOrders', { summary: 'List number orders', tag: TAG, auth: rule, list: S.PhoneNumberOrder }),
      },
    )
    .post(
      '/v1/phone-number-orders',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const { order } = await createPhoneNumberOrder(tx, deps.clock, auth.account!, body)
          return { resource: order.id, body: phoneNumberOrderView(order) }
        }),
      {
        body: S.CreatePhoneNumberOrderRequest,
        detail: op('createPhoneNumberOrder', {
          summary: 'Order phone numbers',
          description:
            'All or nothing: either every number is ordered or none is. Sandbox numbers (+15005550000..+15005559999, except the simulator destinations +15005550100..+15005550104) order instantly and free: ' +
            'the order is complete and the numbers active. Any other number gives 400 invalid_sandbox_phone_number; a repeated number gives validation_error. ' +
            'Numbers live on any account of the platform (each platform has a sandbox of its own) give 409 phone_numbers_already_claimed with details.already_on_account and details.in_service_elsewhere (both always present). ' +
            'Every number the account holds but released ones counts against config.max_phone_numbers (default 25); going over gives 409 phone_number_limit_exceeded, whose message states the held count, the cap and the count attempted. ' +
            CARRIER,
          tag: TAG,
          auth: rule,
          response: S.PhoneNumberOrder,
          errors: {
            400: ['invalid_sandbox_phone_number'],
            409: ['phone_numbers_already_claimed', 'phone_number_limit_exceeded'],
            502: ['carrier_unavailable'],
          },
        }),
      },
    )
    .get(
      '/v1/phone-number-orders/:order_id',
      async ({ auth, params }) => phoneNumberOrderView(await getPhoneNumberOrder(deps.db, auth.account!.id, params.order_id)),
      {
        params: t.Object({ order_id: Id() }),
        detail: op('getPhoneNumberOrder', {
          summary: 'Get a number order',
          tag: TAG,
          auth: rule,
          response: S.PhoneNumberOrder,
          errors: { 404: ['phone_number_order_not_found'] },
        }),
      },
    )
    .get(
      '/v1/phone-numbers',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listPhoneNumbers(deps.db, auth.account!.id, { status: query.status }, pageRequest(ctx))
        return listEnvelope(ctx, page, phoneNumberView)
      },
      {
        query: t.Object({ ...listQuery, status: t.Optional(S.PhoneNumberStatus) }, { additionalProperties: false }),
        detail: op('listPhoneNumbers', { summary: 'List phone numbers', tag: TAG, auth: rule, list: S.PhoneNumber }),
      },
    )
    .get(
      '/v1/phone-numbers/:phone_number_id',
      async ({ auth, params }) => phoneNumberView(await getPhoneNumber(deps.db, auth.account!.id, params.phone_number_id)),
      {
        params: t.Object({ phone_number_id: Id() }),
        detail: op('getPhoneNumber', {
          summary: 'Get a phone number',
          tag: TAG,
          auth: rule,
          response: S.PhoneNumber,
          errors: { 404: ['phone_number_not_found'] },
        }),
      },
    )
    .post(
      '/v1/phone-numbers/:phone_number_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx, ctx) => {
          const row = await updatePhoneNumber(tx, deps.clock, auth.account!, params.phone_number_id, body, ctx.requestId)
          return { resource: row.id, body: phoneNumberView(row) }
        }),
      {
        params: t.Object({ phone_number_id: Id() }),
        body: S.UpdatePhoneNumberRequest,
        detail: op('updatePhoneNumber', {
          summary: 'Update a phone number (recover a released number)',
          description:
            'status active or inactive. active and inactive switch freely (an inactive number stays on the account and counts against the cap). ' +
            'status active on a released number recovers it: it counts against config.max_phone_numbers together with the numbers reserved by port orders in progress (409 phone_number_limit_exceeded), ' +
            'and a number that went live again since it was released is not recoverable (409, no code). A recovered number starts a new 30-day minimum hold. ' +
            'A pending number changes status only when its order completes (409, no code); released is reached only through POST .../disconnect. Setting the current status changes nothing. ' +
            'On a live account a recovery emits phone_number.activated (with request), in the same transaction.',
          tag: TAG,
          auth: rule,
          response: S.PhoneNumber,
          errors: { 404: ['phone_number_not_found'], 409: ['phone_number_limit_exceeded'] },
        }),
      },
    )
    .post(
      '/v1/phone-numbers/:phone_number_id/disconnect',
      ({ auth, params, mutate }) =>
        mutate(async (tx, ctx) => {
          const { order } = await disconnectPhoneNumber(tx, deps.clock, auth.account!, params.phone_number_id, ctx.requestId)
          return { resource: params.phone_number_id, body: phoneNumberOrderView(order) }
        }),
      {
        params: t.Object({ phone_number_id: Id() }),
        detail: op('disconnectPhoneNumber', {
          summary: 'Disconnect a phone number',
          description:
            'Places a disconnect order (a number order with order_type disconnect, listed by GET /v1/phone-number-orders) and answers it; it completes at once: the number is released, ' +
            'stops counting against the cap, loses its inbound routing and its SMS port-out window, and stops being the account’s default outbound caller ID. ' +
            'Refused with 409 (no code) within the 30-day minimum hold from when the number became active on the account (ordered, ported or recovered), and for a pending or already released number. ' +
            'A released number can be recovered with POST /v1/phone-numbers/{id} and status active. On a live account phone_number.disconnected (with order and request) is emitted in the same transaction.',
          tag: TAG,
          auth: rule,
          response: S.PhoneNumberOrder,
          errors: { 404: ['phone_number_not_found'] },
        }),
      },
    )
    .get(
      '/v1/phone-numbers/:phone_number_id/sms-port-out',
      async ({ auth, params }) => smsPortOutView(await getPhoneNumber(deps.db, auth.account!.id, params.phone_number_id), deps.clock.now()),
      {
        params: t.Object({ phone_number_id: Id() }),
        detail: op('getPhoneNumberSmsPortOut', {
          summary: 'Get a number’s SMS port-out window',
          description: 'locked unless opened within the last 72 hours (and not locked since).',
          tag: TAG,
          auth: rule,
          response: S.SmsPortOut,
          errors: { 404: ['phone_number_not_found'] },
        }),
      },
    )
    .post(
      '/v1/phone-numbers/:phone_number_id/sms-port-out',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const window = await setSmsPortOut(tx, deps.clock, auth.account!.id, params.phone_number_id, body)
          return { resource: params.phone_number_id, body: window }
        }),
      {
        params: t.Object({ phone_number_id: Id() }),
        body: S.SetSmsPortOutRequest,
        detail: op('setPhoneNumberSmsPortOut', {
          summary: 'Open or lock a number’s SMS port-out window',
          description:
            'status open opens the window for 72 hours (opening an open window renews it); status locked closes it at once. Only an active or inactive number can open its window (409, no code, for a pending or released one).',
          tag: TAG,
          auth: rule,
          response: S.SmsPortOut,
          errors: { 404: ['phone_number_not_found'] },
        }),
      },
    )
    .get(
      '/v1/phone-numbers/:phone_number_id/route-preview',
      async ({ auth, params, query }) => {
        const accountId = auth.account!.id
        const pn = await getPhoneNumber(deps.db, accountId, params.phone_number_id)
        const config = buildRoutingConfig(await loadRoutingRows(deps.db, accountId))
        const at = query.at ? new Date(query.at) : deps.clock.now()
        const digits = digitsOf(query.digits)
        const plan = route(config, { entry: { type: 'number', number: pn.number }, digits }, at)
        return { object: 'route_preview' as const, phone_number: pn.id, number: pn.number, at: at.toISOString(), digits, steps: planView(plan) }
      },
      {
        params: t.Object({ phone_number_id: Id() }),
        query: RoutePreviewQuery,
        detail: {
          ...op('previewPhoneNumberRoute', {
            summary: 'Preview what a call to the number would do (extension)',
            description:
              'Extension beyond the spec (x-extension); works with live and test keys and places no call. The routing engine’s plan for a call to the number arriving at `at` with menu input `digits`, step by step: the same plan a call (and POST /v1/test_helpers/inbound_calls) follows. Users are taken as available (presence other than dnd never changes a plan). A menu reached without a digit ends the plan with a gather step. A released number has no routing: a single hangup step, reason unknown_destination.',
            tag: TAG,
            auth: rule,
            response: R.RoutePreview,
            errors: { 404: ['phone_number_not_found'] },
          }),
          'x-extension': true,
        },
      },
    )
    .post(
      '/v1/phone-numbers/:phone_number_id/reassign',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx, ctx) => {
          const moved = await reassignPhoneNumber(tx, deps.clock, auth.account!, params.phone_number_id, body, ctx.requestId)
          return { resource: params.phone_number_id, body: phoneNumberView(moved) }
        }),
      {
        params: t.Object({ phone_number_id: Id() }),
        body: S.ReassignPhoneNumberRequest,
        detail: op('reassignPhoneNumber', {
          summary: 'Move a number to another account',
          description:
            'The number moves to another account of the same platform and mode (Service-Account names the account that holds it now) and counts against that account’s cap (409 phone_number_limit_exceeded). Its inbound routing stays behind: on the new account it rings every user until routed. Account sessions cannot move numbers: this is the platform’s decision.',
          tag: TAG,
          auth: rule,
          response: S.PhoneNumber,
          errors: { 404: ['phone_number_not_found'], 409: ['phone_number_limit_exceeded'] },
        }),
      },
    )
    .post(
      '/v1/phone-numbers/:phone_number_id/route',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const route = await setNumberRoute(tx, deps.clock, deps.routingCheck, auth.account!.id, params.phone_number_id, body)
          return { resource: params.phone_number_id, body: route }
        }),
      {
        params: t.Object({ phone_number_id: Id() }),
        body: R.SetPhoneNumberRouteRequest,
        detail: op('routePhoneNumber', {
          summary: 'Set a number’s inbound routing',
          description:
            'Give target (a user, ring group, queue, dial plan, shared voicemail box or voice app of the account) to route calls there; no target (or mode ring_all) rings every user of the account; mode drop routes to nothing and drops inbound calls. A target outside the account or closing a routing loop is a validation_error naming target.',
          tag: TAG,
          auth: rule,
          response: R.PhoneNumberRoute,
          errors: { 404: ['phone_number_not_found'] },
        }),
      },
    )
}
