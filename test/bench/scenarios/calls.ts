/**
 * `npm run bench -- calls`: simulated calls at high clock speed.
 *
 * 1. End to end, on the embedded default and on PostgreSQL side by side: the real
 *    service as its own process (bun src/main.ts, every role, PGlite in a temporary
 *    DATA_DIR, or a scratch database of DATABASE_URL's server; VOICE_CLOCK_SPEED
 *    1000 by default), a sandbox platform, account(s), a user and a phone number each;
 *    then a load process (test/bench/calls-load.ts) keeps BENCH_CALLS_INFLIGHT
 *    POST /v1/test_helpers/calls in flight for BENCH_DURATION seconds (inbound,
 *    answered, recording off, ring 2 s + talk 10 s simulated = 12 ms real at 1000x).
 *    After the load the bench waits for the calls to finish, stops the service, and
 *    reads the PGlite folder (calls rows and outbox events): completed calls/s from
 *    the first call's start to the last call's end (simulated times / clock speed),
 *    completed calls/s while the load ran, call events committed/s, and the peak
 *    number of calls in flight at once.
 * 2. Actor density, in a child process of its own (test/bench/calls-density.ts) so its
 *    heap is measured alone: an ActorHost with the call kind on a scratch PostgreSQL
 *    database as a distributed worker runs (PGlite memory:// without PostgreSQL); call
 *    actors spawned and rung (incoming → ringing, never ended) up to
 *    BENCH_DENSITY_ACTORS or BENCH_DENSITY_SECONDS, heapUsed after Bun.gc(true) at
 *    checkpoints; bytes per live call actor is the slope after a 500-actor warm-up.
 *    When the time limit stops it short of the target, the heap at the target is
 *    extrapolated linearly (and the report says so).
 * Goals: ≥ 1,000 completed calls/s end to end on the embedded default; 50,000
 * concurrent call actors in one worker within 1 GiB of heap. A miss is reported.
 *
 * Environment (besides run.ts's BENCH_DURATION, BENCH_SERVICE_ENV, BENCH_PROFILE, BENCH_KEEP_DATA):
 *   BENCH_CALLS_INFLIGHT     POST /v1/test_helpers/calls in flight (default 64)
 *   BENCH_CALLS_ACCOUNTS     sandbox accounts the calls are spread over (default 4)
 *   BENCH_CLOCK_SPEED        VOICE_CLOCK_SPEED of the service (default 1000)
 *   BENCH_CALLS_DRAIN_S      most seconds to wait for started calls to end (default 30)
 *   BENCH_CALLS_WARMUP       seconds of the same load before the measured one, not measured (default 10;
 *                            0 measures a cold process: its JIT compiler then takes about a quarter of
 *                            the service's CPU in the first ten seconds, perf on 2026-11-29)
 *   BENCH_DENSITY_ACTORS     call actors to reach (default 50000)
 *   BENCH_DENSITY_SECONDS    time limit of the density run (default 120)
 *   BENCH_DENSITY_RING=0     spawn only (incoming), no RING step
 *   BENCH_ONLY               e2e (all three stores), e2e-embedded, e2e-pglite, e2e-postgres, commands and/or density (default all)
 *   BENCH_COMMANDS           hangup commands measured by the commands case (default 200)
 */
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { BenchContext } from '../run'
import { cpuSeconds } from '../lib/cpu'
import { descendantsCpuSeconds } from '../lib/process-tree'
import { onCleanup, runCaptured } from '../lib/processes'
import { call, ROOT, sampleAccount, startServer, type Server } from '../lib/service'
import { redact } from '../lib/postgres'
import { scratchPostgres } from '../../support/scratch-postgres'
import { freshDataDir } from '../../support/data-dir'
import { openDatabase, queryRows } from '../../../src/db/client'
import { sql } from 'drizzle-orm'

export const GOAL = { minCallsPerSec: 1000, actors: 50_000, heapBytes: 1024 ** 3 }
const SCENARIO = { outcome: 'answered', ring_seconds: 2, talk_seconds: 10, recording: false }

const num = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : String(n)
const mib = (b: number) => `${num(b / 1024 ** 2, 1)} MiB`

