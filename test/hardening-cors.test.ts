/**
 * Issue 13, "Strictness": CORS. Browser components and softphones authenticate with
 * account-session and user tokens: preflights are answered, and those tokens are
 * allowed from the origins their platform configured (POST /admin/platforms[/{id}]
 * `allowed_origins`); never secret keys, and never another platform's origins.
 * Plain fetch here: a browser's requests, not the API client's.
 */
import { describe, expect, test } from 'bun:test'
import { until } from './support/polling'
import { ADMIN_TOKEN, startTestService } from './support/service'

const t = await startTestService()
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

const APP = 'https://app.dental.example'
const OTHER_APP = 'https://salon.example:8443'

async function platformWith(origins: string[]) {
  const r = await t.call<any>('POST', '/admin/platforms', { headers: admin, body: { name: 'CORS', allowed_origins: origins } })
  expect(r.status).toBe(200)
  const account = await t.account({ key: r.body.test_key })
  const session = await t.call<any>('POST', '/v1/account_sessions', {
    key: r.body.test_key,
    body: { account: account.id, components: { call_logs: { enabled: true } } },
  })
  const user = await t.call<any>('POST', '/v1/users', { key: r.body.test_key, account: account.id, body: { email: 'cors@example.com', name: 'Cors User' } })
  const userToken = await t.call<any>('POST', '/v1/user_sessions', { key: r.body.test_key, body: { user: user.body.id } })
  return {
    id: r.body.id as string,
    key: r.body.test_key as string,
    account: account.id,
    session: session.body.client_secret as string,
    user: userToken.body.client_secret as string,
  }
}

const dental = await platformWith([APP])
const salon = await platformWith([`${OTHER_APP}/`])

const preflight = (path: string, origin: string) =>
  fetch(`${t.baseUrl}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization, service-account' },
  })
const get = (path: string, origin: string | undefined, token: string, account?: string) =>
  fetch(`${t.baseUrl}${path}`, {
    headers: { authorization: `Bearer ${token}`, ...(origin ? { origin } : {}), ...(account ? { 'service-account': account } : {}) },
  })

describe('preflight', () => {
  test('an origin a platform allows gets the methods and the headers the API reads', async () => {
    const r = await preflight('/v1/calls', APP)
    expect(r.status).toBe(204)
    expect(r.headers.get('access-control-allow-origin')).toBe(APP)
    expect(r.headers.get('access-control-allow-methods')).toContain('POST')
    const headers = r.headers.get('access-control-allow-headers')!.toLowerCase()
    for (const h of ['authorization', 'content-type', 'service-account', 'idempotency-key']) expect(headers).toContain(h)
    expect(r.headers.get('vary')).toContain('Origin')
    // Stored canonical: "https://salon.example:8443/" was given with a slash.
    expect((await preflight('/v1/me', OTHER_APP)).headers.get('access-control-allow-origin')).toBe(OTHER_APP)
  })

  test('an OPTIONS that is not a preflight is answered as before: 405, the methods the path answers', async () => {
    for (const origin of [undefined, APP]) {
      const r = await fetch(`${t.baseUrl}/v1/users`, { method: 'OPTIONS', headers: origin ? { origin } : {} })
      expect({ origin, status: r.status, code: ((await r.json()) as { code?: string }).code }).toEqual({ origin, status: 405, code: 'method_not_allowed' })
    }
  })

  test('an origin nobody allows gets no allow headers', async () => {
    for (const origin of ['https://evil.example', 'null', 'https://app.dental.example.evil.example', 'http://app.dental.example']) {
      const r = await preflight('/v1/calls', origin)
      expect({ origin, allow: r.headers.get('access-control-allow-origin') }).toEqual({ origin, allow: null })
    }
  })
})

describe('requests from a browser', () => {
  test("account sessions and user tokens are allowed from their platform's origins, with the headers a page may read", async () => {
    const calls = await get('/v1/calls', APP, dental.session)
    expect(calls.status).toBe(200)
    expect(calls.headers.get('access-control-allow-origin')).toBe(APP)
    expect(calls.headers.get('access-control-expose-headers')).toContain('X-Request-Id')
    expect(calls.headers.get('vary')).toContain('Origin')
    const me = await get('/v1/me', APP, dental.user)
    expect(me.status).toBe(200)
    expect(me.headers.get('access-control-allow-origin')).toBe(APP)
    // A write answers with the headers too (its answer is built apart from reads').
    const onboarding = await t.call<any>('POST', '/v1/account_sessions', {
      key: dental.key,
      body: { account: dental.account, components: { account_onboarding: { enabled: true } } },
    })
    const created = await fetch(`${t.baseUrl}/v1/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${onboarding.body.client_secret}`, origin: APP, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'browser@example.com', name: 'From The Browser' }),
    })
    expect(created.status).toBe(200)
    expect(created.headers.get('access-control-allow-origin')).toBe(APP)
    // An error of an admitted caller is readable too.
    const missing = await get('/v1/calls/call_nothing_here', APP, dental.session)
    expect(missing.status).toBe(404)
    expect(missing.headers.get('access-control-allow-origin')).toBe(APP)
  })

  test("another platform's origin is refused, even one some platform allows", async () => {
    const r = await get('/v1/calls', OTHER_APP, dental.session)
    expect(r.status).toBe(403)
    expect(r.headers.get('access-control-allow-origin')).toBeNull()
    expect((await get('/v1/me', APP, salon.user)).status).toBe(403)
  })

  test('a secret key is never allowed from a browser, whatever the origin', async () => {
    for (const origin of [APP, 'https://evil.example']) {
      const r = await get('/v1/users', origin, dental.key, dental.account)
      expect({ origin, status: r.status, allow: r.headers.get('access-control-allow-origin') }).toEqual({ origin, status: 403, allow: null })
    }
    // Without an Origin (a server) or from the service's own origin (the /docs page) it works as always.
    expect((await get('/v1/users', undefined, dental.key, dental.account)).status).toBe(200)
    expect((await get('/v1/users', t.baseUrl, dental.key, dental.account)).status).toBe(200)
  })

  test('a 401 is readable from an allowed origin, so that a page knows to renew its token', async () => {
    const r = await get('/v1/calls', APP, `${dental.session.slice(0, -4)}AAAA`)
    expect(r.status).toBe(401)
    expect(r.headers.get('access-control-allow-origin')).toBe(APP)
    expect((await get('/v1/calls', 'https://evil.example', 'nonsense')).headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe('configuring origins', () => {
  test('POST /admin/platforms/{id} replaces the list; gateways follow within seconds', async () => {
    const later = 'https://later.example'
    expect((await get('/v1/calls', later, dental.session)).status).toBe(403)
    const r = await t.call<any>('POST', `/admin/platforms/${dental.id}`, { headers: admin, body: { allowed_origins: [APP, later] } })
    expect(r.status).toBe(200)
    await until('the new origin to be allowed', async () => (await get('/v1/calls', later, dental.session)).status === 200, 20_000)
  }, 30_000)

  test('an origin that is not scheme://host[:port] is 400 naming allowed_origins', async () => {
    for (const bad of ['*', 'app.example.com', 'https://app.example.com/path', 'ftp://app.example.com', 'https://user@app.example.com', 'null']) {
      const r = await t.call<any>('POST', `/admin/platforms/${dental.id}`, { headers: admin, body: { allowed_origins: [bad] } })
      expect({ bad, status: r.status, field: Object.keys(r.body.details ?? {}) }).toEqual({ bad, status: 400, field: ['allowed_origins'] })
    }
  })
})
