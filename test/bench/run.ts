/**
 * Benchmarks: `npm run bench -- <scenario>` (bun test/bench/run.ts <scenario>).
 *
 * Each scenario starts the real service as its own process, drives it from a
 * second process, and reports; a missed goal is reported, never an error exit. Add
 * a scenario by adding a module under scenarios/ that exports `run(ctx)` and an
 * entry in SCENARIOS below.
 *
 *   api        GET and POST /v1/users vs a bare Bun.serve baseline (PostgreSQL only)
 *   webhooks   20,000 events end to end, commit to receipt, on the embedded default
 *              (its own PostgreSQL server), on PGlite and on PostgreSQL, through the
 *              HTTP API and delivery alone (see scenarios/webhooks.ts for its settings)
 *   calls      simulated calls end to end at high clock speed on the embedded default,
 *              on PGlite and on PostgreSQL (completed calls/s, events committed, peak
 *              in flight, service CPU per call), hang-up command latency, and call
 *              actor density in one process (bytes per live actor); scenarios/calls.ts
 *   routing    route() decisions/s on one core (1,000 extensions, 100 ring groups, 50
 *              queues, nested dial plans) and queue dispatch p99; in process, no service
 *   provisioning  configuration fetches/s (401 challenge + Digest GET) for 10,000 Yealink
 *              desk phones against a freshly restarted service (cold cache; warmed up on
 *              2,000 other phones first), on the embedded default and on PostgreSQL;
 *              scenarios/provisioning.ts
 *   sip        sipp over loopback UDP: REGISTERs/s with digest and calls/s through the
 *              B2BUA, rates ramped until the service falls behind, and relayed RTP's loss
 *              and jitter; sip.ts
 *
 * Environment:
 *   DATABASE_URL        PostgreSQL to use (default postgres://root@127.0.0.1:5432/test);
 *                       without a reachable server a PostgreSQL-only bench says so and
 *                       exits 0, and the others skip their PostgreSQL run
 *   BENCH_DURATION      seconds measured per run (default 10)
 *   BENCH_WARMUP        seconds of warm-up load per target before measuring (default 2)
 *   BENCH_ROUNDS        slices the measured seconds are split into, alternating real
 *                       and baseline so background load hits both alike (default 2)
 *   BENCH_CONNECTIONS   concurrent connections (default 50)
 *   BENCH_ONLY          comma-separated substrings: run only the matching cases
 *   BENCH_SERVICE_ENV   extra env for the service, e.g. "LOG_LEVEL=info,FOO=1"
 *   BENCH_BASELINE_ENV  extra env for the baseline, e.g. "BASELINE_PREPARE=0"
 *   BENCH_KEEP_DATA=1   keep the platform, account and users the bench created
 *   BENCH_PROFILE=DIR   run the service under `bun --cpu-prof --cpu-prof-md`, profiles in DIR
 */
import { mkdtempSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { killAllNow, runCleanups, stopAll } from './lib/processes'
import { reachablePostgres, redact } from './lib/postgres'
import { referenceWorkMs } from './lib/machine-speed'

export interface BenchContext {
  databaseUrl: string
  /** Folder for the logs of the processes the bench starts. */
  logDir: string
  durationS: number
  warmupS: number
  /** The measured seconds are split into this many slices, alternating between targets. */
  rounds: number
  connections: number
  only?: string[]
  serviceEnv: Record<string, string>
  baselineEnv: Record<string, string>
  keepData: boolean
  /** Folder for CPU profiles of the service, when profiling. */
  profileDir?: string
  /** Why PostgreSQL at databaseUrl cannot be used (only for scenarios that do not require it). */
  postgresUnavailable?: string
}

interface Scenario {
  description: string
  /** 'optional': the scenario also runs without PostgreSQL (and reports its run there as skipped). */
  postgres?: 'required' | 'optional'
  /** Its own bound on the whole run, for a scenario whose setup alone is long (default TIME_BUDGET_MS). */
  timeBudgetMs?: number
  run(ctx: BenchContext): Promise<void>
}

const SCENARIOS: Record<string, Scenario> = {
  api: {
    description: 'GET and POST /v1/users on the real service vs a bare Bun.serve doing the same SQL',
    run: async (ctx) => (await import('./scenarios/api')).run(ctx),
  },
  webhooks: {
    description: '20,000 test events to a local receiver: events/s and commit-to-receipt p50/p99, embedded PGlite and PostgreSQL',
    postgres: 'optional',
    run: async (ctx) => (await import('./scenarios/webhooks')).run(ctx),
  },
  calls: {
    description: 'simulated calls at VOICE_CLOCK_SPEED=1000: completed calls/s end to end (embedded PGlite), and live call actors per GiB of heap',
    postgres: 'optional',
    run: async (ctx) => (await import('./scenarios/calls')).run(ctx),
  },
  routing: {
    description: 'route() decisions/s on one core (1,000 extensions, 100 ring groups, 50 queues, nested dial plans), and queue dispatch p99 with 1,000 waiting',
    postgres: 'optional',
    run: async (ctx) => (await import('./scenarios/routing')).run(ctx),
  },
  provisioning: {
    description: 'configuration fetches/s for 10,000 desk phones (Digest challenge and file) from a freshly restarted service, embedded default and PostgreSQL',
    postgres: 'optional',
    // Creating 10,000 devices through the API takes about a minute per backend on 2 busy cores; a run took 300 s.
    timeBudgetMs: 600_000,
    run: async (ctx) => (await import('./scenarios/provisioning')).run(ctx),
  },
  sip: {
    description:
      'sipp over loopback UDP: REGISTERs/s with digest (2,000 lines), calls/s through the B2BUA (INVITE, 407, 200, BYE), rates ramped; relayed RTP loss and jitter',
    postgres: 'optional',
    // Setup through the API, a ramp of REGISTER rates and one of call rates, per backend.
    timeBudgetMs: 600_000,
    run: async (ctx) => (await import('./sip')).run(ctx),
  },
}

/** The whole run is bounded: past this the children are killed and the run fails. */
const TIME_BUDGET_MS = 180_000
const timeBudgetMs = SCENARIOS[process.argv[2] ?? '']?.timeBudgetMs ?? TIME_BUDGET_MS

function usage(): string {
  const names = Object.entries(SCENARIOS).map(([name, s]) => `  ${name.padEnd(12)} ${s.description}`)
  return `usage: npm run bench -- <scenario>\n\nscenarios:\n${names.join('\n')}`
}

function envPairs(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const pair of (raw ?? '').split(',')) {
    const i = pair.indexOf('=')
    if (i > 0) out[pair.slice(0, i).trim()] = pair.slice(i + 1).trim()
  }
  return out
}

