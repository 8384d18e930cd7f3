/**
 * Authentication over HTTP: the platform secret keys (mode), the Authorization
 * header, and the Service-Account header on account-scoped routes.
 */
import { describe, expect, test } from 'bun:test'
import { sampleAccount, startTestService } from './support/service'

const t = await startTestService()

/** A platform with live mode on, holding one sandbox and one live account. */
async function bothModes() {
  const p = await t.platform({ live_enabled: true })
  const sandbox = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount() })
  const live = await t.call('POST', '/v1/accounts', { key: p.live_key, body: sampleAccount() })
  expect(sandbox.status).toBe(200)
  expect(live.status).toBe(200)
  expect(sandbox.body.livemode).toBe(false)
  expect(live.body.livemode).toBe(true)
  return { p, sandbox: sandbox.body.id as string, live: live.body.id as string }
}

const expectError = (r: { status: number; body: any }, status: number, code?: string) => {
  expect(r.status).toBe(status)
  expect(typeof r.body.error).toBe('string')
  if (code !== undefined) expect(r.body.code).toBe(code)
}

describe('mode: a sandbox secret key (sk_test_) works on sandbox accounts only, a live key (sk_live_) on live accounts', () => {
  test('sk_test_ key reaches its sandbox account (account header and account path)', async () => {
    const { p, sandbox } = await bothModes()
    expect(p.test_key.startsWith('sk_test_')).toBe(true)
    expect((await t.call('GET', '/v1/users', { key: p.test_key, account: sandbox })).status).toBe(200)
    expect((await t.call('GET', `/v1/accounts/${sandbox}`, { key: p.test_key })).status).toBe(200)
  })

  test('sk_live_ key reaches its live account (account header and account path)', async () => {
    const { p, live } = await bothModes()
    expect(p.live_key.startsWith('sk_live_')).toBe(true)
    expect((await t.call('GET', '/v1/users', { key: p.live_key, account: live })).status).toBe(200)
    expect((await t.call('GET', `/v1/accounts/${live}`, { key: p.live_key })).status).toBe(200)
  })

  test('sk_test_ key on a live account: 403 account_mode_mismatch', async () => {
    const { p, live } = await bothModes()
    expectError(await t.call('GET', '/v1/users', { key: p.test_key, account: live }), 403, 'account_mode_mismatch')
    expectError(await t.call('POST', '/v1/users', { key: p.test_key, account: live, body: { email: 'a@example.com' } }), 403, 'account_mode_mismatch')
    expectError(await t.call('GET', `/v1/accounts/${live}`, { key: p.test_key }), 403, 'account_mode_mismatch')
    // Nothing was written by the refused create.
    const users = await t.call('GET', '/v1/users', { key: p.live_key, account: live })
    expect(users.body.data).toHaveLength(0)
  })

  test('sk_live_ key on a sandbox account: 403 account_mode_mismatch', async () => {
    const { p, sandbox } = await bothModes()
    expectError(await t.call('GET', '/v1/users', { key: p.live_key, account: sandbox }), 403, 'account_mode_mismatch')
    expectError(await t.call('GET', '/v1/extensions', { key: p.live_key, account: sandbox }), 403, 'account_mode_mismatch')
    expectError(await t.call('GET', `/v1/accounts/${sandbox}`, { key: p.live_key }), 403, 'account_mode_mismatch')
  })

  test('listing accounts shows only the accounts of the key’s mode', async () => {
    const { p, sandbox, live } = await bothModes()
    const test_ = await t.call('GET', '/v1/accounts', { key: p.test_key })
    const live_ = await t.call('GET', '/v1/accounts', { key: p.live_key })
    expect(test_.body.data.map((a: any) => a.id)).toEqual([sandbox])
    expect(live_.body.data.map((a: any) => a.id)).toEqual([live])
  })
})

