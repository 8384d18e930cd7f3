/**
 * The SIP registrar (RFC 3261 §10.3): authenticates a REGISTER with digest (RFC
 * 7616 / RFC 8760: SHA-256 offered first, MD5 for older phones) against the line's
 * own credentials and turns the bindings it asks for into messages to the device
 * actor, which holds them. The answer lists every binding of the line.
 *
 * Decisions:
 * - The realm is the domain the phone registers to (the To URI's host), which must be
 *   the line's SIP domain: a challenge can then be made before any lookup, the same
 *   for every username, known or not.
 * - A wrong password and an unknown username both get 403 after the same work
 *   (RFC 3261 §22.4: a UA stops retrying on 403; another 401 would make a
 *   misconfigured phone hammer the registrar forever). Neither says which.
 * - Password guessing (../sip/auth-failures.ts): a line guessed at from one address
 *   is refused 403 from there before any check; the answers that fail are counted.
 * - A right password on an expired nonce gets 401 with `stale=true` (the phone retries
 *   at once without asking its user); a nonce count seen before is a replay: 401 with a
 *   fresh nonce, so a captured request cannot be played again.
 * - Nothing is acknowledged before it is committed: the 200 is sent after the device
 *   actor's messages are written (`tellDevice` resolves on commit). The bindings it
 *   lists are the registrar's own knowledge, kept as it accepts REGISTERs and seeded
 *   from the device actor the first time it sees a line (`knownBindings`).
 */
import { digestChallenges, issueNonce, NonceCounts, parseAuthorization, verifyDigest } from '../../src/auth/digest'
import type { Clock } from '../../src/clock'
import { type BindingDetails, bindingKey, type RegistrarLine, type SipTransportName } from '../../src/services/devices/registrations'
import type { AuthFailures } from '../sip/auth-failures'
import type { SipRequest, SipRequestHandler, SipResponseSpec, SipSource } from '../sip/handler'
import { readRegister, requestTarget } from './contacts'
import { challengeAlgorithms } from './digest-algorithms'

/** What the registrar tells a device actor: machines/device.ts REGISTER (with the binding's details) or UNREGISTER. */
/** The algorithms a challenge offers, and why in that order: ./digest-algorithms.ts. */
export { SIP_CHALLENGE_ORDER } from './digest-algorithms'

export type DeviceRegistrationEvent =
  | { type: 'REGISTER'; contact: string; expires_at: string; at: string; binding: BindingDetails }
  | { type: 'UNREGISTER'; contact: string; at: string }

export interface RegistrarDeps {
  /** The line with this SIP username, or undefined. */
  lookupLine(username: string): Promise<RegistrarLine | undefined>
  /** Writes the messages for the device actor durably; resolves once they are committed. */
  tellDevice(deviceId: string, events: DeviceRegistrationEvent[]): Promise<void>
  /** The line's live bindings as the device actor holds them (contact URI → expiry), read once per line per process. */
  knownBindings?(line: RegistrarLine): Promise<{ contact: string; expires_at: string }[]>
  clock: Clock
  /** Signs nonces: every registrar process of a deployment needs the same key. */
  nonceKey: string | Uint8Array
  /** Shortest registration accepted (423 below it). Default 60 s. */
  minExpiresS?: number
  /** Longer asks are cut to this. Default 3600 s. */
  maxExpiresS?: number
  /** What a contact without any expiry gets. Default 3600 s. */
  defaultExpiresS?: number
  nonceTtlMs?: number
  maxTrackedNonces?: number
  /** Told of every unexpected error behind a 500. */
  onError?(error: unknown, during: string): void
  /** Counts wrong answers per source and refuses lines guessed at (shared with the INVITE's authentication). */
  failures?: AuthFailures
}

/** Compared against when the username is unknown, so that case costs what a wrong password does. */
const NO_SUCH_LINE = { username: '\u0000', password: '\u0000' }

const transportOf = (request: SipRequest, source: SipSource): SipTransportName => {
  const via = (request.getHeader('via') ?? '').match(/^\s*SIP\s*\/\s*2\.0\s*\/\s*([A-Za-z]+)/i)?.[1]?.toLowerCase()
  return via === 'ws' || via === 'wss' || via === 'tls' ? via : source.transport
}

