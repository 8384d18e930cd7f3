/**
 * The registrar alone (no database, no socket): REGISTER messages parsed by sip.js
 * as the SIP server parses them, answers checked against RFC 3261 §10.3, RFC 7616
 * and RFC 8760, and the messages it writes for the device actor.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { Parser } from 'sip.js/lib/core/messages/parser.js'
import type { DigestAlgorithm } from '../../src/auth/digest'
import { manualClock } from '../../src/clock'
import type { RegistrarLine } from '../../src/services/devices/registrations'
import type { SipRequest, SipSource } from '../sip/handler'
import { createRegistrar, type DeviceRegistrationEvent } from './registrar'
import { authorizationFor, challengeOf, headerValues, type RegisterOptions, registerRequest, wildcardRequest } from './sip-phone.testkit'

const DOMAIN = 'pbx.example.test'
const LINE: RegistrarLine = {
  line: 'dln_1',
  lineDevice: 'dev_1',
  device: 'dev_1',
  account: 'acct_1',
  username: 'u1abc',
  password: 'secret-password-1',
  domain: DOMAIN,
  userIds: ['usr_1'],
}
const SOURCE: SipSource = { transport: 'udp', address: '192.0.2.10', port: 5062 }
const silent = { log() {}, warn() {}, error() {}, debug() {} }

function setup(opts: { line?: RegistrarLine; known?: { contact: string; expires_at: string }[]; fail?: boolean } = {}) {
  const clock = manualClock('2026-03-01T10:00:00.000Z')
  const told: { device: string; events: DeviceRegistrationEvent[] }[] = []
  const line = opts.line ?? LINE
  const handle = createRegistrar({
    clock,
    nonceKey: 'test-nonce-key',
    lookupLine: async (username) => (username === line.username ? line : undefined),
    tellDevice: async (device, events) => {
      if (opts.fail) throw new Error('database down')
      told.push({ device, events })
    },
    knownBindings: async () => opts.known ?? [],
  })
  return { clock, told, handle: (r: SipRequest) => Promise.resolve(handle(r, SOURCE)) }
}

const ACCOUNT = { username: LINE.username, password: LINE.password, domain: DOMAIN }
const register = (o: RegisterOptions = {}) => registerRequest(ACCOUNT, o)
const registerWildcard = (auth: string) => wildcardRequest(ACCOUNT, auth)
const header = headerValues
const authorization = (o: Parameters<typeof authorizationFor>[1]) => authorizationFor(ACCOUNT, o)

/** The first REGISTER's challenge, then the authenticated request. */
async function authenticated(s: ReturnType<typeof setup>, o: RegisterOptions = {}, algorithm: DigestAlgorithm = 'SHA-256') {
  const { nonce } = challengeOf(await s.handle(register(o)), algorithm)
  return s.handle(register({ ...o, auth: authorization({ nonce, algorithm }) }))
}

