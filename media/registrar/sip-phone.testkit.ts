/**
 * A phone's side of registration, for tests only: REGISTER requests parsed by sip.js
 * exactly as the SIP server parses what arrives, and the digest answer to a
 * challenge (RFC 7616), computed independently of the registrar's checks.
 */
import { Parser } from 'sip.js/lib/core/messages/parser.js'
import { type DigestAlgorithm, digestResponse } from '../../src/auth/digest'
import type { SipRequest, SipResponseSpec } from '../sip/handler'

const silent = { log() {}, warn() {}, error() {}, debug() {} }

export interface PhoneAccount {
  username: string
  password: string
  domain: string
}

export interface RegisterOptions {
  /** Contact header values; default one contact at 192.0.2.10:5062. `[]`: none (a query). */
  contacts?: string[]
  expires?: number
  auth?: string
  /** Registers this address instead of the account's own (To and From). */
  user?: string
}

let seq = 0

export function registerRequest(account: PhoneAccount, o: RegisterOptions = {}): SipRequest {
  const user = o.user ?? account.username
  const n = ++seq
  const lines = [
    `REGISTER sip:${account.domain} SIP/2.0`,
    `Via: SIP/2.0/UDP 192.0.2.10:5062;branch=z9hG4bK${n};rport`,
    'Max-Forwards: 70',
    `From: <sip:${user}@${account.domain}>;tag=f${n}`,
    `To: <sip:${user}@${account.domain}>`,
    `Call-ID: reg-${account.username}@192.0.2.10`,
    `CSeq: ${n} REGISTER`,
    ...(o.contacts ?? [`<sip:${user}@192.0.2.10:5062>`]).map((c) => `Contact: ${c}`),
    ...(o.expires === undefined ? [] : [`Expires: ${o.expires}`]),
    ...(o.auth ? [`Authorization: ${o.auth}`] : []),
    'User-Agent: Yealink SIP-T54W 96.86.0.100',
    'Content-Length: 0',
    '',
    '',
  ]
  const parsed = Parser.parseMessage(lines.join('\r\n'), silent as never)
  if (!parsed) throw new Error('unparseable test message')
  return parsed as SipRequest
}

/**
 * `Contact: *`. sip.js's Contact grammar has no `*` (the whole message fails to
 * parse), so the request is parsed without it and the raw header added, as the SIP
 * server has to.
 */
export function wildcardRequest(account: PhoneAccount, auth: string): SipRequest {
  const r = registerRequest(account, { contacts: [], expires: 0, auth })
  r.addHeader('contact', '*')
  return r
}

export const headerValues = (r: SipResponseSpec, name: string) => (r.headers ?? []).filter(([n]) => n.toLowerCase() === name.toLowerCase()).map(([, v]) => v)

/** The nonce, realm and stale flag of the challenge for `algorithm`. */
export function challengeOf(r: SipResponseSpec, algorithm: DigestAlgorithm = 'SHA-256') {
  const value = headerValues(r, 'WWW-Authenticate').find((v) => v.includes(`algorithm=${algorithm}`))
  if (!value) throw new Error(`no ${algorithm} challenge in ${JSON.stringify(r)}`)
  return { nonce: /nonce="([^"]+)"/.exec(value)![1]!, realm: /realm="([^"]+)"/.exec(value)![1]!, stale: /stale=true/.test(value) }
}

/** The Authorization header a phone sends for this nonce. */
export function authorizationFor(
  account: PhoneAccount,
  o: { nonce: string; algorithm?: DigestAlgorithm; nc?: number; password?: string; username?: string; realm?: string },
) {
  const algorithm = o.algorithm ?? 'SHA-256'
  const username = o.username ?? account.username
  const realm = o.realm ?? account.domain
  const nc = (o.nc ?? 1).toString(16).padStart(8, '0')
  const uri = `sip:${account.domain}`
  const response = digestResponse({
    algorithm,
    username,
    realm,
    password: o.password ?? account.password,
    method: 'REGISTER',
    uri,
    nonce: o.nonce,
    nc,
    cnonce: 'c0ffee',
    qop: 'auth',
  })
  return `Digest username="${username}", realm="${realm}", nonce="${o.nonce}", uri="${uri}", response="${response}", algorithm=${algorithm}, qop=auth, nc=${nc}, cnonce="c0ffee"`
}
