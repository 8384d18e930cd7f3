/**
 * HTTP Digest authentication (RFC 7616), server side, without storage: the nonce
 * carries its own issue time and an HMAC under a server key, so any process holding
 * the key can check it, and a phone or SIP endpoint may reuse it until it expires.
 * Replays inside that window are refused by tracking each nonce's highest `nc` in a
 * bounded map (`NonceCounts`). Pure apart from hashing and the random nonce bytes:
 * the caller passes the time, so tests and the SIP registrar drive it alike.
 *
 * Supported: algorithms MD5 and SHA-256 (not the -sess variants), qop=auth only
 * (auth-int would need the body), no `userhash`. Basic credentials are parsed here
 * too, but whether to accept them (only over TLS) is the caller's decision.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export type DigestAlgorithm = 'MD5' | 'SHA-256'
export const DIGEST_ALGORITHMS: readonly DigestAlgorithm[] = ['SHA-256', 'MD5']

export type Authorization = { scheme: 'digest'; params: Record<string, string> } | { scheme: 'basic'; username: string; password: string } | { scheme: 'other' }

/** Why a digest was refused; `stale_nonce` means: challenge again with `stale=true`, the password was right. */
export type DigestRefusal =
  | 'malformed'
  | 'unsupported_algorithm'
  | 'unsupported_qop'
  | 'wrong_realm'
  | 'wrong_uri'
  | 'wrong_username'
  | 'bad_nonce'
  | 'stale_nonce'
  | 'wrong_response'
  | 'replayed'

export type DigestOutcome = { ok: true; username: string } | { ok: false; reason: DigestRefusal }

export function digestHash(algorithm: DigestAlgorithm, data: string): string {
  return createHash(algorithm === 'MD5' ? 'md5' : 'sha256')
    .update(data, 'utf8')
    .digest('hex')
}

/** The `response` a client computes for qop=auth (RFC 7616 §3.4.1). */
export function digestResponse(p: {
  algorithm: DigestAlgorithm
  username: string
  realm: string
  password: string
  method: string
  uri: string
  nonce: string
  nc: string
  cnonce: string
  qop: 'auth'
}): string {
  const ha1 = digestHash(p.algorithm, `${p.username}:${p.realm}:${p.password}`)
  const ha2 = digestHash(p.algorithm, `${p.method}:${p.uri}`)
  return digestHash(p.algorithm, `${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:${p.qop}:${ha2}`)
}

/**
 * Parses an `Authorization` header value. Returns undefined when it cannot be read at
 * all (so the caller answers as if nothing was sent: another challenge).
 */
