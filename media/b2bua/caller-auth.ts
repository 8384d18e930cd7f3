/**
 * Who is calling: an INVITE from a phone is authenticated like its REGISTER, with
 * digest against the line's own credentials, but as a proxy does it (RFC 3261
 * §22.3: 407 with Proxy-Authenticate, answered with Proxy-Authorization), which is
 * what phones expect of a PBX. The realm is the From URI's host, which must be the
 * line's SIP domain; the same refusals as the registrar (403 for a wrong password or
 * an unknown user, after the same work; 407 with stale=true for an expired nonce),
 * counted against password guessing as the registrar's are (one AuthFailures for both).
 */
import { digestChallenges, issueNonce, NonceCounts, parseAuthorization, verifyDigest } from '../../src/auth/digest'
import type { Clock } from '../../src/clock'
import type { RegistrarLine } from '../../src/services/devices/registrations'
import { requestTarget } from '../registrar/contacts'
import { challengeAlgorithms } from '../registrar/digest-algorithms'
import type { AuthFailures } from '../sip/auth-failures'
import type { SipRequest, SipResponseSpec, SipSource } from '../sip/handler'

/** Offered as the registrar offers them (MD5, then SHA-256; MD5 alone to clients that fail on SHA-256): ../registrar/digest-algorithms.ts. */
const NO_SUCH_LINE = { username: '\u0000', password: '\u0000' }

export interface CallerAuthDeps {
  lookupLine(username: string): Promise<RegistrarLine | undefined>
  clock: Clock
  nonceKey: string | Uint8Array
  nonceTtlMs?: number
  failures?: AuthFailures
}

export type CallerAuth = { ok: true; line: RegistrarLine } | { ok: false; response: SipResponseSpec }

export function callerAuthenticator(deps: CallerAuthDeps) {
  const ttl = deps.nonceTtlMs ?? 5 * 60_000
  const counts = new NonceCounts()
  const challenge = (realm: string, stale: boolean, userAgent: string | undefined): CallerAuth => {
    const wallMs = deps.clock.wallNow().getTime()
    counts.prune(wallMs - ttl)
    const nonce = issueNonce(deps.nonceKey, realm, wallMs)
    return {
      ok: false,
      response: {
        status: 407,
        headers: digestChallenges({ realm, nonce, stale, algorithms: challengeAlgorithms(userAgent) }).map((v) => ['Proxy-Authenticate', v] as const),
      },
    }
  }
  const forbidden: CallerAuth = { ok: false, response: { status: 403, reason: 'Forbidden' } }
  return async (request: SipRequest, source: SipSource): Promise<CallerAuth> => {
    const realm = request.from?.uri?.host
    if (!realm) return { ok: false, response: { status: 400, reason: 'Bad From URI' } }
    const auth = parseAuthorization(request.getHeader('proxy-authorization'))
    const userAgent = request.getHeader('user-agent')
    if (auth?.scheme !== 'digest') return challenge(realm, false, userAgent)
    const username = auth.params.username ?? ''
    if (deps.failures?.lineBlocked(source.address, username)) return forbidden
    const line = await deps.lookupLine(username)
    const sameDomain = line !== undefined && line.domain.toLowerCase() === realm.toLowerCase()
    const credentials = line && sameDomain ? line : NO_SUCH_LINE
    const outcome = verifyDigest({
      params: auth.params,
      method: request.method,
      uri: requestTarget(request),
      realm,
      username: credentials.username,
      password: credentials.password,
      key: deps.nonceKey,
      nowMs: deps.clock.wallNow().getTime(),
      nonceTtlMs: ttl,
      counts,
    })
    if (!outcome.ok) {
      if (outcome.reason === 'wrong_response' || outcome.reason === 'wrong_username') {
        deps.failures?.failed(source.address, username)
        return forbidden
      }
      return challenge(realm, outcome.reason === 'stale_nonce', userAgent)
    }
    // The placeholder compared against for an unknown user must never let anyone in (a NUL username and password).
    if (!line || !sameDomain) {
      deps.failures?.failed(source.address, username)
      return forbidden
    }
    deps.failures?.succeeded(source.address, username)
    return { ok: true, line }
  }
}
