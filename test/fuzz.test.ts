/**
 * Robustness (spec "Errors"): whatever a client sends to whichever route, the
 * service answers with a status below 500, every non-2xx answer is the error body
 * `{error: string, ...}`, and every answer carries X-Request-Id.
 *
 * fast-check generates bad bodies (random JSON, wrong types, huge strings, deep
 * nesting, invalid UTF-8, non-JSON), query strings (limit, page, expand[] and
 * random keys), path ids (long, unicode, percent-encoded) and headers
 * (Authorization, Service-Account, Idempotency-Key, Content-Type) and throws them at
 * every route of the app, signed in and not. Runs are bounded (FUZZ_RUNS, default
 * 300 in all) so that the file stays well under a minute; FUZZ_SEED replays a run.
 */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { ADMIN_TOKEN, sampleAccount, startTestService } from './support/service'

const t = await startTestService()
const a = await t.account()
const user = (await t.call('POST', '/v1/users', { key: a.key, account: a.id, body: { email: 'fuzz-target@example.com', name: 'Fuzz Target' } })).body
const userSession = (await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user: user.id } })).body.client_secret as string
const accountSession = (
  await t.call('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id, components: { account_onboarding: { enabled: true } } } })
).body.client_secret as string
const extension = (await t.call('POST', '/v1/extensions', { key: a.key, account: a.id, body: { number: '101', target: user.id } })).body
const locationId = a.account.main_location as string

const RUNS = Number(process.env.FUZZ_RUNS ?? 300)
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)

const routes = t.service.app.routes.map((r) => ({ method: r.method, path: r.path }))

/** Request bodies that pass validation, to be bent one field at a time so the handlers run too. */
const validBodies: Record<string, Record<string, unknown>> = {
  'POST /v1/accounts': sampleAccount(),
  'POST /v1/accounts/:account_id': { name: 'Renamed', config: { timezone: 'America/Chicago' } },
  'POST /v1/accounts/:account_id/pricing': { per_user_rate: 1, per_did_rate: 2, per_voiceai_location_rate: 3 },
  'POST /v1/accounts/:account_id/tos': { version: '2025-01-01' },
  'POST /v1/account_sessions': { account: a.id, components: { account_onboarding: { enabled: true } } },
  'POST /v1/user_sessions': { user: user.id, ttl_seconds: 3600 },
  'POST /v1/users': { email: 'someone@example.com', name: 'Someone' },
  'POST /v1/users/:user_id': { name: 'Fuzz Target' },
  'POST /v1/extensions': { number: '102', target: user.id },
  'POST /v1/extensions/:number': { status: 'active' },
  'POST /v1/locations': { name: 'Branch', address: sampleAccount().address },
  'POST /v1/locations/:location_id': { name: 'Main' },
  'POST /v1/webhook_endpoints': { url: 'https://hooks.example.com/voice', enabled_events: ['*'] },
  'POST /v1/webhook_endpoints/:webhook_endpoint': { status: 'disabled' },
  'POST /v1/test_helpers/events': { event: 'fax.received' },
  'POST /v1/test_helpers/calls': { user: user.id, direction: 'outbound', to_number: '+15005550102', scenario: { outcome: 'busy', ring_seconds: 1 } },
  'POST /v1/phone-number-orders': { phone_numbers: ['+15005559990'] },
  'POST /v1/calls/:call_id': { action: 'hold' },
  'POST /v1/calls/:call_id/listeners': { user: user.id, mode: 'whisper' },
  'POST /admin/platforms': { name: 'Fuzzed platform' },
  'POST /admin/platforms/:id': { name: 'Fuzzed platform' },
}

/** Real ids for each path parameter, so that some requests reach existing rows. */
const realIds: Record<string, string[]> = {
  account_id: [a.id],
  user_id: [user.id],
  number: [extension.number ?? '101'],
  location_id: [locationId],
  admin_user: [user.id],
  id: [],
  version: ['2025-01-01'],
}

// ---- text ----------------------------------------------------------------------

/** Characters a header value may carry (visible ASCII and Latin-1). */
const headerChar = fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff })).map((c) => String.fromCharCode(c))
const headerText = (maxLength = 80) => fc.string({ unit: headerChar, maxLength })
const anyText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }), // lone surrogates included
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff',
    '😀',
    'é',
    '%',
    '%00',
    '../..',
    '<script>',
    "' OR 1=1 --",
    '\\',
    '"',
    'null',
    '0',
    '-1',
    '1e309',
    'NaN',
  ),
  fc.integer({ min: 100, max: 3000 }).map((n) => 'x'.repeat(n)),
)

