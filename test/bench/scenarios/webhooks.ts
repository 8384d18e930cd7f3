/**
 * `npm run bench -- webhooks`: webhook delivery end to end, from commit to receipt.
 *
 * Per backend (the embedded default: a PostgreSQL server of its own in a temporary
 * DATA_DIR; PGlite there instead (EMBEDDED_DATABASE=pglite); then PostgreSQL in
 * a scratch database created for the run and dropped after it):
 *   - the real service as its own process (bun src/main.ts, every role),
 *   - a receiver in another process (test/bench/webhook-receiver.ts, a bare Bun.serve)
 *     recording when each event id first arrived,
 *   - a producer in a third process (test/bench/webhook-producer.ts) posting
 *     POST /v1/test_helpers/events with 32 requests in flight over 20 sandbox accounts;
 *     an event is committed when its 200 response has arrived,
 *   - one platform-global webhook endpoint (every account's events) at the receiver.
 * Reported: events committed/s, events delivered/s, p50/p90/p99/max commit-to-receipt,
 * delivered vs committed (duplicates apart), the service's CPU per event, and the goal:
 * at least 2,000 events/s delivered with p99 under 200 ms, every event once.
 *
 * Environment (besides run.ts's DATABASE_URL, BENCH_SERVICE_ENV, BENCH_PROFILE):
 *   BENCH_EVENTS         events measured per backend (default 20000)
 *   BENCH_ACCOUNTS       sandbox accounts the events are spread over (default 20)
 *   BENCH_PRODUCERS      producer requests in flight (default 32)
 *   BENCH_RATE           offer this many events/s (open loop) instead of as fast as the
 *                        producers go; shows latency at a given load (default 0: flat out)
 *   BENCH_WARMUP_EVENTS  events sent and awaited before measuring (default 1000)
 *   BENCH_BACKENDS       comma-separated: embedded, pglite, postgres (default all three)
 *   BENCH_DIRECT=0       leave out the second PostgreSQL run, "delivery alone": events committed
 *                        straight into the outbox by another process (appendEvents, 20 per
 *                        transaction), so the gateway's cost per event is not in the way
 *   BENCH_DIRECT_RATE    events/s offered in that run (default 2000, the goal; 0: flat out)
 *   BENCH_TIMELINE=1     also print, per second of each run: committed, received, p50/p99
 *   BENCH_KEEP_DATA=1    keep the PGlite folder and the scratch database (to inspect the rows)
 *   BENCH_PG_SCRATCH=0   use DATABASE_URL itself, not a scratch database in its server
 *                        (only one process per database delivers: do not share it with
 *                        a running test suite)
 */
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { BenchContext } from '../run'
import { eachBackend } from '../lib/backends'
import { cpuSeconds } from '../lib/cpu'
import { redact } from '../lib/postgres'
import { scratchPostgres } from '../../support/scratch-postgres'
import { onCleanup, runCaptured } from '../lib/processes'
import { call, ROOT, sampleAccount, startServer, type Server } from '../lib/service'
import { freshDataDir } from '../../support/data-dir'

export const GOAL = { minEventsPerSec: 2000, maxP99Ms: 200 }

/** Per backend: producing stops after this long, and delivery is awaited at most this much longer. */
const PRODUCE_LIMIT_MS = 45_000
const DRAIN_LIMIT_MS = 20_000
const EVENT_TYPES = ['fax.received', 'queue.call.queued', 'queue.call.answered', 'fax.delivered']

/** embedded: the default (a PostgreSQL server of its own on DATA_DIR); pglite: EMBEDDED_DATABASE=pglite; postgres: a server's scratch database. */
type Backend = 'embedded' | 'pglite' | 'postgres'
const BACKENDS: Backend[] = ['embedded', 'pglite', 'postgres']
/** http: events made through POST /v1/test_helpers/events; direct: committed straight into the outbox. */
type Variant = 'http' | 'direct'
const DIRECT_BATCH = 20
/** The direct variant starts only this early in the bench (s), so that the whole stays within run.ts's time budget. */
const DIRECT_LATEST_S = 110

interface Settings {
  events: number
  accounts: number
  producers: number
  rate: number
  warmup: number
  direct: boolean
  directRate: number
  /** performance.now() when the scenario started. */
  startedAt: number
}

