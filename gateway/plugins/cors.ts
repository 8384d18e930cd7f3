/**
 * CORS: browser components and softphones call the API with account-session and user
 * tokens from the origins their platform configured (POST /admin/platforms/{id}
 * `allowed_origins`).
 *
 * A preflight carries no credential, so it is answered for an origin that some
 * platform allows; the request itself is then held to its own platform's list. A
 * secret key sent from a browser (any cross-origin request) is refused: it would sit
 * in a page where anyone could read it. Requests from the service's own origin (the
 * /docs page) are not cross-origin and pass untouched.
 */
import { forbidden } from '../../src/errors'
import { canonicalOrigin, platformOrigins, someoneAllows } from '../../src/services/platform/origins'
import type { Principal } from '../../src/services/platform/principal'
import type { GatewayDeps } from '../context'

const ALLOWED_HEADERS = 'Authorization, Content-Type, Service-Account, Idempotency-Key'
const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, Idempotent-Replayed'
const ALLOWED_METHODS = 'GET, POST, DELETE'
/** Browsers cap it lower anyway (Chrome: 2 h); long enough to spare most preflights. */
const PREFLIGHT_MAX_AGE_S = 600
/** A change of a platform's origins reaches every gateway within this. */
const CACHE_MS = 5_000
const CACHE_MAX = 10_000

export type Cors = ReturnType<typeof createCors>

/** Answers kept CACHE_MS: a preflight or a cross-origin request costs no query most of the time. */
function shortLived<T>() {
  const entries = new Map<string, { at: number; value: Promise<T> }>()
  return (key: string, load: () => Promise<T>): Promise<T> => {
    const now = performance.now()
    const hit = entries.get(key)
    if (hit && now - hit.at < CACHE_MS) return hit.value
    if (entries.size >= CACHE_MAX) entries.clear()
    const value = load()
    entries.set(key, { at: now, value })
    // A failed lookup is not remembered.
    value.catch(() => entries.delete(key))
    return value
  }
}

export function createCors(deps: Pick<GatewayDeps, 'db' | 'config'>) {
  const ownOrigin = canonicalOrigin(new URL(deps.config.baseUrl).origin)
  const anyPlatform = shortLived<boolean>()
  const ofPlatform = shortLived<string[]>()
  const allowedBySomeone = (origin: string) => anyPlatform(origin, () => someoneAllows(deps.db, origin))
  const allowedBy = async (platformId: string, origin: string) => (await ofPlatform(platformId, () => platformOrigins(deps.db, platformId))).includes(origin)

  /** The request's cross-origin Origin, if it has one; same-origin and non-browser requests: undefined. */
  function crossOrigin(request: Request): string | undefined {
    const origin = request.headers.get('origin')
    if (origin === null) return undefined
    if (origin === ownOrigin || origin === new URL(request.url).origin) return undefined
    return origin
  }

  const responseHeaders = (origin: string): Record<string, string> => ({
    'access-control-allow-origin': origin,
    'access-control-expose-headers': EXPOSED_HEADERS,
    vary: 'Origin',
  })

  return {
    crossOrigin,

    /** The answer to a preflight of /v1, or undefined when the request is not one. */
    async preflight(request: Request): Promise<Response | undefined> {
      if (request.method !== 'OPTIONS' || !new URL(request.url).pathname.startsWith('/v1/')) return undefined
      const origin = crossOrigin(request)
      if (origin === undefined || !request.headers.has('access-control-request-method')) return undefined
      const headers: Record<string, string> = { vary: 'Origin' }
      if (await allowedBySomeone(origin)) {
        Object.assign(headers, {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': ALLOWED_METHODS,
          'access-control-allow-headers': ALLOWED_HEADERS,
          'access-control-max-age': String(PREFLIGHT_MAX_AGE_S),
        })
      }
      // No allow headers is the refusal: the browser stops there.
      return new Response(null, { status: 204, headers })
    },

    /**
     * Once the caller is known: a secret key never crosses origins, a token only from
     * its own platform's origins. The headers to answer with when it may.
     */
    async admit(origin: string, principal: Principal): Promise<Record<string, string>> {
      if (principal.kind === 'secret_key') throw forbidden('A secret key must not be used from a browser: use an account session or a user token there.')
      if (!(await allowedBy(principal.platformId, origin))) throw forbidden(`The origin ${origin} is not among the origins this platform allows.`)
      return responseHeaders(origin)
    },

    /** For answers given before the caller is known (a 401 a page must read to renew its token). */
    async anonymousHeaders(origin: string): Promise<Record<string, string>> {
      return (await allowedBySomeone(origin)) ? responseHeaders(origin) : { vary: 'Origin' }
    },
  }
}
