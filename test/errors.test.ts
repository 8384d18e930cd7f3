/**
 * Errors (spec "Errors", "Limits", conventions 3): every non-2xx body is
 * `{error, code?, details?}`, validation failures name the offending fields, and
 * every response carries X-Request-Id.
 */
import { describe, expect, test } from 'bun:test'
import { sampleAccount, startTestService, type Reply } from './support/service'

const t = await startTestService()
const a = await t.account()
const k = { key: a.key, account: a.id }

/** The one error shape: `error` string, optional `code` string, optional `details` object, nothing else. */
function expectErrorBody(r: Reply, status?: number, code?: string) {
  if (status !== undefined) expect(r.status).toBe(status)
  expect(r.status).toBeGreaterThanOrEqual(400)
  expect(r.headers.get('content-type') ?? '').toContain('application/json')
  expect(typeof r.body).toBe('object')
  expect(r.body).not.toBeNull()
  expect(typeof r.body.error).toBe('string')
  for (const key of Object.keys(r.body)) expect(['error', 'code', 'details']).toContain(key)
  if ('code' in r.body) expect(typeof r.body.code).toBe('string')
  if ('details' in r.body) {
    expect(typeof r.body.details).toBe('object')
    expect(Array.isArray(r.body.details)).toBe(false)
  }
  if (code !== undefined) expect(r.body.code).toBe(code)
}

const json = { 'content-type': 'application/json' }

describe('error body shape: {error, code?, details?} on every non-2xx', () => {
  test('401, 403, 404 and 400 answers all carry the one shape', async () => {
    const other = await t.platform()
    expectErrorBody(await t.call('GET', '/v1/users'), 401, 'unauthorized')
    expectErrorBody(await t.call('GET', '/v1/users', { key: 'sk_test_not_a_real_key_at_all' }), 401, 'unauthorized')
    expectErrorBody(await t.call('GET', '/v1/users', { key: other.test_key, account: a.id }), 403, 'account_forbidden')
    expectErrorBody(await t.call('GET', '/v1/users/usr_missing', k), 404, 'user_not_found')
    expectErrorBody(await t.call('GET', '/v1/users', { key: a.key }), 400, 'account_header_required')
    expectErrorBody(await t.call('POST', '/v1/users', { ...k, body: { email: 'nope' } }), 400, 'validation_error')
  })

  test('a 409 conflict carries the shape and its stable code', async () => {
    const first = await t.call('POST', '/v1/users', { ...k, body: { email: 'dup@example.com' } })
    expect(first.status).toBe(200)
    expectErrorBody(await t.call('POST', '/v1/users', { ...k, body: { email: 'DUP@example.com' } }), 409, 'user_email_taken')
  })
})

describe('malformed JSON gives 400 invalid_json', () => {
  for (const raw of ['{', '{"email": "a@b.co",}', "{'email': 'a@b.co'}", '{"email": tru}', 'nul', '[1, 2', '{"a":1}{"b":2}']) {
    test(`body ${JSON.stringify(raw)}`, async () => {
      const r = await t.call('POST', '/v1/users', { ...k, rawBody: raw, headers: json })
      expectErrorBody(r, 400, 'invalid_json')
    })
  }

  test('a JSON body nested far deeper than any request schema is refused as invalid_json, fast', async () => {
    const deep = '['.repeat(20_000) + ']'.repeat(20_000)
    expectErrorBody(await t.call('POST', '/v1/users', { ...k, rawBody: deep, headers: json }), 400, 'invalid_json')
    const deepObject = `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`
    expectErrorBody(await t.call('POST', '/v1/users', { ...k, rawBody: deepObject, headers: json }), 400, 'invalid_json')
  })

  test('a body over 1 MiB gives 413 payload_too_large in the error shape', async () => {
    const big = JSON.stringify({ email: 'big@example.com', name: 'x'.repeat(1_100_000) })
    const r = await t.call('POST', '/v1/users', { ...k, rawBody: big, headers: json })
    expectErrorBody(r, 413, 'payload_too_large')
    expect(r.headers.get('x-request-id')).toBeTruthy()
  })

  test('a JSON body that is not an object is a validation_error on `body`', async () => {
    for (const raw of ['null', '[]', '"text"', '5', 'true']) {
      const r = await t.call('POST', '/v1/users', { ...k, rawBody: raw, headers: json })
      expectErrorBody(r, 400, 'validation_error')
      expect(r.body.details.body).toBeString()
    }
  })
})