const percentBytes = fc
  .uint8Array({ minLength: 1, maxLength: 40 })
  .map((bytes) => [...bytes].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join(''))
const safeEncode = (s: string) => {
  try {
    return encodeURIComponent(s)
  } catch {
    return encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '?'))
  }
}

// ---- path ids --------------------------------------------------------------------

const pathId = (param: string) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...(realIds[param]?.length ? realIds[param]! : ['x'])) },
    { weight: 3, arbitrary: anyText.map(safeEncode) },
    { weight: 2, arbitrary: percentBytes },
    { weight: 1, arbitrary: fc.constantFrom('%00', '%ZZ', '%', '%2F', '%C0%AF', '%ED%A0%80', '%FF%FE', '.', '..', '%2E%2E', 'usr_%00', 'acct_') },
    { weight: 1, arbitrary: fc.integer({ min: 250, max: 4000 }).map((n) => 'i'.repeat(n)) },
    { weight: 1, arbitrary: fc.integer({ min: 50, max: 400 }).map((n) => '%C3%A9'.repeat(n)) },
  )

// ---- query strings -----------------------------------------------------------------

const queryKey = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'limit',
      'page',
      'expand[]',
      'search',
      'event',
      'resource',
      'actor',
      'outcome',
      'ip_address',
      'request_id',
      'created_after',
      'created_before',
      'target',
      'status',
      'for_device',
    ),
  },
  { weight: 1, arbitrary: anyText },
)
const queryValue = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '0',
      '1',
      '10',
      '100',
      '101',
      '-1',
      '1.5',
      '1e2',
      '1e999',
      'abc',
      '',
      'true',
      'extensions',
      'pricing',
      'success',
      'failure',
      '2026-01-01T00:00:00Z',
      'not-a-date',
      '9999-99-99T99:99:99Z',
    ),
  },
  { weight: 2, arbitrary: anyText },
  {
    weight: 1,
    arbitrary: fc
      .string({ unit: headerChar, minLength: 10, maxLength: 300 })
      .map((s) => `${Buffer.from(s).toString('base64url')}.${Buffer.from(s.slice(0, 16)).toString('base64url')}`),
  },
)
const query = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 6,
    arbitrary: fc.array(fc.tuple(queryKey, queryValue), { maxLength: 6 }).map((pairs) => {
      const qs = pairs.map(([k, v]) => `${safeEncode(k)}=${safeEncode(v)}`).join('&')
      return qs ? `?${qs}` : ''
    }),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '?',
      '?&&',
      '?limit',
      '?limit=',
      '?page',
      '?expand[]',
      '?expand[]=extensions&expand[]=extensions&expand[]=extensions',
      '?a=%ZZ',
      '?%',
      '?limit=5&limit=6',
      '?expand=extensions',
      '?page=a.b',
      '?page=..',
    ),
  },
  { weight: 1, arbitrary: percentBytes.map((p) => `?${p}=${p}`) },
)

// ---- headers -------------------------------------------------------------------

const authorization = (adminRoute: boolean) =>
  fc.oneof(
    { weight: 14, arbitrary: fc.constant(adminRoute ? `Bearer ${ADMIN_TOKEN}` : `Bearer ${a.key}`) },
    { weight: 2, arbitrary: fc.constant(undefined) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        `Bearer ${accountSession}`,
        `Bearer ${userSession}`,
        `bearer ${a.key}  `,
        `Bearer ${a.key} extra`,
        'Bearer',
        'Bearer ',
        'Basic dXNlcjpwYXNz',
      ),
    },
    { weight: 1, arbitrary: headerText(200).map((s) => `Bearer ${s}`) },
    { weight: 1, arbitrary: headerText(100).map((s) => `Bearer sk_test_${s}`) },
    { weight: 1, arbitrary: fc.integer({ min: 250, max: 5000 }).map((n) => `Bearer sk_live_${'k'.repeat(n)}`) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.jsonValue(), fc.jsonValue(), headerText(40))
        .map(
          ([h, p, s]) =>
            `Bearer ${Buffer.from(JSON.stringify(h) ?? '').toString('base64url')}.${Buffer.from(JSON.stringify(p) ?? '').toString('base64url')}.${Buffer.from(s).toString('base64url')}`,
        ),
    },
    { weight: 1, arbitrary: headerText(120) },
  )

