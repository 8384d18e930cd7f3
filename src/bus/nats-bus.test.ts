/**
 * The NATS bus keeps each cluster's messages to itself (NATS_URL; skipped without):
 * two deployments on one NATS server, or two test databases, hear nothing of each
 * other's, while the processes of one cluster hear each other.
 */
import { describe, expect, test } from 'bun:test'
import { connect } from 'nats'
import { createLogger } from '../logger'
import type { Bus } from './bus'
import { clusterSubject, natsBus } from './nats-bus'

const NATS_URL = process.env.NATS_URL

if (!NATS_URL) test.skip('the NATS bus is namespaced by cluster (skipped: NATS_URL is not set)', () => {})

/** What `bus` hears on `subject` until the other side has spoken (a round trip through the server). */
function heard(bus: Bus, subject: string): string[] {
  const got: string[] = []
  bus.subscribe(subject, (data) => got.push(data))
  return got
}

describe.skipIf(!NATS_URL)('the NATS bus is namespaced by cluster', () => {
  test('a message reaches the processes of its own cluster only, on the cluster’s own subject', async () => {
    const log = createLogger('silent')
    const run = Date.now().toString(36)
    const [a1, a2, b] = await Promise.all([
      natsBus(NATS_URL!, log, { cluster: `a${run}` }),
      natsBus(NATS_URL!, log, { cluster: `a${run}` }),
      natsBus(NATS_URL!, log, { cluster: `b${run}` }),
    ])
    const raw = await connect({ servers: NATS_URL!, reconnect: false })
    try {
      const subject = 'voice.media.sip_auth_answer'
      const onA2 = heard(a2, subject)
      const onB = heard(b, subject)
      const onWire: string[] = []
      raw.subscribe(clusterSubject(`a${run}`, subject), { callback: (_e, m) => onWire.push(m.string()) })
      await raw.flush()
      // The buses' subscriptions go out on their connections' next write.
      await Bun.sleep(200)
      a1.publish(subject, 'from a')
      for (let i = 0; i < 50 && (onA2.length === 0 || onWire.length === 0); i++) await Bun.sleep(20)
      // b's subscription was made before a1 published: a message for it would have come in the same time.
      await Bun.sleep(100)
      expect(onA2).toEqual(['from a'])
      expect(onWire).toEqual(['from a'])
      expect(onB).toEqual([])
      expect(clusterSubject(`a${run}`, subject)).toBe(`voice.a${run}.bus.media.sip_auth_answer`)
    } finally {
      await raw.close()
      await Promise.all([a1.close(), a2.close(), b.close()])
    }
  })
})