interface Outcome {
  backend: Backend
  variant: Variant
  skipped?: string
  /** Set when the run could not complete (the service failed, nothing delivered ...). */
  failed?: string
  committed: number
  failedRequests: number
  statuses: Record<string, number>
  firstError?: string
  delivered: number
  duplicates: number
  /** Receipts of ids the producer never saw committed (a request that failed after commit). */
  unmatched: number
  committedPerSec: number
  deliveredPerSec: number
  latency: { p50: number; p90: number; p99: number; max: number }
  serviceCpuUsPerEvent?: number
  receiverCpuS?: number
  produceSeconds: number
  drainSeconds: number
}

function intEnv(name: string, fallback: number, min = 1): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got "${raw}"`)
  return n
}

const num = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

function percentileOf(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

const expectOk = <T>(what: string, r: { status: number; body: T }): T => {
  if (r.status !== 200) throw new Error(`${what} failed: ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`)
  return r.body
}

interface Stats {
  received: number
  unique: number
  duplicates: number
  bad: number
  signed: number
}
const stats = async (receiver: Server): Promise<Stats> =>
  (await fetch(`${receiver.baseUrl}/stats`, { signal: AbortSignal.timeout(5000) })).json() as Promise<Stats>

/** Waits until the receiver holds `target` distinct events, the service dies, or nothing new arrives for stallMs / limitMs passes. */
async function awaitReceipts(receiver: Server, service: Server, target: number, limitMs: number, stallMs = 10_000): Promise<Stats> {
  const deadline = Date.now() + limitMs
  let last = await stats(receiver)
  let lastChange = Date.now()
  while (last.unique < target && Date.now() < deadline && Date.now() - lastChange < stallMs) {
    if (service.child.proc.exitCode !== null || service.child.proc.signalCode !== null) {
      throw new Error(`the service exited (${service.child.proc.exitCode ?? service.child.proc.signalCode}):\n${service.child.tail()}`)
    }
    await Bun.sleep(20)
    const s = await stats(receiver)
    if (s.unique !== last.unique) lastChange = Date.now()
    last = s
  }
  return last
}

interface Produced {
  commits: [string, number][]
  startedAt: number
  endedAt: number
  failed: number
  statuses: Record<string, number>
  firstError?: string
}

async function produce(
  ctx: BenchContext,
  opts: { baseUrl: string; key: string; accounts: string[]; total: number; concurrency: number; rate: number; tag: string },
): Promise<Produced> {
  const out = join(ctx.logDir, `producer-${opts.tag}.json`)
  const r = await runCaptured(
    'producer',
    [process.execPath, join(ROOT, 'test/bench/webhook-producer.ts'), JSON.stringify({ ...opts, types: EVENT_TYPES, deadlineMs: PRODUCE_LIMIT_MS, out })],
    { cwd: ROOT, env: process.env, timeoutMs: PRODUCE_LIMIT_MS + 40_000 },
  )
  if (r.code !== 0) throw new Error(`the producer failed (exit ${r.code}):\n${(r.stderr || r.stdout).trim().slice(-2000)}`)
  const produced = JSON.parse(readFileSync(out, 'utf8')) as Produced
  rmSync(out, { force: true })
  return produced
}

/** One measured run: what `producer` commits, matched against what the receiver got. */
async function measure(backend: Backend, variant: Variant, service: Server, receiver: Server, producer: () => Promise<Produced>): Promise<Outcome> {
  const before = await stats(receiver)
  const pid = service.child.proc.pid
  const cpu0 = cpuSeconds(pid)
  const rcpu0 = cpuSeconds(receiver.child.proc.pid)
  const p = await producer()
  const drainStart = Date.now()
  const final = await awaitReceipts(receiver, service, before.unique + p.commits.length, DRAIN_LIMIT_MS)
  const drainSeconds = (Date.now() - drainStart) / 1000
  const cpu1 = cpuSeconds(pid)
  const rcpu1 = cpuSeconds(receiver.child.proc.pid)
  const dump = (await (await fetch(`${receiver.baseUrl}/dump`, { signal: AbortSignal.timeout(10_000) })).json()) as {
    receipts: [string, number][]
    duplicates: number
  }

  const receipts = new Map(dump.receipts)
  const latencies: number[] = []
  let lastReceipt = p.startedAt
  for (const [id, t] of p.commits) {
    const r = receipts.get(id)
    if (r === undefined) continue
    latencies.push(r - t)
    if (r > lastReceipt) lastReceipt = r
  }
  if (process.env.BENCH_TIMELINE === '1') printTimeline(`${backend}${variant === 'direct' ? ' direct' : ''}`, p, receipts)
  latencies.sort((a, b) => a - b)
  const produceSeconds = (p.endedAt - p.startedAt) / 1000
  return {
    backend,
    variant,
    committed: p.commits.length,
    failedRequests: p.failed,
    statuses: p.statuses,
    firstError: p.firstError,
    delivered: latencies.length,
    duplicates: dump.duplicates - before.duplicates,
    // Receipts since the run began that belong to no event the producer saw committed.
    unmatched: Math.max(0, dump.receipts.length - before.unique - latencies.length),
    committedPerSec: produceSeconds > 0 ? p.commits.length / produceSeconds : 0,
    deliveredPerSec: lastReceipt > p.startedAt ? latencies.length / ((lastReceipt - p.startedAt) / 1000) : 0,
    latency: {
      p50: percentileOf(latencies, 50),
      p90: percentileOf(latencies, 90),
      p99: percentileOf(latencies, 99),
      max: latencies[latencies.length - 1] ?? NaN,
    },
    serviceCpuUsPerEvent: cpu0 !== undefined && cpu1 !== undefined && p.commits.length > 0 ? ((cpu1 - cpu0) * 1e6) / p.commits.length : undefined,
    receiverCpuS: rcpu0 !== undefined && rcpu1 !== undefined ? rcpu1 - rcpu0 : undefined,
    produceSeconds,
    drainSeconds: final.unique >= before.unique + p.commits.length ? drainSeconds : NaN,
  }
}

async function produceDirect(
  ctx: BenchContext,
  opts: { databaseUrl: string; platformId: string; accounts: string[]; total: number; rate: number; tag: string },
): Promise<Produced> {
  const out = join(ctx.logDir, `producer-${opts.tag}.json`)
  const r = await runCaptured(
    'direct producer',
    [
      process.execPath,
      join(ROOT, 'test/bench/webhook-direct-producer.ts'),
      JSON.stringify({ ...opts, types: EVENT_TYPES, batch: DIRECT_BATCH, concurrency: 4, deadlineMs: PRODUCE_LIMIT_MS, out }),
    ],
    { cwd: ROOT, env: process.env, timeoutMs: PRODUCE_LIMIT_MS + 40_000 },
  )
  if (r.code !== 0) throw new Error(`the direct producer failed (exit ${r.code}):\n${(r.stderr || r.stdout).trim().slice(-2000)}`)
  const produced = JSON.parse(readFileSync(out, 'utf8')) as Produced
  rmSync(out, { force: true })
  return produced
}

/** Per second of the run: events committed, events received, and the commit-to-receipt p50/p99 of that second's commits. */
function printTimeline(label: string, p: Produced, receipts: Map<string, number>) {
  const seconds = new Map<number, { committed: number; received: number; latencies: number[] }>()
  const at = (t: number) => {
    const k = Math.floor((t - p.startedAt) / 1000)
    let s = seconds.get(k)
    if (!s) seconds.set(k, (s = { committed: 0, received: 0, latencies: [] }))
    return s
  }
  for (const [id, t] of p.commits) {
    at(t).committed++
    const r = receipts.get(id)
    if (r === undefined) continue
    at(t).latencies.push(r - t)
    at(r).received++
  }
  console.log(`  timeline of ${label} (second: committed, received, p50/p99 ms of that second's commits)`)
  for (const k of [...seconds.keys()].sort((a, b) => a - b)) {
    const s = seconds.get(k)!
    s.latencies.sort((a, b) => a - b)
    const lat = s.latencies.length ? `${num(percentileOf(s.latencies, 50), 1)}/${num(percentileOf(s.latencies, 99), 1)}` : '-'
    console.log(`    ${String(k).padStart(3)} s: ${String(s.committed).padStart(5)} ${String(s.received).padStart(5)}  ${lat}`)
  }
}