describe('a missing or invalid key returns 401', () => {
  test('no Authorization header: 401 with an error body', async () => {
    const r = await t.call('GET', '/v1/accounts')
    expectError(r, 401, 'unauthorized')
    const a = await t.account()
    expectError(await t.call('GET', '/v1/users', { account: a.id }), 401, 'unauthorized')
  })

  test('Authorization that is not a Bearer credential: 401', async () => {
    const a = await t.account()
    for (const value of [a.key, `Basic ${a.key}`, 'Bearer', 'Bearer ', `Bearer ${a.key} extra`]) {
      const r = await t.call('GET', '/v1/accounts', { headers: { authorization: value } })
      expectError(r, 401)
    }
  })

  test('unknown sk_test_ / sk_live_ keys, an over-long key and a random token: 401', async () => {
    const a = await t.account()
    for (const key of ['sk_test_nope', 'sk_live_nope', `${a.key}x`, `sk_test_${'a'.repeat(300)}`, 'not-a-key-or-token', 'a.b.c']) {
      expectError(await t.call('GET', '/v1/accounts', { key }), 401)
      expectError(await t.call('GET', '/v1/users', { key, account: a.id }), 401)
    }
  })

  test('a key of a platform is not valid for the bootstrap operator API, and the admin token is not an API key', async () => {
    const p = await t.platform()
    expect((await t.call('POST', '/admin/platforms', { key: p.test_key, body: { name: 'x' } })).status).toBe(401)
    expect((await t.call('GET', '/v1/accounts', { key: 'test-admin-token-0123456789' })).status).toBe(401)
  })
})

describe('an account id given for a platform key that does not belong to the platform returns 403', () => {
  test('Service-Account of an account of another platform: 403 account_forbidden, nothing created there', async () => {
    const a = await t.account()
    const other = await t.platform()
    expectError(await t.call('GET', '/v1/users', { key: other.test_key, account: a.id }), 403, 'account_forbidden')
    expectError(await t.call('POST', '/v1/users', { key: other.test_key, account: a.id, body: { email: 'x@example.com' } }), 403, 'account_forbidden')
    expectError(await t.call('GET', '/v1/extensions', { key: other.test_key, account: a.id }), 403, 'account_forbidden')
    expectError(await t.call('GET', `/v1/accounts/${a.id}`, { key: other.test_key }), 403, 'account_forbidden')
    expect((await t.call('GET', '/v1/users', { key: a.key, account: a.id })).body.data).toHaveLength(0)
  })

  test('Service-Account naming no account at all: 403 account_forbidden (no existence oracle)', async () => {
    const p = await t.platform()
    expectError(await t.call('GET', '/v1/users', { key: p.test_key, account: 'acct_doesnotexist' }), 403, 'account_forbidden')
  })
})

describe('account header on account-scoped operations', () => {
  test('missing Service-Account with a secret key: 400 account_header_required', async () => {
    const a = await t.account()
    expectError(await t.call('GET', '/v1/users', { key: a.key }), 400, 'account_header_required')
    expectError(await t.call('POST', '/v1/users', { key: a.key, body: { email: 'x@example.com' } }), 400, 'account_header_required')
    expectError(await t.call('GET', '/v1/extensions', { key: a.key }), 400, 'account_header_required')
  })

  test('resource IDs are at most 255 characters: a Service-Account header over 255 chars is a validation_error', async () => {
    const a = await t.account()
    const r = await t.call('GET', '/v1/users', { key: a.key, account: 'a'.repeat(256) })
    expectError(r, 400, 'validation_error')
    expect(r.body.details['Service-Account']).toBeDefined()
    // 255 characters is a well-formed ID: it just names no account of this platform.
    expectError(await t.call('GET', '/v1/users', { key: a.key, account: 'a'.repeat(255) }), 403, 'account_forbidden')
  })

  test('platform-level operations take no account header: the key alone lists accounts', async () => {
    const a = await t.account()
    const r = await t.call('GET', '/v1/accounts', { key: a.key })
    expect(r.status).toBe(200)
    expect(r.body.data.map((x: any) => x.id)).toEqual([a.id])
  })

  test('a secret key cannot call user-token routes (/v1/me): 403', async () => {
    const a = await t.account()
    expectError(await t.call('GET', '/v1/me', { key: a.key }), 403)
    expectError(await t.call('GET', '/v1/me', { key: a.key, account: a.id }), 403)
  })
})
