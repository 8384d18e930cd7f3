/**
 * No committed event is lost by a crash: the real server process (`bun
 * src/main.ts`) delivers to a slow receiver, is killed with SIGKILL in the middle
 * of delivering, and is started again on the same data. Every event whose create
 * request was answered arrives at least once, and per account the first arrivals
 * keep commit order.
 *
 * Data: a PGlite folder on disk (one process at a time may open it); with
 * DATABASE_URL, a fresh database on that server, created here and dropped after
 * (the restarted process takes its delivery lock once the killed one's
 * connection is gone).
 */
import { afterAll, expect, test } from 'bun:test'
import { startWebhookReceiver } from './support/webhook-receiver'
import { scratchPostgres } from './support/scratch-postgres'
import { startServiceProcess, type ServiceProcess } from './support/service-process'
import { until } from './support/polling'
import { freshDataDir } from './support/data-dir'
import { callApi } from './support/service'

const ADMIN = 'crash-test-admin-token-0123456789'
const ACCOUNTS = 3
const PER_ACCOUNT = 100
const N = ACCOUNTS * PER_ACCOUNT

type Running = ServiceProcess
const processes = new Set<Running>()

async function startServer(storeEnv: Record<string, string>): Promise<Running> {
  const r = await startServiceProcess({
    ...storeEnv,
    VOICE_ADMIN_TOKEN: ADMIN,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
    // Fast retries should anything fail; a timeout (50 s real) no slow answer here reaches.
    VOICE_CLOCK_SPEED: '200',
    WEBHOOK_RETRY_INTERVAL_S: '60',
    WEBHOOK_TIMEOUT_S: '10000',
    ...(process.env.NATS_URL ? { NATS_URL: process.env.NATS_URL } : {}),
  })
  processes.add(r)
  return r
}

function call(r: Running, method: string, path: string, o: { key?: string; account?: string; body?: unknown; admin?: boolean } = {}) {
  return callApi(r.url, method, path, { key: o.admin ? ADMIN : o.key, account: o.account, body: o.body })
}

async function freshStore(): Promise<{ env: Record<string, string>; dispose(): Promise<void> }> {
  const pg = await scratchPostgres('crash')
  if (pg.url) return { env: { ...pg.env, DATA_DIR: 'memory://' }, dispose: pg.dispose }
  const { dataDir, dispose } = freshDataDir('crash')
  return { env: { DATA_DIR: dataDir }, dispose }
}

const stores: { dispose(): Promise<void> }[] = []