describe('validation_error names each offending field in details', () => {
  test('wrong types', async () => {
    const r = await t.call('POST', '/v1/users', { ...k, body: { email: 42, name: ['x'] } })
    expectErrorBody(r, 400, 'validation_error')
    expect(r.body.details.email).toContain('string')
    expect(r.body.details.name).toBeString()
  })

  test('wrong types in a nested object are reported by dotted path (address.city, pricing.per_user_rate)', async () => {
    const p = await t.platform()
    const body = sampleAccount({
      address: { city: 12, state: 'IL', postal_code: '62701' },
      pricing: { per_user_rate: 'free', per_did_rate: 1, per_voiceai_location_rate: 1 },
    })
    const r = await t.call('POST', '/v1/accounts', { key: p.test_key, body })
    expectErrorBody(r, 400, 'validation_error')
    expect(r.body.details['address.city']).toContain('string')
    expect(r.body.details['pricing.per_user_rate']).toContain('integer')
    expect(Object.keys(r.body.details).every((f) => !f.startsWith('/'))).toBe(true)
  })

  test('array items are reported with their index (config.e911_notification.emails[1])', async () => {
    const r = await t.call('POST', `/v1/accounts/${a.id}`, {
      key: a.key,
      body: { config: { e911_notification: { emails: ['ok@example.com', 'not-an-email'] } } },
    })
    expectErrorBody(r, 400, 'validation_error')
    expect(r.body.details['config.e911_notification.emails[1]']).toBeString()
    expect(r.body.details['config.e911_notification.emails[0]']).toBeUndefined()
  })

  test('unknown enum values', async () => {
    const r = await t.call('POST', '/v1/extensions', { ...k, body: { number: '101', target: 'usr_x', status: 'sleeping' } })
    expectErrorBody(r, 400, 'validation_error')
    expect(r.body.details.status).toContain('active')
    const q = await t.call('GET', '/v1/audit-logs?outcome=maybe', k)
    expectErrorBody(q, 400, 'validation_error')
    expect(q.body.details.outcome).toContain('success')
    const e = await t.call('GET', '/v1/users?expand[]=everything', k)
    expectErrorBody(e, 400, 'validation_error')
    expect(Object.keys(e.body.details).some((f) => f.startsWith('expand[]'))).toBe(true)
  })

  test('too-long strings, at the top level and nested', async () => {
    const r = await t.call('POST', '/v1/users', { ...k, body: { email: 'long@example.com', name: 'n'.repeat(201) } })
    expectErrorBody(r, 400, 'validation_error')
    expect(r.body.details.name).toContain('200')
    const p = await t.platform()
    const n = await t.call('POST', '/v1/accounts', {
      key: p.test_key,
      body: sampleAccount({ address: { city: 'c'.repeat(101), state: 'IL', postal_code: '62701' } }),
    })
    expectErrorBody(n, 400, 'validation_error')
    expect(n.body.details['address.city']).toContain('100')
  })

  test('unknown fields, at the top level and nested', async () => {
    const r = await t.call('POST', '/v1/users', { ...k, body: { email: 'u@example.com', nickname: 'x' } })
    expectErrorBody(r, 400, 'validation_error')
    expect(r.body.details.nickname).toBe('is not a known field')
    const p = await t.platform()
    const n = await t.call('POST', '/v1/accounts', {
      key: p.test_key,
      body: sampleAccount({ address: { city: 'X', state: 'IL', postal_code: '1', planet: 'Earth' } }),
    })
    expectErrorBody(n, 400, 'validation_error')
    expect(n.body.details['address.planet']).toBe('is not a known field')
  })

  test('unknown fields named like Object.prototype members (__proto__, constructor) are reported by name', async () => {
    const r = await t.call('POST', '/v1/users', { ...k, rawBody: '{"__proto__":{"admin":true},"constructor":1,"email":"proto@example.com"}', headers: json })
    expectErrorBody(r, 400, 'validation_error')
    expect(Object.keys(r.body.details).sort()).toEqual(['__proto__', 'constructor'])
  })

  test('missing required fields', async () => {
    const r = await t.call('POST', '/v1/users', { ...k, body: {} })
    expectErrorBody(r, 400, 'validation_error')
    expect(r.body.details.email).toBe('is required')
  })

  test('query parameters: out-of-range, non-numeric, unknown and malformed values name the parameter', async () => {
    for (const [qs, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=-3', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=2.5', 'limit'],
      ['colour=red', 'colour'],
      [`search=${'s'.repeat(201)}`, 'search'],
    ] as const) {
      const r = await t.call('GET', `/v1/users?${qs}`, k)
      expectErrorBody(r, 400, 'validation_error')
      expect(Object.keys(r.body.details)).toContain(field)
    }
    const d = await t.call('GET', '/v1/audit-logs?created_after=yesterday', k)
    expectErrorBody(d, 400, 'validation_error')
    expect(d.body.details.created_after).toContain('date-time')
  })

  test('text holding a NUL character is refused as a validation_error (never reaches the database)', async () => {
    const body = await t.call('POST', '/v1/users', { ...k, rawBody: '{"email":"nul@example.com","name":"a\\u0000b"}', headers: json })
    expectErrorBody(body, 400, 'validation_error')
    expect(body.body.details.name).toBeString()
    const query = await t.call('GET', '/v1/users?search=%00', k)
    expectErrorBody(query, 400, 'validation_error')
    expect(query.body.details.search).toBeString()
    const path = await t.call('GET', '/v1/users/usr%00x', k)
    expectErrorBody(path, 400, 'validation_error')
    expect(path.body.details.user_id).toBeString()
  })

  test('Service-Account and Idempotency-Key headers out of bounds are validation errors naming the header', async () => {
    const sa = await t.call('GET', '/v1/users', { key: a.key, account: 'a'.repeat(256) })
    expectErrorBody(sa, 400, 'validation_error')
    expect(sa.body.details['Service-Account']).toBeString()
    const ik = await t.call('POST', '/v1/users', { ...k, body: { email: 'ik@example.com' }, headers: { 'idempotency-key': 'k'.repeat(256) } })
    expectErrorBody(ik, 400, 'validation_error')
    expect(ik.body.details['Idempotency-Key']).toBeString()
  })
})