function positive(name: string, fallback: number, allowZero = false): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n < 0 || (!allowZero && n === 0)) {
    console.error(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got "${raw}"`)
    process.exit(2)
  }
  return n
}

async function main(): Promise<number> {
  const name = process.argv[2]
  if (!name || name === '--help' || name === '-h') {
    console.log(usage())
    return name ? 0 : 2
  }
  const scenario = SCENARIOS[name]
  if (!scenario) {
    console.error(`unknown scenario "${name}"\n\n${usage()}`)
    return 2
  }

  const pg = await reachablePostgres()
  if ('error' in pg && scenario.postgres !== 'optional') {
    console.log(`bench ${name}: skipped, no PostgreSQL reachable at ${redact(pg.url)} (${pg.error}).`)
    console.log('Start PostgreSQL or set DATABASE_URL=postgres://user@host:port/db to run the bench.')
    return 0
  }

  const ctx: BenchContext = {
    databaseUrl: pg.url,
    logDir: mkdtempSync(join(tmpdir(), `bench-${name}-`)),
    durationS: positive('BENCH_DURATION', 10),
    warmupS: positive('BENCH_WARMUP', 2, true),
    rounds: Math.max(1, Math.round(positive('BENCH_ROUNDS', 2))),
    connections: positive('BENCH_CONNECTIONS', 50),
    only: process.env.BENCH_ONLY
      ? process.env.BENCH_ONLY.split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined,
    serviceEnv: envPairs(process.env.BENCH_SERVICE_ENV),
    baselineEnv: envPairs(process.env.BENCH_BASELINE_ENV),
    keepData: process.env.BENCH_KEEP_DATA === '1',
    profileDir: process.env.BENCH_PROFILE || undefined,
    postgresUnavailable: 'error' in pg ? pg.error : undefined,
  }
  const pgNote = 'error' in pg ? `PostgreSQL not reachable at ${redact(pg.url)} (${pg.error})` : `PostgreSQL at ${redact(pg.url)}`
  console.log(`bench ${name}: ${pgNote}, process logs in ${ctx.logDir}`)
  const load = loadavg()[0]!
  console.log(
    `machine: ${cpus().length} CPUs, load average ${load.toFixed(2)} at start; reference work ${referenceWorkMs().toFixed(0)} ms (allocation-heavy JavaScript, best of 3: compare results only between machines with similar values)`,
  )
  if (load > cpus().length * 0.5) console.log('  note: the machine is busy; throughput and latency will be noisy (a ratio to a baseline less so)')
  const started = performance.now()
  await scenario.run(ctx)
  console.log(`\nbench ${name} finished in ${((performance.now() - started) / 1000).toFixed(1)} s (load average ${loadavg()[0]!.toFixed(2)} at end)`)
  return 0
}

process.on('exit', killAllNow)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, async () => {
    console.error(`\n${signal}: stopping the bench processes`)
    await stopAll()
    await runCleanups()
    process.exit(130)
  })
}
const budget = setTimeout(async () => {
  console.error(`bench: time budget of ${timeBudgetMs / 1000} s spent, stopping`)
  await stopAll()
  await runCleanups()
  process.exit(1)
}, timeBudgetMs)

let code = 1
try {
  code = await main()
} catch (e) {
  console.error(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`)
  code = 1
} finally {
  await stopAll()
  await runCleanups()
  clearTimeout(budget)
}
process.exit(code)
