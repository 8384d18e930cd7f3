/**
 * HTTP Digest (RFC 7616): the RFC's own examples for MD5 and SHA-256, and the server
 * rules on top: signed expiring nonces, replays refused by nonce count, bounded memory.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import {
  answerDigestChallenge,
  type Authorization,
  type DigestAlgorithm,
  digestChallenges,
  digestResponse,
  issueNonce,
  NonceCounts,
  nonceIssuedAt,
  parseAuthorization,
  verifyDigest,
} from './digest'

// RFC 7616 §3.9.1: user Mufasa, password "Circle of Life", GET /dir/index.html.
const RFC = {
  username: 'Mufasa',
  password: 'Circle of Life',
  realm: 'http-auth@example.org',
  method: 'GET',
  uri: '/dir/index.html',
  nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
  nc: '00000001',
  cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  qop: 'auth' as const,
}

describe('RFC 7616 test vectors', () => {
  test('MD5 response of the RFC example', () => {
    expect(digestResponse({ ...RFC, algorithm: 'MD5' })).toBe('8ca523f5e9506fed4657c9700eebdbec')
  })

  test('SHA-256 response of the RFC example', () => {
    expect(digestResponse({ ...RFC, algorithm: 'SHA-256' })).toBe('753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1')
  })

  test("the RFC example's Authorization header parses to its parameters", () => {
    const header = `Digest username="Mufasa",
       realm="http-auth@example.org",
       uri="/dir/index.html",
       algorithm=SHA-256,
       nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
       nc=00000001,
       cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ",
       qop=auth,
       response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1",
       opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"`.replace(/\n/g, '')
    const parsed = parseAuthorization(header)
    expect(parsed).toEqual({
      scheme: 'digest',
      params: expect.objectContaining({ username: 'Mufasa', algorithm: 'SHA-256', nc: '00000001', qop: 'auth', uri: '/dir/index.html' }),
    })
  })
})

describe('parsing Authorization', () => {
  test('Basic decodes user and password (the password may contain colons)', () => {
    const value = Buffer.from('phone:pa:ss').toString('base64')
    expect(parseAuthorization(`Basic ${value}`)).toEqual({ scheme: 'basic', username: 'phone', password: 'pa:ss' })
  })

  test('quoted strings unescape backslashes; repeated parameters are refused', () => {
    expect(parseAuthorization('Digest username="a\\"b", realm="r"')).toEqual({ scheme: 'digest', params: expect.objectContaining({ username: 'a"b' }) })
    expect(parseAuthorization('Digest username="a", username="b"')).toBeUndefined()
  })

  test('the sticky-regex scanner reads every header as the reference scanner (the earlier one, by index and slices) does', () => {
    // Mostly well-formed elements (so that most headers parse, to many parameters), with malformed ones mixed in.
    const name = fc.oneof(
      fc.constantFrom('username', 'realm', 'nonce', 'uri', 'qop', 'nc', 'Response', 'algorithm', 'cnonce', 'opaque', 'USERNAME'),
      fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,8}$/),
    )
    const quotedBody = fc
      .array(fc.constantFrom('a', 'Z', '0', ' ', ',', '=', '"', '\\', '\\"', '\\\\', 'é', '\t', '/', '\u{1F600}'), { maxLength: 8 })
      .map((parts) => parts.join(''))
    const closedQuoted = fc
      .array(fc.constantFrom('a', 'Z', '0', ' ', ',', '=', '\\"', '\\\\', '\\x', 'é', '\t', '/', '\u{1F600}'), { maxLength: 8 })
      .map((parts) => `"${parts.join('')}"`)
    const value = fc.oneof(
      { weight: 8, arbitrary: fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~/=-]{1,6}$/) },
      { weight: 8, arbitrary: closedQuoted },
      { weight: 1, arbitrary: quotedBody.map((b) => `"${b}`) },
      { weight: 1, arbitrary: fc.constantFrom('', '"', 'a b', '"a"b', '\\') },
    )
    const space = fc.constantFrom('', ' ', '  ', '\t', ' \t')
    const element = fc.oneof(
      { weight: 40, arbitrary: fc.tuple(name, space, fc.constant('='), space, value, space).map((t) => t.join('')) },
      { weight: 1, arbitrary: fc.tuple(name, space, fc.constantFrom('', '=='), space, value).map((t) => t.join('')) },
      { weight: 1, arbitrary: space },
      { weight: 1, arbitrary: fc.string({ maxLength: 4 }) },
    )
    const separator = fc.oneof({ weight: 30, arbitrary: fc.constantFrom(',', ', ', ' ,') }, { weight: 1, arbitrary: fc.constantFrom(',,', ', ,', '', ';') })
    const params = fc.array(fc.tuple(element, separator), { maxLength: 8 }).map((xs) =>
      xs
        .map((x) => x.join(''))
        .join('')
        .replace(/,$/, ''),
    )
    const header = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .tuple(fc.constantFrom('Digest', 'digest', 'DIGEST', 'Digest\t', 'Basic', 'Bearer'), fc.constantFrom(' ', '  ', '\n '), params)
          .map((t) => t.join('')),
      },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom('Digest', ' Digest'), fc.string()).map((t) => t.join('')) },
      { weight: 1, arbitrary: fc.string() },
    )
    fc.assert(
      fc.property(header, (h) => {
        expect(parseAuthorization(h)).toEqual(referenceParseAuthorization(h))
      }),
      { numRuns: 5_000 },
    )
  })

  test('never throws on arbitrary input', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `Digest ${s}`),
          fc.string().map((s) => `Basic ${s}`),
        ),
        (s) => {
          parseAuthorization(s)
        },
      ),
      { numRuns: 500 },
    )
  })
})

describe('verifying a digest', () => {
  const key = 'server-key-for-tests'
  const realm = 'provisioning'
  const t0 = Date.parse('2026-01-15T12:00:00Z')
  const ttl = 5 * 60_000

  function answer(nonce: string, opts: { algorithm?: DigestAlgorithm; password?: string; nc?: string; uri?: string; username?: string } = {}) {
    const algorithm = opts.algorithm ?? 'SHA-256'
    const nc = opts.nc ?? '00000001'
    const uri = opts.uri ?? '/p/001565aabbcc.cfg'
    const username = opts.username ?? 'dev1'
    const cnonce = 'abcdef'
    const response = digestResponse({ algorithm, username, realm, password: opts.password ?? 'secret', method: 'GET', uri, nonce, nc, cnonce, qop: 'auth' })
    return { username, realm, uri, algorithm, nonce, nc, cnonce, qop: 'auth', response }
  }
  const check = (params: Record<string, string>, counts: NonceCounts, nowMs = t0) =>
    verifyDigest({ params, method: 'GET', uri: '/p/001565aabbcc.cfg', realm, username: 'dev1', password: 'secret', key, nowMs, nonceTtlMs: ttl, counts })

  test('accepts MD5 and SHA-256 answers to our nonce', () => {
    const counts = new NonceCounts()
    for (const algorithm of ['MD5', 'SHA-256'] as const) {
      expect(check(answer(issueNonce(key, realm, t0), { algorithm }), counts)).toEqual({ ok: true, username: 'dev1' })
    }
  })

  test('refuses a wrong password, another user, another uri, a foreign nonce', () => {
    const counts = new NonceCounts()
    const nonce = issueNonce(key, realm, t0)
    expect(check(answer(nonce, { password: 'nope' }), counts)).toEqual({ ok: false, reason: 'wrong_response' })
    expect(check(answer(nonce, { username: 'dev2' }), counts)).toEqual({ ok: false, reason: 'wrong_username' })
    expect(check(answer(nonce, { uri: '/p/other.cfg' }), counts)).toEqual({ ok: false, reason: 'wrong_uri' })
    expect(check(answer(issueNonce('other-key', realm, t0)), counts)).toEqual({ ok: false, reason: 'bad_nonce' })
    expect(check(answer(issueNonce(key, 'other-realm', t0)), counts)).toEqual({ ok: false, reason: 'bad_nonce' })
  })

  test('a replayed nonce count is refused; a higher count on the same nonce is accepted', () => {
    const counts = new NonceCounts()
    const nonce = issueNonce(key, realm, t0)
    expect(check(answer(nonce), counts).ok).toBe(true)
    expect(check(answer(nonce), counts)).toEqual({ ok: false, reason: 'replayed' })
    expect(check(answer(nonce, { nc: '00000002' }), counts).ok).toBe(true)
    expect(check(answer(nonce, { nc: '00000002' }), counts)).toEqual({ ok: false, reason: 'replayed' })
  })

  test('an expired nonce is stale (the client retries with a fresh one), even with the right password', () => {
    const nonce = issueNonce(key, realm, t0)
    expect(check(answer(nonce), new NonceCounts(), t0 + ttl + 1)).toEqual({ ok: false, reason: 'stale_nonce' })
    expect(check(answer(nonce), new NonceCounts(), t0 - 1)).toEqual({ ok: false, reason: 'stale_nonce' })
  })

  test('bounded memory: an evicted nonce is stale, never replayable', () => {
    const counts = new NonceCounts(2)
    const first = issueNonce(key, realm, t0)
    expect(check(answer(first), counts).ok).toBe(true)
    for (let i = 1; i <= 2; i++) expect(check(answer(issueNonce(key, realm, t0 + i)), counts, t0 + i).ok).toBe(true)
    expect(counts.size).toBeLessThanOrEqual(2)
    expect(check(answer(first, { nc: '00000005' }), counts, t0 + 3)).toEqual({ ok: false, reason: 'stale_nonce' })
  })

  test('property: whatever the capacity and order, a (nonce, nc) pair is never accepted twice, nor a count below one accepted', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 6 })), { maxLength: 60 }),
        (capacity, uses) => {
          const counts = new NonceCounts(capacity)
          const highest = new Map<number, number>()
          for (const [nonce, nc] of uses) {
            const issuedAt = nonce // nonce i issued at time i
            const accepted = counts.isTracked(issuedAt) && counts.advance(`n${nonce}`, issuedAt, nc)
            if (accepted) {
              expect(nc).toBeGreaterThan(highest.get(nonce) ?? 0)
              highest.set(nonce, nc)
            }
            expect(counts.size).toBeLessThanOrEqual(capacity)
          }
        },
      ),
      { numRuns: 300 },
    )
  })

  test('pruning forgets nonces past their lifetime, a generation at a time, and they stay refused', () => {
    const counts = new NonceCounts(4)
    counts.advance('a', 1, 1)
    counts.advance('b', 2, 1)
    counts.advance('c', 5, 1)
    counts.prune(3)
    expect(counts.size).toBe(1)
    expect(counts.isTracked(2)).toBe(false)
    expect(counts.isTracked(5)).toBe(true)
    expect(counts.advance('c', 5, 1)).toBe(false)
    counts.prune(6)
    expect(counts.size).toBe(0)
    expect(counts.isTracked(5)).toBe(false)
  })

  test('many more nonces than the capacity: memory stays bounded, the old ones are refused, the recent ones tracked', () => {
    const counts = new NonceCounts(1_000)
    for (let i = 0; i < 100_000; i++) expect(counts.advance(`n${i}`, i, 1)).toBe(true)
    expect(counts.size).toBeLessThanOrEqual(1_000)
    expect(counts.isTracked(98_000)).toBe(false)
    expect(counts.isTracked(99_999)).toBe(true)
    expect(counts.advance('n99999', 99_999, 1)).toBe(false)
  })

  test('nonces carry their issue time under the key; tampering is detected', () => {
    const nonce = issueNonce(key, realm, t0)
    expect(nonceIssuedAt(key, realm, nonce)).toBe(t0)
    fc.assert(
      fc.property(fc.integer({ min: 0, max: nonce.length - 1 }), fc.constantFrom(...'ABCDEFabcdef0123456789-_'), (i, c) => {
        const tampered = nonce.slice(0, i) + c + nonce.slice(i + 1)
        if (tampered !== nonce) expect(nonceIssuedAt(key, realm, tampered)).toBeUndefined()
      }),
      { numRuns: 200 },
    )
  })

  test('challenges offer SHA-256 before MD5, quote the realm, and flag stale nonces', () => {
    const [sha, md5] = digestChallenges({ realm: 'a "b"', nonce: 'n', stale: true })
    expect(sha).toBe('Digest realm="a \\"b\\"", qop="auth", algorithm=SHA-256, nonce="n", stale=true')
    expect(md5).toContain('algorithm=MD5')
  })
})

// ---- The reference: the scanner parseAuthorization had before its sticky regexes (by index, a slice of the rest per token) ----

function referenceParseAuthorization(header: string | null | undefined): Authorization | undefined {
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
  const params = referenceParseAuthParams(rest)
  return params ? { scheme: 'digest', params } : undefined
}

function referenceParseAuthParams(input: string): Record<string, string> | undefined {
  const params: Record<string, string> = Object.create(null)
  let i = 0
  const skipSpace = () => {
    while (i < input.length && (input[i] === ' ' || input[i] === '\t')) i++
  }
  while (i < input.length) {
    skipSpace()
    if (input[i] === ',') {
      i++
      continue
    }
    const name = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+/.exec(input.slice(i))?.[0]
    if (!name) return undefined
    i += name.length
    skipSpace()
    if (input[i] !== '=') return undefined
    i++
    skipSpace()
    let value = ''
    if (input[i] === '"') {
      i++
      let closed = false
      while (i < input.length) {
        const c = input[i]!
        if (c === '\\' && i + 1 < input.length) {
          value += input[i + 1]
          i += 2
        } else if (c === '"') {
          i++
          closed = true
          break
        } else {
          value += c
          i++
        }
      }
      if (!closed) return undefined
    } else {
      const token = /^[A-Za-z0-9!#$%&'*+.^_`|~/=-]+/.exec(input.slice(i))?.[0]
      if (!token) return undefined
      value = token
      i += token.length
    }
    const key = name.toLowerCase()
    if (key in params) return undefined
    params[key] = value
    skipSpace()
    if (i < input.length && input[i] !== ',') return undefined
  }
  return params
}

describe('answering a challenge (the client side: a carrier challenging the SIP trunk)', () => {
  test('RFC 2617 §3.5: qop=auth with MD5 gives the RFC’s response', () => {
    const challenge =
      'Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"'
    const answer = answerDigestChallenge(challenge, {
      username: 'Mufasa',
      password: 'Circle Of Life',
      method: 'GET',
      uri: '/dir/index.html',
      cnonce: '0a4f113b',
    })
    const params = (parseAuthorization(answer) as { params: Record<string, string> }).params
    expect(params).toMatchObject({ response: '6629fae49393a05397450978507c4ef1', qop: 'auth', nc: '00000001', opaque: '5ccc069c403ebaf9f0171e9517f40e41' })
  })

  test('every algorithm our server offers: the answer passes our own check', () => {
    const key = 'k'.repeat(32)
    const realm = 'carrier.example'
    for (const value of digestChallenges({ realm, nonce: issueNonce(key, realm, 1_000), algorithms: ['SHA-256', 'MD5'] })) {
      const answer = answerDigestChallenge(value, { username: 'trunk', password: 'pw', method: 'INVITE', uri: 'sip:+15551234567@carrier.example' })
      const params = (parseAuthorization(answer) as { params: Record<string, string> }).params
      const outcome = verifyDigest({
        params,
        method: 'INVITE',
        uri: 'sip:+15551234567@carrier.example',
        realm,
        username: 'trunk',
        password: 'pw',
        key,
        nowMs: 2_000,
        nonceTtlMs: 60_000,
        counts: new NonceCounts(),
      })
      expect(outcome).toEqual({ ok: true, username: 'trunk' })
    }
  })

  test('without qop, the RFC 2069 form; what it cannot answer, undefined', () => {
    const answer = answerDigestChallenge('Digest realm="r", nonce="n"', { username: 'u', password: 'p', method: 'INVITE', uri: 'sip:x@y' })
    expect(answer).toContain('response="')
    expect(answer).not.toContain('qop=')
    expect(answerDigestChallenge('Basic realm="r"', { username: 'u', password: 'p', method: 'INVITE', uri: 'sip:x@y' })).toBeUndefined()
    expect(
      answerDigestChallenge('Digest realm="r", nonce="n", algorithm=SHA-512-256', { username: 'u', password: 'p', method: 'INVITE', uri: 'sip:x@y' }),
    ).toBeUndefined()
    expect(
      answerDigestChallenge('Digest realm="r", nonce="n", qop="auth-int"', { username: 'u', password: 'p', method: 'INVITE', uri: 'sip:x@y' }),
    ).toBeUndefined()
  })
})