const serviceAccount = fc.oneof(
  { weight: 8, arbitrary: fc.constant<string | undefined>(a.id) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: headerText(60) },
  { weight: 1, arbitrary: fc.constantFrom('', 'acct_missing', user.id, 'a'.repeat(256), 'a'.repeat(3000)) },
)

const idempotencyKey = fc.oneof(
  { weight: 6, arbitrary: fc.constant<string | undefined>(undefined) },
  { weight: 2, arbitrary: headerText(60) },
  { weight: 1, arbitrary: fc.constantFrom('', 'same-key', 'k'.repeat(255), 'k'.repeat(256), 'k'.repeat(4000)) },
)

const contentType = fc.oneof(
  { weight: 10, arbitrary: fc.constant<string | undefined>('application/json') },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'APPLICATION/JSON',
      'application/json;',
      'text/plain',
      'text/html',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      'multipart/form-data; boundary=xyz',
      'application/octet-stream',
      'application/vnd.api+json',
      ';',
      'garbage',
    ),
  },
  { weight: 1, arbitrary: headerText(60) },
)

// ---- bodies ----------------------------------------------------------------------

type Body = string | Uint8Array | undefined

const deep = fc
  .integer({ min: 30, max: 5000 })
  .chain((n) =>
    fc.constantFrom(
      '['.repeat(n) + ']'.repeat(n),
      `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`,
      `{"email":"d@example.com","name":${'['.repeat(n)}${']'.repeat(n)}}`,
    ),
  )

/** A body that passes validation, with one text field replaced by other text (it may still pass, and reach the database). */
const textBody = (template: Record<string, unknown> | undefined) =>
  fc
    .tuple(
      fc.constantFrom(...Object.keys(template ?? { name: 1 }).filter((k) => typeof template?.[k] === 'string'), 'name'),
      fc.oneof(anyText, fc.emailAddress(), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 })),
    )
    .map(([field, value]) => JSON.stringify({ ...(template ?? {}), [field]: value }))

/** A body that passes validation, with one field replaced by something else. */
const bentBody = (template: Record<string, unknown> | undefined) =>
  fc
    .tuple(fc.constantFrom(...Object.keys(template ?? { email: 1 }), 'name', 'extra', 'address', 'config'), fc.oneof(fc.jsonValue({ maxDepth: 3 }), anyText))
    .map(([field, value]) => {
      return JSON.stringify({ ...(template ?? {}), [field]: value })
    })

const body = (template: Record<string, unknown> | undefined): fc.Arbitrary<Body> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 5, arbitrary: fc.constant(template ? JSON.stringify(template) : '{}') },
    { weight: 6, arbitrary: bentBody(template) },
    { weight: 6, arbitrary: textBody(template) },
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: fc.json({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.dictionary(anyText, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: deep },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 1_000, max: 300_000 }).map((n) => JSON.stringify({ email: `${'x'.repeat(n)}@example.com`, name: 'y'.repeat(n) })),
    },
    { weight: 1, arbitrary: fc.constant(JSON.stringify({ email: 'big@example.com', name: 'z'.repeat(1_100_000) })) },
    { weight: 2, arbitrary: fc.string({ maxLength: 200 }) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 300 }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '{',
        '}',
        '{"email":',
        '{"email":"\\ud800@example.com"}',
        '{"name":"\\u0000","email":"n@example.com"}',
        '{"email":"a@example.com","name":"\\udfff\\ud800"}',
        '{"__proto__":{"admin":true},"email":"p@example.com"}',
        '{"constructor":{"prototype":{"x":1}},"email":"c@example.com"}',
        '{"email":"e@example.com","email":"f@example.com"}',
        '{"limit":1e999}',
        '{"per_user_rate":123456789012345678901234567890,"per_did_rate":-0,"per_voiceai_location_rate":1.0}',
        '\ufeff{"email":"bom@example.com"}',
        'null',
        '[]',
        '""',
        'true',
        '-0',
      ),
    },
  )

// ---- requests ----------------------------------------------------------------------

interface Attempt {
  method: string
  path: string
  headers: Record<string, string>
  body: Body
}