function intEnv(name: string, fallback: number, min = 1): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got "${raw}"`)
  return n
}

const expectOk = <T>(what: string, r: { status: number; body: T }): T => {
  if (r.status !== 200) throw new Error(`${what} failed: ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`)
  return r.body
}

// ---------------------------------------------------------------- end to end

interface E2E {
  store: string
  speed: number
  inflight: number
  loadSeconds: number
  started: number
  failedRequests: number
  statuses: Record<string, number>
  firstError?: string
  postLatencyMs: { p50: number; p99: number; max: number }
  startedPerSec: number
  completed: number
  byStatus: Record<string, number>
  /** First call's start to last call's end, real seconds. */
  windowS: number
  completedPerSec: number
  /** Calls that ended while the load process was still sending. */
  completedDuringLoad: number
  completedPerSecDuringLoad: number
  callEvents: number
  eventsByType: Record<string, number>
  callEventsPerSec: number
  peakInFlight: number
  /** Real ms from a call's start to its end (the scenario itself takes 12 simulated s). */
  callDurationMs: { p50: number; p99: number; max: number }
  drainedAfterS: number
  unfinished: number
  activeActors: number
  pendingTimers: number
  serviceCpuS?: number
  /** The embedded PostgreSQL server's CPU over the same span (its processes are the service's children). */
  databaseCpuS?: number
  /** What the database did over the whole run (setup included, a few dozen transactions): pg_stat_database and pg_stat_user_tables. */
  databaseWork?: { transactions: number; rowsWritten: number; byTable: [string, number][] }
  /** Calls the service simulated in all, warm-up included: what databaseWork is divided by. */
  simulatedCalls: number
  warmupS: number
}

interface LoadOut {
  started: [string, number][]
  startedAt: number
  endedAt: number
  failed: number
  statuses: Record<string, number>
  firstError?: string
  latencyMs: { p50: number; p99: number; max: number }
}

async function setupTenants(svc: Server, adminToken: string, n: number) {
  const platform = expectOk<{ id: string; test_key: string }>(
    'POST /admin/platforms',
    await call(svc.baseUrl, 'POST', '/admin/platforms', { token: adminToken, body: { name: 'Bench calls' } }),
  )
  const key = platform.test_key
  const tenants: { account: string; user: string }[] = []
  for (let i = 0; i < n; i++) {
    const acct = expectOk<{ id: string }>(
      'POST /v1/accounts',
      await call(svc.baseUrl, 'POST', '/v1/accounts', { token: key, body: { ...sampleAccount(), name: `Bench Calls ${i}` } }),
    )
    const c = { token: key, account: acct.id }
    const user = expectOk<{ id: string }>(
      'POST /v1/users',
      await call(svc.baseUrl, 'POST', '/v1/users', { ...c, body: { name: 'Agent', email: `agent-${i}@example.com` } }),
    )
    const avail = expectOk<{ data: { phone_number: string }[] }>(
      'GET /v1/available-phone-numbers',
      await call(svc.baseUrl, 'GET', '/v1/available-phone-numbers?quantity=1', c),
    )
    expectOk(
      'POST /v1/phone-number-orders',
      await call(svc.baseUrl, 'POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [avail.data[0]!.phone_number] } }),
    )
    tenants.push({ account: acct.id, user: user.id })
  }
  return { key, tenants }
}

type Query = <T>(text: string) => Promise<T[]>

/** embedded: the default (a PostgreSQL server of its own on DATA_DIR); pglite: EMBEDDED_DATABASE=pglite; postgres: a server's scratch database. */
type Backend = 'embedded' | 'pglite' | 'postgres'
type Store = { kind: 'embedded' | 'pglite'; dataDir: string } | { kind: 'postgres'; url: string }
const describe = (s: Store) =>
  s.kind === 'postgres'
    ? `PostgreSQL scratch database ${redact(s.url)}`
    : `${s.kind === 'pglite' ? 'PGlite' : 'the embedded PostgreSQL server'} in ${s.dataDir}`
const LABEL: Record<Backend, string> = { embedded: 'embedded default (PostgreSQL of its own)', pglite: 'embedded PGlite', postgres: 'PostgreSQL server' }

/** Reads the stopped service's database (opening the data folder again, or the scratch database): the calls and their events. */
async function withDatabase<R>(store: Store, fn: (q: Query) => Promise<R>): Promise<R> {
  const database = await openDatabase(
    store.kind === 'postgres'
      ? { databaseUrl: store.url, dataDir: 'memory://' }
      : { dataDir: store.dataDir, embedded: store.kind === 'pglite' ? 'pglite' : 'postgres' },
  )
  try {
    return await fn(<T>(text: string) => queryRows<T>(database.db, sql.raw(text)))
  } finally {
    await database.close()
  }
}

async function analyse(store: Store, speed: number, load: LoadOut) {
  return withDatabase(store, async (q) => {
    const all = await q<{ id: string; s: number; e: number | null; status: string | null }>(
      `select id, extract(epoch from started_at) * 1000 as s, case when status is null then null else extract(epoch from updated_at) * 1000 end as e, status from calls where simulated`,
    )
    // The warm-up's calls (ended before the measured load began) are not measured.
    const measured = new Set(load.started.map(([id]) => id))
    const rows = all.filter((r) => measured.has(r.id))
    const since = Math.min(...rows.map((r) => Number(r.s)))
    const byStatus: Record<string, number> = {}
    for (const r of rows) byStatus[r.status ?? 'in flight'] = (byStatus[r.status ?? 'in flight'] ?? 0) + 1
    const events = await q<{ type: string; n: number }>(
      `select type, count(*)::int as n from events where type like 'call.%' and created_at >= to_timestamp(${since / 1000}) group by type order by type`,
    )
    const eventsByType = Object.fromEntries(events.map((e) => [e.type, e.n]))
    const [actors] = await q<{ n: number }>(`select count(*)::int as n from actor_snapshots where status = 'active'`)
    const [timers] = await q<{ n: number }>(`select count(*)::int as n from durable_timers`)
    // PostgreSQL keeps its statistics over a clean shutdown: the transactions and row writes of the run.
    const [xacts] = await q<{ n: number }>(`select (xact_commit + xact_rollback)::int as n from pg_stat_database where datname = current_database()`)
    const tables = await q<{ t: string; n: number }>(
      `select relname as t, (n_tup_ins + n_tup_upd + n_tup_del)::int as n from pg_stat_user_tables where n_tup_ins + n_tup_upd + n_tup_del > 0 order by n desc`,
    )

    const ended = rows.filter((r) => r.e !== null).map((r) => ({ s: Number(r.s), e: Number(r.e) }))
    const t0 = Math.min(...rows.map((r) => Number(r.s)))
    const tEnd = ended.length ? Math.max(...ended.map((r) => r.e)) : t0
    // Simulated ms → real seconds since the first call started.
    const real = (simMs: number) => (simMs - t0) / speed / 1000
    const windowS = real(tEnd)
    const loadS = (load.endedAt - load.startedAt) / 1000
    const completedDuringLoad = ended.filter((r) => real(r.e) <= loadS).length
    // Peak calls in flight: sweep over starts and ends.
    const marks: [number, number][] = []
    for (const r of rows) {
      marks.push([Number(r.s), 1])
      marks.push([r.e === null ? Infinity : Number(r.e), -1])
    }
    marks.sort((a, b) => a[0] - b[0] || a[1] - b[1])
    let cur = 0
    let peak = 0
    for (const [, d] of marks) peak = Math.max(peak, (cur += d))
    const durs = ended.map((r) => (r.e - r.s) / speed).sort((a, b) => a - b)
    const pct = (p: number) => (durs.length ? durs[Math.min(durs.length - 1, Math.ceil((p / 100) * durs.length) - 1)]! : NaN)
    const callEvents = events.reduce((n, e) => n + e.n, 0)
    return {
      completed: byStatus.completed ?? 0,
      byStatus,
      windowS,
      completedDuringLoad,
      completedPerSecDuringLoad: loadS > 0 ? completedDuringLoad / loadS : 0,
      eventsByType,
      callEvents,
      callEventsPerSec: windowS > 0 ? callEvents / windowS : 0,
      peakInFlight: peak,
      callDurationMs: { p50: pct(50), p99: pct(99), max: durs.at(-1) ?? NaN },
      unfinished: rows.length - ended.length,
      activeActors: actors?.n ?? 0,
      pendingTimers: timers?.n ?? 0,
      databaseWork: xacts
        ? { transactions: xacts.n, rowsWritten: tables.reduce((n, r) => n + r.n, 0), byTable: tables.map((r) => [r.t, r.n] as [string, number]) }
        : undefined,
      simulatedCalls: all.length,
    }
  })
}

async function runE2E(ctx: BenchContext, backend: Backend): Promise<E2E> {
  const speed = intEnv('BENCH_CLOCK_SPEED', 1000)
  const inflight = intEnv('BENCH_CALLS_INFLIGHT', 64)
  const accounts = intEnv('BENCH_CALLS_ACCOUNTS', 4)
  const drainLimitS = intEnv('BENCH_CALLS_DRAIN_S', 30)
  const warmupS = intEnv('BENCH_CALLS_WARMUP', 10, 0)
  let store: Store
  let cleanup: () => Promise<void>
  if (backend === 'postgres') {
    const scratch = await scratchPostgres('bench_calls', { base: ctx.databaseUrl })
    store = { kind: 'postgres', url: scratch.url! }
    cleanup = onCleanup(async () => {
      if (!ctx.keepData) await scratch.dispose()
    })
  } else {
    const data = freshDataDir('bench-calls')
    store = { kind: backend, dataDir: data.dataDir }
    cleanup = onCleanup(async () => {
      if (!ctx.keepData) await data.dispose()
    })
  }
  const adminToken = `bench-admin-${randomBytes(12).toString('hex')}`
  let service: Server | undefined
  try {
    service = await startServer({
      name: 'service-calls',
      script: join(ROOT, 'src/main.ts'),
      logDir: ctx.logDir,
      readyPath: '/readyz',
      timeoutMs: 60_000,
      bunArgs: ctx.profileDir ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${ctx.profileDir}`] : undefined,
      env: {
        DATABASE_URL: store.kind === 'postgres' ? store.url : '',
        NATS_URL: '',
        DATA_DIR: store.kind === 'postgres' ? '' : store.dataDir,
        EMBEDDED_DATABASE: store.kind === 'pglite' ? 'pglite' : 'postgres',
        VOICE_CLOCK_SPEED: String(speed),
        VOICE_ADMIN_TOKEN: adminToken,
        RATE_LIMIT_PER_SECOND: '0',
        LOG_LEVEL: 'warn',
        VOICE_TEST_KEY: '',
        VOICE_LIVE_KEY: '',
        ...ctx.serviceEnv,
      },
    })
    console.log(`\n[e2e] service ${service.baseUrl} on ${describe(store)}, VOICE_CLOCK_SPEED=${speed}`)
    const { key, tenants } = await setupTenants(service, adminToken, accounts)

    // A few calls first (not measured), to check the path works and warm the JIT.
    const warm = await call(service.baseUrl, 'POST', '/v1/test_helpers/calls', {
      token: key,
      account: tenants[0]!.account,
      body: { user: tenants[0]!.user, scenario: SCENARIO },
    })
    expectOk('POST /v1/test_helpers/calls (warm-up)', warm)

    const runLoad = async (name: string, seconds: number): Promise<LoadOut> => {
      const out = join(ctx.logDir, `${name}.json`)
      const r = await runCaptured(
        name,
        [
          process.execPath,
          join(ROOT, 'test/bench/calls-load.ts'),
          JSON.stringify({ baseUrl: service!.baseUrl, key, tenants, concurrency: inflight, durationMs: seconds * 1000, scenario: SCENARIO, out }),
        ],
        { cwd: ROOT, env: process.env, timeoutMs: seconds * 1000 + 45_000 },
      )
      if (r.code !== 0) throw new Error(`the load process failed (exit ${r.code}):\n${(r.stderr || r.stdout).trim().slice(-2000)}`)
      const load = JSON.parse(readFileSync(out, 'utf8')) as LoadOut
      rmSync(out, { force: true })
      if (load.started.length === 0) throw new Error(`no call was started: ${load.firstError ?? JSON.stringify(load.statuses)}`)
      return load
    }
    // The last calls started end last: waits until they have a status (or the drain limit); answers the seconds waited, NaN at the limit.
    const owner = new Map<string, string>()
    const waitForEnds = async (load: LoadOut): Promise<number> => {
      const drainStart = performance.now()
      // calls-load spreads round-robin; find each tail call's account by asking each (cheap: 16 calls).
      const pending = new Set(load.started.slice(-16).map(([id]) => id))
      while (pending.size > 0 && performance.now() - drainStart < drainLimitS * 1000) {
        if (service!.child.proc.exitCode !== null) throw new Error(`the service exited:\n${service!.child.tail()}`)
        for (const id of [...pending]) {
          for (const t of owner.has(id) ? [owner.get(id)!] : tenants.map((x) => x.account)) {
            const g = await call(service!.baseUrl, 'GET', `/v1/calls/${id}`, { token: key, account: t })
            if (g.status === 404) continue
            owner.set(id, t)
            if (g.status === 200 && g.body?.status) pending.delete(id)
            break
          }
        }
        if (pending.size > 0) await Bun.sleep(100)
      }
      return pending.size === 0 ? (performance.now() - drainStart) / 1000 : NaN
    }

    if (warmupS > 0) {
      // The same load first, not measured: a fresh process spends its first seconds compiling (JIT).
      console.log(`[e2e] warm-up: the same load for ${warmupS} s, not measured ...`)
      await waitForEnds(await runLoad('calls-warmup', warmupS))
      await Bun.sleep(500)
    }
    console.log(
      `[e2e] measuring: ${inflight} POST /v1/test_helpers/calls in flight for ${ctx.durationS} s over ${accounts} accounts, scenario ${JSON.stringify(SCENARIO)} ...`,
    )
    const pid = service.child.proc.pid
    const cpu0 = cpuSeconds(pid)
    const dbCpu0 = store.kind === 'embedded' ? descendantsCpuSeconds(pid) : undefined
    const load = await runLoad('calls-load', ctx.durationS)
    const drainedAfterS = await waitForEnds(load)
    // And a moment for the stragglers (and their projections) of the others.
    await Bun.sleep(500)
    const cpu1 = cpuSeconds(pid)
    const dbCpu1 = store.kind === 'embedded' ? descendantsCpuSeconds(pid) : undefined
    await service.stop()
    service = undefined

    const a = await analyse(store, speed, load)
    const loadS = (load.endedAt - load.startedAt) / 1000
    return {
      store: describe(store),
      speed,
      inflight,
      loadSeconds: loadS,
      started: load.started.length,
      failedRequests: load.failed,
      statuses: load.statuses,
      firstError: load.firstError,
      postLatencyMs: load.latencyMs,
      startedPerSec: load.started.length / loadS,
      completedPerSec: a.windowS > 0 ? a.completed / a.windowS : 0,
      drainedAfterS,
      warmupS,
      serviceCpuS: cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined,
      databaseCpuS: dbCpu0 !== undefined && dbCpu1 !== undefined ? dbCpu1 - dbCpu0 : undefined,
      ...a,
    }
  } finally {
    await service?.stop()
    await cleanup()
  }
}

