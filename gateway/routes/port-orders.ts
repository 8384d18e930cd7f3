/**
 * Number porting (spec, "Number porting"): port-in eligibility and port orders. An
 * order is an actor (actors/port-orders, machine machines/port-order.ts): a route
 * asks the order's machine whether it takes the action (409/422 with the refusal's
 * code otherwise), checks the fields, writes the action as a durable command with
 * the request, and answers the order as it will be once the actor applied it (the
 * actor is woken after the commit, so a read right after sees it). The carrier's
 * answers reach the actor on its durable timers; reading an order in progress first
 * runs those that are due ("refreshed from the carrier when read").
 */
import { Elysia, t } from 'elysia'
import {
  admitPortOrder,
  COMMAND_MESSAGE,
  PORT_ORDER_KIND,
  type PortOrderActorInput,
  type PortOrderCommandMessage,
  portOrderSnapshotOf,
  readActorState,
  sendCommand,
  spawnInTx,
  type TimerRow,
} from '../../actors/client'
import { ApiError, ValidationError } from '../../src/errors'
import type { Db } from '../../src/db/client'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/porting'
import {
  checkNumberCap,
  checkOrderFields,
  getPortOrder,
  getPortOrderDocument,
  insertPortOrder,
  isTerminal,
  listPortOrderEvents,
  listPortOrders,
  newPortOrderId,
  type PortOrderRow,
  type PortOrderState,
  portInEligibility,
  portOrderDocumentView,
  portOrderEventView,
  portOrderView,
  prepareSubmission,
  putPortOrderDocument,
  openPin,
  sealPin,
  stateOfRow,
} from '../../src/services/porting/port-orders'
import { newId } from '../../src/ids'
import type { GatewayDeps } from '../context'
import { accountLevel, op, platformLevel } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'
import { type UploadBody, UploadedFile, onlyFields, withUploadBody } from '../uploads'

type PortOrderDocumentKind = 'bill_copy' | 'csr' | 'loa'

const TAG = 'Number Porting'
const rule = accountLevel()
const params = t.Object({ order_id: Id('port order ID') })
const notFound = { 404: ['port_order_not_found' as const] }
const invalidState = { 409: ['port_order_invalid_state' as const] }

const SANDBOX = [
  'Sandbox carrier (sandbox keys; live keys get 502 carrier_unavailable, no carrier being configured). The line is the last four digits of a +1 number.',
  '- Not portable: a number outside +1 NANP, of the sandbox range +1500555xxxx, live on this service, or with a line 9900-9999.',
  '- Wireless (is_wireless and account_number_required): lines 7000-8999; such an order is rejected account_number_invalid without subscriber.account_number and pin_required without subscriber.pin.',
  '- Lines 0001 to 0007: the first submission is rejected with address_mismatch, account_number_invalid, name_mismatch, business_name_mismatch, btn_mismatch, pin_required, pin_invalid respectively; a corrected resubmission goes through.',
  '- Line 0008: the carrier never answers (the order stays submitted). Line 0009: FOC confirmed, the port never completes (the order stays foc).',
  '- Otherwise: FOC confirmed 30 s after submission (status foc), the port done 30 s later (status complete, the numbers active phone numbers of the account); simulated time, VOICE_CLOCK_SPEED applies.',
  'Every status change is listed by GET /v1/port-orders/{order_id}/events and sent as the webhook port_order.status_changed {port_order, status, previous_status, rejection (to exception), foc_date and foc_time (to foc), changed_at}.',
].join('\n')

const inputOf = (row: PortOrderRow, platformId: string): PortOrderActorInput => ({
  order_id: row.id,
  details: row.details,
  at: row.createdAt.toISOString(),
  runtime: { owner: { platformId, accountId: row.accountId, mode: row.mode } },
})