describe('IDs over 255 characters in paths give 4xx, never 5xx (Limits: resource ID length)', () => {
  const routes = t.service.app.routes.filter((r) => r.path.includes(':'))

  for (const length of [256, 1000, 4000]) {
    test(`${length}-character ids on every route with a path parameter`, async () => {
      expect(routes.length).toBeGreaterThan(5)
      for (const r of routes) {
        const path = r.path.replace(/:[a-z_]+/g, 'i'.repeat(length))
        const headers = r.path.startsWith('/admin') ? { authorization: 'Bearer test-admin-token-0123456789' } : undefined
        const reply = await t.call(r.method, path, { ...(headers ? { headers: { ...headers, ...json } } : k), ...(r.method === 'GET' ? {} : { body: {} }) })
        expect(reply.status, `${r.method} ${r.path}`).toBeGreaterThanOrEqual(400)
        expect(reply.status, `${r.method} ${r.path}`).toBeLessThan(500)
        expectErrorBody(reply)
      }
    })
  }

  test('an id of exactly 255 characters is a well-formed id (not found, not a validation error)', async () => {
    const r = await t.call('GET', `/v1/users/${'u'.repeat(255)}`, k)
    expectErrorBody(r, 404, 'user_not_found')
    const over = await t.call('GET', `/v1/users/${'u'.repeat(256)}`, k)
    expectErrorBody(over, 400, 'validation_error')
    expect(over.body.details.user_id).toContain('255')
  })

  test('unicode and percent-encoded ids are handled as opaque text', async () => {
    for (const id of ['%F0%9F%98%80', '%C3%A9'.repeat(200), 'a%2Fb', '%ZZ', '..%2F..%2Fetc']) {
      const r = await t.call('GET', `/v1/users/${id}`, k)
      expect(r.status).toBeGreaterThanOrEqual(400)
      expect(r.status).toBeLessThan(500)
      expectErrorBody(r)
    }
  })
})

