/**
 * The one place that builds an error body: `{error, code?, details?}`. Everything
 * thrown (our ApiError, Elysia's parse and validation errors, the unexpected) is
 * mapped here, and a refused mutation is still written to the audit log.
 */
import { Elysia } from 'elysia'
import { ApiError, ValidationError } from '../../src/errors'
import { newId } from '../../src/ids'
import type { GatewayDeps } from '../context'
import type { RouteTable } from '../route-table'
import { explain } from '../validation'
import { createCors } from './cors'
import { auditedErrors, createMutator, jsonResponse } from './mutation'
import { traces } from './request-context'

/** The query string as Elysia reads it, before any decoding: repeated keys become arrays. */
function rawQuery(request: Request): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  const search = new URL(request.url).searchParams
  for (const key of new Set(search.keys())) {
    const all = search.getAll(key)
    out[key] = all.length === 1 ? all[0]! : all
  }
  return out
}

export function errorHandler(deps: GatewayDeps, table: RouteTable) {
  const { refused } = createMutator(deps)
  const cors = createCors(deps)

  function toApiError(
    code: string | number,
    error: unknown,
    method: string,
    route: string | undefined,
    request: Request,
    params: Record<string, string> | undefined,
  ): ApiError {
    if (error instanceof ApiError) return error
    if (code === 'VALIDATION') {
      const e = error as { type?: string; value?: unknown; message?: string }
      const schemas = table.get(method, route)?.schemas ?? {}
      const part = e.type === 'body' || e.type === 'query' || e.type === 'params' || e.type === 'headers' ? e.type : undefined
      if (part === undefined) {
        // A value that failed while being decoded (Elysia reports `limit=0` or an unknown
        // `expand[]` as 'property', without naming the field): explain the raw request.
        const details = schemas.query ? explain(schemas.query, rawQuery(request), { query: true }) : {}
        if (Object.keys(details).length === 0 && schemas.params) Object.assign(details, explain(schemas.params, params ?? {}, { query: true }))
        if (Object.keys(details).length === 0) details.request = 'is invalid'
        return new ValidationError(details)
      }
      const schema = schemas[part]
      const details = schema ? explain(schema, e.value, { query: part === 'query' || part === 'params' }) : {}
      if (Object.keys(details).length === 0) details[part] = 'is invalid'
      return new ValidationError(details)
    }
    if (code === 'PARSE') {
      const cause = (error as { cause?: unknown }).cause
      return cause instanceof ApiError ? cause : new ApiError(400, 'The request body is not valid JSON.', 'invalid_json')
    }
    if (code === 'NOT_FOUND') {
      // A known path asked with the wrong method (PATCH where the API updates with POST) deserves to be told so.
      const allowed = table.methodsFor(new URL(request.url).pathname).filter((m) => m !== 'HEAD' && m !== 'OPTIONS')
      if (allowed.length > 0 && !allowed.includes(method))
        return new ApiError(
          405,
          `${method} is not supported on this path; it answers ${allowed.join(', ')}${method === 'PATCH' || method === 'PUT' ? ' (updates are POST)' : ''}.`,
          'method_not_allowed',
          undefined,
          {
            allow: allowed.join(', '),
          },
        )
      return new ApiError(404, 'No such route.', 'not_found')
    }
    if (code === 'INVALID_COOKIE_SIGNATURE') return new ApiError(400, 'Invalid cookie.')
    return new ApiError(500, 'Internal server error.', 'internal_error')
  }

  return new Elysia({ name: 'errors' }).onError({ as: 'global' }, async (c) => {
    const method = c.request.method
    const trace = traces.get(c.request)
    const requestId = trace?.requestId ?? newId('request')
    const err = toApiError(c.code, c.error, method, c.route, c.request, (c as { params?: Record<string, string> }).params)
    const log = deps.log.child({ requestId })
    if (err.status >= 500) log.error({ err: c.error, method, route: c.route }, 'request failed')
    const route = table.get(method, c.route)
    // mutate() audits failures inside handlers; this catches the ones refused before.
    const audited = typeof c.error === 'object' && c.error !== null && auditedErrors.has(c.error)
    if (route?.mutation && trace?.principal && !audited) {
      // A session refused before its account was loaded still belongs to that account's trail.
      const accountId = trace.accountId ?? (trace.principal.kind === 'secret_key' ? null : trace.principal.accountId)
      await refused(
        { requestId, ip: trace.ip, method, path: new URL(c.request.url).pathname, operationId: route.operationId, principal: trace.principal, accountId },
        err.status,
      ).catch((e) => log.error({ err: e }, 'audit write failed'))
    }
    // A page must read its own refusals (a 401 session_expired tells it to renew its token).
    const origin = cors.crossOrigin(c.request)
    const corsHeaders = trace?.cors ?? (origin !== undefined && !trace?.principal ? await cors.anonymousHeaders(origin) : {})
    return jsonResponse(err.status, JSON.stringify(err.toBody()), requestId, { ...corsHeaders, ...(err.headers ?? {}) })
  })
}