export function portOrderRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  /** Runs the order's due messages and carrier answers now, where this process reaches the actor. */
  const wake = (id: string, rows?: TimerRow[]) => (deps.actors ? deps.actors.wake(PORT_ORDER_KIND, id, rows).catch(() => {}) : Promise.resolve())

  /** A customer action: admitted by the order's machine, checked, written as a command; answers the order as it will be. */
  async function act(
    auth: { account?: { id: string }; principal: { platformId: string } },
    id: string,
    mutate: (work: (tx: Db) => Promise<{ resource: string; body: unknown }>) => Promise<Response>,
    command: PortOrderCommandMessage['command'],
    check?: (tx: Db, row: PortOrderRow) => Promise<void>,
    /** Completes the admitted command from the order as it will be (the submit's documents). */
    complete?: (tx: Db, row: PortOrderRow, after: PortOrderState) => Promise<PortOrderCommandMessage['command']>,
  ) {
    // Pending commands and due carrier answers first: the action is judged on the order as it is.
    await wake(id)
    const written: TimerRow[] = []
    const response = await mutate(async (tx) => {
      const row = await getPortOrder(tx, auth.account!.id, id)
      const at = deps.clock.now().toISOString()
      const snapshot = portOrderSnapshotOf(await readActorState(tx, PORT_ORDER_KIND, row.id), inputOf(row, auth.principal.platformId))
      const admission = admitPortOrder(snapshot, command, at)
      if ('refused' in admission) throw new ApiError(admission.refused.status, admission.refused.reason, admission.refused.code)
      await check?.(tx, row)
      const c = admission.after.context
      const after: PortOrderState = { status: admission.after.status, details: c.details, submitted_at: c.submitted_at, updated_at: c.updated_at }
      const final = complete ? await complete(tx, row, after) : command
      const message: PortOrderCommandMessage = { type: COMMAND_MESSAGE, command_id: newId('command'), at, order_id: row.id, command: final }
      written.push(await sendCommand(tx, deps.clock, PORT_ORDER_KIND, row.id, message))
      return { resource: row.id, body: portOrderView(row, after) }
    })
    if (written.length > 0) await wake(id, written)
    return response
  }

  /** GET of one of the order's documents: the PDF itself. */
  const documentDownload = (path: string, kind: PortOrderDocumentKind, operationId: string, title: string, origin: string, extension = false) =>
    new Elysia({ name: `routes/port-orders/${path}/download` }).use(base).get(
      `/v1/port-orders/:order_id/${path}`,
      async ({ auth, params }) => {
        const row = await getPortOrder(deps.db, auth.account!.id, params.order_id)
        const doc = await getPortOrderDocument(deps.db, row.id, kind)
        const blob = doc ? await deps.storage.get(doc.storageKey) : undefined
        if (!doc || !blob) throw new ApiError(404, `The port order has no ${title} yet.`, 'port_order_document_not_found')
        return new Response(blob.bytes, {
          status: 200,
          headers: {
            'content-type': 'application/pdf',
            'content-length': String(blob.bytes.byteLength),
            'content-disposition': `attachment; filename="${(doc.filename ?? `${kind}.pdf`).replace(/["\\\r\n]/g, '_')}"`,
            'cache-control': 'private, no-store',
          },
        })
      },
      {
        params,
        detail: {
          ...op(operationId, {
            summary: `Download the port order's ${title}`,
            description: `Answers the PDF itself (application/pdf) ${origin}. 404 port_order_document_not_found when there is none yet.`,
            tag: TAG,
            auth: rule,
            errors: { 404: ['port_order_not_found', 'port_order_document_not_found'] },
          }),
          ...(extension ? { 'x-extension': true } : {}),
        },
      },
    )

  const documentRoutes = (path: 'bill-copy' | 'csr', kind: 'bill_copy' | 'csr', name: string) =>
    new Elysia({ name: `routes/port-orders/${path}` })
      .use(base)
      .post(
        `/v1/port-orders/:order_id/${path}`,
        ({ auth, params, body, mutate }) => {
          onlyFields(body, [])
          const file = (body as UploadBody | null)?.file
          if (!(file instanceof UploadedFile)) throw new ValidationError({ file: 'is required: send multipart/form-data with the PDF in a part named "file"' })
          return mutate(async (tx) => {
            const row = await getPortOrder(tx, auth.account!.id, params.order_id)
            const snapshot = portOrderSnapshotOf(await readActorState(tx, PORT_ORDER_KIND, row.id), inputOf(row, auth.principal.platformId))
            const admission = admitPortOrder(snapshot, { type: 'add_document', document: kind }, deps.clock.now().toISOString())
            if ('refused' in admission) throw new ApiError(admission.refused.status, admission.refused.reason, admission.refused.code)
            const doc = await putPortOrderDocument(tx, { clock: deps.clock, storage: deps.storage }, row, kind, { bytes: file.bytes, filename: file.filename })
            return { resource: row.id, body: portOrderDocumentView(doc) }
          })
        },
        {
          params,
          detail: withUploadBody(
            op(`uploadPortOrder${name}`, {
              summary: `Upload the port order's ${kind === 'csr' ? 'customer service record (CSR)' : 'bill copy'}`,
              description:
                'multipart/form-data with the PDF in a part named `file` (at most 3 MiB). Allowed while the order is draft or exception (otherwise 409 port_order_invalid_state); a new upload replaces the previous one. An empty file, a file that is not a PDF (it must start with %PDF- and end with %%EOF) or one over the limit is refused with 400 validation_error (details.file) and nothing is stored.',
              tag: TAG,
              auth: rule,
              response: S.PortOrderDocument,
              errors: { ...notFound, ...invalidState },
            }),
            {},
            [],
            false,
          ),
        },
      )
      .use(documentDownload(path, kind, `getPortOrder${name}`, kind === 'csr' ? 'customer service record (CSR)' : 'bill copy', 'as it was uploaded'))

  return new Elysia({ name: 'routes/port-orders' })
    .use(base)
    .post('/v1/port-in-eligibility', async ({ auth, body }) => portInEligibility(deps.db, auth.principal, body.phone_numbers), {
      body: S.PortInEligibilityRequest,
      detail: op('checkPortInEligibility', {
        summary: 'Check which numbers can be ported in',
        description: `Platform-scoped (no Service-Account header). Only portable numbers may be put in a port order.\n\n${SANDBOX}`,
        tag: TAG,
        auth: platformLevel(),
        response: S.PortInEligibility,
        errors: { 502: ['carrier_unavailable'] },
      }),
    })
    .get(
      '/v1/port-orders',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listPortOrders(deps.db, auth.account!.id, { status: query.status }, pageRequest(ctx))
        return listEnvelope(ctx, page, (row) => portOrderView(row, stateOfRow(row)))
      },
      {
        query: t.Object({ ...listQuery, status: t.Optional(S.PortOrderStatus) }, { additionalProperties: false }),
        detail: op('listPortOrders', { summary: 'List port orders', tag: TAG, auth: rule, list: S.PortOrder }),
      },
    )
    .post(
      '/v1/port-orders',
      async ({ auth, body, mutate }) => {
        const account = auth.account!
        const written: TimerRow[] = []
        const id = newPortOrderId()
        const response = await mutate(async (tx) => {
          await checkOrderFields(tx, deps.clock, account, body)
          await checkNumberCap(tx, account.id, body.phone_numbers.length)
          const s = body.subscriber
          const details = {
            phone_numbers: body.phone_numbers,
            subscriber: {
              btn: s.btn ?? null,
              business_name: s.business_name ?? null,
              approver_name: s.approver_name ?? null,
              account_number: s.account_number ?? null,
              pin: sealPin(id, s.pin ?? null),
              address: s.address
                ? {
                    house_number: s.address.house_number ?? null,
                    street_name: s.address.street_name ?? null,
                    city: s.address.city ?? null,
                    state: s.address.state ?? null,
                    zip: s.address.zip ?? null,
                  }
                : null,
            },
            approval: null,
            requested_foc_date: body.requested_foc_date,
            requested_foc_time: body.requested_foc_time ?? null,
            rejection: null,
          }
          const row = await insertPortOrder(tx, { id, accountId: account.id, mode: account.mode, details, at: deps.clock.now() })
          written.push(await spawnInTx(tx, deps.clock, PORT_ORDER_KIND, row.id, inputOf(row, auth.principal.platformId)))
          return { resource: row.id, body: portOrderView(row, stateOfRow(row)) }
        })
        if (written.length > 0) await wake(id, written)
        return response
      },
      {
        body: S.CreatePortOrderRequest,
        detail: op('createPortOrder', {
          summary: 'Create a port order',
          description: `Created as draft (submitted_at null). 400 validation_error with details per field: a number not portable, repeated or already in another port order in progress (phone_numbers[i]), a requested_foc_date sooner than 5 business days (weekends and US federal holidays do not count) or later than 30 calendar days after today (US Eastern), a requested_foc_time outside 08:00 to 20:00 Eastern. 409 phone_number_limit_exceeded when the account's numbers (held plus those of its port orders in progress) would exceed config.max_phone_numbers.\n\n${SANDBOX}`,
          tag: TAG,
          auth: rule,
          response: S.PortOrder,
          errors: { 409: ['phone_number_limit_exceeded'], 502: ['carrier_unavailable'] },
        }),
      },
    )
    .get(
      '/v1/port-orders/:order_id',
      async ({ auth, params }) => {
        const first = await getPortOrder(deps.db, auth.account!.id, params.order_id)
        if (isTerminal(first.status)) return portOrderView(first, stateOfRow(first))
        await wake(first.id)
        const row = await getPortOrder(deps.db, auth.account!.id, params.order_id)
        return portOrderView(row, stateOfRow(row))
      },
      {
        params,
        detail: op('getPortOrder', {
          summary: 'Get a port order',
          description: 'An order in progress is refreshed from the carrier when read.',
          tag: TAG,
          auth: rule,
          response: S.PortOrder,
          errors: notFound,
        }),
      },
    )
    .post(
      '/v1/port-orders/:order_id',
      async ({ auth, params, body, mutate }) => {
        const changes = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) as Extract<
          PortOrderCommandMessage['command'],
          { type: 'update' }
        >['changes']
        const pin = changes.subscriber?.pin
        if (pin !== undefined) {
          // Sealing is randomised: the PIN the order already has keeps its sealed form, so that sending it again changes nothing (and keeps an approval).
          const current = (await getPortOrder(deps.db, auth.account!.id, params.order_id)).details.subscriber.pin
          const same = pin !== null && current !== null && openPin(params.order_id, current) === pin
          changes.subscriber = { ...changes.subscriber, pin: same ? current : sealPin(params.order_id, pin) }
        }
        return act(auth, params.order_id, mutate, { type: 'update', changes }, async (tx, row) => {
          await checkOrderFields(tx, deps.clock, { platformId: auth.principal.platformId, mode: row.mode }, body, row.id)
          if (body.phone_numbers !== undefined) await checkNumberCap(tx, row.accountId, body.phone_numbers.length, row.id)
        })
      },
      {
        params,
        body: S.UpdatePortOrderRequest,
        detail: op('updatePortOrder', {
          summary: 'Update a port order',
          description:
            'A partial update: each field given replaces the old value (subscriber field by field). A change to an approved order returns it to draft and clears the approval (approve again). A submitted or foc order takes only requested_foc_date and requested_foc_time (any other field: 409 port_order_invalid_state), as does nothing once complete or cancelled. An update of an order in exception corrects it, so that it can be submitted again. Field rules and 409 phone_number_limit_exceeded as on create (numbers added count against the cap).',
          tag: TAG,
          auth: rule,
          response: S.PortOrder,
          errors: { ...notFound, 409: ['port_order_invalid_state', 'phone_number_limit_exceeded'] },
        }),
      },
    )
    .post(
      '/v1/port-orders/:order_id/approve',
      ({ auth, params, body, mutate }) => act(auth, params.order_id, mutate, { type: 'approve', signature: body.signature, ip: body.ip }),
      {
        params,
        body: S.ApprovePortOrderRequest,
        detail: op('approvePortOrder', {
          summary: 'Approve a port order',
          description:
            'The customer’s approval (letter of authorization): details.approval gets the signature, ip and timestamp; status approved. 409 port_order_invalid_state unless the order is draft.',
          tag: TAG,
          auth: rule,
          response: S.PortOrder,
          errors: { ...notFound, ...invalidState },
        }),
      },
    )
    .post(
      '/v1/port-orders/:order_id/submit',
      ({ auth, params, mutate }) =>
        act(auth, params.order_id, mutate, { type: 'submit' }, undefined, async (tx, row, after) => ({
          type: 'submit',
          documents: await prepareSubmission(tx, { clock: deps.clock, storage: deps.storage }, row, after.details),
        })),
      {
        params,
        detail: op('submitPortOrder', {
          summary: 'Submit a port order to the carrier',
          description: `status submitted, submitted_at set; a letter of authorization (PDF, GET /v1/port-orders/{order_id}/loa) is generated from the order and its approval and forwarded to the carrier with the bill copy and CSR when uploaded; the carrier answers later (FOC: foc, then complete; or a rejection: exception, with details.rejection {code, message}). 422 port_order_approval_required for a draft order; 409 port_order_invalid_state for an order in exception not corrected since (update it first) or in any other status.\n\n${SANDBOX}`,
          tag: TAG,
          auth: rule,
          response: S.PortOrder,
          errors: { ...notFound, ...invalidState, 422: ['port_order_approval_required'] },
        }),
      },
    )
    .post('/v1/port-orders/:order_id/cancel', ({ auth, params, mutate }) => act(auth, params.order_id, mutate, { type: 'cancel' }), {
      params,
      detail: op('cancelPortOrder', {
        summary: 'Cancel a port order',
        description: 'Any order not complete or cancelled becomes cancelled (one with the carrier is withdrawn); otherwise 409 port_order_invalid_state.',
        tag: TAG,
        auth: rule,
        response: S.PortOrder,
        errors: { ...notFound, ...invalidState },
      }),
    })
    .get(
      '/v1/port-orders/:order_id/events',
      async ({ auth, params, query, listContext }) => {
        const row = await getPortOrder(deps.db, auth.account!.id, params.order_id)
        if (!isTerminal(row.status)) await wake(row.id)
        const ctx = listContext(query)
        return listEnvelope(ctx, await listPortOrderEvents(deps.db, row.id, pageRequest(ctx)), portOrderEventView)
      },
      {
        params,
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listPortOrderEvents', {
          summary: 'List a port order’s status changes',
          description: 'Every status change, newest first, from the creation (previous_status null) on; a change to exception carries its rejection.',
          tag: TAG,
          auth: rule,
          list: S.PortOrderEvent,
          errors: notFound,
        }),
      },
    )
    .use(documentRoutes('bill-copy', 'bill_copy', 'BillCopy'))
    .use(documentRoutes('csr', 'csr', 'Csr'))
    .use(
      documentDownload(
        'loa',
        'loa',
        'getPortOrderLoa',
        'letter of authorization (LOA)',
        'as generated at its last submission (extension beyond the spec, x-extension)',
        true,
      ),
    )
}
