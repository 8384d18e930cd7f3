/**
 * The `webhooks` section (OpenAPI 3.1): one entry per event type of
 * src/events/catalog.ts, a POST of the signed envelope `{id, type, created_at,
 * account_id | account, data}` (src/events/outbox.ts) to the endpoint's URL.
 * Each envelope and each data object is a named component (`CallEndEvent`,
 * `CallEndData`).
 */
import { BILLABLE_COUNT_EVENTS, EVENT_TYPES, isStreamEvent } from '../../src/events/catalog'
import { type ComponentRegistry, pascal, plain, ref } from './components'
import { EVENT_DATA, EXTENSION_EVENTS } from './event-payloads'

const SIGNATURE_HEADERS = [
  {
    name: 'X-Service-Signature',
    in: 'header',
    required: true,
    description:
      '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the endpoint secret>`. Verify over the exact bytes received (client/webhooks.ts: verifyWebhook).',
    schema: { type: 'string', pattern: '^t=\\d+,v1=[0-9a-f]{64}$' },
  },
  { name: 'X-Service-Account-Id', in: 'header', required: true, description: 'the account of the event', schema: { type: 'string' } },
]

export const eventComponentName = (type: string) => `${pascal(type)}Event`
export const dataComponentName = (type: string) => `${pascal(type)}Data`

function envelope(type: string, dataName: string) {
  const accountField = BILLABLE_COUNT_EVENTS.has(type) ? 'account' : 'account_id'
  return {
    type: 'object',
    description: `The webhook body of ${type}.`,
    required: ['id', 'type', 'created_at', accountField, 'data'],
    properties: {
      id: { type: 'string', description: 'unique event id: deliveries are at least once, so handle each id once' },
      type: { type: 'string', const: type },
      created_at: { type: 'string', format: 'date-time' },
      [accountField]: {
        type: 'string',
        description: accountField === 'account' ? 'the account (billable-count events name it account)' : 'the account where it occurred',
      },
      data: ref(dataName),
    },
  }
}

/** The webhooks section; registers the envelope and data components it refers to. */
export function buildWebhooks(registry: ComponentRegistry) {
  const webhooks: Record<string, unknown> = {}
  for (const type of EVENT_TYPES) {
    const dataName = registry.add(dataComponentName(type), plain(EVENT_DATA[type]))
    const eventName = registry.add(eventComponentName(type), envelope(type, dataName))
    const extension = EXTENSION_EVENTS.has(type)
    webhooks[type] = {
      post: {
        operationId: `${type.replace(/[._]([a-z])/g, (_, c: string) => c.toUpperCase())}Webhook`,
        summary: type,
        tags: ['Webhooks'],
        description: [
          (EVENT_DATA[type] as { description?: string }).description,
          isStreamEvent(type) ? 'Also carried (flat, type as `event`) by the event stream GET /v1/events.' : undefined,
          extension ? 'Extension beyond the spec (x-extension).' : undefined,
        ]
          .filter(Boolean)
          .join(' '),
        ...(extension ? { 'x-extension': true } : {}),
        parameters: SIGNATURE_HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: ref(eventName) } } },
        responses: {
          '200': { description: 'Acknowledged: any 2xx (the body is ignored)' },
          '400': { description: 'Any other answer, or none within the timeout, is a failed attempt: retried up to 5 times, then dead-lettered' },
        },
        security: [],
      },
    }
  }
  return webhooks
}