// ---------------------------------------------------------------- command latency

/**
 * How soon a call command takes effect: POST /v1/calls/{id} {"action":"hangup"} on
 * answered calls (VOICE_CLOCK_SPEED=1, so event times are real times), from sending the
 * request to call.command_succeeded committed. A command is a durable row written with
 * the request; the gateway then wakes the call's owner, so it does not wait for a poll.
 */
async function runCommands(ctx: BenchContext): Promise<{ store: string; n: number; p50: number; p99: number; max: number; replyP50: number }> {
  const n = intEnv('BENCH_COMMANDS', 200)
  const data = freshDataDir('bench-commands')
  const dataDir = data.dataDir
  const cleanup = onCleanup(async () => {
    if (!ctx.keepData) await data.dispose()
  })
  const adminToken = `bench-admin-${randomBytes(12).toString('hex')}`
  let service: Server | undefined
  try {
    service = await startServer({
      name: 'service-commands',
      script: join(ROOT, 'src/main.ts'),
      logDir: ctx.logDir,
      readyPath: '/readyz',
      timeoutMs: 60_000,
      env: {
        DATABASE_URL: '',
        NATS_URL: '',
        DATA_DIR: dataDir,
        VOICE_CLOCK_SPEED: '1',
        VOICE_ADMIN_TOKEN: adminToken,
        RATE_LIMIT_PER_SECOND: '0',
        LOG_LEVEL: 'warn',
        ...ctx.serviceEnv,
      },
    })
    const { key, tenants } = await setupTenants(service, adminToken, 1)
    const t = tenants[0]!
    const c = { token: key, account: t.account }
    console.log(`\n[commands] ${n} calls answered after 1 s with 600 s of talk, then one hangup each (the embedded default, VOICE_CLOCK_SPEED=1) ...`)
    const ids: string[] = []
    for (let i = 0; i < n; i++) {
      const r = await call(service.baseUrl, 'POST', '/v1/test_helpers/calls', {
        ...c,
        body: { user: t.user, scenario: { outcome: 'answered', ring_seconds: 1, talk_seconds: 600, recording: false } },
      })
      ids.push(expectOk<{ id: string }>('POST /v1/test_helpers/calls', r).id)
    }
    await Bun.sleep(1_500)
    const sent = new Map<string, { at: number; replyMs: number }>()
    for (const id of ids) {
      const at = Date.now()
      const r = await call(service.baseUrl, 'POST', `/v1/calls/${id}`, { ...c, body: { action: 'hangup' } })
      if (r.status !== 202) throw new Error(`POST /v1/calls/${id} answered ${r.status}: ${JSON.stringify(r.body)}`)
      sent.set((r.body as { id: string }).id, { at, replyMs: Date.now() - at })
    }
    await Bun.sleep(1_000)
    await service.stop()
    service = undefined
    const latencies = await withDatabase({ kind: 'embedded', dataDir }, async (q) => {
      const rows = await q<{ body: string }>(`select body from events where type = 'call.command_succeeded'`)
      return rows.flatMap((r) => {
        const e = JSON.parse(r.body) as { created_at: string; data: { command_id: string } }
        const s = sent.get(e.data.command_id)
        return s ? [Date.parse(e.created_at) - s.at] : []
      })
    })
    if (latencies.length !== n) throw new Error(`${n} commands sent, ${latencies.length} reported succeeded`)
    latencies.sort((a, b) => a - b)
    const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!
    const replies = [...sent.values()].map((s) => s.replyMs).sort((a, b) => a - b)
    return { store: LABEL.embedded, n, p50: pct(latencies, 50), p99: pct(latencies, 99), max: latencies.at(-1)!, replyP50: pct(replies, 50) }
  } finally {
    await service?.stop()
    await cleanup()
  }
}

