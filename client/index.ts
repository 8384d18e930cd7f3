/**
 * A typed client of the Business Voice Service API: openapi-fetch over the types
 * generated from the served OpenAPI document (client/schema.d.ts).
 *
 *   const voice = createVoiceClient({ baseUrl: 'http://localhost:8080', key: 'sk_test_…', account: 'acct_…' })
 *   const { data, error } = await voice.POST('/v1/users', { body: { email: 'ada@example.com', first_name: 'Ada' } })
 *
 * Paths, parameters, bodies and answers are checked by TypeScript; `error` is the
 * API's `{error, code?, details?}` body for a non-2xx answer.
 */
import createClient, { type Client } from 'openapi-fetch'
import type { components, paths, webhooks } from './schema'

export type { components, operations, paths, webhooks } from './schema'
export { verifyWebhook, WebhookSignatureError } from './webhooks'

/** A named schema of the document: `Schema<'User'>`, `Schema<'CallEndEvent'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name]
export type ApiErrorBody = Schema<'Error'>
/** Any webhook body, by its `type`. */
export type WebhookEvent = webhooks[keyof webhooks]['post']['requestBody']['content']['application/json']
export type WebhookEventType = WebhookEvent['type']

export type VoiceClient = Client<paths>

export interface VoiceClientOptions {
  /** The service's base URL, without /v1. */
  baseUrl: string
  /** A platform secret key, an account session client_secret or a user token. */
  key?: string
  /** The account to act on with a platform secret key (the Service-Account header). */
  account?: string
  /** Replaces the global fetch (a proxy, a test harness). */
  fetch?: (request: Request) => Promise<Response>
  headers?: Record<string, string>
}

export function createVoiceClient(o: VoiceClientOptions): VoiceClient {
  const headers: Record<string, string> = { ...o.headers }
  if (o.key) headers.authorization = `Bearer ${o.key}`
  if (o.account) headers['service-account'] = o.account
  return createClient<paths>({
    baseUrl: o.baseUrl.replace(/\/+$/, ''),
    headers,
    ...(o.fetch ? { fetch: o.fetch } : {}),
    // `expand[]=a&expand[]=b`, as the document declares (form, exploded).
    querySerializer: { array: { style: 'form', explode: true } },
  })
}
