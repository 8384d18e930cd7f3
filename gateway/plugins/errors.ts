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
import { auditedErrors, createMutator, jsonResponse } from './mutation'
import { traces } from './request-context'

export function errorHandler(deps: GatewayDeps, table: RouteTable) {
  const { refused } = createMutator(deps)

  function toApiError(code: string | number, error: unknown, method: string, route: string | undefined): ApiError {
    if (error instanceof ApiError) return error
    if (code === 'VALIDATION') {
      const e = error as { type?: string; value?: unknown; message?: string }
      const part = (e.type ?? 'body') as 'body' | 'query' | 'params' | 'headers'
      const schema = table.get(method, route)?.schemas[part]
      const details = schema ? explain(schema, e.value, { query: part === 'query' || part === 'params' }) : {}
      if (Object.keys(details).length === 0) details[part] = 'is invalid'
      return new ValidationError(details)
    }
    if (code === 'PARSE') return new ApiError(400, 'The request body is not valid JSON.', 'invalid_json')
    if (code === 'NOT_FOUND') return new ApiError(404, 'No such route.', 'not_found')
    if (code === 'INVALID_COOKIE_SIGNATURE') return new ApiError(400, 'Invalid cookie.')
    return new ApiError(500, 'Internal server error.', 'internal_error')
  }

  return new Elysia({ name: 'errors' }).onError({ as: 'global' }, async (c) => {
    const method = c.request.method
    const trace = traces.get(c.request)
    const requestId = trace?.requestId ?? newId('request')
    const err = toApiError(c.code, c.error, method, c.route)
    const log = deps.log.child({ requestId })
    if (err.status >= 500) log.error({ err: c.error, method, route: c.route }, 'request failed')
    const route = table.get(method, c.route)
    // mutate() audits failures inside handlers; this catches the ones refused before.
    const audited = typeof c.error === 'object' && c.error !== null && auditedErrors.has(c.error)
    if (route?.mutation && trace?.principal && !audited) {
      await refused({ requestId, ip: trace.ip, method, path: new URL(c.request.url).pathname, operationId: route.operationId, principal: trace.principal, accountId: trace.accountId ?? null }, err.status).catch(
        (e) => log.error({ err: e }, 'audit write failed'),
      )
    }
    return jsonResponse(err.status, JSON.stringify(err.toBody()), requestId, err.headers ?? {})
  })
}