async function runBackend(ctx: BenchContext, backend: Backend, s: Settings): Promise<Outcome[]> {
  const servers: Server[] = []
  const cleanups: (() => Promise<void>)[] = []
  try {
    // ---- storage ----
    const env: Record<string, string> = {
      // An empty value is unset for the service's config: never inherit the caller's.
      DATABASE_URL: '',
      NATS_URL: '',
      VOICE_ADMIN_TOKEN: `bench-admin-${randomBytes(12).toString('hex')}`,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
      RATE_LIMIT_PER_SECOND: '0',
      LOG_LEVEL: 'warn',
      VOICE_TEST_KEY: '',
      VOICE_LIVE_KEY: '',
    }
    let where: string
    if (backend !== 'postgres') {
      const data = freshDataDir('bench-webhooks')
      if (!ctx.keepData) cleanups.push(onCleanup(data.dispose))
      env.DATA_DIR = data.dataDir
      if (backend === 'pglite') env.EMBEDDED_DATABASE = 'pglite'
      where = `${backend === 'pglite' ? 'PGlite' : 'the embedded PostgreSQL server'} in ${data.dataDir}${ctx.keepData ? ' (kept)' : ''}`
    } else {
      if (process.env.BENCH_PG_SCRATCH === '0') {
        env.DATABASE_URL = ctx.databaseUrl
        where = `PostgreSQL ${redact(ctx.databaseUrl)} (itself, BENCH_PG_SCRATCH=0)`
      } else {
        const scratch = await scratchPostgres('bench_webhooks', { base: ctx.databaseUrl }).catch((e) => {
          throw new Error(
            `could not create a scratch database in ${redact(ctx.databaseUrl)} (${e instanceof Error ? e.message : e}); grant CREATEDB, or set BENCH_PG_SCRATCH=0 to use that database itself`,
          )
        })
        if (!ctx.keepData) cleanups.push(onCleanup(scratch.dispose))
        env.DATABASE_URL = scratch.url!
        where = `PostgreSQL scratch database ${redact(scratch.url!)}${ctx.keepData ? ' (kept)' : ''}`
      }
    }

    // ---- processes ----
    const receiver = await startServer({
      name: `receiver-${backend}`,
      script: join(ROOT, 'test/bench/webhook-receiver.ts'),
      env: {},
      logDir: ctx.logDir,
      readyPath: '/healthz',
    })
    servers.push(receiver)
    const bunArgs = ctx.profileDir ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${join(ctx.profileDir, backend)}`] : undefined
    const service = await startServer({
      name: `service-${backend}`,
      script: join(ROOT, 'src/main.ts'),
      logDir: ctx.logDir,
      readyPath: '/readyz',
      timeoutMs: 60_000,
      bunArgs,
      env: { ...env, ...ctx.serviceEnv },
    })
    servers.push(service)
    console.log(`\n[${backend}] service ${service.baseUrl} on ${where}; receiver ${receiver.baseUrl}`)

    // ---- tenant: a platform, its sandbox accounts, one platform-global endpoint ----
    const platform = expectOk<{ id: string; test_key: string }>(
      'POST /admin/platforms',
      await call(service.baseUrl, 'POST', '/admin/platforms', { token: env.VOICE_ADMIN_TOKEN, body: { name: 'Bench webhooks' } }),
    )
    const accounts: string[] = []
    for (let i = 0; i < s.accounts; i += 5) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(5, s.accounts - i) }, (_, j) =>
          call(service.baseUrl, 'POST', '/v1/accounts', { token: platform.test_key, body: { ...sampleAccount(), name: `Bench Account ${i + j}` } }),
        ),
      )
      for (const r of batch) accounts.push(expectOk<{ id: string }>('POST /v1/accounts', r).id)
    }
    expectOk(
      'POST /v1/webhook_endpoints',
      await call(service.baseUrl, 'POST', '/v1/webhook_endpoints', {
        token: platform.test_key,
        body: { url: `${receiver.baseUrl}/hooks`, description: 'bench receiver' },
      }),
    )

    const produceOpts = { baseUrl: service.baseUrl, key: platform.test_key, accounts, concurrency: s.producers }
    // ---- warm-up (not measured): JIT, connection pools, first lanes ----
    if (s.warmup > 0) {
      const w = await produce(ctx, { ...produceOpts, total: s.warmup, rate: 0, tag: `${backend}-warmup` })
      if (w.commits.length === 0) throw new Error(`no warm-up event was committed: ${w.firstError ?? JSON.stringify(w.statuses)}`)
      const got = await awaitReceipts(receiver, service, w.commits.length, DRAIN_LIMIT_MS)
      if (got.unique === 0) throw new Error(`no warm-up event reached the receiver within ${DRAIN_LIMIT_MS / 1000} s:\n${service.child.tail()}`)
      console.log(`[${backend}] warm-up: ${w.commits.length} events committed, ${got.unique} received`)
    }

    const outcomes: Outcome[] = []
    const rateNote = s.rate > 0 ? `offered at ${num(s.rate)} events/s` : 'as fast as they go'
    console.log(`[${backend}] measuring: ${num(s.events)} events over ${s.accounts} accounts, ${s.producers} requests in flight, ${rateNote} ...`)
    outcomes.push(await measure(backend, 'http', service, receiver, () => produce(ctx, { ...produceOpts, total: s.events, rate: s.rate, tag: backend })))

    const elapsedS = (performance.now() - s.startedAt) / 1000
    if (backend === 'postgres' && s.direct && elapsedS > DIRECT_LATEST_S) {
      console.log(`[${backend}] delivery alone: skipped, ${Math.round(elapsedS)} s of the bench's time are spent already`)
    } else if (backend === 'postgres' && s.direct) {
      const directRate = s.directRate > 0 ? `offered at ${num(s.directRate)} events/s` : 'as fast as they go'
      console.log(
        `[${backend}] measuring delivery alone: ${num(s.events)} events committed straight into the outbox (appendEvents), ${DIRECT_BATCH} per transaction, ${directRate} ...`,
      )
      outcomes.push(
        await measure(backend, 'direct', service, receiver, () =>
          produceDirect(ctx, {
            databaseUrl: env.DATABASE_URL!,
            platformId: platform.id,
            accounts,
            total: s.events,
            rate: s.directRate,
            tag: `${backend}-direct`,
          }),
        ),
      )
    }
    return outcomes
  } finally {
    await Promise.all(servers.map((srv) => srv.stop()))
    for (const c of cleanups) await c().catch((e) => console.warn(`clean-up failed: ${e instanceof Error ? e.message : e}`))
  }
}