// ---------------------------------------------------------------- density

interface Checkpoint {
  live: number
  heapUsed: number
  rss: number
  external: number
  arrayBuffers: number
  elapsedMs: number
}
interface DensityOut {
  database: 'postgres' | 'pglite'
  checkpoints: Checkpoint[]
  baseline: Checkpoint
  warmup: { actors: number; ms: number }
  peakLive: number
  reachedTarget: boolean
  spawned: number
  spawnPerSec: number
  stepsPerActor: number
  effectErrors: number
  firstEffectError?: string
  topObjectTypes: [string, number][]
}

async function runDensity(ctx: BenchContext) {
  const target = intEnv('BENCH_DENSITY_ACTORS', GOAL.actors)
  const seconds = intEnv('BENCH_DENSITY_SECONDS', 120)
  const ring = process.env.BENCH_DENSITY_RING !== '0'
  const out = join(ctx.logDir, 'calls-density.json')
  const checkpoint = Math.max(500, Math.round(target / 10))
  // A worker of the distributed deployment: its actors on PostgreSQL (a scratch database), so the heap is theirs alone.
  const pg = ctx.postgresUnavailable ? undefined : ctx.databaseUrl
  const store = pg ? 'PostgreSQL, a scratch database' : 'PGlite memory://'
  console.log(
    `\n[density] call actors in one process (ActorHost, call kind, ${store}): up to ${num(target)} ${ring ? 'incoming + ringing' : 'incoming'}, at most ${seconds} s ...`,
  )
  const r = await runCaptured(
    'calls-density',
    [
      process.execPath,
      join(ROOT, 'test/bench/calls-density.ts'),
      JSON.stringify({ target, timeLimitMs: seconds * 1000, concurrency: 256, ring, checkpoint, out }),
    ],
    { cwd: ROOT, env: { ...process.env, ...(pg ? { DATABASE_URL: pg } : {}) }, timeoutMs: seconds * 1000 + 60_000 },
  )
  if (r.code !== 0) throw new Error(`the density process failed (exit ${r.code}):\n${(r.stderr || r.stdout).trim().slice(-2000)}`)
  const d = JSON.parse(readFileSync(out, 'utf8')) as DensityOut
  rmSync(out, { force: true })
  const last = d.checkpoints.at(-1)!
  const added = last.live - d.baseline.live
  const perActor = added > 0 ? (last.heapUsed - d.baseline.heapUsed) / added : NaN
  const perActorJs = added > 0 ? (last.heapUsed - last.external - (d.baseline.heapUsed - d.baseline.external)) / added : NaN
  const perActorRss = added > 0 ? (last.rss - d.baseline.rss) / added : NaN
  const heapAtTarget = d.baseline.heapUsed + perActor * (target - d.baseline.live)
  return { target, d, last, perActor, perActorJs, perActorRss, heapAtTarget, extrapolated: !d.reachedTarget || last.live < target }
}

