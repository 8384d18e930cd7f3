/**
 * Webhook endpoints: platform-global without Service-Account, that account's with
 * it. The key's mode becomes the endpoint's mode for life.
 */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/events'
import type { Principal } from '../../src/services/platform/principal'
import {
  attemptView,
  createEndpoint,
  deleteEndpoint,
  endpointView,
  getEndpoint,
  listAttempts,
  listEndpoints,
  updateEndpoint,
  type EndpointScope,
} from '../../src/services/events/webhook-endpoints'
import type { GatewayDeps } from '../context'
import { op, platformOrAccount } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { AuthContext } from '../plugins/auth'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Webhook Endpoints'
const params = t.Object({ webhook_endpoint: Id() })
const rule = platformOrAccount()
const PRIVATE_TARGETS_RULE =
  'Unless the service runs with WEBHOOK_ALLOW_PRIVATE_TARGETS on, a url that delivery would refuse is refused with 400 validation_error (details.url names the setting): a literal loopback, private, link-local, CGNAT, multicast, unique-local or other non-public address (IPv4, IPv6, IPv4-mapped), and localhost names. Any other name is checked at each delivery, on every address it resolves to; a delivery refused then is a failed attempt (GET /v1/webhook_endpoints/{id}/attempts).'

const scopeOf = (auth: AuthContext): EndpointScope => {
  const p: Principal = auth.principal
  return { platformId: p.platformId, mode: p.mode, accountId: auth.account?.id ?? null }
}

export function webhookEndpointRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  // The URL check of create and update: delivery's own (WEBHOOK_ALLOW_PRIVATE_TARGETS).
  const targets = { allowPrivateTargets: deps.config.webhookAllowPrivateTargets }
  return new Elysia({ name: 'routes/webhook-endpoints' })
    .use(base)
    .get(
      '/v1/webhook_endpoints',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        return listEndpoints(deps.db, scopeOf(auth), pageRequest(ctx)).then((page) => listEnvelope(ctx, page, (row) => endpointView(row)))
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listWebhookEndpoints', {
          summary: 'List webhook endpoints (platform-global, or the account’s with Service-Account)',
          tag: TAG,
          auth: rule,
          list: S.WebhookEndpoint,
        }),
      },
    )
    .post(
      '/v1/webhook_endpoints',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await createEndpoint(tx, deps.clock, scopeOf(auth), body, targets)
          return { resource: row.id, body: endpointView(row, { withSecret: true }) }
        }),
      {
        body: S.CreateWebhookEndpointRequest,
        detail: op('createWebhookEndpoint', {
          summary: 'Create a webhook endpoint',
          description:
            'Without Service-Account the endpoint is platform-global and receives every account’s events of its mode; with it, only that account’s. The key’s mode fixes livemode. enabled_events defaults to ["*"]. The secret appears only in this response. ' +
            PRIVATE_TARGETS_RULE,
          tag: TAG,
          auth: rule,
          response: S.WebhookEndpoint,
        }),
      },
    )
    .get(
      '/v1/webhook_endpoints/:webhook_endpoint',
      async ({ auth, params }) => endpointView(await getEndpoint(deps.db, scopeOf(auth), params.webhook_endpoint)),
      {
        params,
        detail: op('getWebhookEndpoint', {
          summary: 'Get a webhook endpoint',
          tag: TAG,
          auth: rule,
          response: S.WebhookEndpoint,
          errors: { 404: ['webhook_endpoint_not_found'] },
        }),
      },
    )
    .post(
      '/v1/webhook_endpoints/:webhook_endpoint',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateEndpoint(tx, deps.clock, scopeOf(auth), params.webhook_endpoint, body, targets)
          return { resource: row.id, body: endpointView(row) }
        }),
      {
        params,
        body: S.UpdateWebhookEndpointRequest,
        detail: op('updateWebhookEndpoint', {
          summary: 'Update a webhook endpoint (url, enabled_events, description, status)',
          description: PRIVATE_TARGETS_RULE,
          tag: TAG,
          auth: rule,
          response: S.WebhookEndpoint,
          errors: { 404: ['webhook_endpoint_not_found'] },
        }),
      },
    )
    .get(
      '/v1/webhook_endpoints/:webhook_endpoint/attempts',
      async ({ auth, params, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listAttempts(deps.db, scopeOf(auth), params.webhook_endpoint, { event: query.event, status: query.status }, pageRequest(ctx))
        return listEnvelope(ctx, page, attemptView)
      },
      {
        params,
        query: t.Object({ ...listQuery, ...S.WebhookAttemptFilters }, { additionalProperties: false }),
        detail: {
          ...op('listWebhookAttempts', {
            summary: 'List the endpoint’s delivery attempts, newest first (extension)',
            description:
              'Extension beyond the spec (x-extension). Every attempt to deliver an event to the endpoint: the event, the attempt number, succeeded or failed, the receiver’s status code or why it failed (refused target, timeout, connection error), and how long it took. Filters: event (an event type) and status (succeeded or failed). Attempts are kept as long as their event is (24 h after it, or while a dead letter of it may be replayed).',
            tag: TAG,
            auth: rule,
            list: S.WebhookAttempt,
            errors: { 404: ['webhook_endpoint_not_found'] },
          }),
          'x-extension': true,
        },
      },
    )
    .delete(
      '/v1/webhook_endpoints/:webhook_endpoint',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          await deleteEndpoint(tx, scopeOf(auth), params.webhook_endpoint)
          return { resource: params.webhook_endpoint, body: { id: params.webhook_endpoint, object: 'webhook_endpoint', deleted: true } }
        }),
      {
        params,
        detail: op('deleteWebhookEndpoint', {
          summary: 'Delete a webhook endpoint',
          tag: TAG,
          auth: rule,
          response: Deleted('webhook_endpoint'),
          errors: { 404: ['webhook_endpoint_not_found'] },
        }),
      },
    )
}
