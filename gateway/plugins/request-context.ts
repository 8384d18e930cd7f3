/**
 * Per-request context for every route: request id, client ip, logger, the
 * authenticated caller (by the route's own rule), rate limiting, and the
 * `mutate` and `list` helpers bound to this request.
 */
import { Elysia } from 'elysia'
import { ApiError, ValidationError } from '../../src/errors'
import { newId } from '../../src/ids'
import type { Logger } from '../../src/logger'
import type { Db } from '../../src/db/client'
import type { Principal } from '../../src/services/platform/principal'
import type { GatewayDeps } from '../context'
import type { RouteTable } from '../route-table'
import { createAuthenticator, type AuthContext } from './auth'
import { createCors } from './cors'
import type { ListContext } from './lists'
import { createMutator, IDEMPOTENCY_KEY_MAX, type MutationContext, type MutationResult } from './mutation'
import { createRateLimiter, type FailureLimiter } from './rate-limit'
import { strictQueryProblems } from '../strict-query'
import { checkUploadLength, isUploadRoute, parseUpload, uploadKind } from '../uploads'
import { jsonNestsDeeperThan, nulFields } from '../validation'

/** Deepest nesting a JSON body may have: far beyond any request schema. */
const MAX_JSON_DEPTH = 32
/** Largest body the gateway accepts (the HTTP server's own hard limit sits above it). */
export const MAX_BODY_BYTES = 1024 * 1024

const tooLarge = () => new ApiError(413, `The request body is larger than ${MAX_BODY_BYTES} bytes.`, 'payload_too_large')

/** What onError needs to know about a request that failed. */
export interface RequestTrace {
  requestId: string
  ip: string | null
  principal?: Principal
  accountId?: string | null
  /** CORS headers of an admitted cross-origin caller, for the answer whatever it is. */
  cors?: Record<string, string>
}

export const traces = new WeakMap<Request, RequestTrace>()

export function requestContext(deps: GatewayDeps, table: RouteTable, authFailures: FailureLimiter) {
  const authenticate = createAuthenticator(deps)
  const rateLimit = createRateLimiter({ perSecond: deps.config.rateLimitPerSecond, burst: deps.config.rateLimitBurst, share: deps.rateLimitShare })
  const mutator = createMutator(deps)
  const cors = createCors(deps)

  const started = new WeakMap<Request, number>()
  return new Elysia({ name: 'request-context' })
    .onStop(() => rateLimit.close())
    .onRequest(({ request }) => {
      // Only a preflight waits on the database here: every other request stays synchronous.
      if (request.method === 'OPTIONS') return cors.preflight(request)
      const declared = Number(request.headers.get('content-length') ?? 0)
      if (isUploadRoute(request.method, new URL(request.url).pathname)) checkUploadLength(declared)
      else if (declared > MAX_BODY_BYTES) throw tooLarge()
    })
    .onParse({ as: 'global' }, async ({ request }, contentType) => {
      // The one exception to JSON: files on the upload routes (gateway/uploads.ts).
      const upload = uploadKind(contentType)
      if (upload && isUploadRoute(request.method, new URL(request.url).pathname)) return parseUpload(request, contentType, upload)
      // JSON bodies are read here so that one nested thousands of levels deep is refused
      // before validation, whose error reports grow with the square of the depth.
      const text = await request.text()
      if (contentType.split(';')[0]!.trim().toLowerCase() !== 'application/json') {
        // Bodies are JSON, and only JSON: a form or multipart body is refused, not guessed at.
        if (text.length === 0) return null
        throw new ApiError(415, 'Request bodies must be JSON, sent with Content-Type: application/json.', 'unsupported_media_type')
      }
      if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw tooLarge()
      if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) throw new ApiError(400, `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`, 'invalid_json')
      return JSON.parse(text)
    })
    .onAfterResponse({ as: 'global' }, (c) => {
      // One access line per request, carrying its request id like every other line.
      if (!deps.log.isLevelEnabled('info')) return
      const trace = traces.get(c.request)
      const t0 = started.get(c.request)
      const response = (c as { response?: unknown }).response
      const status = response instanceof Response ? response.status : typeof c.set.status === 'number' ? c.set.status : 200
      deps.log.info(
        {
          requestId: trace?.requestId,
          method: c.request.method,
          path: new URL(c.request.url).pathname,
          status,
          ms: t0 === undefined ? undefined : Math.round((performance.now() - t0) * 10) / 10,
          actor: trace?.principal?.actor,
        },
        'request',
      )
    })
    .derive({ as: 'global' }, async (c) => {
      const requestId = newId('request')
      started.set(c.request, performance.now())
      c.set.headers['x-request-id'] = requestId
      const ip = c.server?.requestIP(c.request)?.address ?? null
      const trace: RequestTrace = { requestId, ip }
      traces.set(c.request, trace)
      const log: Logger = deps.log.child({ requestId })
      const route = table.get(c.request.method, c.route)

      let auth: AuthContext | undefined
      if (route?.auth) {
        const rule = route.auth
        auth = await authFailures.guard(ip, () =>
          authenticate(c.request.headers, rule, c.params as Record<string, string>, (p) => {
            trace.principal = p
          }),
        )
        trace.accountId = auth.account?.id ?? null
        const origin = cors.crossOrigin(c.request)
        if (origin !== undefined) {
          trace.cors = await cors.admit(origin, auth.principal)
          Object.assign(c.set.headers, trace.cors)
        }
        rateLimit(rateLimitBucket(auth.principal))
      }

      const idempotencyKey = c.request.headers.get('idempotency-key') ?? undefined
      if (idempotencyKey !== undefined && (idempotencyKey.length === 0 || idempotencyKey.length > IDEMPOTENCY_KEY_MAX)) {
        throw new ValidationError({ 'Idempotency-Key': `must be 1 to ${IDEMPOTENCY_KEY_MAX} characters` })
      }
      const url = new URL(c.request.url)
      const queryProblems = route ? strictQueryProblems(url.searchParams, route.schemas.query) : {}
      if (Object.keys(queryProblems).length > 0) throw new ValidationError(queryProblems)
      const nul = { ...nulFields(c.params ?? {}), ...nulFields(c.query ?? {}), ...nulFields(c.body) }
      if (Object.keys(nul).length > 0) throw new ValidationError(nul)
      const path = url.pathname

      return {
        requestId,
        ip,
        log,
        /** The caller; present on every route that declares an auth rule. */
        auth: auth as AuthContext,
        mutate(work: (tx: Db, ctx: MutationContext) => Promise<MutationResult>) {
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

/**
 * The bucket a request is counted in: its credential's, except account sessions,
 * which a platform mints at will: each new session would be a new bucket, so all the
 * account sessions of one platform share one.
 */
function rateLimitBucket(principal: Principal): string {
  return principal.kind === 'account_session' ? `account_sessions_of:${principal.platformId}` : principal.actor
}
