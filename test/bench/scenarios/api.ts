/**
 * `npm run bench -- api`: the gateway's cost on two everyday routes, against a bare
 * Bun.serve baseline (test/bench/baseline.ts) doing the same SQL per request.
 *
 *   list users    GET  /v1/users?limit=10  (secret key + Service-Account)
 *   create user   POST /v1/users           (unique email per request)
 */
import { join } from 'node:path'
import postgres from 'postgres'
import { scratchPostgres } from '../../support/scratch-postgres'
import type { BenchContext } from '../run'
import { cpuSeconds } from '../lib/cpu'
import { onCleanup } from '../lib/processes'
import { mergeResults, runLoad, type LoadOptions, type LoadResult } from '../lib/load'
import { printComparisons, type Comparison, type Goal } from '../lib/report'
import { call, createTenant, ROOT, startRealService, startServer, type Server, type Tenant } from '../lib/service'

export const GOAL: Goal = { minRatio: 0.7, maxP99Ms: 25, connections: 50 }
const SEED_USERS = 50

interface Case {
  name: string
  /** false: issue 8 sets this route a throughput ratio only, no p99 bound. */
  latencyGoal?: boolean
  load(base: string, t: Tenant, runTag: string): LoadOptions
  /** Checks one answer of this route so a broken server is not benchmarked. */
  check(base: string, t: Tenant): Promise<void>
}

const headersOf = (t: Tenant, json = false): Record<string, string> => ({
  authorization: `Bearer ${t.key}`,
  'service-account': t.accountId,
  ...(json ? { 'content-type': 'application/json' } : {}),
})

const CASES: Case[] = [
  {
    name: 'GET /v1/users',
    load: (base, t) => ({ url: `${base}/v1/users?limit=10`, method: 'GET', headers: headersOf(t) }),
    async check(base, t) {
      const r = await call(base, 'GET', '/v1/users?limit=10', { token: t.key, account: t.accountId })
      if (r.status !== 200 || r.body?.object !== 'list' || r.body.data?.length !== 10 || !r.body.next_page_url) {
        throw new Error(`${base} GET /v1/users answered ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`)
      }
    },
  },
  {
    name: 'POST /v1/users',
    latencyGoal: false,
    load: (base, t, tag) => ({
      url: `${base}/v1/users`,
      method: 'POST',
      headers: headersOf(t, true),
      uniqueEmail: { name: 'Bench User', prefix: `bench-${tag}` },
    }),
    async check(base, t) {
      const r = await call(base, 'POST', '/v1/users', {
        token: t.key,
        account: t.accountId,
        body: { name: 'Check', email: `check-${crypto.randomUUID()}@example.com` },
      })
      if (r.status !== 200 || r.body?.object !== 'user') throw new Error(`${base} POST /v1/users answered ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`)
    },
  },
]

/** Same keys at the top level and in a list item: the baseline must answer like the real route. */
async function compareShapes(real: string, baseline: string, t: Tenant) {
  const a = await call(real, 'GET', '/v1/users?limit=10', { token: t.key, account: t.accountId })
  const b = await call(baseline, 'GET', '/v1/users?limit=10', { token: t.key, account: t.accountId })
  const keys = (o: unknown) =>
    Object.keys((o ?? {}) as object)
      .sort()
      .join(',')
  if (keys(a.body) !== keys(b.body) || keys(a.body.data?.[0]) !== keys(b.body.data?.[0])) {
    throw new Error(
      `baseline answers a different shape:\n real:     ${JSON.stringify(a.body).slice(0, 400)}\n baseline: ${JSON.stringify(b.body).slice(0, 400)}`,
    )
  }
}

/**
 * Real route and baseline under the same load, in alternating slices (real, baseline,
 * real, baseline ...) so that a change in background load on the machine hits both
 * alike; each side's slices are merged into one result.
 */