describe('unknown routes', () => {
  test('an unknown path gives 404 not_found JSON; a known path with a method it lacks gives 405', async () => {
    expectErrorBody(await t.call('GET', '/v1/nothing-here', k), 404, 'not_found')
    expectErrorBody(await t.call('GET', '/v2/users', k), 404, 'not_found')
    expectErrorBody(await t.call('GET', '/nothing-here'), 404, 'not_found')
    expectErrorBody(await t.call('PATCH', '/v1/users', k), 405, 'method_not_allowed')
    expectErrorBody(await t.call('PUT', '/v1/users', { ...k, body: {} }), 405, 'method_not_allowed')
    expectErrorBody(await t.call('DELETE', '/v1/users', k), 405, 'method_not_allowed')
  })

  test('HEAD on a GET route passes the same authentication as GET', async () => {
    const anonymous = await fetch(`${t.baseUrl}/v1/users`, { method: 'HEAD' })
    expect(anonymous.status).toBe(401)
    const signedIn = await fetch(`${t.baseUrl}/v1/users`, { method: 'HEAD', headers: { authorization: `Bearer ${a.key}`, 'service-account': a.id } })
    expect(signedIn.status).toBe(200)
  })
})

describe('X-Request-Id on every response', () => {
  test('success, client errors, unknown routes and operator routes all carry a distinct request id', async () => {
    const replies = [
      await t.call('GET', '/v1/users', k),
      await t.call('POST', '/v1/users', { ...k, body: { email: 'rid@example.com' } }),
      await t.call('GET', '/v1/users'),
      await t.call('GET', '/v1/users/usr_missing', k),
      await t.call('POST', '/v1/users', { ...k, rawBody: '{', headers: json }),
      await t.call('GET', '/v1/nowhere'),
      await t.call('GET', '/healthz'),
      await t.call('GET', '/readyz'),
      await t.call('GET', '/v1/openapi.json'),
    ]
    const ids = replies.map((r) => r.headers.get('x-request-id'))
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-z]+$/)
    expect(new Set(ids).size).toBe(ids.length)
  })
})

describe('bodies are JSON only', () => {
  test('a form or multipart body is refused with 415 unsupported_media_type and nothing is created', async () => {
    const a = await t.account()
    const form = await t.call('POST', '/v1/users', {
      key: a.key,
      account: a.id,
      rawBody: 'email=form%40example.com',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(form.status).toBe(415)
    expect(form.body.code).toBe('unsupported_media_type')
    const text = await t.call('POST', '/v1/users', {
      key: a.key,
      account: a.id,
      rawBody: '{"email":"t@example.com"}',
      headers: { 'content-type': 'text/plain' },
    })
    expect(text.status).toBe(415)
    const list = await t.call('GET', '/v1/users', { key: a.key, account: a.id })
    expect(list.body.data).toHaveLength(0)
  })

  test('application/json with a charset parameter is JSON', async () => {
    const a = await t.account()
    const r = await t.call('POST', '/v1/users', {
      key: a.key,
      account: a.id,
      rawBody: '{"email":"cs@example.com"}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    })
    expect(r.status).toBe(200)
  })
})

describe('a known path with the wrong method, and a credential sent without Bearer', () => {
  test('PATCH on a resource answers 405 naming the methods it has (updates are POST), changing nothing', async () => {
    const created = await t.call<any>('POST', '/v1/users', { ...k, body: { email: 'patch-me@example.com', name: 'Pat' } })
    expect(created.status).toBe(200)
    const r = await t.call('PATCH', `/v1/users/${created.body.id}`, { ...k, body: { name: 'Changed' } })
    expectErrorBody(r, 405, 'method_not_allowed')
    expect(r.body.error).toContain('updates are POST')
    expect(r.headers.get('allow')).toBe('DELETE, GET, POST')
    const after = await t.call<any>('GET', `/v1/users/${created.body.id}`, k)
    expect(after.body.name).toBe('Pat')
    // A path no route has stays a 404.
    expectErrorBody(await t.call('PATCH', '/v1/no-such-things/x', k), 404, 'not_found')
  })

  test('Authorization without the Bearer word says what is expected and never echoes the secret', async () => {
    for (const [header, expected] of [
      [a.key, 'Authorization must be Bearer <key or token>'],
      [`Basic ${btoa(`${a.key}:`)}`, 'uses the Basic scheme'],
      ['Bearer', 'needs exactly one key or token'],
    ] as const) {
      const r = await t.call('GET', '/v1/users', { headers: { authorization: header, 'service-account': a.id } })
      expectErrorBody(r, 401, 'unauthorized')
      expect(r.body.error).toContain(expected)
      expect(r.body.error).not.toContain(a.key)
    }
  })
})
