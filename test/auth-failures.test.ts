/**
 * Failed authentication is limited per client address (issue: 400 invalid keys,
 * 400 wrong operator tokens and 300 forged download links were all answered without
 * a 429). One count per address covers API keys, session tokens, operator tokens and
 * download links; an address over its count is refused before its credential is
 * checked, so a right guess is no different from a wrong one until it waits.
 */
import { describe, expect, test } from 'bun:test'
import { AUTH_FAILURE_BURST } from '../gateway/plugins/rate-limit'
import { ADMIN_TOKEN, type Reply, startTestService } from './support/service'

// Two services: the count is per address, and every request here comes from 127.0.0.1.
// The suite's services turn rate limiting off (RATE_LIMIT_PER_SECOND=0); these turn it on.
const limited = { RATE_LIMIT_PER_SECOND: '1000', RATE_LIMIT_BURST: '1000' }
const first = await startTestService(limited)
const second = await startTestService(limited)

/**
 * Uses up the address's failures with `fail`, then sends `probe` at once and returns its
 * answer. A failure comes back each second, so a probe that a loaded machine sends a
 * second or more after the 429 may rightly get through: then the count is used up again
 * and the probe sent again (bounded).
 */
async function rightAfterTheCountRunsOut(fail: () => Promise<number>, probe: () => Promise<Reply>): Promise<Reply> {
  for (let attempt = 0; ; attempt++) {
    for (let i = 0; i < AUTH_FAILURE_BURST + 50 && (await fail()) !== 429; i++);
    const at = performance.now()
    const r = await probe()
    if (performance.now() - at < 900 || attempt === 4) return r
  }
}

describe('failed authentications per client address', () => {
  test('bad API keys get 401 up to the burst, then 429 with Retry-After, even for a good key', async () => {
    const t = first
    const a = await t.account()
    // A token comes back each second, so on a slow machine a few more guesses may get through: bounded.
    const statuses: number[] = []
    for (let i = 0; i < AUTH_FAILURE_BURST + 50 && statuses.at(-1) !== 429; i++)
      statuses.push((await t.call('GET', '/v1/users', { key: `sk_test_guess_${i}_${'x'.repeat(24)}`, account: a.id })).status)
    expect(statuses.slice(0, AUTH_FAILURE_BURST).every((s) => s === 401)).toBe(true)
    expect(statuses.at(-1)).toBe(429)
    const guess = async () => (await t.call('GET', '/v1/users', { key: `sk_test_one_more_guess_${'x'.repeat(20)}`, account: a.id })).status
    const over = await rightAfterTheCountRunsOut(guess, () => t.call('GET', '/v1/users', { key: 'sk_test_one_more_guess_xxxxxxxxxxxxxxxxxxx', account: a.id }))
    expect(over.status).toBe(429)
    expect(over.body.code).toBe('rate_limited')
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    // The right key from the same address waits too: otherwise a guesser could tell a hit from a miss.
    expect((await rightAfterTheCountRunsOut(guess, () => t.call('GET', '/v1/users', { key: a.key, account: a.id }))).status).toBe(429)
    // Routes without credentials are not affected.
    expect((await t.call('GET', '/healthz')).status).toBe(200)
  }, 60_000)

  test('wrong operator tokens and forged download links share the count', async () => {
    const t = second
    const half = Math.floor(AUTH_FAILURE_BURST / 2)
    for (let i = 0; i < half; i++) {
      const r = await t.call('POST', '/admin/platforms', { headers: { authorization: `Bearer wrong-${i}` }, body: { name: 'x' } })
      expect(r.status).toBe(401)
    }
    const statuses: number[] = []
    for (let i = 0; i < AUTH_FAILURE_BURST + 50 && statuses.at(-1) !== 429; i++) statuses.push((await t.call('GET', `/downloads/forged-${i}`)).status)
    expect(statuses.slice(0, AUTH_FAILURE_BURST - half).every((s) => s === 404)).toBe(true)
    expect(statuses.at(-1)).toBe(429)
    const forged = async () => (await t.call('GET', '/downloads/forged-again')).status
    const admin = await rightAfterTheCountRunsOut(forged, () =>
      t.call('POST', '/admin/platforms', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { name: 'x' } }),
    )
    expect(admin.status).toBe(429)
  }, 60_000)
})