async function measurePair(
  name: string,
  ctx: BenchContext,
  real: { server: Server; opts: LoadOptions },
  baseline: { server: Server; opts: LoadOptions },
): Promise<Comparison> {
  const sides = [
    { label: 'real', ...real, runs: [] as LoadResult[] },
    { label: 'baseline', ...baseline, runs: [] as LoadResult[] },
  ]
  const load = (opts: LoadOptions, duration: number) => runLoad({ ...opts, connections: ctx.connections, duration })
  if (ctx.warmupS > 0) for (const side of sides) await load(side.opts, ctx.warmupS)
  const slice = ctx.durationS / ctx.rounds
  for (let round = 0; round < ctx.rounds; round++) {
    for (const side of sides) {
      const pid = side.server.child.proc.pid
      const cpu0 = cpuSeconds(pid)
      const r = await load(side.opts, slice)
      const cpu1 = cpuSeconds(pid)
      side.runs.push({ ...r, serverCpuS: cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined })
    }
  }
  const [r, b] = sides.map((side) => {
    const merged = mergeResults(side.runs)
    const codes = Object.entries(merged.statusCodes)
      .map(([c, n]) => `${c}×${n}`)
      .join(' ')
    const slices = side.runs.map((x) => Math.round(x.requestsPerSec)).join(' / ')
    const cpu = merged.serverCpuS !== undefined && merged.total > 0 ? `  server CPU ${Math.round((merged.serverCpuS * 1e6) / merged.total)} µs/req` : ''
    console.log(
      `  ${`${name} (${side.label})`.padEnd(28)} ${Math.round(merged.requestsPerSec).toString().padStart(6)} req/s (slices ${slices})  p50 ${merged.latency.p50} ms  p99 ${merged.latency.p99} ms  [${codes}] non-2xx ${merged.non2xx}${cpu}`,
    )
    return merged
  })
  return { scenario: name, real: r!, baseline: b! }
}

async function removeTenant(databaseUrl: string, t: Tenant) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    await sql`delete from audit_logs where platform_id = ${t.platformId}`
    await sql`delete from platforms where id = ${t.platformId}`
  } finally {
    await sql.end({ timeout: 2 })
  }
}

export async function run(benchCtx: BenchContext): Promise<void> {
  const runTag = Date.now().toString(36)
  const servers: Server[] = []
  let tenant: Tenant | undefined
  let removeData: (() => Promise<void>) | undefined
  // A database of the run's own: the service seals its server keys under its own master key, which the
  // shared database of the tests (sealed under theirs) must never see.
  const scratch = await scratchPostgres('bench_api', { base: benchCtx.databaseUrl })
  const ctx = { ...benchCtx, databaseUrl: scratch.url! }
  try {
    const overrides = Object.entries(ctx.serviceEnv)
      .map(([k, v]) => `, ${k}=${v}`)
      .join('')
    console.log(`starting the service (bun src/main.ts, LOG_LEVEL=warn, RATE_LIMIT_PER_SECOND=0${overrides}) ...`)
    const bunArgs = ctx.profileDir ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${ctx.profileDir}`] : undefined
    const real = await startRealService({ databaseUrl: ctx.databaseUrl, logDir: ctx.logDir, env: ctx.serviceEnv, bunArgs })
    servers.push(real)
    const created = await createTenant(real, SEED_USERS)
    tenant = created
    if (!ctx.keepData) removeData = onCleanup(() => removeTenant(ctx.databaseUrl, created))
    console.log(`  platform ${tenant.platformId}, sandbox account ${tenant.accountId}, ${SEED_USERS} users`)

    console.log('starting the baseline (test/bench/baseline.ts) ...')
    const baseline = await startServer({
      name: 'baseline',
      script: join(ROOT, 'test/bench/baseline.ts'),
      logDir: ctx.logDir,
      readyPath: '/healthz',
      env: { DATABASE_URL: ctx.databaseUrl, ...ctx.baselineEnv },
    })
    servers.push(baseline)
    await compareShapes(real.baseUrl, baseline.baseUrl, tenant)

    console.log(
      `load: autocannon in a separate node process, ${ctx.connections} connections; per target ${ctx.warmupS} s warm-up, then ${ctx.durationS} s measured in ${ctx.rounds} slice(s) alternating with the other target\n`,
    )
    const comparisons: Comparison[] = []
    for (const c of CASES) {
      if (ctx.only && !ctx.only.some((o) => c.name.includes(o))) continue
      await c.check(real.baseUrl, tenant)
      await c.check(baseline.baseUrl, tenant)
      const measured = await measurePair(
        c.name,
        ctx,
        { server: real, opts: c.load(real.baseUrl, tenant, `${runTag}-r`) },
        { server: baseline, opts: c.load(baseline.baseUrl, tenant, `${runTag}-b`) },
      )
      comparisons.push({ ...measured, latencyGoal: c.latencyGoal })
    }
    printComparisons(`api: real route vs bare Bun.serve baseline (same SQL, PostgreSQL)`, comparisons, { ...GOAL, connections: ctx.connections })
  } finally {
    await Promise.all(servers.map((s) => s.stop()))
    await removeData?.().catch((e) => console.warn(`could not remove the bench data of ${tenant?.platformId}: ${e.message}`))
    if (!ctx.keepData) await scratch.dispose()
  }
}