export function createRegistrar(deps: RegistrarDeps): SipRequestHandler {
  const o = {
    minExpiresS: deps.minExpiresS ?? 60,
    maxExpiresS: deps.maxExpiresS ?? 3600,
    defaultExpiresS: deps.defaultExpiresS ?? 3600,
    nonceTtlMs: deps.nonceTtlMs ?? 5 * 60_000,
  }
  const counts = new NonceCounts(deps.maxTrackedNonces)
  /** What this process knows of each line's bindings: contact URI → expiry (ms). */
  const known = new Map<string, Map<string, number>>()

  // Nonce lifetimes are the phone's to measure: real time even when VOICE_CLOCK_SPEED compresses the rest.
  const challenge = (realm: string, stale: boolean, userAgent: string | undefined): SipResponseSpec => {
    const wallMs = deps.clock.wallNow().getTime()
    counts.prune(wallMs - o.nonceTtlMs)
    const nonce = issueNonce(deps.nonceKey, realm, wallMs)
    return {
      status: 401,
      headers: digestChallenges({ realm, nonce, stale, algorithms: challengeAlgorithms(userAgent) }).map((v) => ['WWW-Authenticate', v] as const),
    }
  }

  const bindingsOf = async (line: RegistrarLine, nowMs: number): Promise<Map<string, number>> => {
    let map = known.get(line.line)
    if (!map) {
      map = new Map()
      for (const b of (await deps.knownBindings?.(line)) ?? []) map.set(b.contact, Date.parse(b.expires_at))
      known.set(line.line, map)
    }
    for (const [contact, expires] of map) if (expires <= nowMs) map.delete(contact)
    return map
  }

  // A phone refreshes on its own clock: an interval is real seconds, which the
  // simulated clock (VOICE_CLOCK_SPEED) covers `speed` times faster.
  const simulatedMs = (seconds: number) => seconds * 1000 * deps.clock.speed
  const realSeconds = (ms: number) => Math.max(0, Math.round(ms / 1000 / deps.clock.speed))
  const ok = (bindings: Map<string, number>, nowMs: number): SipResponseSpec => ({
    status: 200,
    headers: [
      ...[...bindings].map(([contact, expires]) => ['Contact', `<${contact}>;expires=${realSeconds(expires - nowMs)}`] as const),
      ['Date', deps.clock.wallNow().toUTCString()] as const,
    ],
  })

  return async (request, source) => {
    if (request.method !== 'REGISTER') return { status: 405, headers: [['Allow', 'REGISTER']] }
    const aor = request.to?.uri
    const realm = aor?.host
    if (!aor?.user || !realm) return { status: 400, reason: 'Bad To URI' }

    const auth = parseAuthorization(request.getHeader('authorization'))
    const userAgent = request.getHeader('user-agent')
    if (auth?.scheme !== 'digest') return challenge(realm, false, userAgent)
    // The authenticated user registers its own address only (RFC 3261 §10.3 step 5).
    if (auth.params.username !== aor.user) return { status: 403, reason: 'Forbidden' }
    if (deps.failures?.lineBlocked(source.address, auth.params.username)) return { status: 403, reason: 'Forbidden' }

    let line: RegistrarLine | undefined
    try {
      line = await deps.lookupLine(auth.params.username)
    } catch (error) {
      deps.onError?.(error, 'line lookup')
      return { status: 500, reason: 'Server Internal Error' }
    }
    const sameDomain = line !== undefined && line.domain.toLowerCase() === realm.toLowerCase()
    const credentials = line && sameDomain ? line : NO_SUCH_LINE
    const outcome = verifyDigest({
      params: auth.params,
      method: 'REGISTER',
      uri: requestTarget(request),
      realm,
      username: credentials.username,
      password: credentials.password,
      key: deps.nonceKey,
      nowMs: deps.clock.wallNow().getTime(),
      nonceTtlMs: o.nonceTtlMs,
      counts,
    })
    if (!outcome.ok) {
      if (outcome.reason === 'wrong_response' || outcome.reason === 'wrong_username') {
        deps.failures?.failed(source.address, auth.params.username)
        return { status: 403, reason: 'Forbidden' }
      }
      return challenge(realm, outcome.reason === 'stale_nonce', userAgent)
    }
    const authed = line!
    deps.failures?.succeeded(source.address, authed.username)

    const ask = readRegister(request)
    if (ask.kind === 'invalid') return { status: 400, reason: ask.reason }
    const nowMs = deps.clock.now().getTime()
    const at = new Date(nowMs).toISOString()
    let bindings: Map<string, number>
    try {
      bindings = await bindingsOf(authed, nowMs)
    } catch (error) {
      deps.onError?.(error, 'bindings read')
      return { status: 500, reason: 'Server Internal Error' }
    }
    if (ask.kind === 'query') return ok(bindings, nowMs)

    const events: DeviceRegistrationEvent[] = []
    const next = new Map(bindings)
    if (ask.kind === 'remove_all') {
      for (const contact of bindings.keys()) events.push({ type: 'UNREGISTER', contact: bindingKey(authed.username, contact), at })
      next.clear()
    } else {
      // RFC 3261 §10.3 step 7: a non-zero interval under the minimum refuses the whole request.
      const asked = ask.contacts.map((c) => ({ uri: c.uri, seconds: c.expires ?? o.defaultExpiresS }))
      if (asked.some((c) => c.seconds > 0 && c.seconds < o.minExpiresS))
        return { status: 423, reason: 'Interval Too Brief', headers: [['Min-Expires', String(o.minExpiresS)]] }
      const detailsOf = (uri: string): BindingDetails => ({
        line: authed.line,
        line_device: authed.lineDevice,
        username: authed.username,
        user_ids: authed.userIds,
        contact: uri,
        transport: transportOf(request, source),
        source_address: source.address,
        source_port: source.port,
        user_agent: request.getHeader('user-agent') ?? null,
      })
      for (const c of asked) {
        const contact = bindingKey(authed.username, c.uri)
        if (c.seconds === 0) {
          events.push({ type: 'UNREGISTER', contact, at })
          next.delete(c.uri)
        } else {
          const expiresMs = nowMs + simulatedMs(Math.min(c.seconds, o.maxExpiresS))
          events.push({ type: 'REGISTER', contact, expires_at: new Date(expiresMs).toISOString(), at, binding: detailsOf(c.uri) })
          next.set(c.uri, expiresMs)
        }
      }
    }
    if (events.length > 0) {
      try {
        await deps.tellDevice(authed.device, events)
      } catch (error) {
        deps.onError?.(error, 'device message')
        return { status: 500, reason: 'Server Internal Error' }
      }
    }
    known.set(authed.line, next)
    return ok(next, nowMs)
  }
}
