/**
 * The `webhooks` section of the served document (OpenAPI 3.1) against real
 * deliveries: every event type of the catalog has an entry whose body is the
 * envelope with its typed `data`, and the events a sandbox account really
 * receives (the test events, and simulated calls with recording, voicemail,
 * transfer and an emergency number) validate against their entry and carry no
 * field the document does not name. Each delivery's signature is verified with
 * the typed client's helper (client/webhooks.ts), which refuses a tampered body,
 * a wrong secret and a stale timestamp.
 */
import { describe, expect, test } from 'bun:test'
import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { verifyWebhook, WebhookSignatureError } from '../client'
import { EVENT_TYPES, SUPPORTED_TEST_EVENTS } from '../src/events/catalog'
import { apiClient } from './support/api-client'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { type ReceivedWebhook, startWebhookReceiver, verifySignature } from './support/webhook-receiver'

const t = await startTestService({ VOICE_CLOCK_SPEED: '200', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const doc: any = await (await fetch(`${t.baseUrl}/v1/openapi.json`)).json()
const rx = await startWebhookReceiver()

const a = await t.account()
t.beforeStop(() => t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key }))
const api = apiClient(t, { key: a.key, account: a.id })

const user = (await api.POST('/v1/users', { body: { email: 'agent@example.com', name: 'Agent' } })).data!.id
const available = (await api.GET('/v1/available-phone-numbers', { params: { query: { quantity: 1 } } })).data!.data[0]!.phone_number
expect((await api.POST('/v1/phone-number-orders', { body: { phone_numbers: [available] } })).response.status).toBe(200)
const endpoint = (await api.POST('/v1/webhook_endpoints', { body: { url: rx.url, enabled_events: ['*'] } })).data!
const secret = endpoint.secret!

/** The schema of a webhook's body, resolved in the served document. */
const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats(ajv)
ajv.addSchema(doc, 'openapi')
const validatorOf = (type: string) => ajv.compile({ $ref: `openapi#/webhooks/${type}/post/requestBody/content/application~1json/schema` })
const componentOf = (ref: string) => doc.components.schemas[ref.replace('#/components/schemas/', '')]

/** The types a simulated call and the test events produce here. */
const SIMULATED = [
  'call.incoming',
  'call.ringing',
  'call.answered',
  'call.end',
  'recording.available',
  'recording.transcription.complete',
  'recording.summary.complete',
  'voicemail.new',
  'voicemail.transcription.complete',
  'call.initiated',
  'call.transfer',
  'call.emergency',
]

/** Deliveries by event id (a retry delivers the same id again). */
function byId(): Map<string, ReceivedWebhook> {
  const out = new Map<string, ReceivedWebhook>()
  for (const r of rx.requests) if (r.body?.id && !out.has(r.body.id)) out.set(r.body.id, r)
  return out
}

describe('webhooks section', () => {
  test('every event type of the catalog is a webhook: a POST of its named envelope with typed data', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...EVENT_TYPES].sort())
    for (const type of EVENT_TYPES) {
      const post = doc.webhooks[type].post
      const envelope = componentOf(post.requestBody.content['application/json'].schema.$ref)
      expect({ type, const: envelope.properties.type.const }).toEqual({ type, const: type })
      const account = ['user.created', 'user.deleted', 'phone_number.activated', 'phone_number.disconnected'].includes(type) ? 'account' : 'account_id'
      expect({ type, required: envelope.required }).toEqual({ type, required: ['id', 'type', 'created_at', account, 'data'] })
      const data = componentOf(envelope.properties.data.$ref)
      expect({ type, data: data.type, fields: Object.keys(data.properties).length > 0 }).toEqual({ type, data: 'object', fields: true })
      expect(post.parameters.map((p: any) => p.name)).toEqual(['X-Service-Signature', 'X-Service-Account-Id'])
    }
    expect(doc.webhooks['port_order.status_changed'].post['x-extension']).toBe(true)
    expect(doc.webhooks['call.end'].post['x-extension']).toBeUndefined()
  })

  test('the events really delivered validate against their webhook and name no undocumented field; signatures verify with client/webhooks', async () => {
    for (const event of SUPPORTED_TEST_EVENTS) {
      const r = await api.POST('/v1/test_helpers/events', { body: { event } })
      expect({ event, status: r.response.status }).toEqual({ event, status: 200 })
    }
    const from_number = '+15551234567'
    const calls = [
      { user, from_number, scenario: { ring_seconds: 1, talk_seconds: 2, recording: true } },
      { user, from_number, scenario: { outcome: 'voicemail' as const, ring_seconds: 1, voicemail_seconds: 3 } },
      { user, direction: 'outbound' as const, to_number: '+15005550104' },
      { user, direction: 'outbound' as const, to_number: '933' },
    ]
    for (const body of calls) expect((await api.POST('/v1/test_helpers/calls', { body })).response.status).toBe(200)

    const wanted = new Set([...SUPPORTED_TEST_EVENTS, ...SIMULATED])
    const seen = await until(
      `every one of ${[...wanted].join(', ')}`,
      () => {
        const types = new Set([...byId().values()].map((r) => r.body.type as string))
        return [...wanted].every((type) => types.has(type)) ? byId() : undefined
      },
      60_000,
    )

    const problems: string[] = []
    for (const [id, hit] of seen) {
      const type = hit.body.type as string
      const validate = validatorOf(type)
      if (!validate(hit.body)) problems.push(`${type} ${id}: ${ajv.errorsText(validate.errors)}`)
      const envelope = componentOf(doc.webhooks[type].post.requestBody.content['application/json'].schema.$ref)
      const documented = new Set(Object.keys(componentOf(envelope.properties.data.$ref).properties))
      const extra = Object.keys(hit.body.data).filter((k) => !documented.has(k))
      if (extra.length > 0) problems.push(`${type} ${id}: undocumented data fields ${extra.join(', ')}`)
      const verified = verifyWebhook(hit.rawBody, hit.headers['x-service-signature'], secret)
      expect(verified.id).toBe(id)
      expect(verified.type).toBe(type as typeof verified.type)
    }
    expect(problems).toEqual([])
  }, 90_000)

  test('verifyWebhook agrees with stripe’s verifier and refuses a tampered body, another secret, a stale or missing signature', async () => {
    const [hit] = await rx.waitFor(1)
    const header = hit!.headers['x-service-signature']!
    expect(verifyWebhook(hit!.rawBody, header, secret)).toEqual(await verifySignature(hit!.rawBody, header, secret))
    expect(verifyWebhook(new TextEncoder().encode(hit!.rawBody), header, secret).id).toBe(hit!.body.id)
    const refused = (f: () => unknown) => expect(f).toThrow(WebhookSignatureError)
    refused(() => verifyWebhook(hit!.rawBody.replace('"data":{', '"data":{"x":1,'), header, secret))
    refused(() => verifyWebhook(JSON.stringify(JSON.parse(hit!.rawBody), null, 1), header, secret))
    refused(() => verifyWebhook(hit!.rawBody, header, `${secret}x`))
    refused(() => verifyWebhook(hit!.rawBody, header, secret, { now: Number(/t=(\d+)/.exec(header)![1]) + 301 }))
    refused(() => verifyWebhook(hit!.rawBody, undefined, secret))
    refused(() => verifyWebhook(hit!.rawBody, header.replace(/v1=[0-9a-f]+/, 'v1=00'), secret))
  })
})