// ---------------------------------------------------------------- report

export async function run(ctx: BenchContext): Promise<void> {
  const only = ctx.only ?? ['e2e', 'commands', 'density']
  const want = (name: string) => only.some((o) => name.includes(o))
  const lines: string[] = []

  for (const backend of ['embedded', 'pglite', 'postgres'] as const) {
    const label = LABEL[backend]
    if (!want(`e2e-${backend}`)) continue
    if (backend === 'postgres' && ctx.postgresUnavailable) {
      lines.push(`  e2e (${label})  skipped: ${ctx.postgresUnavailable}`)
      continue
    }
    try {
      const e = await runE2E(ctx, backend)
      console.log(
        `\n=== calls end to end: ${label}, VOICE_CLOCK_SPEED=${e.speed}, ${e.inflight} requests in flight, ${e.warmupS > 0 ? `after ${e.warmupS} s of warm-up` : 'cold process (no warm-up)'} ===`,
      )
      console.log(
        `  started     ${num(e.started)} calls in ${num(e.loadSeconds, 1)} s = ${num(e.startedPerSec, 1)} calls/s (POST p50 ${num(e.postLatencyMs.p50, 1)} ms, p99 ${num(e.postLatencyMs.p99, 1)} ms, max ${num(e.postLatencyMs.max, 0)} ms; ${e.failedRequests} failed${e.firstError ? `, first: ${e.firstError}` : ''})`,
      )
      console.log(
        `  completed   ${num(e.completed)} calls from the first start to the last end (${num(e.windowS, 2)} s) = ${num(e.completedPerSec, 1)} calls/s; while the load ran: ${num(e.completedDuringLoad)} = ${num(e.completedPerSecDuringLoad, 1)} calls/s`,
      )
      console.log(
        `  statuses    ${JSON.stringify(e.byStatus)}; unfinished ${e.unfinished}; active actors left ${e.activeActors}; timers left ${e.pendingTimers}; last calls ended ${Number.isNaN(e.drainedAfterS) ? 'NOT within the drain limit' : `${num(e.drainedAfterS, 1)} s after the load stopped`}`,
      )
      console.log(`  events      ${num(e.callEvents)} call.* events committed = ${num(e.callEventsPerSec, 1)} events/s ${JSON.stringify(e.eventsByType)}`)
      console.log(
        `  in flight   peak ${num(e.peakInFlight)} calls at once (call actors + their simulation actors); real start-to-end per call p50 ${num(e.callDurationMs.p50, 0)} ms, p99 ${num(e.callDurationMs.p99, 0)} ms (the scenario alone: ${num(((SCENARIO.ring_seconds + SCENARIO.talk_seconds) * 1000) / e.speed, 0)} ms)`,
      )
      if (e.serviceCpuS !== undefined)
        console.log(`  service CPU ${num(e.serviceCpuS, 1)} s = ${num((e.serviceCpuS * 1e3) / Math.max(1, e.completed), 2)} ms per completed call`)
      if (e.databaseCpuS !== undefined)
        console.log(
          `  database CPU ${num(e.databaseCpuS, 1)} s = ${num((e.databaseCpuS * 1e3) / Math.max(1, e.completed), 2)} ms per completed call (the embedded PostgreSQL server)`,
        )
      if (e.databaseWork) {
        const per = (n: number) => num(n / Math.max(1, e.simulatedCalls), 1)
        const tables = e.databaseWork.byTable.slice(0, 8).map(([t, n]) => `${t} ${per(n)}`)
        console.log(
          `  database    per call simulated (warm-up included): ${per(e.databaseWork.transactions)} transactions, ${per(e.databaseWork.rowsWritten)} rows written (${tables.join(', ')})`,
        )
      }
      const pass = e.completedPerSec >= GOAL.minCallsPerSec && e.unfinished === 0
      lines.push(
        `  e2e (${label})  ${num(e.completedPerSec, 1)} completed calls/s (${num(e.callEventsPerSec, 0)} call events/s) ≥ ${num(GOAL.minCallsPerSec)}: ${pass ? 'PASS' : 'MISS'}${e.unfinished ? ` (${e.unfinished} calls unfinished)` : ''}`,
      )
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err)
      console.log(`\n[e2e ${label}] failed: ${msg}`)
      lines.push(`  e2e (${label})  MISS (the run failed: ${msg.split('\n')[0]})`)
    }
  }

  if (want('commands')) {
    try {
      const r = await runCommands(ctx)
      console.log(`\n=== call command latency: request sent to call.command_succeeded committed (${r.store}) ===`)
      console.log(`  ${num(r.n)} hangups: p50 ${num(r.p50)} ms, p99 ${num(r.p99)} ms, max ${num(r.max)} ms (the 202 itself: p50 ${num(r.replyP50)} ms)`)
      lines.push(`  commands ${num(r.n)} hangups took effect in p50 ${num(r.p50)} ms, p99 ${num(r.p99)} ms (a timer poll would add up to 50 ms)`)
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err)
      console.log(`\n[commands] failed: ${msg}`)
      lines.push(`  commands MISS (the run failed: ${msg.split('\n')[0]})`)
    }
  }

  if (want('density')) {
    try {
      const x = await runDensity(ctx)
      const { d, last } = x
      console.log(`\n=== call actor density: one process, heapUsed after Bun.gc(true) ===`)
      console.log(`  live actors   heapUsed     (of which external)  rss          elapsed`)
      for (const c of d.checkpoints) {
        console.log(
          `  ${num(c.live).padStart(11)}   ${mib(c.heapUsed).padStart(11)}  ${mib(c.external).padStart(11)}          ${mib(c.rss).padStart(11)}  ${num(c.elapsedMs / 1000, 1)} s`,
        )
      }
      console.log(
        `  peak live call actors ${num(d.peakLive)}; spawn rate ${num(d.spawnPerSec, 1)} actors/s (${d.stepsPerActor} committed steps each: spawn${d.stepsPerActor > 1 ? ' + RING' : ''}); effect errors ${d.effectErrors}${d.firstEffectError ? ` (${d.firstEffectError})` : ''}`,
      )
      console.log(
        `  per live call actor: ${num(x.perActor)} B of heapUsed (${num(x.perActorJs)} B JS heap without external, ${num(x.perActorRss)} B rss), slope over ${num(last.live - d.baseline.live)} actors after ${num(d.baseline.live)} warm-up actors`,
      )
      if (d.database !== 'postgres') console.log(`  (Bun's heapUsed counts external memory too: PGlite's WASM heap, which grows with the rows of memory://)`)
      console.log(`  JS objects added per actor: ${d.topObjectTypes.map(([t, n]) => `${t} ${num(n, 1)}`).join(', ')}`)
      const fits = x.heapAtTarget <= GOAL.heapBytes
      const how = x.extrapolated
        ? `EXTRAPOLATED linearly from ${num(last.live)} live actors (the time limit stopped the run short of ${num(x.target)})`
        : `measured at ${num(last.live)}`
      console.log(
        `  heap at ${num(x.target)} actors: ${mib(x.heapAtTarget)}, ${how}; ${num(x.target)} actors would fit in 1 GiB only at ≤ ${num((GOAL.heapBytes - d.baseline.heapUsed) / (x.target - d.baseline.live))} B/actor`,
      )
      const pass = fits && !x.extrapolated
      lines.push(
        `  density  ${num(x.target)} live call actors: heap ${mib(x.heapAtTarget)}${x.extrapolated ? ' (extrapolated)' : ''} ≤ 1 GiB, ${num(x.perActor)} B/actor, peak ${num(d.peakLive)} live: ${pass ? 'PASS' : 'MISS'}${x.extrapolated ? (fits ? ' (would fit, but not reached in time)' : '') : ''}`,
      )
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err)
      console.log(`\n[density] failed: ${msg}`)
      lines.push(`  density  MISS (the run failed: ${msg.split('\n')[0]})`)
    }
  }

  console.log(
    `\ngoal: ≥ ${num(GOAL.minCallsPerSec)} completed calls/s end to end on the embedded default; ${num(GOAL.actors)} concurrent call actors in one worker within 1 GiB of heap`,
  )
  for (const l of lines) console.log(l)
}
