/**
 * Rate limits (spec "Errors": 429 with Retry-After): each credential has its own
 * token bucket. With 1 request per second and a burst of 3, a fourth rapid request
 * is refused until the bucket refills.
 */
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { auditLogs } from '../src/db/schema'
import { startTestService, type Reply } from './support/service'

const t = await startTestService({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '3' })

/** Three rapid requests drain the burst; returns the first refused one of the next few. */
async function drain(send: () => Promise<Reply>) {
  for (let i = 0; i < 3; i++) expect((await send()).status).toBe(200)
  // The fourth is refused unless a whole second has passed on a very slow machine;
  // then the one after is.
  for (let i = 0; i < 5; i++) {
    const r = await send()
    if (r.status === 429) return { refused: r, at: 4 + i }
  }
  throw new Error('no request was rate limited')
}

function expectRateLimited(r: Reply) {
  expect(r.status).toBe(429)
  expect(r.body.code).toBe('rate_limited')
  expect(typeof r.body.error).toBe('string')
  expect(Object.keys(r.body).every((k) => ['error', 'code', 'details'].includes(k))).toBe(true)
  const retryAfter = r.headers.get('retry-after')
  expect(retryAfter).toMatch(/^\d+$/)
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1)
  expect(r.headers.get('x-request-id')).toMatch(/^req_/)
}

describe('429 rate_limited with Retry-After', () => {
  test('the 4th rapid request of a credential gets 429 rate_limited with an integer Retry-After of at least 1 s', async () => {
    const p = await t.platform() // operator API: not counted against the key
    const { refused, at } = await drain(() => t.call('GET', '/v1/accounts', { key: p.test_key }))
    expectRateLimited(refused)
    expect(at).toBeLessThanOrEqual(5)
    // Still refused while the bucket is empty.
    expectRateLimited(await t.call('GET', '/v1/accounts', { key: p.test_key }))
  })

  test('mutations are limited too, and the refusal is written to the audit log as a failure', async () => {
    const p = await t.platform()
    const { refused } = await drain(() => t.call('GET', '/v1/accounts', { key: p.test_key }))
    expectRateLimited(refused)
    const post = await t.call('POST', '/v1/accounts', { key: p.test_key, body: {} })
    expectRateLimited(post)
    const rows = await t.service.database.db
      .select()
      .from(auditLogs)
      .where(eq(auditLogs.requestId, post.headers.get('x-request-id')!))
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ event: 'createAccount', outcome: 'failure', statusCode: 429, credential: 'secret_key' })
  })
})

describe('limits are per credential', () => {
  test("another platform's key still works while one key is limited", async () => {
    const p1 = await t.platform()
    const p2 = await t.platform()
    const { refused } = await drain(() => t.call('GET', '/v1/accounts', { key: p1.test_key }))
    expectRateLimited(refused)
    const other = await t.call('GET', '/v1/accounts', { key: p2.test_key })
    expect(other.status).toBe(200)
    expect(other.body.object).toBe('list')
  })

  test('the live key of the same platform is its own credential', async () => {
    const p = await t.platform()
    const { refused } = await drain(() => t.call('GET', '/v1/accounts', { key: p.test_key }))
    expectRateLimited(refused)
    expect((await t.call('GET', '/v1/accounts', { key: p.live_key })).status).toBe(200)
  })

  test('unauthenticated requests are refused with 401, not counted against anyone', async () => {
    for (let i = 0; i < 6; i++) expect((await t.call('GET', '/v1/accounts', { key: 'sk_test_unknown_key_000000000000' })).status).toBe(401)
    const p = await t.platform()
    expect((await t.call('GET', '/v1/accounts', { key: p.test_key })).status).toBe(200)
  })

  test('operator routes (health, readiness) are not limited', async () => {
    for (let i = 0; i < 6; i++) expect((await t.call('GET', '/healthz')).status).toBe(200)
  })
})

describe('account sessions are counted against the platform that minted them', () => {
  test('minting more sessions does not multiply the rate: the sessions of one platform share one bucket', async () => {
    const a = await t.account()
    // The sessions are minted with the platform key (3 requests: its burst); then each session makes one request.
    const mint = async () => {
      for (let i = 0; i < 5; i++) {
        const r = await t.call('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id, components: { call_logs: { enabled: true } } } })
        if (r.status === 200) return r.body.client_secret as string
        await Bun.sleep(1100) // the key's own bucket refills one a second
      }
      throw new Error('could not mint a session')
    }
    const sessions: string[] = []
    for (let i = 0; i < 6; i++) sessions.push(await mint())
    const statuses: number[] = []
    for (const s of sessions) statuses.push((await t.call('GET', '/v1/calls', { key: s })).status)
    // Each session alone would be within its burst of 3; together they are not.
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200])
    expect(statuses).toContain(429)
  }, 30_000)
})
