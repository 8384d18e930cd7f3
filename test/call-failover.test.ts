/**
 * Failover of call actors between workers: one gateway process and two worker
 * processes on one PostgreSQL database and one NATS server (actors placed by shard
 * lease). Simulated calls start; once they are answered, the worker that owns the
 * first call's shard is killed with SIGKILL. The other worker takes the dead one's
 * shards when their leases run out, resumes the actors from their snapshots and
 * fires their durable timers: every call finishes with its complete event set,
 * each event committed once, and one call log row per call.
 *
 * Needs PostgreSQL (DATABASE_URL; a scratch database is made and dropped) and NATS
 * (NATS_URL, or 127.0.0.1:4222): skipped, and said so, without them.
 */
import { afterAll, expect, test } from 'bun:test'
import { connect } from 'nats'
import postgres from 'postgres'
import { shardOf } from '../actors/runtime/shards'
import { DEFAULT_LEASE_BUCKET } from '../actors/placement/leases'
import { scratchPostgres, type ScratchDatabase } from './support/scratch-postgres'
import { startServiceProcess, type ServiceProcess } from './support/service-process'
import { until } from './support/polling'
import { sampleAccount } from './support/service'

const NATS = process.env.NATS_URL ?? 'nats://127.0.0.1:4222'
const natsUp = await connect({ servers: NATS, timeout: 1000, reconnect: false })
  .then(async (nc) => {
    await nc.close()
    return true
  })
  .catch(() => false)
const skip = !process.env.DATABASE_URL || !natsUp
if (skip)
  console.log(
    `call failover test skipped: it needs PostgreSQL (DATABASE_URL ${process.env.DATABASE_URL ? 'set' : 'not set'}) and NATS (${NATS} ${natsUp ? 'answers' : 'does not answer'})`,
  )

const ADMIN = 'failover-admin-token-0123456789'
const SPEED = 10
const CALLS = 6
const TALK_S = 60
const running: ServiceProcess[] = []
let db: ScratchDatabase | undefined
let sql: postgres.Sql | undefined

afterAll(async () => {
  for (const p of running) await p.kill()
  await sql?.end()
  await db?.dispose()
}, 30_000)

const EXPECTED = [
  'call.incoming',
  'call.ringing',
  'call.answered',
  'call.end',
  'recording.available',
  'recording.transcription.complete',
  'recording.summary.complete',
]

test.skipIf(skip)(
  'SIGKILL of the worker owning a call mid-call: the call finishes on the other worker with its complete event set, nothing duplicated',
  async () => {
    db = await scratchPostgres('failover')
    sql = postgres(db.url!, { max: 2, onnotice: () => {} })
    const settings = {
      ...db.env,
      DATA_DIR: 'memory://',
      NATS_URL: NATS,
      VOICE_ADMIN_TOKEN: ADMIN,
      VOICE_CLOCK_SPEED: String(SPEED),
      SHARD_LEASE_MS: '1500',
      LOG_LEVEL: 'info',
    }
    // The gateway first (it migrates the scratch database), then the two workers side by side.
    const gateway = await startServiceProcess(settings, ['--role', 'gateway,delivery'])
    running.push(gateway)
    const workers = await Promise.all([startServiceProcess(settings, ['--role', 'worker']), startServiceProcess(settings, ['--role', 'worker'])])
    running.push(...workers)

    // Which worker holds which shard: the lease records in NATS, named by the worker ids the processes log.
    const clusterId = (await sql<{ value: string }[]>`select value from settings where key = 'cluster_id'`)[0]!.value
    const nc = await connect({ servers: NATS })
    const kv = await nc.jetstream().views.kv(DEFAULT_LEASE_BUCKET)
    const ownerOf = async (shard: number) => (await kv.get(`${clusterId}.shard.${shard}`))?.json<{ owner: string; epoch: number }>()
    const workerIdOf = (p: ServiceProcess) => /"workerId":"(w_[0-9a-f]+)"/.exec(p.log.text)?.[1]
    await until('both workers hold shards', async () => {
      const ids = workers.map(workerIdOf)
      if (ids.some((id) => !id)) return false
      const owners = new Set<string>()
      for (let s = 0; s < 16; s++) owners.add((await ownerOf(s))?.owner ?? '')
      return ids.every((id) => owners.has(id!))
    })

    // A sandbox account with a user and a number, through the gateway.
    const platform = await gateway.call('POST', '/admin/platforms', { key: ADMIN, body: { name: 'Failover' } })
    expect(platform.status).toBe(200)
    const key = platform.body.test_key as string
    const account = await gateway.call('POST', '/v1/accounts', { key, body: sampleAccount() })
    expect(account.status).toBe(200)
    const c = { key, account: account.body.id as string }
    const user = await gateway.call('POST', '/v1/users', { ...c, body: { email: 'agent@example.com', name: 'Agent' } })
    expect(user.status).toBe(200)
    const avail = await gateway.call('GET', '/v1/available-phone-numbers?quantity=1', c)
    expect((await gateway.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [avail.body.data[0].phone_number] } })).status).toBe(200)

    const ids: string[] = []
    for (let i = 0; i < CALLS; i++) {
      const r = await gateway.call('POST', '/v1/test_helpers/calls', {
        ...c,
        body: { user: user.body.id, from_number: '+15551234567', scenario: { ring_seconds: 2, talk_seconds: TALK_S, recording: true } },
      })
      expect(r.status).toBe(200)
      ids.push(r.body.id)
    }
    const typesOf = async (callId: string) =>
      (
        await sql!<{ type: string }[]>`select type from events where account_id = ${c.account} and body::jsonb -> 'data' ->> 'call_id' = ${callId} order by seq`
      ).map((r) => r.type)

    // Mid-call: the first call is answered and not ended.
    await until('the first call answered', async () => (await typesOf(ids[0]!)).includes('call.answered'))
    expect(await typesOf(ids[0]!)).not.toContain('call.end')
    const shard = shardOf(ids[0]!)
    const before = (await ownerOf(shard))!
    const victim = workers.find((w) => workerIdOf(w) === before.owner)
    const survivor = workers.find((w) => w !== victim)!
    expect(victim).toBeDefined()
    await victim!.kill()

    // Every call completes (the survivor takes the shards once their leases run out).
    await until(
      'every call complete with its follow-ups',
      async () => {
        for (const id of ids) if (!(await typesOf(id)).includes('recording.summary.complete')) return false
        return true
      },
      60_000,
    )
    const after = (await ownerOf(shard))!
    expect(after.owner).toBe(workerIdOf(survivor)!)
    expect(after.epoch).toBeGreaterThan(before.epoch)

    for (const id of ids) {
      // each event committed exactly once, in the call's order
      expect(await typesOf(id)).toEqual(EXPECTED)
      const end = await sql<{ body: string }[]>`select body from events where type = 'call.end' and body::jsonb -> 'data' ->> 'call_id' = ${id}`
      expect(JSON.parse(end[0]!.body).data).toMatchObject({ status: 'completed', duration_seconds: TALK_S })
    }
    // one call log row per call, final
    const list = await gateway.call('GET', '/v1/calls?limit=100', c)
    expect(list.status).toBe(200)
    const rows = (list.body.data as { id: string; status: string; duration_seconds: number }[]).filter((r) => ids.includes(r.id))
    expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort())
    for (const r of rows) expect(r).toMatchObject({ status: 'completed', duration_seconds: TALK_S })
    const counted = await sql<{ n: number }[]>`select count(*)::int as n from calls where account_id = ${c.account}`
    expect(counted[0]!.n).toBe(CALLS)
    await nc.close()
  },
  120_000,
)