const emptyOutcome = (backend: Backend, extra: Partial<Outcome>): Outcome => ({
  backend,
  variant: 'http',
  committed: 0,
  failedRequests: 0,
  statuses: {},
  delivered: 0,
  duplicates: 0,
  unmatched: 0,
  committedPerSec: 0,
  deliveredPerSec: 0,
  latency: { p50: NaN, p90: NaN, p99: NaN, max: NaN },
  produceSeconds: 0,
  drainSeconds: NaN,
  ...extra,
})

function verdict(o: Outcome, s: Settings): { pass: boolean; why: string[] } {
  const why: string[] = []
  if (o.deliveredPerSec < GOAL.minEventsPerSec) why.push(`${num(o.deliveredPerSec)} events/s < ${num(GOAL.minEventsPerSec)}`)
  if (!(o.latency.p99 < GOAL.maxP99Ms)) why.push(`p99 ${num(o.latency.p99, 1)} ms ≥ ${GOAL.maxP99Ms} ms`)
  if (o.delivered !== o.committed) why.push(`${num(o.committed - o.delivered)} committed events not delivered`)
  if (o.committed < s.events) why.push(`only ${num(o.committed)} of ${num(s.events)} events committed (${o.failedRequests} failed requests)`)
  return { pass: why.length === 0, why }
}

