/**
 * Issue 13, "Loose ends": rate-limit buckets were kept by each gateway process, so
 * with N gateways a platform got N times its rate. In distributed mode the gateways
 * share what each credential spent over the bus (gateway/plugins/rate-limit.ts).
 *
 * The limiters here are the gateway's own, on a real in-process bus with a clock that
 * stands still (no refill), so what one gateway lets through is exactly what the
 * other no longer may. The end-to-end case needs NATS and runs when NATS_URL is set.
 */
import { describe, expect, test } from 'bun:test'
import { createRateLimiter, RATE_LIMIT_SUBJECT, SPEND_FLUSH_MS, spendChannelOver } from '../gateway/plugins/rate-limit'
import { inProcessBus } from '../src/bus/bus'
import { natsBus } from '../src/bus/nats-bus'
import { createLogger } from '../src/logger'
import { ApiError } from '../src/errors'
import { startTestService } from './support/service'

const BURST = 5

function gateways() {
  const bus = inProcessBus()
  const still = () => 1_000
  const make = () => createRateLimiter({ perSecond: 1, burst: BURST, now: still, share: spendChannelOver(bus) })
  /** Resolves once `n` more spend messages crossed the bus, and every gateway has read them. */
  const crossed = (n: number) =>
    new Promise<void>((resolve) => {
      let seen = 0
      const off = bus.subscribe(RATE_LIMIT_SUBJECT, () => {
        if (++seen < n) return
        off()
        // The gateways subscribed first, so their handlers ran before this one; one more turn for good measure.
        queueMicrotask(resolve)
      })
    })
  return { a: make(), b: make(), crossed, close: () => bus.close() }
}

const refused = (take: () => void) => {
  try {
    take()
    return false
  } catch (e) {
    if (e instanceof ApiError && e.status === 429) return true
    throw e
  }
}

describe('rate-limit buckets shared between gateways', () => {
  test("a credential's burst spent on one gateway is spent on the other too", async () => {
    const g = gateways()
    const message = g.crossed(1)
    for (let i = 0; i < BURST; i++) g.a('key_1')
    expect(refused(() => g.a('key_1'))).toBe(true)
    await message
    expect(refused(() => g.b('key_1'))).toBe(true)
    // Only that credential: another one keeps its whole burst on the other gateway.
    for (let i = 0; i < BURST; i++) expect(refused(() => g.b('key_2'))).toBe(false)
    g.a.close()
    g.b.close()
    await g.close()
  })

  test('spending on both gateways adds up to one burst, not two', async () => {
    const g = gateways()
    const messages = g.crossed(2)
    for (let i = 0; i < 3; i++) g.a('key_3')
    for (let i = 0; i < 2; i++) g.b('key_3')
    await messages
    expect(refused(() => g.a('key_3'))).toBe(true)
    expect(refused(() => g.b('key_3'))).toBe(true)
    g.a.close()
    g.b.close()
    await g.close()
  })

  test('a closed limiter publishes nothing more, spends pending or not', async () => {
    // The server closes it when it stops: a flush timer outliving the NATS
    // connection threw CONNECTION_CLOSED into whatever ran next.
    const bus = inProcessBus()
    let published = 0
    bus.subscribe(RATE_LIMIT_SUBJECT, () => published++)
    const limiter = createRateLimiter({ perSecond: 1, burst: BURST, now: () => 0, share: spendChannelOver(bus) })
    limiter('sk_test_pending')
    limiter.close()
    await Bun.sleep(SPEND_FLUSH_MS * 3)
    expect(published).toBe(0)
    await bus.close()
  })

  test('a gateway without a channel (embedded mode) keeps its own buckets', () => {
    const solo = createRateLimiter({ perSecond: 1, burst: BURST, now: () => 0 })
    for (let i = 0; i < BURST; i++) expect(refused(() => solo('key_4'))).toBe(false)
    expect(refused(() => solo('key_4'))).toBe(true)
    solo.close()
  })
})

describe.skipIf(!process.env.NATS_URL)('two gateways on one NATS (needs NATS_URL)', () => {
  test('a key that used its burst on one gateway is limited at once on the other', async () => {
    const limits = { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '10' }
    const one = await startTestService(limits)
    const two = await startTestService(limits)
    const p = await one.platform()
    let spent = 0
    while (spent < 20 && (await one.call('GET', '/v1/accounts', { key: p.test_key })).status === 200) spent++
    expect(spent).toBeGreaterThanOrEqual(10)
    // Past the flush interval, the other gateway knows: without sharing it would let 10 more through.
    await Bun.sleep(500)
    let passed = 0
    while (passed < 12 && (await two.call('GET', '/v1/accounts', { key: p.test_key })).status === 200) passed++
    expect(passed).toBeLessThan(5)
  }, 60_000)

  test('publishing on a closed NATS bus drops the message and throws nothing', async () => {
    const bus = await natsBus(process.env.NATS_URL!, createLogger('silent'), { cluster: 'closed-bus' })
    await bus.close()
    expect(() => bus.publish(RATE_LIMIT_SUBJECT, '{}')).not.toThrow()
  })
})
