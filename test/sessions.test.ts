/**
 * Account sessions and user sessions over HTTP: what they are minted from, what
 * they reach, and when they stop working. Time is a manual clock so that expiry
 * is tested without waiting.
 */
import { describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { manualClock } from '../src/clock'
import { sampleAccount, startTestService } from './support/service'

const clock = manualClock('2026-03-02T09:00:00.000Z')
const t = await startTestService({}, { clock })

const HOUR = 3600_000
const DAY = 24 * HOUR

async function accountSession(key: string, account: string, components: Record<string, { enabled: boolean }>) {
  const r = await t.call('POST', '/v1/account_sessions', { key, body: { account, components } })
  if (r.status !== 200) throw new Error(`account session failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.client_secret as string
}

async function newUser(key: string, account: string, email = `u${Math.random().toString(36).slice(2)}@example.com`) {
  const r = await t.call('POST', '/v1/users', { key, account, body: { email, name: 'Grace User' } })
  if (r.status !== 200) throw new Error(`user create failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.id as string
}

async function userToken(key: string, user: string, ttl_seconds?: number) {
  const r = await t.call('POST', '/v1/user_sessions', { key, body: { user, ...(ttl_seconds === undefined ? {} : { ttl_seconds }) } })
  if (r.status !== 200) throw new Error(`user session failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.client_secret as string
}

const isJwt = (s: unknown) => typeof s === 'string' && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(s)

/** Flip one character of the given JWT segment (0 header, 1 payload, 2 signature). */
function tamper(token: string, segment: number) {
  const parts = token.split('.')
  const s = parts[segment]!
  const i = Math.floor(s.length / 2)
  parts[segment] = s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1)
  return parts.join('.')
}

const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')

describe('account sessions: POST /v1/account_sessions', () => {
  test('response: account, client_secret (JWT), expires_at one hour ahead; components echoed', async () => {
    const a = await t.account()
    const r = await t.call('POST', '/v1/account_sessions', {
      key: a.key,
      body: { account: a.id, components: { call_logs: { enabled: true }, voicemails: { enabled: false } } },
    })
    expect(r.status).toBe(200)
    expect(r.body.object).toBe('account_session')
    expect(r.body.account).toBe(a.id)
    expect(isJwt(r.body.client_secret)).toBe(true)
    expect(Date.parse(r.body.expires_at) - clock.now().getTime()).toBe(HOUR)
    expect(r.body.components.call_logs).toEqual({ enabled: true })
    expect(r.body.components.voicemails).toEqual({ enabled: false })
  })

  test('components: at least one must be enabled (validation_error otherwise)', async () => {
    const a = await t.account()
    for (const components of [{}, { call_logs: { enabled: false } }, { call_logs: { enabled: false }, account_onboarding: { enabled: false } }]) {
      const r = await t.call('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id, components } })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(r.body.details.components).toBeDefined()
    }
    const missing = await t.call('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id } })
    expect(missing.status).toBe(400)
    expect(missing.body.code).toBe('validation_error')
    expect(missing.body.details.components).toBe('is required')
  })

  test('an unknown component name is refused (validation_error naming it)', async () => {
    const a = await t.account()
    const r = await t.call('POST', '/v1/account_sessions', {
      key: a.key,
      body: { account: a.id, components: { call_logs: { enabled: true }, payroll: { enabled: true } } },
    })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details['components.payroll']).toBeDefined()
    const bad = await t.call('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id, components: { call_logs: { enabled: 'yes' } } } })
    expect(bad.status).toBe(400)
    expect(bad.body.details['components.call_logs.enabled']).toBeDefined()
  })

  test('the token works without the Service-Account header: the account comes from the token', async () => {
    const a = await t.account()
    const token = await accountSession(a.key, a.id, { account_onboarding: { enabled: true } })
    const created = await t.call('POST', '/v1/users', { key: token, body: { email: 'onb@example.com' } })
    expect(created.status).toBe(200)
    expect(created.body.account).toBe(a.id)
    const list = await t.call('GET', '/v1/users', { key: token })
    expect(list.status).toBe(200)
    expect(list.body.data.map((u: any) => u.id)).toEqual([created.body.id])
    // Naming its own account in the header is harmless.
    expect((await t.call('GET', '/v1/users', { key: token, account: a.id })).status).toBe(200)
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: token })).status).toBe(200)
  })

  test('limited to the enabled components: a call_logs-only session gets 403 missing_capability on /v1/users', async () => {
    const a = await t.account()
    const token = await accountSession(a.key, a.id, { call_logs: { enabled: true }, account_onboarding: { enabled: false } })
    for (const [method, path, body] of [
      ['GET', '/v1/users', undefined],
      ['POST', '/v1/users', { email: 'x@example.com' }],
      ['GET', '/v1/extensions', undefined],
      ['GET', `/v1/accounts/${a.id}`, undefined],
    ] as const) {
      const r = await t.call(method, path, { key: token, body })
      expect(r.status).toBe(403)
      expect(r.body.code).toBe('missing_capability')
    }
    expect((await t.call('GET', '/v1/users', { key: a.key, account: a.id })).body.data).toHaveLength(0)
  })

  test('a session token cannot create sessions: 403 on /v1/account_sessions and /v1/user_sessions', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const token = await accountSession(a.key, a.id, {
      call_logs: { enabled: true },
      voicemails: { enabled: true },
      account_onboarding: { enabled: true },
      agreement_acceptance: { enabled: true },
    })
    const acct = await t.call('POST', '/v1/account_sessions', { key: token, body: { account: a.id, components: { call_logs: { enabled: true } } } })
    expect(acct.status).toBe(403)
    const usr = await t.call('POST', '/v1/user_sessions', { key: token, body: { user } })
    expect(usr.status).toBe(403)
  })

  test('an account session cannot reach platform-level operations (GET and POST /v1/accounts)', async () => {
    const a = await t.account()
    const token = await accountSession(a.key, a.id, { account_onboarding: { enabled: true }, agreement_acceptance: { enabled: true } })
    expect((await t.call('GET', '/v1/accounts', { key: token })).status).toBe(403)
    expect((await t.call('POST', '/v1/accounts', { key: token, body: sampleAccount() })).status).toBe(403)
    expect((await t.call('DELETE', `/v1/accounts/${a.id}`, { key: token })).status).toBe(403)
    expect((await t.call('POST', `/v1/accounts/${a.id}`, { key: token, body: { name: 'Hijack' } })).status).toBe(403)
    expect((await t.call('GET', '/v1/accounts', { key: a.key })).body.data).toHaveLength(1)
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.name).toBe('Acme Dental')
  })

  test('an account session cannot act on another account (403), even of its own platform', async () => {
    const p = await t.platform()
    const a = await t.account({ key: p.test_key })
    const b = await t.account({ key: p.test_key })
    const token = await accountSession(p.test_key, a.id, { account_onboarding: { enabled: true } })
    const viaHeader = await t.call('GET', '/v1/users', { key: token, account: b.id })
    expect(viaHeader.status).toBe(403)
    expect(viaHeader.body.code).toBe('account_forbidden')
    const write = await t.call('POST', '/v1/users', { key: token, account: b.id, body: { email: 'x@example.com' } })
    expect(write.status).toBe(403)
    const viaPath = await t.call('GET', `/v1/accounts/${b.id}`, { key: token })
    expect(viaPath.status).toBe(403)
    expect(viaPath.body.code).toBe('account_forbidden')
    expect((await t.call('GET', '/v1/users', { key: p.test_key, account: b.id })).body.data).toHaveLength(0)
  })

  test('expires after 1 hour: works at 59:59, 401 session_expired after 3601 s', async () => {
    const a = await t.account()
    const token = await accountSession(a.key, a.id, { account_onboarding: { enabled: true } })
    clock.advance(3599_000)
    expect((await t.call('GET', '/v1/users', { key: token })).status).toBe(200)
    clock.advance(2_000)
    const r = await t.call('GET', '/v1/users', { key: token })
    expect(r.status).toBe(401)
    expect(r.body.code).toBe('session_expired')
    // A fresh session works again.
    const fresh = await accountSession(a.key, a.id, { account_onboarding: { enabled: true } })
    expect((await t.call('GET', '/v1/users', { key: fresh })).status).toBe(200)
  })

  test('a tampered token (header, payload or signature) or one signed with another key: 401', async () => {
    const a = await t.account()
    const b = await t.account()
    const token = await accountSession(a.key, a.id, { call_logs: { enabled: true } })
    for (const bad of [tamper(token, 0), tamper(token, 1), tamper(token, 2), token.slice(0, -2), `${token}.x`]) {
      const r = await t.call('GET', '/v1/users', { key: bad })
      expect(r.status).toBe(401)
    }
    // Raising its own privileges by rewriting the claims keeps the old signature: refused.
    const [h, p, s] = token.split('.')
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString())
    const forged = [h, b64url({ ...claims, cmp: ['account_onboarding'], acct: b.id }), s].join('.')
    expect((await t.call('GET', '/v1/users', { key: forged })).status).toBe(401)
    // alg none, and a token signed with a key that is not the server's.
    const none = [b64url({ alg: 'none', typ: 'JWT' }), b64url({ ...claims, cmp: ['account_onboarding'] }), ''].join('.')
    expect((await t.call('GET', '/v1/users', { key: none })).status).toBe(401)
    const otherKey = await new SignJWT({ ...claims, cmp: ['account_onboarding'] })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(new TextEncoder().encode('not-the-server-key-not-the-server-key'))
    expect((await t.call('GET', '/v1/users', { key: otherKey })).status).toBe(401)
  })

  test('an account id that does not belong to the platform returns 403 (account_forbidden); an absent one 404', async () => {
    const a = await t.account()
    const other = await t.platform()
    const r = await t.call('POST', '/v1/account_sessions', {
      key: other.test_key,
      body: { account: a.id, components: { account_onboarding: { enabled: true } } },
    })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('account_forbidden')
    expect(r.body.client_secret).toBeUndefined()
    const absent = await t.call('POST', '/v1/account_sessions', {
      key: other.test_key,
      body: { account: 'acct_missing', components: { account_onboarding: { enabled: true } } },
    })
    expect(absent.status).toBe(404)
    expect(absent.body.code).toBe('account_not_found')
  })

  test('mode: a live key cannot mint a session for a sandbox account (403 account_mode_mismatch)', async () => {
    const p = await t.platform({ live_enabled: true })
    const a = await t.account({ key: p.test_key })
    const r = await t.call('POST', '/v1/account_sessions', { key: p.live_key, body: { account: a.id, components: { account_onboarding: { enabled: true } } } })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('account_mode_mismatch')
  })

  test('deleting the account ends its sessions (401)', async () => {
    const a = await t.account()
    const token = await accountSession(a.key, a.id, { account_onboarding: { enabled: true } })
    expect((await t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key })).status).toBe(200)
    expect((await t.call('GET', '/v1/users', { key: token })).status).toBe(401)
  })
})

describe('user sessions: POST /v1/user_sessions', () => {
  test('mints a JWT for the user; default lifetime 24 hours', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const r = await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user } })
    expect(r.status).toBe(200)
    expect(r.body.object).toBe('user_session')
    expect(r.body.user).toBe(user)
    expect(r.body.account).toBe(a.id)
    expect(isJwt(r.body.client_secret)).toBe(true)
    expect(Date.parse(r.body.expires_at) - clock.now().getTime()).toBe(DAY)
    const token = r.body.client_secret
    clock.advance(DAY - 1000)
    expect((await t.call('GET', '/v1/me', { key: token })).status).toBe(200)
    clock.advance(2000)
    const expired = await t.call('GET', '/v1/me', { key: token })
    expect(expired.status).toBe(401)
    expect(expired.body.code).toBe('session_expired')
  })

  test('lifetime is the TTL requested at mint time', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const r = await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user, ttl_seconds: 600 } })
    expect(r.status).toBe(200)
    expect(Date.parse(r.body.expires_at) - clock.now().getTime()).toBe(600_000)
    clock.advance(599_000)
    expect((await t.call('GET', '/v1/me', { key: r.body.client_secret })).status).toBe(200)
    clock.advance(2_000)
    expect((await t.call('GET', '/v1/me', { key: r.body.client_secret })).status).toBe(401)
  })

  test('maximum 7 days: 604800 s is accepted and enforced, 604801 is a validation_error', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const tooLong = await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user, ttl_seconds: 604801 } })
    expect(tooLong.status).toBe(400)
    expect(tooLong.body.code).toBe('validation_error')
    expect(tooLong.body.details.ttl_seconds).toBeDefined()
    for (const ttl_seconds of [0, -5, 1.5, '3600']) {
      const r = await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user, ttl_seconds } })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
    }
    const r = await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user, ttl_seconds: 604800 } })
    expect(r.status).toBe(200)
    expect(Date.parse(r.body.expires_at) - clock.now().getTime()).toBe(7 * DAY)
    clock.advance(7 * DAY - 1000)
    expect((await t.call('GET', '/v1/me', { key: r.body.client_secret })).status).toBe(200)
    clock.advance(2000)
    expect((await t.call('GET', '/v1/me', { key: r.body.client_secret })).status).toBe(401)
  })

  test('the user must exist under an account owned by the calling platform (404 user_not_found otherwise)', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const other = await t.platform()
    const foreign = await t.call('POST', '/v1/user_sessions', { key: other.test_key, body: { user } })
    expect(foreign.status).toBe(404)
    expect(foreign.body.code).toBe('user_not_found')
    expect(foreign.body.client_secret).toBeUndefined()
    const absent = await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user: 'usr_missing' } })
    expect(absent.status).toBe(404)
    expect(absent.body.code).toBe('user_not_found')
    const missing = await t.call('POST', '/v1/user_sessions', { key: a.key, body: {} })
    expect(missing.status).toBe(400)
    expect(missing.body.details.user).toBe('is required')
  })

  test('the user may be in any account of the platform in the key’s mode; the other mode’s key gets 404', async () => {
    const p = await t.platform({ live_enabled: true })
    const a = await t.account({ key: p.test_key })
    const b = await t.account({ key: p.test_key })
    const ub = await newUser(p.test_key, b.id)
    const r = await t.call('POST', '/v1/user_sessions', { key: p.test_key, body: { user: ub } })
    expect(r.status).toBe(200)
    expect(r.body.account).toBe(b.id)
    expect(a.id).not.toBe(b.id)
    const live = await t.call('POST', '/v1/user_sessions', { key: p.live_key, body: { user: ub } })
    expect(live.status).toBe(404)
    expect(live.body.code).toBe('user_not_found')
  })

  test('a user token reaches only /v1/me: 403 on /v1/users, /v1/accounts and session creation', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const token = await userToken(a.key, user)
    expect((await t.call('GET', '/v1/me', { key: token })).status).toBe(200)
    for (const [method, path, body] of [
      ['GET', '/v1/users', undefined],
      ['GET', `/v1/users/${user}`, undefined],
      ['POST', '/v1/users', { email: 'y@example.com' }],
      ['GET', '/v1/extensions', undefined],
      ['GET', '/v1/accounts', undefined],
      ['GET', `/v1/accounts/${a.id}`, undefined],
      ['POST', '/v1/accounts', sampleAccount()],
      ['POST', '/v1/user_sessions', { user }],
      ['POST', '/v1/account_sessions', { account: a.id, components: { call_logs: { enabled: true } } }],
    ] as const) {
      const r = await t.call(method, path, { key: token, body })
      expect([method, path, r.status]).toEqual([method, path, 403])
      const withHeader = await t.call(method, path, { key: token, body, account: a.id })
      expect([method, path, withHeader.status]).toEqual([method, path, 403])
    }
  })

  test('revoke_sessions invalidates outstanding user tokens (401); a token minted afterwards works', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const bystander = await newUser(a.key, a.id)
    const t1 = await userToken(a.key, user)
    const t2 = await userToken(a.key, user, 3600)
    const tb = await userToken(a.key, bystander)
    expect((await t.call('GET', '/v1/me', { key: t1 })).status).toBe(200)
    const r = await t.call('POST', `/v1/users/${user}/revoke_sessions`, { key: a.key, account: a.id })
    expect(r.status).toBe(200)
    expect(r.body.object).toBe('user_session_revocation')
    expect(r.body.user).toBe(user)
    expect(Date.parse(r.body.revoked_at)).toBe(clock.now().getTime())
    for (const tok of [t1, t2]) {
      const dead = await t.call('GET', '/v1/me', { key: tok })
      expect(dead.status).toBe(401)
      expect(dead.body.code).toBe('session_expired')
    }
    // Another user's tokens are untouched.
    expect((await t.call('GET', '/v1/me', { key: tb })).status).toBe(200)
    const t3 = await userToken(a.key, user)
    const me = await t.call('GET', '/v1/me', { key: t3 })
    expect(me.status).toBe(200)
    expect(me.body.id).toBe(user)
    // The old ones stay dead.
    expect((await t.call('GET', '/v1/me', { key: t1 })).status).toBe(401)
  })

  test('revoke_sessions on a user of another account or an absent user: 404 user_not_found', async () => {
    const p = await t.platform()
    const a = await t.account({ key: p.test_key })
    const b = await t.account({ key: p.test_key })
    const ub = await newUser(p.test_key, b.id)
    const token = await userToken(p.test_key, ub)
    const r = await t.call('POST', `/v1/users/${ub}/revoke_sessions`, { key: p.test_key, account: a.id })
    expect(r.status).toBe(404)
    expect(r.body.code).toBe('user_not_found')
    expect((await t.call('POST', '/v1/users/usr_missing/revoke_sessions', { key: p.test_key, account: a.id })).status).toBe(404)
    expect((await t.call('GET', '/v1/me', { key: token })).status).toBe(200)
  })

  test('an account session and a user token cannot revoke sessions (403)', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const ut = await userToken(a.key, user)
    const session = await accountSession(a.key, a.id, {
      call_logs: { enabled: true },
      voicemails: { enabled: true },
      account_onboarding: { enabled: true },
      agreement_acceptance: { enabled: true },
    })
    expect((await t.call('POST', `/v1/users/${user}/revoke_sessions`, { key: session })).status).toBe(403)
    expect((await t.call('POST', `/v1/users/${user}/revoke_sessions`, { key: ut })).status).toBe(403)
    expect((await t.call('POST', `/v1/users/${user}/revoke_sessions`, { key: ut, account: a.id })).status).toBe(403)
    expect((await t.call('GET', '/v1/me', { key: ut })).status).toBe(200)
  })

  test('deleting the user invalidates its tokens', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const token = await userToken(a.key, user)
    expect((await t.call('DELETE', `/v1/users/${user}`, { key: a.key, account: a.id })).status).toBe(200)
    const r = await t.call('GET', '/v1/me', { key: token })
    expect(r.status).toBe(401)
    // A new user with the same email is a different person: the old token does not come back.
    const again = await newUser(a.key, a.id)
    expect(again).not.toBe(user)
    expect((await t.call('GET', '/v1/me', { key: token })).status).toBe(401)
  })

  test('a tampered user token is 401; an account-session token is not a user token', async () => {
    const a = await t.account()
    const user = await newUser(a.key, a.id)
    const token = await userToken(a.key, user)
    for (const bad of [tamper(token, 1), tamper(token, 2)]) expect((await t.call('GET', '/v1/me', { key: bad })).status).toBe(401)
    // Rewriting sub to another user of the account keeps the old signature: refused.
    const other = await newUser(a.key, a.id)
    const [h, p, s] = token.split('.')
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString())
    expect((await t.call('GET', '/v1/me', { key: [h, b64url({ ...claims, sub: other }), s].join('.') })).status).toBe(401)
    const session = await accountSession(a.key, a.id, { account_onboarding: { enabled: true } })
    expect((await t.call('GET', '/v1/me', { key: session })).status).toBe(403)
  })
})