describe('registrar: digest authentication', () => {
  test('a REGISTER without credentials is challenged for MD5 first (what every phone answers), then SHA-256, in the domain it registers to', async () => {
    const s = setup()
    const r = await s.handle(register())
    expect(r.status).toBe(401)
    const values = header(r, 'WWW-Authenticate')
    expect(values).toHaveLength(2)
    expect(values[0]).toContain('algorithm=MD5')
    expect(values[1]).toContain('algorithm=SHA-256')
    expect(challengeOf(r, 'MD5').realm).toBe(DOMAIN)
    expect(values.every((v) => v.includes('qop="auth"'))).toBe(true)
    expect(s.told).toEqual([])
  })

  for (const algorithm of ['SHA-256', 'MD5'] as const) {
    test(`${algorithm}: the right password binds the contact until now + Expires, and the 200 lists it`, async () => {
      const s = setup()
      const r = await authenticated(s, { expires: 600 }, algorithm)
      expect(r.status).toBe(200)
      expect(header(r, 'Contact')).toEqual([`<sip:${LINE.username}@192.0.2.10:5062>;expires=600`])
      expect(s.told).toEqual([
        {
          device: 'dev_1',
          events: [
            {
              type: 'REGISTER',
              contact: `${LINE.username}|sip:${LINE.username}@192.0.2.10:5062`,
              expires_at: '2026-03-01T10:10:00.000Z',
              at: '2026-03-01T10:00:00.000Z',
              binding: {
                line: 'dln_1',
                line_device: 'dev_1',
                username: LINE.username,
                user_ids: ['usr_1'],
                contact: `sip:${LINE.username}@192.0.2.10:5062`,
                transport: 'udp',
                source_address: '192.0.2.10',
                source_port: 5062,
                user_agent: 'Yealink SIP-T54W 96.86.0.100',
              },
            },
          ],
        },
      ])
    })
  }

  test('an expired nonce with the right password: 401 with stale=true, and nothing bound', async () => {
    const s = setup()
    const { nonce } = challengeOf(await s.handle(register()), 'SHA-256')
    s.clock.advance(6 * 60_000)
    const r = await s.handle(register({ auth: authorization({ nonce }) }))
    expect(r.status).toBe(401)
    expect(challengeOf(r, 'SHA-256').stale).toBe(true)
    expect(challengeOf(r, 'MD5').stale).toBe(true)
    expect(s.told).toEqual([])
  })

  test('a replayed nonce count is refused with a fresh challenge (not stale); the next count is taken', async () => {
    const s = setup()
    const { nonce } = challengeOf(await s.handle(register()), 'SHA-256')
    const first = register({ auth: authorization({ nonce, nc: 1 }) })
    expect((await s.handle(first)).status).toBe(200)
    const replay = await s.handle(register({ auth: authorization({ nonce, nc: 1 }) }))
    expect(replay.status).toBe(401)
    expect(challengeOf(replay, 'SHA-256').stale).toBe(false)
    expect((await s.handle(register({ auth: authorization({ nonce, nc: 2 }) }))).status).toBe(200)
    expect(s.told).toHaveLength(2)
  })

  test('a wrong password and an unknown username get the same 403, and nothing is bound', async () => {
    const s = setup()
    const { nonce } = challengeOf(await s.handle(register()), 'SHA-256')
    const wrong = await s.handle(register({ auth: authorization({ nonce, password: 'not-it' }) }))
    const unknown = await s.handle(register({ user: 'nobody', auth: authorization({ nonce, nc: 2, username: 'nobody' }) }))
    expect(wrong).toEqual({ status: 403, reason: 'Forbidden' })
    expect(unknown).toEqual(wrong)
    expect(s.told).toEqual([])
  })

  test('the authenticated user must be the one in To: another line’s credentials cannot register this address', async () => {
    const s = setup()
    const { nonce } = challengeOf(await s.handle(register()), 'SHA-256')
    // Valid credentials of LINE, used to register someone else's address.
    const r = await s.handle(register({ user: 'someone-else', auth: authorization({ nonce }) }))
    expect(r.status).toBe(403)
    expect(s.told).toEqual([])
  })

  test('a line of another SIP domain is refused like a wrong password', async () => {
    const s = setup({ line: { ...LINE, domain: 'other.example.test' } })
    const { nonce } = challengeOf(await s.handle(register()), 'SHA-256')
    expect((await s.handle(register({ auth: authorization({ nonce }) }))).status).toBe(403)
  })

  test('a nonce not signed by this registrar gets a new challenge', async () => {
    const s = setup()
    const r = await s.handle(register({ auth: authorization({ nonce: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }) }))
    expect(r.status).toBe(401)
  })
})