const label = (o: Outcome) => (o.variant === 'direct' ? `${o.backend} direct` : o.backend)

function printOutcomes(outcomes: Outcome[], s: Settings) {
  const pad = (x: string, w: number) => (x.length >= w ? x : ' '.repeat(w - x.length) + x)
  const head = ['backend', 'committed/s', 'delivered/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'committed', 'delivered', 'dupes', 'CPU µs/event']
  const widths = [15, 11, 11, 8, 8, 8, 8, 9, 9, 6, 12]
  const row = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : pad(c, widths[i]!))).join('  ')
  console.log(`\n=== webhooks: ${num(s.events)} events, commit (200 from POST /v1/test_helpers/events) to receipt ===`)
  console.log(row(head))
  console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  for (const o of outcomes) {
    if (o.skipped || o.failed) {
      console.log(`${label(o).padEnd(widths[0]!)}  ${o.skipped ? `skipped: ${o.skipped}` : `failed: ${o.failed}`}`)
      continue
    }
    console.log(
      row([
        label(o),
        num(o.committedPerSec),
        num(o.deliveredPerSec),
        num(o.latency.p50, 1),
        num(o.latency.p90, 1),
        num(o.latency.p99, 1),
        num(o.latency.max, 0),
        num(o.committed),
        num(o.delivered),
        num(o.duplicates),
        o.serviceCpuUsPerEvent !== undefined ? num(o.serviceCpuUsPerEvent) : '-',
      ]),
    )
  }
  console.log('(committed/s: committed events over the producing time; delivered/s: delivered events from the first request to the last receipt;')
  const direct = outcomes.some((o) => o.variant === 'direct')
  console.log(` CPU µs/event: CPU of the service process alone (gateway and delivery), per committed event${direct ? ';' : ')'}`)
  if (direct) {
    console.log(
      ` direct: events committed straight into the outbox in transactions of ${DIRECT_BATCH}, ${s.directRate > 0 ? `offered at ${num(s.directRate)} events/s` : 'flat out'}: the delivery engine alone, found by its poll)`,
    )
  }
  for (const o of outcomes) {
    if (o.skipped || o.failed) continue
    const extra: string[] = []
    if (o.failedRequests > 0) extra.push(`${o.failedRequests} producer requests failed (${JSON.stringify(o.statuses)}; first: ${o.firstError})`)
    if (o.unmatched > 0) extra.push(`${o.unmatched} receipts of events the producer did not see committed`)
    if (o.committed !== o.delivered)
      extra.push(`${o.committed - o.delivered} committed events never arrived within ${DRAIN_LIMIT_MS / 1000} s of the last commit`)
    extra.push(
      `producing took ${num(o.produceSeconds, 1)} s, the rest arrived ${Number.isNaN(o.drainSeconds) ? 'not in time' : `${num(o.drainSeconds, 2)} s after the last commit`}`,
    )
    if (o.receiverCpuS !== undefined) extra.push(`receiver CPU ${num(o.receiverCpuS, 1)} s`)
    console.log(`  ${label(o)}: ${extra.join('; ')}`)
  }
  console.log(`\ngoal: ≥ ${num(GOAL.minEventsPerSec)} events/s delivered, p99 commit-to-receipt < ${GOAL.maxP99Ms} ms, every committed event delivered`)
  for (const o of outcomes) {
    if (o.variant === 'direct') continue
    if (o.skipped) {
      console.log(`  ${o.backend.padEnd(9)} SKIPPED (${o.skipped})`)
      continue
    }
    if (o.failed) {
      console.log(`  ${o.backend.padEnd(9)} MISS (the run failed: ${o.failed.split('\n')[0]})`)
      continue
    }
    const v = verdict(o, s)
    console.log(
      `  ${o.backend.padEnd(9)} ${num(o.deliveredPerSec)} events/s, p50 ${num(o.latency.p50, 1)} ms, p99 ${num(o.latency.p99, 1)} ms, ${num(o.delivered)}/${num(o.committed)} delivered, ${o.duplicates} duplicates: ${v.pass ? 'PASS' : 'MISS'}${v.why.length ? ` (${v.why.join('; ')})` : ''}`,
    )
  }
  for (const o of outcomes) {
    if (o.variant !== 'direct') continue
    // Offered at a fixed rate, delivered/s can only approach it: keeping up means within 3% of it.
    const target = s.directRate > 0 ? s.directRate * 0.97 : GOAL.minEventsPerSec
    const keepsUp = o.deliveredPerSec >= target && o.latency.p99 < GOAL.maxP99Ms && o.delivered === o.committed && o.committed === s.events
    console.log(
      `  (delivery alone, not the headline) ${label(o)}: ${num(o.deliveredPerSec)} events/s, p50 ${num(o.latency.p50, 1)} ms, p99 ${num(o.latency.p99, 1)} ms, ${num(o.delivered)}/${num(o.committed)} delivered: ${keepsUp ? 'keeps up' : 'does not keep up'}`,
    )
  }
}

export async function run(ctx: BenchContext): Promise<void> {
  const s: Settings = {
    events: intEnv('BENCH_EVENTS', 20_000),
    accounts: intEnv('BENCH_ACCOUNTS', 20),
    producers: intEnv('BENCH_PRODUCERS', 32),
    rate: intEnv('BENCH_RATE', 0, 0),
    warmup: intEnv('BENCH_WARMUP_EVENTS', 1000, 0),
    direct: process.env.BENCH_DIRECT !== '0',
    directRate: intEnv('BENCH_DIRECT_RATE', GOAL.minEventsPerSec, 0),
    startedAt: performance.now(),
  }
  const results = await eachBackend(ctx, BACKENDS, (backend) => runBackend(ctx, backend, s))
  if (!results) return
  printOutcomes(
    results.flatMap((r) => ('outcome' in r ? r.outcome : [emptyOutcome(r.backend, r)])),
    s,
  )
}