afterAll(async () => {
  for (const r of processes) {
    if (r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill('SIGKILL')
    await r.proc.exited
  }
  for (const s of stores) await s.dispose().catch(() => {})
}, 30_000)

test(`kill -9 in the middle of delivering ${N} events, restart on the same data: every committed event arrives`, async () => {
  const store = await freshStore()
  stores.push(store)
  const rx = await startWebhookReceiver()
  // Held until every event is committed, then slow (so that the first process dies with
  // most still to send and some under way), quick after the restart. The service's
  // timeout (50 s real) is far beyond any of this.
  let openGate!: () => void
  const gate = new Promise<void>((resolve) => (openGate = resolve))
  let delayMs = 40
  rx.respond(async () => {
    await gate
    await Bun.sleep(delayMs)
    return 200
  })

  const first = await startServer(store.env)
  const p = await call(first, 'POST', '/admin/platforms', { admin: true, body: { name: 'Crash platform' } })
  expect(p.status).toBe(200)
  const key = p.body.test_key as string
  const accounts: string[] = []
  for (let i = 0; i < ACCOUNTS; i++) {
    const a = await call(first, 'POST', '/v1/accounts', {
      key,
      body: {
        email: 'owner@example.com',
        primary_contact_name: 'Ada Owner',
        name: `Crash ${i}`,
        address: { address_number: '100', street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
        pricing: { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 },
      },
    })
    expect(a.status).toBe(200)
    accounts.push(a.body.id)
  }
  const ep = await call(first, 'POST', '/v1/webhook_endpoints', { key, body: { url: rx.url } })
  expect(ep.status).toBe(200)

  // Commit the events: each account's one after another (commit order = creation order), accounts side by side.
  const committed = new Map<string, string[]>()
  await Promise.all(
    accounts.map(async (acct) => {
      const ids: string[] = []
      committed.set(acct, ids)
      for (let i = 0; i < PER_ACCOUNT; i++) {
        const r = await call(first, 'POST', '/v1/test_helpers/events', { key, account: acct, body: { event: i % 2 ? 'fax.delivered' : 'user.created' } })
        expect(r.status).toBe(200)
        ids.push(r.body.id)
      }
    }),
  )
  const all = [...committed.values()].flat()
  expect(new Set(all).size).toBe(N)

  // Some have arrived, not all: kill it mid-delivery.
  openGate()
  const distinct = () => new Set(rx.requests.map((r) => r.body?.id)).size
  await until('the first deliveries', () => distinct() >= 30, 20_000)
  first.proc.kill('SIGKILL')
  await first.proc.exited
  const arrivedBefore = distinct()
  expect(arrivedBefore).toBeGreaterThan(0)
  expect(arrivedBefore).toBeLessThan(N)

  // Same data, new process: it resumes where the rows say.
  delayMs = 2
  const second = await startServer(store.env)
  await until(
    `all ${N} events (had ${arrivedBefore} before the kill)`,
    () => {
      const got = new Set(rx.requests.map((r) => r.body?.id))
      return all.every((id) => got.has(id))
    },
    45_000,
  )
  const received = rx.requests.map((r) => r.body?.id as string)
  const missing = all.filter((id) => !received.includes(id))
  expect(missing).toEqual([])
  // Nothing that was not committed, and per account the first arrivals in commit order.
  const firsts: { id: string; account: string }[] = []
  const seen = new Set<string>()
  for (const r of rx.requests) {
    if (seen.has(r.body.id)) continue
    seen.add(r.body.id)
    firsts.push({ id: r.body.id, account: r.headers['x-service-account-id']! })
  }
  expect(firsts.length).toBe(N)
  for (const acct of accounts) expect(firsts.filter((f) => f.account === acct).map((f) => f.id)).toEqual(committed.get(acct)!)
  // The service still answers on the same data.
  const again = await call(second, 'GET', `/v1/webhook_endpoints/${ep.body.id}`, { key })
  expect(again.status).toBe(200)
  expect(again.body.healthy).toBe(true)
}, 120_000)

// With PostgreSQL several processes may have the delivery role: one delivers (it holds
// the database's 'webhook-delivery' lock), the others stand by and take over when it dies.
test.skipIf(!process.env.DATABASE_URL)(
  'PostgreSQL: a standby takes over from a killed deliverer, and a standby stops cleanly',
  async () => {
    const store = await freshStore()
    stores.push(store)
    const rx = await startWebhookReceiver()
    let openGate!: () => void
    const gate = new Promise<void>((resolve) => (openGate = resolve))
    rx.respond(async () => {
      await gate
      await Bun.sleep(20)
      return 200
    })
    const leader = await startServer(store.env)
    const standby = await startServer(store.env)

    const p = await call(standby, 'POST', '/admin/platforms', { admin: true, body: { name: 'Failover platform' } })
    expect(p.status).toBe(200)
    const key = p.body.test_key as string
    const a = await call(standby, 'POST', '/v1/accounts', {
      key,
      body: {
        email: 'owner@example.com',
        primary_contact_name: 'Ada Owner',
        name: 'Failover',
        address: { address_number: '100', street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
        pricing: { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 },
      },
    })
    expect(a.status).toBe(200)
    expect((await call(standby, 'POST', '/v1/webhook_endpoints', { key, body: { url: rx.url } })).status).toBe(200)
    // Committed through the standby's gateway; delivered by whichever process holds the lock.
    const ids: string[] = []
    for (let i = 0; i < 60; i++) {
      const r = await call(standby, 'POST', '/v1/test_helpers/events', { key, account: a.body.id, body: { event: 'fax.delivered' } })
      expect(r.status).toBe(200)
      ids.push(r.body.id)
    }
    openGate()
    const distinct = () => new Set(rx.requests.map((r) => r.body?.id)).size
    await until('the first deliveries', () => distinct() >= 5, 20_000)
    leader.proc.kill('SIGKILL')
    await leader.proc.exited
    expect(distinct()).toBeLessThan(ids.length)
    await until(`all ${ids.length} events after the takeover`, () => ids.every((id) => rx.requests.some((r) => r.body?.id === id)), 30_000)
    const firsts = [...new Set(rx.requests.map((r) => r.body.id as string))]
    expect(firsts).toEqual(ids)

    // A process still waiting for the lock stops cleanly on SIGTERM.
    const third = await startServer(store.env)
    third.proc.kill('SIGTERM')
    const code = await Promise.race([third.proc.exited, Bun.sleep(15_000).then(() => 'still running')])
    expect({ code, log: code === 0 ? '' : third.log.text }).toEqual({ code: 0, log: '' })
    // And so does the one delivering.
    standby.proc.kill('SIGTERM')
    const code2 = await Promise.race([standby.proc.exited, Bun.sleep(15_000).then(() => 'still running')])
    expect({ code: code2, log: code2 === 0 ? '' : standby.log.text }).toEqual({ code: 0, log: '' })
  },
  90_000,
)