const attempt = fc
  .constantFrom(...routes)
  .chain((route) => {
    const params = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]!)
    const admin = route.path.startsWith('/admin')
    return fc.record({
      route: fc.constant(route),
      method: fc.oneof(
        { weight: 12, arbitrary: fc.constant(route.method) },
        { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD') },
      ),
      ids: fc.tuple(...params.map((p) => pathId(p))),
      query: query,
      authorization: authorization(admin),
      serviceAccount: serviceAccount,
      idempotencyKey: idempotencyKey,
      contentType: contentType,
      body: body(validBodies[`${route.method} ${route.path}`]),
    })
  })
  .map((g): Attempt => {
    let i = 0
    const path = g.route.path.replace(/:([a-z_]+)/g, () => g.ids[i++] as string)
    const headers: Record<string, string> = {}
    if (g.authorization !== undefined) headers.authorization = g.authorization
    if (g.serviceAccount !== undefined) headers['service-account'] = g.serviceAccount
    if (g.idempotencyKey !== undefined) headers['idempotency-key'] = g.idempotencyKey
    const sendsBody = g.method !== 'GET' && g.method !== 'HEAD' && g.body !== undefined
    if (sendsBody && g.contentType !== undefined) headers['content-type'] = g.contentType
    return { method: g.method, path: path + g.query, headers, body: sendsBody ? g.body : undefined }
  })
  // Never delete the account the other runs work in.
  .filter((x) => !(x.method === 'DELETE' && x.path.startsWith(`/v1/accounts/${a.id}`)))

const describeAttempt = (x: Attempt) => {
  const b = x.body === undefined ? '' : typeof x.body === 'string' ? x.body.slice(0, 200) : `<${x.body.length} bytes>`
  return `${x.method} ${x.path.slice(0, 300)} ${JSON.stringify(x.headers).slice(0, 400)} ${b}`
}

async function send(x: Attempt) {
  const res = await fetch(t.baseUrl + x.path, { method: x.method, headers: x.headers, body: x.body })
  // An open event stream (GET /v1/events) never ends by itself: its headers are the answer.
  if (res.ok && res.headers.get('content-type')?.startsWith('text/event-stream')) {
    await res.body?.cancel()
    return { status: res.status, text: '', headers: res.headers }
  }
  const text = await res.text()
  return { status: res.status, text, headers: res.headers }
}

function check(x: Attempt, r: { status: number; text: string; headers: Headers }) {
  const what = `${describeAttempt(x)} => ${r.status} ${r.text.slice(0, 300)}`
  expect(r.status, what).toBeLessThan(500)
  expect(r.headers.get('x-request-id'), what).toMatch(/^req_/)
  if (r.status >= 300 && x.method !== 'HEAD') {
    let parsed: unknown
    try {
      parsed = JSON.parse(r.text)
    } catch {
      throw new Error(`non-JSON error body: ${what}`)
    }
    expect(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed), what).toBe(true)
    expect(typeof (parsed as { error?: unknown }).error, what).toBe('string')
    const code = (parsed as { code?: unknown }).code
    if (code !== undefined) expect(typeof code, what).toBe('string')
  }
}

test('every route, every kind of bad input: no 5xx, every error is {error: string, ...}, every answer has X-Request-Id', async () => {
  expect(routes.length).toBeGreaterThan(20)
  await fc.assert(
    fc.asyncProperty(attempt, async (x) => {
      check(x, await send(x))
    }),
    { numRuns: Math.round(RUNS * 0.85), seed: SEED, endOnFailure: true },
  )
}, 120_000)

test('garbage methods and paths anywhere: no 5xx, errors in the error shape', async () => {
  const segment = fc.oneof(fc.constantFrom('v1', 'admin', 'users', 'accounts', 'audit-logs', 'me', '', '..', '%00'), anyText.map(safeEncode), percentBytes)
  const garbage = fc.record({
    method: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'OPTIONS'),
    segments: fc.array(segment, { minLength: 1, maxLength: 6 }),
    query: query,
    authorization: authorization(false),
    serviceAccount: serviceAccount,
    body: body(undefined),
  })
  await fc.assert(
    fc.asyncProperty(garbage, async (g) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (g.authorization !== undefined) headers.authorization = g.authorization
      if (g.serviceAccount !== undefined) headers['service-account'] = g.serviceAccount
      const x: Attempt = { method: g.method, path: `/${g.segments.join('/')}${g.query}`, headers, body: g.method === 'GET' ? undefined : g.body }
      check(x, await send(x))
    }),
    { numRuns: Math.round(RUNS * 0.15), seed: SEED, endOnFailure: true },
  )
}, 120_000)

test('the service is still healthy and consistent after the fuzzing', async () => {
  expect((await t.call('GET', '/readyz')).status).toBe(200)
  const r = await t.call('GET', '/v1/users?limit=100', { key: a.key, account: a.id })
  expect(r.status).toBe(200)
  expect(r.body.object).toBe('list')
})
