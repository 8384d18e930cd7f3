/**
 * Authentication and authorisation: the three credential kinds and what each may
 * reach. Each route states its rule once, in its `detail['x-auth']`.
 */
import { ApiError, forbidden, unauthorized, ValidationError } from '../../src/errors'
import { MAX_ID_LENGTH } from '../../src/ids'
import { accountLookup, type AccountRow } from '../../src/services/accounts/accounts'
import { userSessionEpoch } from '../../src/services/accounts/users'
import { findKey, type KeyIdentity } from '../../src/services/platform/platforms'
import type { Capability, Principal } from '../../src/services/platform/principal'
import type { GatewayDeps } from '../context'

export interface AuthRule {
  /**
   * Secret keys: 'platform' (no account header), 'account' (Service-Account header
   * required), 'optional-account' (platform-wide without the header, that account's
   * with it), 'none'.
   */
  keys: 'platform' | 'account' | 'optional-account' | 'none'
  /** Account-session components any one of which grants access; empty: sessions refused. */
  sessions: Capability[]
  /** User tokens (only the /v1/me routes). */
  user?: boolean
  /** The path parameter naming an account that a session must own (account-level routes). */
  accountParam?: string
}

export interface AuthContext {
  principal: Principal
  /** The account the request acts on, for account-scoped rules. */
  account?: AccountRow
}

const KEY_CACHE_MS = 5_000
const KEY_CACHE_MAX = 10_000

/** The signed-in user of a route that admits user tokens only (userLevel()): the rule let no other principal through. */
export function signedInUser(principal: Principal): { accountId: string; userId: string } {
  if (principal.kind !== 'user_session') throw new Error('unreachable: this route admits user tokens only')
  return { accountId: principal.accountId, userId: principal.userId }
}

export function createAuthenticator(deps: GatewayDeps) {
  // Hashing a key and reading it is cheap, but every request needs it. A key revoked
  // by the operator (/admin/platforms/{id}/keys) stops working within KEY_CACHE_MS.
  const keyCache = new Map<string, { at: number; identity: KeyIdentity | undefined }>()
  const accountById = accountLookup(deps.db)

  async function lookupKey(key: string) {
    const now = performance.now()
    const hit = keyCache.get(key)
    if (hit && now - hit.at < KEY_CACHE_MS) return hit.identity
    const identity = await findKey(deps.db, key)
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear()
    keyCache.set(key, { at: now, identity })
    return identity
  }

  async function principalFor(token: string): Promise<Principal> {
    if (token.startsWith('sk_test_') || token.startsWith('sk_live_')) {
      if (token.length > 255) throw unauthorized()
      const id = await lookupKey(token)
      if (!id) throw unauthorized('Invalid API key.')
      return { kind: 'secret_key', actor: id.keyId, platformId: id.platformId, mode: id.mode, liveEnabled: id.liveEnabled }
    }
    if (token.length > 4096) throw unauthorized()
    const claims = await deps.tokens.verify(token)
    if (claims === 'expired') throw unauthorized('The session has expired.', 'session_expired')
    if (!claims) throw unauthorized('Invalid credentials.')
    if (claims.typ === 'account_session') {
      return { kind: 'account_session', actor: claims.sid, platformId: claims.plat, mode: claims.mode, accountId: claims.acct, components: new Set(claims.cmp) }
    }
    // User tokens die with their user and with revoke_sessions (epoch bump).
    if ((await userSessionEpoch(deps.db, claims.acct, claims.sub)) !== claims.ep) throw unauthorized('The session was revoked.', 'session_expired')
    return { kind: 'user_session', actor: claims.sub, platformId: claims.plat, mode: claims.mode, accountId: claims.acct, userId: claims.sub }
  }

  async function loadAccount(principal: Principal, accountId: string): Promise<AccountRow> {
    const account = await accountById(accountId)
    if (!account || account.platformId !== principal.platformId) {
      if (principal.kind !== 'secret_key') throw unauthorized('The account of this session no longer exists.', 'session_expired')
      throw forbidden('No access to this account: it does not belong to this platform.', 'account_forbidden')
    }
    if (account.mode !== principal.mode) {
      throw forbidden(
        principal.mode === 'test' ? 'A sandbox key works on sandbox accounts only.' : 'A live key works on live accounts only.',
        'account_mode_mismatch',
      )
    }
    return account
  }

  return async function authenticate(
    headers: Headers,
    rule: AuthRule,
    params: Record<string, string | undefined>,
    onPrincipal: (p: Principal) => void,
  ): Promise<AuthContext> {
    const header = headers.get('authorization')
    const match = header?.match(/^Bearer\s+(\S+)\s*$/i)
    if (!match) throw unauthorized(missingBearer(header))
    const principal = await principalFor(match[1]!)
    onPrincipal(principal)

    const serviceAccount = headers.get('service-account') ?? undefined
    if (serviceAccount !== undefined && (serviceAccount.length > MAX_ID_LENGTH || serviceAccount.length === 0)) {
      throw new ValidationError({ 'Service-Account': `must be an account ID of 1 to ${MAX_ID_LENGTH} characters` })
    }

    if (principal.kind === 'secret_key') {
      if (rule.keys === 'none') throw forbidden('This operation needs a user token.')
      if (rule.keys === 'platform') return { principal }
      if (rule.keys === 'optional-account' && serviceAccount === undefined) return { principal }
      if (serviceAccount === undefined) throw new ApiError(400, 'This operation needs the Service-Account header.', 'account_header_required')
      return { principal, account: await loadAccount(principal, serviceAccount) }
    }

    if (principal.kind === 'user_session') {
      if (!rule.user) throw forbidden('A user token reaches only the /v1/me routes and the signalling channel.')
      // As for account sessions: the token's account is the only one it acts on.
      if (serviceAccount !== undefined && serviceAccount !== principal.accountId) {
        throw forbidden('No access to this account: the token belongs to another account.', 'account_forbidden')
      }
      return { principal, account: await loadAccount(principal, principal.accountId) }
    }

    // Account session.
    if (rule.sessions.length === 0) {
      throw forbidden(
        rule.keys === 'platform'
          ? 'An account session cannot call platform-level operations or create sessions.'
          : 'An account session cannot call this operation.',
      )
    }
    if (!rule.sessions.some((c) => principal.components.has(c))) {
      throw forbidden(`This session lacks the ${rule.sessions.join(' or ')} component.`, 'missing_capability')
    }
    const target = rule.accountParam ? params[rule.accountParam] : serviceAccount
    if (target !== undefined && target !== principal.accountId) {
      throw forbidden('No access to this account: the session belongs to another account.', 'account_forbidden')
    }
    return { principal, account: await loadAccount(principal, principal.accountId) }
  }
}

/** Says what was wrong with the Authorization header, without echoing the credential it may hold. */
function missingBearer(header: string | null): string {
  if (header === null || header.trim() === '') return 'Missing credentials: send Authorization: Bearer <key or token>.'
  const scheme = header.trim().split(/\s+/)[0]!
  if (/^bearer$/i.test(scheme)) return 'Authorization: Bearer needs exactly one key or token after it: send Authorization: Bearer <key or token>.'
  if (/^(basic|digest|token|apikey)$/i.test(scheme)) return `Authorization uses the ${scheme} scheme; this API takes Authorization: Bearer <key or token>.`
  return 'Authorization must be Bearer <key or token> (the word Bearer, a space, then the secret key or session token).'
}
