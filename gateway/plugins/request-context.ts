/**
 * Per-request context for every route: request id, client ip, logger, the
 * authenticated caller (by the route's own rule), rate limiting, and the
 * `mutate` and `list` helpers bound to this request.
 */
import { Elysia } from 'elysia'
import { ValidationError } from '../../src/errors'
import { newId } from '../../src/ids'
import type { Logger } from '../../src/logger'
import type { Db } from '../../src/db/client'
import type { Principal } from '../../src/services/principal'
import type { GatewayDeps } from '../context'
import type { RouteTable } from '../route-table'
import { createAuthenticator, type AuthContext } from './auth'
import type { ListContext } from './lists'
import { createMutator, IDEMPOTENCY_KEY_MAX, type MutationResult } from './mutation'
import { createRateLimiter } from './rate-limit'

/** What onError needs to know about a request that failed. */
export interface RequestTrace {
  requestId: string
  ip: string | null
  principal?: Principal
  accountId?: string | null
}

export const traces = new WeakMap<Request, RequestTrace>()

export function requestContext(deps: GatewayDeps, table: RouteTable) {
  const authenticate = createAuthenticator(deps)
  const rateLimit = createRateLimiter({ perSecond: deps.config.rateLimitPerSecond, burst: deps.config.rateLimitBurst })
  const mutator = createMutator(deps)

  return new Elysia({ name: 'request-context' }).derive({ as: 'global' }, async (c) => {
    const requestId = newId('request')
    c.set.headers['x-request-id'] = requestId
    const ip = c.server?.requestIP(c.request)?.address ?? null
    const trace: RequestTrace = { requestId, ip }
    traces.set(c.request, trace)
    const log: Logger = deps.log.child({ requestId })
    const route = table.get(c.request.method, c.route)

    let auth: AuthContext | undefined
    if (route?.auth) {
      auth = await authenticate(c.request.headers, route.auth, c.params as Record<string, string>, (p) => {
        trace.principal = p
      })
      trace.accountId = auth.account?.id ?? null
      rateLimit(auth.principal.actor)
    }

    const idempotencyKey = c.request.headers.get('idempotency-key') ?? undefined
    if (idempotencyKey !== undefined && (idempotencyKey.length === 0 || idempotencyKey.length > IDEMPOTENCY_KEY_MAX)) {
      throw new ValidationError({ 'Idempotency-Key': `must be 1 to ${IDEMPOTENCY_KEY_MAX} characters` })
    }
    const path = new URL(c.request.url).pathname

    return {
      requestId,
      ip,
      log,
      /** The caller; present on every route that declares an auth rule. */
      auth: auth as AuthContext,
      mutate(work: (tx: Db) => Promise<MutationResult>) {
        return mutator.mutate(
          {
            requestId,
            ip,
            method: c.request.method,
            path,
            operationId: route?.operationId ?? path,
            principal: auth!.principal,
            accountId: auth?.account?.id ?? null,
            idempotencyKey,
            body: c.body,
          },
          work,
        )
      },
      /** Context for pagination: lists are owned by the account, or by platform and mode. */
      listContext(query: Record<string, unknown>): ListContext {
        const p = auth!.principal
        const owner = auth?.account?.id ?? `${p.platformId}:${p.mode}`
        return { cursors: deps.cursors, baseUrl: deps.config.baseUrl, owner, path, query }
      },
    }
  })
}

export { createMutator }