describe('registrar: bindings', () => {
  test('an interval under the minimum: 423 Interval Too Brief with Min-Expires, nothing bound', async () => {
    const s = setup()
    const r = await authenticated(s, { expires: 30 })
    expect(r.status).toBe(423)
    expect(header(r, 'Min-Expires')).toEqual(['60'])
    expect(s.told).toEqual([])
  })

  test('a long interval is cut to the maximum; no expiry at all gets the default', async () => {
    const s = setup()
    const long = await authenticated(s, { expires: 86_400 })
    expect(header(long, 'Contact')).toEqual([`<sip:${LINE.username}@192.0.2.10:5062>;expires=3600`])
    const none = await authenticated(s, { contacts: [`<sip:${LINE.username}@192.0.2.11:5060>`] })
    expect(header(none, 'Contact')).toContain(`<sip:${LINE.username}@192.0.2.11:5060>;expires=3600`)
  })

  test('several contacts in one REGISTER, each with its own expires parameter; the 200 lists every binding', async () => {
    const s = setup()
    const r = await authenticated(s, {
      contacts: [`<sip:${LINE.username}@192.0.2.10:5062>;expires=120, <sip:${LINE.username}@198.51.100.7:5060>`],
      expires: 900,
    })
    expect(r.status).toBe(200)
    expect(header(r, 'Contact').sort()).toEqual([`<sip:${LINE.username}@192.0.2.10:5062>;expires=120`, `<sip:${LINE.username}@198.51.100.7:5060>;expires=900`])
    expect(s.told).toHaveLength(1)
    expect(s.told[0]!.events.map((e) => e.type)).toEqual(['REGISTER', 'REGISTER'])
    // Later, a refresh of one contact still lists both, with what remains of the other.
    s.clock.advance(60_000)
    const refresh = await authenticated(s, { expires: 300 })
    expect(header(refresh, 'Contact').sort()).toEqual([
      `<sip:${LINE.username}@192.0.2.10:5062>;expires=300`,
      `<sip:${LINE.username}@198.51.100.7:5060>;expires=840`,
    ])
  })

  test('Expires: 0 on one contact removes it; Contact: * with Expires: 0 removes every binding of the line', async () => {
    const s = setup({ known: [{ contact: `sip:${LINE.username}@203.0.113.9:5060`, expires_at: '2026-03-01T10:30:00.000Z' }] })
    await authenticated(s, { expires: 600 })
    const one = await authenticated(s, { expires: 0 })
    expect(header(one, 'Contact')).toEqual([`<sip:${LINE.username}@203.0.113.9:5060>;expires=1800`])
    expect(s.told.at(-1)!.events).toEqual([
      { type: 'UNREGISTER', contact: `${LINE.username}|sip:${LINE.username}@192.0.2.10:5062`, at: '2026-03-01T10:00:00.000Z' },
    ])
    const { nonce } = challengeOf(await s.handle(register()), 'SHA-256')
    const all = await s.handle(registerWildcard(authorization({ nonce })))
    expect(all.status).toBe(200)
    expect(header(all, 'Contact')).toEqual([])
    expect(s.told.at(-1)!.events).toEqual([
      { type: 'UNREGISTER', contact: `${LINE.username}|sip:${LINE.username}@203.0.113.9:5060`, at: '2026-03-01T10:00:00.000Z' },
    ])
  })

  test('Contact: * without Expires: 0 is a bad request', async () => {
    const s = setup()
    const { nonce } = challengeOf(await s.handle(register()), 'SHA-256')
    const r = register({ contacts: [], expires: 60, auth: authorization({ nonce }) })
    r.addHeader('contact', '*')
    expect((await s.handle(r)).status).toBe(400)
  })

  test('no Contact: a query answered with the current bindings, nothing written', async () => {
    const s = setup()
    await authenticated(s, { expires: 600 })
    const r = await authenticated(s, { contacts: [] })
    expect(r.status).toBe(200)
    expect(header(r, 'Contact')).toEqual([`<sip:${LINE.username}@192.0.2.10:5062>;expires=600`])
    expect(s.told).toHaveLength(1)
  })

  test('nothing is acknowledged that was not committed: a failed write answers 500 and the binding is not listed', async () => {
    const s = setup({ fail: true })
    expect((await authenticated(s, { expires: 600 })).status).toBe(500)
  })

  test('a method other than REGISTER is not the registrar’s: 405 Allow: REGISTER', async () => {
    const s = setup()
    const options = Parser.parseMessage(
      `OPTIONS sip:${DOMAIN} SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10:5062;branch=z9hG4bKo\r\nFrom: <sip:a@${DOMAIN}>;tag=1\r\nTo: <sip:a@${DOMAIN}>\r\nCall-ID: o1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n`,
      silent as never,
    ) as SipRequest
    expect(await s.handle(options)).toEqual({ status: 405, headers: [['Allow', 'REGISTER']] })
  })
})

describe('registrar: whatever a phone sends (property)', () => {
  test('any Expires, Contact parameter or Authorization header gets a 4xx or a 200, never an error', async () => {
    const s = setup()
    const { nonce } = challengeOf(await s.handle(register()), 'SHA-256')
    let nc = 0
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.oneof(fc.nat(), fc.string({ maxLength: 12 })), { nil: undefined }),
        fc.oneof(fc.nat(), fc.string({ maxLength: 12 })),
        fc.oneof(
          fc.constant('valid'),
          fc.string({ maxLength: 80 }).map((v) => `Digest ${v}`),
          fc.string({ maxLength: 80 }),
        ),
        async (expires, contactExpires, auth) => {
          const header = String(contactExpires).replace(/[\r\n]/g, '')
          const request = (() => {
            try {
              return register({
                contacts: [`<sip:${LINE.username}@192.0.2.10:5062>;expires=${header || '0'}`],
                expires: expires === undefined ? undefined : (String(expires).replace(/[\r\n]/g, '') as unknown as number),
                auth: auth === 'valid' ? authorization({ nonce, nc: ++nc }) : auth.replace(/[\r\n]/g, ''),
              })
            } catch {
              return undefined // sip.js refuses the message: the SIP server answers it, not the registrar
            }
          })()
          if (!request) return
          const r = await s.handle(request)
          expect([200, 400, 401, 403, 423]).toContain(r.status)
        },
      ),
      { numRuns: 300 },
    )
    // 300 REGISTERs through the store: seconds on PGlite, more on a loaded PostgreSQL run.
  }, 120_000)
})
