/**
 * Registration with the carrier trunk (SIP_TRUNK_REGISTER): many SIP trunk providers
 * deliver inbound calls only to a registered contact, and admit outbound calls only
 * from one. The media role is then a UA registering `sip:<username>@<trunk>` with
 * the trunk's credentials (RFC 3261 §10.2): one Call-ID and From tag for every
 * REGISTER of this process, CSeq up by one each time, a 401/407 answered once per
 * REGISTER (`answerDigestChallenge`), refreshed before the granted interval runs
 * out, retried with back-off while the trunk refuses or does not answer, and removed
 * (Expires: 0) when the role stops.
 *
 * The intervals are the trunk's, in real time: VOICE_CLOCK_SPEED does not shorten them.
 */
import { answerDigestChallenge } from '../../src/auth/digest'
import type { SipTrunkOutbound } from '../../src/config'
import type { Logger } from '../../src/logger'
import type { ClientOutcome, OutgoingRequest } from './client'
import type { SipSource } from './handler'
import { newTag } from './response'

/** What we ask for; the trunk may grant another interval (its 200's Contact expires, else Expires). */
export const ASKED_EXPIRES_S = 600
/** After a failure the next try waits this long, doubling up to RETRY_MAX_S. */
export const RETRY_MIN_S = 30
export const RETRY_MAX_S = 600
/** How long `stop` waits for the trunk to take the removal. */
const UNREGISTER_WAIT_MS = 3_000

export interface TrunkRegistrationState {
  registered: boolean
  /** The interval the trunk granted last (seconds). */
  grantedS?: number
  /** The last final status the trunk answered (or 'timeout', 'unreachable'). */
  last?: number | 'timeout' | 'unreachable'
  /** Consecutive failed attempts. */
  failures: number
}

export interface TrunkRegistrationOptions {
  trunk: SipTrunkOutbound & { credentials: { username: string; password: string } }
  sip: {
    sendRequest(target: SipSource, request: OutgoingRequest): Promise<ClientOutcome>
    /** host:port this server is reached at, per transport (our Via's sent-by, so our Contact too). */
    sentBy(transport: 'udp' | 'tcp'): string
  }
  log?: Logger
  /** Real-time timers; tests pass their own. */
  schedule?: (ms: number, run: () => void) => () => void
  /** Every attempt's outcome (tests, metrics). */
  onAttempt?: (state: TrunkRegistrationState) => void
}

export interface TrunkRegistration {
  readonly state: TrunkRegistrationState
  /** Stops refreshing and removes the registration (bounded wait). */
  stop(): Promise<void>
}

const realTimer = (ms: number, run: () => void) => {
  const t = setTimeout(run, ms)
  t.unref?.()
  return () => clearTimeout(t)
}

/** When to refresh a registration granted for `grantedS`: a minute early, or half way for a short one. */
export function refreshAfterS(grantedS: number): number {
  return Math.max(grantedS / 2, grantedS - 60)
}

