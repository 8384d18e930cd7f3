/**
 * The OpenAPI 3.1 document of /v1, generated from the very schemas that validate
 * requests (Elysia's route table) plus what each route's `op(...)` declared:
 * credentials, the account header, Idempotency-Key, success and error responses.
 * Bodies are named components (gateway/openapi/components.ts) and every event
 * type is a webhook (gateway/openapi/webhooks.ts).
 */
import type { AnyElysia } from 'elysia'
import { toOpenAPISchema } from '@elysiajs/openapi'
import { ListOf } from '../src/schemas/common'
import { STABLE_CODES } from '../src/errors'
import type { AuthRule } from './plugins/auth'
import { SESSION_GRANTS } from './session-components'
import { ComponentRegistry, pascal, plain } from './openapi/components'
import { buildWebhooks } from './openapi/webhooks'

const ERROR_REF = { $ref: '#/components/schemas/Error' }

const statusText: Record<number, string> = {
  400: 'Malformed request or validation failure',
  401: 'Missing or invalid credentials',
  403: 'No access (other platform, other mode, missing capability, credential kind not allowed)',
  404: 'Resource absent from the account',
  405: 'The path exists but not with this method',
  409: 'Conflict',
  413: 'Request body too large',
  415: 'Request body is not application/json',
  422: 'Well-formed but semantically wrong',
  429: 'Rate limit exceeded; Retry-After gives the wait in seconds',
  500: 'Server error; safe to retry with backoff',
  502: 'Upstream provider error; transient',
}