export function parseAuthorization(header: string | null | undefined): Authorization | undefined {
  if (!header) return undefined
  const m = /^\s*([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)(?:\s+([\s\S]*))?$/.exec(header)
  if (!m) return undefined
  const scheme = m[1]!.toLowerCase()
  const rest = (m[2] ?? '').trim()
  if (scheme === 'basic') {
    if (!/^[A-Za-z0-9+/]+=*$/.test(rest)) return undefined
    const decoded = Buffer.from(rest, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon < 0) return undefined
    return { scheme: 'basic', username: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
  }
  if (scheme !== 'digest') return { scheme: 'other' }
  const params = parseAuthParams(rest)
  return params ? { scheme: 'digest', params } : undefined
}

/**
 * One element of an auth-param list, from where the last one ended: spaces, then a
 * lone comma (an empty element) or `name = value` with the value a token (2) or a
 * quoted-string (3, still escaped; written as "unrolled" runs of plain characters
 * between escapes, which backtracks less than one alternation per character), then
 * spaces up to a comma or the end. Sticky (`lastIndex`), so the scan reads the header
 * in place instead of matching a slice of the rest per token, and builds no value
 * character by character; it runs once per provisioning fetch and registration.
 */
const AUTH_PARAM = /[ \t]*(?:,|([A-Za-z0-9!#$%&'*+.^_`|~-]+)[ \t]*=[ \t]*(?:([A-Za-z0-9!#$%&'*+.^_`|~/=-]+)|"([^"\\]*(?:\\[\s\S][^"\\]*)*)")[ \t]*(?=,|$))/y
const QUOTED_PAIR = /\\([\s\S])/g

/** `name=token` or `name="quoted \"string\""`, comma separated; undefined when malformed or a name repeats. */
function parseAuthParams(input: string): Record<string, string> | undefined {
  const params: Record<string, string> = Object.create(null)
  AUTH_PARAM.lastIndex = 0
  while (AUTH_PARAM.lastIndex < input.length) {
    const m = AUTH_PARAM.exec(input)
    if (!m) return undefined
    const name = m[1]
    // An empty element (a lone comma) names nothing.
    if (name === undefined) continue
    const quoted = m[3]
    const value = m[2] ?? (quoted!.includes('\\') ? quoted!.replace(QUOTED_PAIR, '$1') : quoted!)
    const key = name.toLowerCase()
    if (key in params) return undefined
    params[key] = value
  }
  return params
}

/** A quoted-string for a challenge: backslash-escape `"` and `\` (RFC 9110 §5.6.4). */
function quote(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`
}

/** One `WWW-Authenticate` value per algorithm, SHA-256 first: RFC 7616 §3.7 asks for the preferred one first. */
export function digestChallenges(p: { realm: string; nonce: string; stale?: boolean; algorithms?: readonly DigestAlgorithm[] }): string[] {
  return (p.algorithms ?? DIGEST_ALGORITHMS).map(
    (algorithm) => `Digest realm=${quote(p.realm)}, qop="auth", algorithm=${algorithm}, nonce=${quote(p.nonce)}${p.stale ? ', stale=true' : ''}`,
  )
}

// ---- Nonces: issue time, random, and an HMAC of both under the server key ----

const NONCE_MAC_BYTES = 16

function nonceMac(key: string | Uint8Array, realm: string, body: Buffer): Buffer {
  return createHmac('sha256', key).update(realm).update('\0').update(body).digest().subarray(0, NONCE_MAC_BYTES)
}

/** A fresh nonce for `realm`, valid from `nowMs`; `random` is injectable for tests. */
export function issueNonce(key: string | Uint8Array, realm: string, nowMs: number, random: Uint8Array = randomBytes(12)): string {
  const body = Buffer.alloc(8 + random.length)
  body.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(nowMs))))
  body.set(random, 8)
  return Buffer.concat([body, nonceMac(key, realm, body)]).toString('base64url')
}

/** The nonce's issue time if it was signed by `key` for `realm`, else undefined. */
export function nonceIssuedAt(key: string | Uint8Array, realm: string, nonce: string): number | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(nonce)) return undefined
  const raw = Buffer.from(nonce, 'base64url')
  if (raw.length <= 8 + NONCE_MAC_BYTES) return undefined
  const body = raw.subarray(0, raw.length - NONCE_MAC_BYTES)
  const given = raw.subarray(raw.length - NONCE_MAC_BYTES)
  if (!timingSafeEqual(given, nonceMac(key, realm, body))) return undefined
  return Number(body.readBigUInt64BE(0))
}

/**
 * The highest `nc` seen per nonce, at most `capacity` of them. Forgetting a nonce
 * would let it be replayed, so forgetting raises a floor instead: a nonce issued at
 * or before the newest forgotten one counts as stale, and the client simply gets a
 * fresh nonce. Memory stays bounded and no replay slips through.
 *
 * The nonces are kept in two generations of half the capacity each: a nonce used
 * goes to the newer one, and when that is full the older is forgotten whole. Dropping
 * the least recently used entry of one Map at a time (`keys().next()`) walks the
 * tombstones of those deleted before it, on every new nonce once full, as it did for
 * the scheduler's RecentTokens.
 */
export class NonceCounts {
  private current = new Map<string, { issuedAt: number; nc: number }>()
  private previous = new Map<string, { issuedAt: number; nc: number }>()
  /** The newest issue time of a nonce put in each generation. */
  private currentNewest = Number.NEGATIVE_INFINITY
  private previousNewest = Number.NEGATIVE_INFINITY
  private floor = Number.NEGATIVE_INFINITY
  private readonly generation: number

  constructor(readonly capacity = 10_000) {
    this.generation = Math.max(1, Math.ceil(capacity / 2))
  }

  /** False when this nonce may have been forgotten (treat as stale). */
  isTracked(issuedAt: number): boolean {
    return issuedAt > this.floor
  }

  /** Records `nc` for the nonce; false if it is not above the last one seen (a replay). */
  advance(nonce: string, issuedAt: number, nc: number): boolean {
    const last = this.current.get(nonce) ?? this.previous.get(nonce)
    if (last && nc <= last.nc) return false
    this.previous.delete(nonce)
    this.current.set(nonce, { issuedAt, nc })
    this.currentNewest = Math.max(this.currentNewest, issuedAt)
    if (this.current.size >= this.generation) {
      this.forgetPrevious()
      this.previous = this.current
      this.previousNewest = this.currentNewest
      this.current = new Map()
      this.currentNewest = Number.NEGATIVE_INFINITY
    }
    return true
  }

  /** Forget the nonces issued before `cutoff` (refused as stale by their age anyway), a whole generation at a time. */
  prune(cutoff: number): void {
    if (this.previousNewest >= cutoff) return
    this.forgetPrevious()
    if (this.currentNewest >= cutoff) return
    this.floor = Math.max(this.floor, this.currentNewest)
    this.current = new Map()
    this.currentNewest = Number.NEGATIVE_INFINITY
  }

  private forgetPrevious() {
    this.floor = Math.max(this.floor, this.previousNewest)
    this.previous = new Map()
    this.previousNewest = Number.NEGATIVE_INFINITY
  }

  get size(): number {
    return this.current.size + this.previous.size
  }
}

export interface DigestCheck {
  params: Record<string, string>
  method: string
  /** The request target as sent (path and query): the digest's `uri` must name it. */
  uri: string
  realm: string
  /** The expected username; the password of that user. */
  username: string
  password: string
  key: string | Uint8Array
  nowMs: number
  nonceTtlMs: number
  counts: NonceCounts
}

/**
 * Checks a digest `Authorization` against the expected user. The order matters: the
 * response is checked before the nonce count is recorded, so a forger cannot burn a
 * legitimate client's counter.
 */
export function verifyDigest(c: DigestCheck): DigestOutcome {
  const p = c.params
  const { username, nonce, response, cnonce, nc, qop, uri } = p
  if (!username || !nonce || !response || uri === undefined || !cnonce || !nc || !qop || p.realm === undefined) return refuse('malformed')
  const algorithm = parseAlgorithm(p.algorithm)
  if (!algorithm) return refuse('unsupported_algorithm')
  if (qop !== 'auth') return refuse('unsupported_qop')
  if (p.userhash !== undefined && p.userhash.toLowerCase() !== 'false') return refuse('malformed')
  if (!/^[0-9a-fA-F]{8}$/.test(nc)) return refuse('malformed')
  if (p.realm !== c.realm) return refuse('wrong_realm')
  if (uri !== c.uri) return refuse('wrong_uri')
  const issuedAt = nonceIssuedAt(c.key, c.realm, nonce)
  if (issuedAt === undefined) return refuse('bad_nonce')
  const expected = digestResponse({ algorithm, username, realm: c.realm, password: c.password, method: c.method, uri, nonce, nc, cnonce, qop })
  const responseOk = safeEqualText(response.toLowerCase(), expected)
  // Same work whether the username or the password is wrong: neither says which.
  if (!safeEqualText(username, c.username) || !responseOk) return refuse(safeEqualText(username, c.username) ? 'wrong_response' : 'wrong_username')
  if (issuedAt > c.nowMs || c.nowMs - issuedAt > c.nonceTtlMs || !c.counts.isTracked(issuedAt)) return refuse('stale_nonce')
  if (!c.counts.advance(nonce, issuedAt, Number.parseInt(nc, 16))) return refuse('replayed')
  return { ok: true, username }
}

function parseAlgorithm(value: string | undefined): DigestAlgorithm | undefined {
  if (value === undefined) return 'MD5' // RFC 7616 §3.3: absent means MD5
  const upper = value.toUpperCase()
  return upper === 'MD5' || upper === 'SHA-256' ? upper : undefined
}

function refuse(reason: DigestRefusal): DigestOutcome {
  return { ok: false, reason }
}

/** Constant-time for equal lengths; lengths are not secret here (hex digests, usernames). */
export function safeEqualText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8')
  const y = Buffer.from(b, 'utf8')
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * The client side, for the SIP trunk's own challenges (a carrier asking the B2BUA
 * for its credentials): the `Authorization` value answering one challenge header
 * (WWW-Authenticate or Proxy-Authenticate). Undefined when the challenge is not a
 * digest this module speaks (an algorithm other than MD5 or SHA-256, auth-int only).
 * Without qop the RFC 2069 form; with qop=auth, nc 1 and a fresh cnonce.
 */
export function answerDigestChallenge(
  challenge: string,
  r: { username: string; password: string; method: string; uri: string; cnonce?: string },
): string | undefined {
  const parsed = parseAuthorization(challenge)
  if (parsed?.scheme !== 'digest') return undefined
  const p = parsed.params
  const algorithm = (p.algorithm ?? 'MD5').toUpperCase() as DigestAlgorithm
  if (!DIGEST_ALGORITHMS.includes(algorithm) || p.realm === undefined || !p.nonce) return undefined
  const qops = p.qop?.split(',').map((q) => q.trim().toLowerCase())
  if (qops && !qops.includes('auth')) return undefined
  const quoted = (v: string) => `"${v.replace(/["\\]/g, '\\$&')}"`
  const fields = [
    `username=${quoted(r.username)}`,
    `realm=${quoted(p.realm)}`,
    `nonce=${quoted(p.nonce)}`,
    `uri=${quoted(r.uri)}`,
    `algorithm=${algorithm}`,
    ...(p.opaque !== undefined ? [`opaque=${quoted(p.opaque)}`] : []),
  ]
  if (!qops) {
    const ha1 = digestHash(algorithm, `${r.username}:${p.realm}:${r.password}`)
    const ha2 = digestHash(algorithm, `${r.method}:${r.uri}`)
    return `Digest ${[...fields, `response=${quoted(digestHash(algorithm, `${ha1}:${p.nonce}:${ha2}`))}`].join(', ')}`
  }
  const cnonce = r.cnonce ?? randomBytes(8).toString('hex')
  const response = digestResponse({
    algorithm,
    username: r.username,
    realm: p.realm,
    password: r.password,
    method: r.method,
    uri: r.uri,
    nonce: p.nonce,
    nc: '00000001',
    cnonce,
    qop: 'auth',
  })
  return `Digest ${[...fields, 'qop=auth', 'nc=00000001', `cnonce=${quoted(cnonce)}`, `response=${quoted(response)}`].join(', ')}`
}
