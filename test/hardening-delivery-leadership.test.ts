/**
 * Issue 13, "Loose ends": webhook delivery leadership. The delivering process held a
 * PostgreSQL advisory lock on a connection of its own; when that connection dropped,
 * the lock went with it, unnoticed, and a standby took it: two deliverers. Now the
 * holder watches that its backend still holds the lock (src/db/client.ts), and the
 * engine stops delivering when it does not, waits to lead again, and a new leader
 * waits a moment before it delivers (src/events/delivery/engine.ts).
 *
 * First the engine on its own (any database): a lease that is lost stops delivery
 * until the next lead. Then, on PostgreSQL only, two real service processes and the
 * leader's backend terminated in the middle of a delivery.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { manualClock } from '../src/clock'
import { loadConfig } from '../src/config'
import { createDeliveryEngine, type DeliveryLease, TAKEOVER_GRACE_MS } from '../src/events/delivery/engine'
import { deferred, fakeTransport, insertEndpoint, insertEvent, insertPlatform, openTestDatabase, recordingLogger } from '../src/events/delivery/test-fixtures'
import { until } from './support/polling'
import { scratchPostgres } from './support/scratch-postgres'
import { startServiceProcess, type ServiceProcess } from './support/service-process'
import { startWebhookReceiver } from './support/webhook-receiver'

const sentIds = (sent: { body: string }[]) => new Set(sent.map((r) => JSON.parse(r.body).id as string))

describe('the delivery engine and a lost lead', () => {
  test('a lost lease stops delivery: what commits meanwhile waits for the next lead, which delivers it', async () => {
    const t = await openTestDatabase('leadership')
    const clock = manualClock()
    const transport = fakeTransport()
    const { log, lines } = recordingLogger()
    const leases: { lost: ReturnType<typeof deferred<void>>; granted: ReturnType<typeof deferred<DeliveryLease>> }[] = []
    const engine = createDeliveryEngine({
      db: t.database.db,
      clock,
      config: loadConfig({ WEBHOOK_RETRY_INTERVAL_S: '60', WEBHOOK_TIMEOUT_S: '5' }),
      log,
      transport,
      mail: { send: async () => {} },
      leadership: () => {
        const lease = { lost: deferred(), granted: deferred<DeliveryLease>() }
        leases.push(lease)
        return lease.granted.promise
      },
    })
    try {
      const platformId = await insertPlatform(t.database, clock)
      await insertEndpoint(t.database, clock, { platformId })
      const lease = (i: number): DeliveryLease => ({ lost: leases[i]!.lost.promise, release: async () => {} })

      await engine.start()
      await until('the engine to ask for the lead', () => leases.length === 1)
      leases[0]!.granted.resolve(lease(0))
      const first = await insertEvent(t.database, clock, { platformId, accountId: 'acct_a' })
      engine.wake()
      await until('the first event delivered', () => sentIds(transport.sent).has(first.id), 10_000 + TAKEOVER_GRACE_MS)

      // The lock goes with its connection: the engine must stop and ask again.
      leases[0]!.lost.resolve()
      await until('the engine to ask for the lead again', () => leases.length === 2, 10_000)
      expect(lines.some((l) => l.msg.includes('lost the delivery lock'))).toBe(true)
      const second = await insertEvent(t.database, clock, { platformId, accountId: 'acct_a' })
      engine.wake()
      // Waiting for the lead, it delivers nothing (another process may be delivering now).
      await new Promise((r) => setTimeout(r, 200))
      expect(sentIds(transport.sent).has(second.id)).toBe(false)

      leases[1]!.granted.resolve(lease(1))
      engine.wake()
      await until('the second event delivered after the next lead', () => sentIds(transport.sent).has(second.id), 10_000 + TAKEOVER_GRACE_MS)
    } finally {
      await engine.stop()
      await t.dispose()
    }
  }, 40_000)
})

const ADMIN = 'leadership-admin-token-0123456789'

describe.skipIf(!process.env.DATABASE_URL)('two delivering processes on PostgreSQL (needs DATABASE_URL)', () => {
  const running: ServiceProcess[] = []
  const cleanups: (() => Promise<unknown>)[] = []
  afterAll(async () => {
    for (const p of running) await p.kill()
    for (const c of cleanups.reverse()) await c().catch(() => {})
  }, 60_000)

  test("terminating the leader's backend mid-delivery: it notices and stops, the standby delivers, every event arrives", async () => {
    const pg = await scratchPostgres('leadership')
    cleanups.push(() => pg.dispose())
    const admin = postgres(pg.url!, { max: 1, onnotice: () => {} })
    cleanups.push(() => admin.end())
    const rx = await startWebhookReceiver({ autoStop: false })
    cleanups.push(() => rx.stop())
    // Slow answers: the termination lands while an attempt is under way.
    rx.respond(async () => {
      await Bun.sleep(300)
      return 200
    })
    const settings = { ...pg.env, DATA_DIR: 'memory://', VOICE_ADMIN_TOKEN: ADMIN, WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' }
    const first = await startServiceProcess(settings)
    running.push(first)
    const second = await startServiceProcess(settings)
    running.push(second)

    const platform = await first.call('POST', '/admin/platforms', { headers: { authorization: `Bearer ${ADMIN}` }, body: { name: 'Leadership' } })
    const key = platform.body.test_key as string
    const account = await first.call('POST', '/v1/accounts', {
      key,
      body: {
        email: 'owner@example.com',
        primary_contact_name: 'Ada Owner',
        name: 'Lead',
        address: { address_number: '100', street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
        pricing: { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 },
      },
    })
    expect((await first.call('POST', '/v1/webhook_endpoints', { key, account: account.body.id, body: { url: rx.url } })).status).toBe(200)
    const fire = async (via: ServiceProcess) => {
      const r = await via.call('POST', '/v1/test_helpers/events', { key, account: account.body.id, body: { event: 'user.created' } })
      expect(r.status).toBe(200)
      return r.body.id as string
    }
    const holders = async () =>
      (
        await admin<{ pid: number }[]>`select l.pid from pg_locks l join pg_stat_activity a on a.pid = l.pid
          where l.locktype = 'advisory' and l.granted and a.datname = current_database()`
      ).map((r) => r.pid)

    const before: string[] = []
    for (let i = 0; i < 3; i++) before.push(await fire(first))
    await until('one process to hold the delivery lock', async () => (await holders()).length === 1, 30_000)
    await rx.waitFor(1, { timeoutMs: 30_000 })
    const [leader] = await holders()
    const leaderLog = async () => [first, second].find((p) => p.log.text.includes('lost the delivery lock'))
    await admin`select pg_terminate_backend(${leader!})`

    await until('the old leader to notice it lost the lock', async () => (await leaderLog()) !== undefined, 30_000)
    const after: string[] = []
    for (let i = 0; i < 5; i++) after.push(await fire(second))
    const arrived = async () => new Set(rx.requests.map((r) => r.body?.id as string))
    await until(
      'every event to arrive (at least once)',
      async () => {
        const got = await arrived()
        return [...before, ...after].every((id) => got.has(id))
      },
      60_000,
    )
    for (const id of [...before, ...after]) expect((await arrived()).has(id)).toBe(true)
    // One deliverer again: a single backend holds the lock.
    await until('one holder of the lock', async () => (await holders()).length === 1, 30_000)
  }, 180_000)
})