/** An error response: the Error body, with `code` narrowed to the stable codes this operation answers with this status. */
function errorResponse(status: number, codes: string[]) {
  const list = [...new Set(codes)]
  const schema = list.length ? { allOf: [ERROR_REF, { type: 'object', properties: { code: { type: 'string', enum: list } } }] } : ERROR_REF
  return {
    description: `${statusText[status] ?? 'Error'}${list.length ? `. Codes: ${list.join(', ')}` : ''}`,
    content: { 'application/json': { schema } },
    ...(status === 429 ? { headers: { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer' } } } } : {}),
  }
}

/** The string forms Elysia adds to query and path schemas so that `?limit=10` validates as an integer. */
const COERCED_STRING_FORMATS = new Set(['integer', 'numeric', 'boolean', 'ArrayString', 'ObjectString'])

/**
 * A parameter's schema as the client sees it: Elysia documents a coerced query or
 * path value as `anyOf [string with format "integer" (default 0), the real type]`;
 * the client-facing type is the real one, with its own bounds and default.
 */
function parameterSchema(schema: any): any {
  if (!schema || !Array.isArray(schema.anyOf)) return schema
  const real = schema.anyOf.filter((s: any) => !(s?.type === 'string' && COERCED_STRING_FORMATS.has(s.format)))
  if (real.length === schema.anyOf.length || real.length === 0) return schema
  if (real.length === 1) return real[0]
  const { anyOf: _, ...rest } = schema
  return { ...rest, anyOf: real }
}

/** A deletion's answer `{id, object, deleted}` is named after its object: DeletedUser, DeletedRingGroupMember. */
function deletedName(schema: any): string | undefined {
  const object = schema?.properties?.object?.const
  return schema?.properties?.deleted?.const === true && typeof object === 'string' ? `Deleted${pascal(object)}` : undefined
}

function credentialsText(rule: AuthRule): string {
  const who: string[] = []
  if (rule.keys === 'platform') who.push('platform secret key')
  if (rule.keys === 'account') who.push('platform secret key with the Service-Account header')
  if (rule.keys === 'optional-account') who.push('platform secret key, platform-wide, or with the Service-Account header for that account')
  if (rule.sessions.length) who.push(`account session with component ${rule.sessions.join(' or ')}`)
  if (rule.user) who.push('user token')
  return who.length ? `Credentials: ${who.join('; ')}.` : 'Credentials: none.'
}

export function buildOpenApi(app: AnyElysia, baseUrl: string) {
  const generated = toOpenAPISchema(app, { paths: [/^(?!\/v1\/)/] }, undefined, undefined, '3.1.0')
  const paths = generated.paths as Record<string, Record<string, any>>
  const registry = new ComponentRegistry()
  const bodySchemas = new Map<string, unknown>()
  for (const r of app.routes) {
    const body = (r.hooks as { body?: unknown } | undefined)?.body
    if (body && typeof body === 'object') bodySchemas.set(`${r.method.toLowerCase()} ${r.path.replace(/:([^/]+)/g, '{$1}')}`, plain(body))
  }
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const rule: AuthRule | undefined = operation['x-auth']
      const success = operation['x-success-schema']
      const listItem = operation['x-success-list']
      const successStatus = String(operation['x-success-status'] ?? 200)
      const extra: Record<string, string[]> = operation['x-errors'] ?? {}
      delete operation['x-auth']
      delete operation['x-success-schema']
      delete operation['x-success-list']
      delete operation['x-success-status']
      delete operation['x-errors']
      if (!rule) continue
      operation.security = [{ bearerAuth: [] }]
      if (rule.sessions.length) operation['x-session-components'] = rule.sessions
      operation.description = [operation.description, credentialsText(rule)].filter(Boolean).join('\n\n')
      const parameters: any[] = (operation.parameters ?? []).filter((p: any) => !(p.in === 'query' && p.name === 'expand[]' && p.schema === undefined))
      for (const p of parameters) {
        p.schema = parameterSchema(p.schema)
        if (p.description === undefined && typeof p.schema?.description === 'string') p.description = p.schema.description
        if (p.in === 'query' && p.name === 'expand[]') {
          p.style = 'form'
          p.explode = true
        }
      }
      if (rule.keys === 'account') {
        parameters.push({
          name: 'Service-Account',
          in: 'header',
          required: false,
          description: 'Account ID; required with a platform secret key, not needed with an account session or user token',
          schema: { type: 'string', maxLength: 255 },
        })
      }
      if (method === 'post' || method === 'delete' || method === 'put') {
        parameters.push({
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'Makes retries safe for 24 hours: the same key and request replay the first response',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        })
      }
      operation.parameters = parameters
      // Bodies are JSON (spec, Conventions 1): document only that media type. The
      // gateway's own JSON parser hides the media types from the generator, so the
      // schema may have to come from the route itself.
      // Upload routes document their own media types (gateway/uploads.ts).
      if (operation.requestBody && !operation.requestBody.content?.['multipart/form-data']) {
        const content = (operation.requestBody.content ?? {}) as Record<string, { schema?: unknown }>
        const schema = content['application/json']?.schema ?? Object.values(content)[0]?.schema ?? bodySchemas.get(`${method} ${path}`)
        if (schema) operation.requestBody.content = { 'application/json': { schema: registry.body(schema, () => `${pascal(operation.operationId)}Request`) } }
      } else if (operation.requestBody) {
        const form = operation.requestBody.content['multipart/form-data']
        form.schema = registry.body(form.schema, () => formName(form.schema, operation.operationId))
      }
      const responses: Record<string, unknown> = {}
      const isList = listItem !== undefined
      const successSchema = isList
        ? listSchema(registry, plain(ListOf(listItem)), operation.operationId)
        : success
          ? successBody(registry, plain(success), operation.operationId)
          : undefined
      responses[successStatus] = {
        description: successStatus === '202' ? 'Accepted' : 'Success',
        ...(successSchema ? { content: { 'application/json': { schema: successSchema } } } : {}),
      }
      const codes: Record<number, string[]> = {
        400: ['validation_error', 'invalid_json', ...(isList ? ['invalid_pagination'] : []), ...(rule.keys === 'account' ? ['account_header_required'] : [])],
        401: ['unauthorized', 'session_expired'],
        403: ['forbidden', 'account_forbidden', 'account_mode_mismatch', ...(rule.sessions.length ? ['missing_capability'] : [])],
        429: ['rate_limited'],
        500: ['internal_error'],
      }
      if (method === 'post' || method === 'delete' || method === 'put') {
        codes[409] = ['idempotency_key_in_use']
        codes[422] = ['idempotency_key_reused']
        codes[413] = ['payload_too_large']
        codes[415] = ['unsupported_media_type']
      }
      for (const [status, list] of Object.entries(extra)) codes[Number(status)] = [...(codes[Number(status)] ?? []), ...list]
      for (const status of Object.keys(codes).map(Number).sort()) responses[String(status)] = errorResponse(status, codes[status]!)
      operation.responses = responses
    }
  }
  const webhooks = buildWebhooks(registry)
  return {
    openapi: '3.1.0',
    info: {
      title: 'Business Voice Service API',
      version: '1.0.0',
      description:
        'Business voice for software platforms. Errors are `{error, code?, details?}`; stable codes: ' +
        Object.entries(STABLE_CODES)
          .map(([code, c]) => `${code} (${c.status})`)
          .join(', ') +
        '. Operations and webhooks marked `x-extension: true` go beyond the interface specification.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: baseUrl }],
    'x-session-components': SESSION_GRANTS,
    security: [{ bearerAuth: [] }],
    tags: [
      ...[...new Set(Object.values(paths).flatMap((item) => Object.values(item).flatMap((o: any) => o.tags ?? [])))].map((name) => ({
        name,
        description: `${name} operations`,
      })),
      { name: 'Webhooks', description: 'The events POSTed to webhook endpoints, signed with the endpoint secret' },
    ],
    paths,
    webhooks,
    components: {
      schemas: { ...(generated.components?.schemas ?? {}), ...registry.used({ paths, webhooks }) },
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'A platform secret key (sk_test_… or sk_live_…), an account session client_secret, or a user token.',
        },
      },
    },
  }
}

/** An upload of a file alone is the same form everywhere; one with more fields is named after its operation. */
const formName = (schema: any, operationId: string) =>
  Object.keys(schema?.properties ?? {}).join() === 'file' ? 'FileUploadForm' : `${pascal(operationId)}Form`

/** A list answer: the envelope stays inline (its shape is the same everywhere), its items are a named schema. */
function listSchema(registry: ComponentRegistry, list: any, operationId: string) {
  list.properties.data.items = registry.body(list.properties.data.items, () => `${pascal(operationId)}Item`)
  return list
}

function successBody(registry: ComponentRegistry, schema: any, operationId: string) {
  return registry.body(schema, () => {
    const deleted = deletedName(schema)
    // The same object deleted in two shapes: the second is named after its operation.
    return deleted && !registry.schemas.has(deleted) ? deleted : `${pascal(operationId)}Response`
  })
}