/** The interval granted for `contact` by a 2xx: its Contact's expires, else the Expires header, else what we asked. */
export function grantedExpiresS(response: { getHeaders(name: string): string[]; getHeader(name: string): string | undefined }, contact: string): number {
  const ours = contact.toLowerCase()
  for (const value of response.getHeaders('contact')) {
    for (const one of value.split(/,(?=(?:[^"]*"[^"]*")*[^"]*$)/)) {
      if (!one.toLowerCase().includes(ours)) continue
      const m = /;\s*expires\s*=\s*(\d+)/i.exec(one.slice(one.indexOf('>') + 1))
      if (m) return Number(m[1])
    }
  }
  const header = Number(response.getHeader('expires'))
  return Number.isInteger(header) && header >= 0 ? header : ASKED_EXPIRES_S
}

export function startTrunkRegistration(o: TrunkRegistrationOptions): TrunkRegistration {
  const { trunk } = o
  const log = o.log?.child({ component: 'trunk-registration' })
  const schedule = o.schedule ?? realTimer
  const target: SipSource = { transport: trunk.transport, address: trunk.address, port: trunk.port }
  const host = trunk.address.includes(':') ? `[${trunk.address}]` : trunk.address
  const transportParam = trunk.transport === 'tcp' ? ';transport=tcp' : ''
  const registrar = `sip:${host}:${trunk.port}${transportParam}`
  const aor = `sip:${trunk.credentials.username}@${host}`
  const contactUri = () => `sip:${trunk.credentials.username}@${o.sip.sentBy(trunk.transport)}${transportParam}`
  const callId = `${newTag()}${newTag()}@trunk-registration`
  const fromTag = newTag()
  let cseq = 0
  const state: TrunkRegistrationState = { registered: false, failures: 0 }
  let cancelTimer: (() => void) | undefined
  let stopped = false
  let attempt: Promise<void> = Promise.resolve()

  const request = (expiresS: number, authorization?: [string, string]): OutgoingRequest => ({
    method: 'REGISTER',
    uri: registrar,
    headers: [
      ['From', `<${aor}>;tag=${fromTag}`],
      ['To', `<${aor}>`],
      ['Call-ID', callId],
      ['CSeq', `${++cseq} REGISTER`],
      ['Contact', `<${contactUri()}>`],
      ['Expires', String(expiresS)],
      ...(authorization ? [authorization] : []),
    ],
  })

  /** One REGISTER, its challenge answered once: the final outcome. */
  const exchange = async (expiresS: number, minExpiresS?: number): Promise<ClientOutcome> => {
    const asked = Math.max(expiresS, minExpiresS ?? 0)
    let outcome = await o.sip.sendRequest(target, request(asked))
    if (outcome.kind === 'response' && (outcome.status === 401 || outcome.status === 407)) {
      const proxy = outcome.status === 407
      const challenge = outcome.response.getHeader(proxy ? 'proxy-authenticate' : 'www-authenticate') ?? ''
      const answer = answerDigestChallenge(challenge, { ...trunk.credentials, method: 'REGISTER', uri: registrar })
      if (answer) outcome = await o.sip.sendRequest(target, request(asked, [proxy ? 'Proxy-Authorization' : 'Authorization', answer]))
    }
    return outcome
  }

  const next = (seconds: number) => {
    cancelTimer?.()
    if (!stopped) cancelTimer = schedule(seconds * 1000, () => void (attempt = register()))
  }

  const register = async (minExpiresS?: number): Promise<void> => {
    if (stopped) return
    let outcome: ClientOutcome
    try {
      outcome = await exchange(ASKED_EXPIRES_S, minExpiresS)
    } catch (err) {
      log?.error({ err }, 'trunk REGISTER not sent')
      outcome = { kind: 'unreachable' }
    }
    if (stopped) return
    state.last = outcome.kind === 'response' ? outcome.status : outcome.kind
    if (outcome.kind === 'response' && outcome.status >= 200 && outcome.status < 300) {
      const granted = grantedExpiresS(outcome.response, contactUri())
      if (!state.registered || state.grantedS !== granted) log?.info({ trunk: `${host}:${trunk.port}`, expires: granted }, 'registered with the trunk')
      Object.assign(state, { registered: granted > 0, grantedS: granted, failures: 0 })
      o.onAttempt?.({ ...state })
      next(granted > 0 ? refreshAfterS(granted) : RETRY_MIN_S)
      return
    }
    if (outcome.kind === 'response' && outcome.status === 423 && minExpiresS === undefined) {
      // Interval Too Brief (RFC 3261 §10.2.8): again at once with the trunk's minimum.
      const min = Number(outcome.response.getHeader('min-expires'))
      if (Number.isInteger(min) && min > 0) {
        attempt = register(min)
        return attempt
      }
    }
    state.failures++
    // A registration still within its interval stays usable until it runs out; after a failure we no longer count on it.
    state.registered = false
    const retry = Math.min(RETRY_MAX_S, RETRY_MIN_S * 2 ** (state.failures - 1))
    log?.warn({ trunk: `${host}:${trunk.port}`, outcome: state.last, retry_s: retry }, 'trunk registration failed')
    o.onAttempt?.({ ...state })
    next(retry)
  }

  attempt = register()
  return {
    state,
    async stop() {
      if (stopped) return
      stopped = true
      cancelTimer?.()
      const waited = () => new Promise<void>((r) => schedule(UNREGISTER_WAIT_MS, r))
      // An attempt under way (its transaction may wait up to Timer F) is not waited for beyond the bound.
      await Promise.race([attempt.catch(() => {}), waited()])
      if (!state.registered) return
      state.registered = false
      const removal = exchange(0).then(
        (outcome) => log?.info({ outcome: outcome.kind === 'response' ? outcome.status : outcome.kind }, 'trunk registration removed'),
        (err) => log?.warn({ err }, 'trunk registration not removed'),
      )
      await Promise.race([removal, waited()])
    },
  }
}
