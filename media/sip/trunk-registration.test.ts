/**
 * The trunk registration's decisions, driven by a trunk that answers from a script:
 * the interval it grants, its challenges, refusals, silence and Interval Too Brief,
 * on timers the test fires. The real exchange with a registrar (sipp checking our
 * digest) is test/sip-trunk-registration.test.ts.
 */
import { describe, expect, test } from 'bun:test'
import type { IncomingResponseMessage } from 'sip.js/lib/core/messages/incoming-response-message.js'
import { digestResponse } from '../../src/auth/digest'
import type { ClientOutcome, OutgoingRequest } from './client'
import { parseSipMessage } from './message'
import {
  ASKED_EXPIRES_S,
  grantedExpiresS,
  RETRY_MAX_S,
  RETRY_MIN_S,
  refreshAfterS,
  startTrunkRegistration,
  type TrunkRegistrationState,
} from './trunk-registration'

const CONTACT = 'sip:acme@192.0.2.10:5060'

function response(status: number, headers: string[] = []): IncomingResponseMessage {
  const text = [
    `SIP/2.0 ${status} Reason`,
    'Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKx',
    'From: <sip:acme@203.0.113.5>;tag=a',
    'To: <sip:acme@203.0.113.5>;tag=b',
    'Call-ID: c',
    'CSeq: 1 REGISTER',
    ...headers,
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n')
  const parsed = parseSipMessage(Buffer.from(text), 'udp')
  if (parsed.kind !== 'response') throw new Error('not a response')
  return parsed.message
}

const answer = (status: number, headers?: string[]): ClientOutcome => ({ kind: 'response', status, response: response(status, headers) })

/** A trunk answering each REGISTER with the next scripted outcome; timers the test runs by hand. */
function scripted(script: ((request: OutgoingRequest) => ClientOutcome)[]) {
  const sent: OutgoingRequest[] = []
  const timers: { ms: number; run: () => void }[] = []
  const attempts: TrunkRegistrationState[] = []
  const registration = startTrunkRegistration({
    trunk: { address: '203.0.113.5', port: 5060, transport: 'udp', credentials: { username: 'acme', password: 's3cret' }, register: true },
    sip: {
      sendRequest: async (_target, request) => {
        sent.push(request)
        const next = script.shift()
        if (!next) throw new Error(`unscripted REGISTER ${sent.length}`)
        return next(request)
      },
      sentBy: () => '192.0.2.10:5060',
    },
    schedule: (ms, run) => {
      const timer = { ms, run }
      timers.push(timer)
      return () => timers.splice(timers.indexOf(timer), 1)
    },
    onAttempt: (s) => attempts.push(s),
  })
  const settled = () => new Promise((r) => setTimeout(r, 5))
  /** Fires the one pending timer; its delay in seconds. */
  const fire = async () => {
    await settled()
    expect(timers).toHaveLength(1)
    const t = timers.pop()!
    t.run()
    await settled()
    return t.ms / 1000
  }
  /** The one pending timer's delay in seconds, not fired. */
  const pending = async () => {
    await settled()
    expect(timers).toHaveLength(1)
    return timers[0]!.ms / 1000
  }
  const header = (r: OutgoingRequest, name: string) => r.headers.find(([n]) => n === name)?.[1]
  return { registration, sent, timers, attempts, settled, fire, pending, header }
}

const CHALLENGE = 'Digest realm="carrier.example", nonce="n0nce", algorithm=MD5, qop="auth"'

describe('trunk registration', () => {
  test('a challenge is answered with the trunk’s credentials; the refresh comes a minute before the granted interval ends', async () => {
    const s = scripted([
      () => answer(401, [`WWW-Authenticate: ${CHALLENGE}`]),
      () => answer(200, [`Contact: <${CONTACT}>;expires=300`]),
      () => answer(200, [`Contact: <${CONTACT}>;expires=300`]),
    ])
    expect(await s.pending()).toBe(240)
    expect(s.attempts).toEqual([{ registered: true, grantedS: 300, last: 200, failures: 0 }])
    await s.fire()
    const [first, second, refresh] = s.sent
    // One Call-ID and From tag, CSeq up by one, our Contact, the interval we ask for.
    for (const r of s.sent) {
      expect(s.header(r, 'Call-ID')).toBe(s.header(first!, 'Call-ID'))
      expect(s.header(r, 'From')).toBe(s.header(first!, 'From'))
      expect(s.header(r, 'Contact')).toBe(`<${CONTACT}>`)
      expect(s.header(r, 'Expires')).toBe(String(ASKED_EXPIRES_S))
    }
    expect(s.sent.map((r) => s.header(r, 'CSeq'))).toEqual(['1 REGISTER', '2 REGISTER', '3 REGISTER'])
    expect(first!.uri).toBe('sip:203.0.113.5:5060')
    expect(s.header(first!, 'To')).toBe('<sip:acme@203.0.113.5>')
    // The answer is a digest the registrar would accept for these credentials.
    const authorization = s.header(second!, 'Authorization')!
    expect(authorization).toStartWith('Digest ')
    expect(s.header(refresh!, 'Authorization')).toBeUndefined()
    const params = Object.fromEntries([...authorization.matchAll(/(\w+)="?([^",]+)"?/g)].map((m) => [m[1]!, m[2]!]))
    expect(params).toMatchObject({ username: 'acme', realm: 'carrier.example', nonce: 'n0nce', uri: 'sip:203.0.113.5:5060' })
    expect(verifyDigestAnswer(params, 's3cret')).toBe(true)
    expect(verifyDigestAnswer(params, 'wrong')).toBe(false)
  })

  test('refusals and silence are retried with back-off, doubling up to the maximum; a success resets it', async () => {
    const s = scripted([
      () => answer(403),
      () => ({ kind: 'timeout' }),
      () => answer(503),
      () => ({ kind: 'unreachable' }),
      () => answer(403),
      () => answer(403),
      () => answer(200, ['Expires: 120']),
      () => answer(500),
    ])
    const delays: number[] = []
    for (let i = 0; i < 7; i++) delays.push(await s.fire())
    expect(delays).toEqual([30, 60, 120, 240, 480, RETRY_MAX_S, refreshAfterS(120)])
    expect(s.attempts.map((a) => [a.last, a.failures, a.registered])).toEqual([
      [403, 1, false],
      ['timeout', 2, false],
      [503, 3, false],
      ['unreachable', 4, false],
      [403, 5, false],
      [403, 6, false],
      [200, 0, true],
      [500, 1, false],
    ])
    expect(await s.fire()).toBe(RETRY_MIN_S)
  })

  test('423 Interval Too Brief: asked again at once with the trunk’s Min-Expires', async () => {
    const s = scripted([() => answer(423, ['Min-Expires: 1800']), () => answer(200, [`Contact: <${CONTACT}>;expires=1800`])])
    expect(await s.pending()).toBe(1740)
    expect(s.sent.map((r) => s.header(r, 'Expires'))).toEqual(['600', '1800'])
  })

  test('stop removes the registration (Expires: 0, its challenge answered); not registered, nothing is sent', async () => {
    const s = scripted([() => answer(200, [`Contact: <${CONTACT}>;expires=600`]), () => answer(401, [`WWW-Authenticate: ${CHALLENGE}`]), () => answer(200)])
    await s.settled()
    await s.registration.stop()
    expect(s.sent.map((r) => s.header(r, 'Expires'))).toEqual(['600', '0', '0'])
    expect(s.header(s.sent[2]!, 'Authorization')).toStartWith('Digest ')
    expect(s.registration.state.registered).toBe(false)
    expect(s.timers.filter((t) => t.ms !== 3000)).toHaveLength(0)

    const refused = scripted([() => answer(403)])
    await refused.settled()
    await refused.registration.stop()
    expect(refused.sent).toHaveLength(1)
  })

  test('the granted interval: our Contact’s expires, else the Expires header, else what we asked', () => {
    expect(grantedExpiresS(response(200, [`Contact: <sip:other@192.0.2.99>;expires=60, <${CONTACT}>;expires=90`, 'Expires: 300']), CONTACT)).toBe(90)
    expect(grantedExpiresS(response(200, ['Contact: <sip:other@192.0.2.99>;expires=60', 'Expires: 300']), CONTACT)).toBe(300)
    expect(grantedExpiresS(response(200), CONTACT)).toBe(ASKED_EXPIRES_S)
    expect(refreshAfterS(600)).toBe(540)
    expect(refreshAfterS(60)).toBe(30)
    expect(refreshAfterS(2)).toBe(1)
  })
})

/** Checks a digest answer as a registrar would: the response recomputed from the password. */
function verifyDigestAnswer(params: Record<string, string>, password: string): boolean {
  const expected = digestResponse({
    algorithm: 'MD5',
    username: 'acme',
    realm: 'carrier.example',
    password,
    method: 'REGISTER',
    uri: 'sip:203.0.113.5:5060',
    nonce: params.nonce!,
    nc: params.nc!,
    cnonce: params.cnonce!,
    qop: 'auth',
  })
  return expected === params.response
}
