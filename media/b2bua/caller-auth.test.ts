/**
 * Who is calling: the proxy-style digest challenge of INVITEs (media/b2bua/caller-auth.ts),
 * with an in-memory line table and a manual clock. Requests are parsed by the SIP
 * server's own parser, as they arrive from a phone.
 */
import { describe, expect, test } from 'bun:test'
import { type DigestAlgorithm, digestResponse } from '../../src/auth/digest'
import { manualClock } from '../../src/clock'
import type { RegistrarLine } from '../../src/services/devices/registrations'
import { type AuthFailures, createAuthFailures } from '../sip/auth-failures'
import type { SipRequest, SipResponseSpec, SipSource } from '../sip/handler'
import { parseSipMessage } from '../sip/message'
import { type CallerAuth, callerAuthenticator } from './caller-auth'

const LINE: RegistrarLine = {
  line: 'line-1',
  lineDevice: 'device-1',
  device: 'device-1',
  account: 'account-1',
  username: '1001',
  password: 'correct horse',
  domain: 'pbx.example.com',
  userIds: ['user-1'],
}
const OTHER: RegistrarLine = { ...LINE, line: 'line-2', username: '2001', password: 'other secret', domain: 'other.example.com' }
const TTL = 60_000
const URI = 'sip:1002@pbx.example.com'

const PHONE: SipSource = { transport: 'udp', address: '192.0.2.20', port: 5060 }

function setup(failures?: AuthFailures) {
  const clock = manualClock()
  const looked: string[] = []
  const lines = new Map([LINE, OTHER].map((l) => [l.username, l]))
  const authenticateFrom = callerAuthenticator({
    clock,
    nonceKey: 'test-nonce-key',
    nonceTtlMs: TTL,
    lookupLine: async (username) => {
      looked.push(username)
      return lines.get(username)
    },
    failures,
  })
  const authenticate = (request: SipRequest) => authenticateFrom(request, PHONE)
  return { clock, looked, authenticate, authenticateFrom }
}

let seq = 0
/** An INVITE as a phone sends it, parsed by the server's parser. */
function invite(o: { fromHost?: string; fromUser?: string; auth?: string; uri?: string } = {}): SipRequest {
  const n = ++seq
  const text = [
    `INVITE ${o.uri ?? URI} SIP/2.0`,
    `Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKca${n};rport`,
    'Max-Forwards: 70',
    `From: "Front Desk" <sip:${o.fromUser ?? '1001'}@${o.fromHost ?? 'pbx.example.com'}>;tag=f${n}`,
    `To: <${o.uri ?? URI}>`,
    `Call-ID: ca${n}@192.0.2.10`,
    'CSeq: 2 INVITE',
    'Contact: <sip:1001@192.0.2.10:5060>',
    ...(o.auth === undefined ? [] : [`Proxy-Authorization: ${o.auth}`]),
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n')
  const parsed = parseSipMessage(Buffer.from(text), 'udp')
  if (parsed.kind !== 'request') throw new Error(`unparseable test INVITE: ${parsed.kind}`)
  return parsed.message
}

const headerValues = (r: SipResponseSpec, name: string) => (r.headers ?? []).filter(([n]) => n.toLowerCase() === name.toLowerCase()).map(([, v]) => v)

/** The 407's challenge for `algorithm`. */
function challengeOf(outcome: CallerAuth, algorithm: DigestAlgorithm) {
  if (outcome.ok) throw new Error('expected a refusal')
  const value = headerValues(outcome.response, 'Proxy-Authenticate').find((v) => v.includes(`algorithm=${algorithm}`))
  if (!value) throw new Error(`no ${algorithm} challenge in ${JSON.stringify(outcome.response)}`)
  return { nonce: /nonce="([^"]+)"/.exec(value)![1]!, realm: /realm="([^"]+)"/.exec(value)![1]!, stale: /stale=true/.test(value) }
}

/** The Proxy-Authorization a phone answers with. */
function answer(o: { nonce: string; realm: string; algorithm?: DigestAlgorithm; username?: string; password?: string; nc?: number; uri?: string }) {
  const algorithm = o.algorithm ?? 'MD5'
  const username = o.username ?? LINE.username
  const uri = o.uri ?? URI
  const nc = (o.nc ?? 1).toString(16).padStart(8, '0')
  const response = digestResponse({
    algorithm,
    username,
    realm: o.realm,
    password: o.password ?? LINE.password,
    method: 'INVITE',
    uri,
    nonce: o.nonce,
    nc,
    cnonce: '0a4f113b',
    qop: 'auth',
  })
  return `Digest username="${username}", realm="${o.realm}", nonce="${o.nonce}", uri="${uri}", response="${response}", algorithm=${algorithm}, qop=auth, nc=${nc}, cnonce="0a4f113b"`
}

const status = (outcome: CallerAuth) => (outcome.ok ? 'ok' : outcome.response.status)

describe('caller authentication of INVITEs', () => {
  test('no credentials: 407 with Proxy-Authenticate, MD5 then SHA-256, realm = the From host, one nonce, not stale', async () => {
    const { authenticate, looked } = setup()
    const outcome = await authenticate(invite())
    expect(status(outcome)).toBe(407)
    if (outcome.ok) return
    const values = headerValues(outcome.response, 'Proxy-Authenticate')
    expect(values.length).toBe(2)
    expect(values[0]).toContain('algorithm=MD5')
    expect(values[1]).toContain('algorithm=SHA-256')
    expect(headerValues(outcome.response, 'WWW-Authenticate')).toEqual([])
    for (const v of values) {
      expect(v).toStartWith('Digest ')
      expect(v).toContain('realm="pbx.example.com"')
      expect(v).toContain('qop="auth"')
      expect(v).not.toContain('stale')
    }
    expect(challengeOf(outcome, 'MD5').nonce).toBe(challengeOf(outcome, 'SHA-256').nonce)
    expect(looked).toEqual([])
  })

  test('a right MD5 answer → ok with the line; a right SHA-256 answer too', async () => {
    const { authenticate } = setup()
    for (const algorithm of ['MD5', 'SHA-256'] as const) {
      const c = challengeOf(await authenticate(invite()), algorithm)
      const outcome = await authenticate(invite({ auth: answer({ ...c, algorithm }) }))
      expect(outcome).toEqual({ ok: true, line: LINE })
    }
  })

  test('the nonce may be reused with a higher nc; a replayed nc gets 407 again (not stale)', async () => {
    const { authenticate } = setup()
    const c = challengeOf(await authenticate(invite()), 'MD5')
    expect(status(await authenticate(invite({ auth: answer({ ...c, nc: 1 }) })))).toBe('ok')
    expect(status(await authenticate(invite({ auth: answer({ ...c, nc: 2 }) })))).toBe('ok')
    const replay = await authenticate(invite({ auth: answer({ ...c, nc: 2 }) }))
    expect(status(replay)).toBe(407)
    expect(challengeOf(replay, 'MD5').stale).toBe(false)
    expect(status(await authenticate(invite({ auth: answer({ ...c, nc: 1 }) })))).toBe(407)
    expect(status(await authenticate(invite({ auth: answer({ ...c, nc: 3 }) })))).toBe('ok')
  })

  test('a wrong password → 403; an unknown user → 403 after the same lookup', async () => {
    const { authenticate, looked } = setup()
    const c = challengeOf(await authenticate(invite()), 'MD5')
    const wrong = await authenticate(invite({ auth: answer({ ...c, password: 'wrong' }) }))
    expect(wrong).toEqual({ ok: false, response: { status: 403, reason: 'Forbidden' } })
    const unknown = await authenticate(invite({ fromUser: '9999', auth: answer({ ...c, username: '9999', password: 'anything' }) }))
    expect(unknown).toEqual({ ok: false, response: { status: 403, reason: 'Forbidden' } })
    expect(looked).toEqual(['1001', '9999'])
    // A wrong answer does not burn the nonce for the rightful phone.
    expect(status(await authenticate(invite({ auth: answer(c) })))).toBe('ok')
  })

  test("the realm is the From host and must be the line's domain: another domain is refused, even with the right password", async () => {
    const { authenticate } = setup()
    // The challenge names the From host.
    const c = challengeOf(await authenticate(invite({ fromHost: 'other.example.com' })), 'MD5')
    expect(c.realm).toBe('other.example.com')
    // 1001 exists, but in pbx.example.com: its right password for the challenged realm is refused.
    expect(status(await authenticate(invite({ fromHost: 'other.example.com', auth: answer(c) })))).toBe(403)
    // Answering with its own domain as realm does not match the challenge.
    expect(status(await authenticate(invite({ fromHost: 'other.example.com', auth: answer({ ...c, realm: 'pbx.example.com' }) })))).not.toBe('ok')
    // A nonce issued for another realm is not accepted here.
    const own = challengeOf(await authenticate(invite()), 'MD5')
    expect(status(await authenticate(invite({ fromHost: 'other.example.com', auth: answer({ ...own, realm: 'other.example.com' }) })))).not.toBe('ok')
    // The other line authenticates in its own domain.
    const o = challengeOf(await authenticate(invite({ fromHost: 'other.example.com', fromUser: '2001' })), 'SHA-256')
    const ok = await authenticate(
      invite({ fromHost: 'other.example.com', fromUser: '2001', auth: answer({ ...o, algorithm: 'SHA-256', username: '2001', password: OTHER.password }) }),
    )
    expect(ok).toEqual({ ok: true, line: OTHER })
  })

  test('the domain compares case-insensitively (the URI parser lowercases the host: the realm is the lowercase From host)', async () => {
    const { authenticate } = setup()
    const c = challengeOf(await authenticate(invite({ fromHost: 'PBX.Example.COM' })), 'MD5')
    expect(c.realm).toBe('pbx.example.com')
    expect(await authenticate(invite({ fromHost: 'PBX.Example.COM', auth: answer(c) }))).toEqual({ ok: true, line: LINE })
  })

  test('a stale nonce → 407 with stale=true on both challenges; the fresh nonce then works', async () => {
    const { authenticate, clock } = setup()
    const c = challengeOf(await authenticate(invite()), 'MD5')
    clock.advance(TTL + 1)
    const stale = await authenticate(invite({ auth: answer(c) }))
    expect(status(stale)).toBe(407)
    expect(challengeOf(stale, 'MD5').stale).toBe(true)
    expect(challengeOf(stale, 'SHA-256').stale).toBe(true)
    const fresh = challengeOf(stale, 'MD5')
    expect(fresh.nonce).not.toBe(c.nonce)
    expect(status(await authenticate(invite({ auth: answer(fresh) })))).toBe('ok')
    // A stale nonce with a wrong password is a 403, not a stale challenge (the password is checked first).
    clock.advance(TTL + 1)
    expect(status(await authenticate(invite({ auth: answer({ ...fresh, nc: 2, password: 'wrong' }) })))).toBe(403)
  })

  test('a nonce from a time ahead of the clock, a forged nonce, a wrong digest uri and a Basic header all get 407', async () => {
    const { authenticate, clock } = setup()
    clock.advance(10_000)
    const ahead = challengeOf(await authenticate(invite()), 'MD5')
    clock.advance(-10_000)
    expect(status(await authenticate(invite({ auth: answer(ahead) })))).toBe(407)
    clock.advance(10_000)
    const c = challengeOf(await authenticate(invite()), 'MD5')
    const forged = `${c.nonce.slice(0, -2)}${c.nonce.endsWith('AA') ? 'BB' : 'AA'}`
    const forgedOutcome = await authenticate(invite({ auth: answer({ ...c, nonce: forged }) }))
    expect(status(forgedOutcome)).toBe(407)
    expect(challengeOf(forgedOutcome, 'MD5').stale).toBe(false)
    expect(status(await authenticate(invite({ auth: answer({ ...c, uri: 'sip:1003@pbx.example.com' }) })))).toBe(407)
    expect(status(await authenticate(invite({ auth: `Basic ${Buffer.from('1001:correct horse').toString('base64')}` })))).toBe(407)
    expect(status(await authenticate(invite({ auth: 'Digest garbage' })))).toBe(407)
  })

  // The placeholder compared against for unknown users (username and password NUL) must let nobody in.
  test('a username of NUL with password NUL (the placeholder for unknown users) is refused', async () => {
    const { authenticate } = setup()
    const c = challengeOf(await authenticate(invite()), 'MD5')
    const outcome = await authenticate(invite({ auth: answer({ ...c, username: '\u0000', password: '\u0000' }) }))
    expect(outcome.ok).toBe(false)
  })

  test('a line guessed at from one address is refused there, the right password too, without a lookup; other addresses still get in', async () => {
    const failures = createAuthFailures({ now: () => 0, limits: { perLine: 2 } })
    const { authenticate, authenticateFrom, looked } = setup(failures)
    const c = challengeOf(await authenticate(invite()), 'MD5')
    for (const nc of [1, 2]) expect(status(await authenticate(invite({ auth: answer({ ...c, nc, password: 'wrong' }) })))).toBe(403)
    looked.length = 0
    expect(status(await authenticate(invite({ auth: answer({ ...c, nc: 3 }) })))).toBe(403)
    expect(looked).toEqual([])
    expect(status(await authenticateFrom(invite({ auth: answer({ ...c, nc: 4 }) }), { ...PHONE, address: '198.51.100.7' }))).toBe('ok')
    // An unknown user's failures count as well.
    expect(status(await authenticate(invite({ fromUser: '9999', auth: answer({ ...c, nc: 5, username: '9999', password: 'x' }) })))).toBe(403)
    expect(failures.lineBlocked(PHONE.address, '9999')).toBe(false)
    expect(status(await authenticate(invite({ fromUser: '9999', auth: answer({ ...c, nc: 6, username: '9999', password: 'x' }) })))).toBe(403)
    expect(failures.lineBlocked(PHONE.address, '9999')).toBe(true)
  })
})
