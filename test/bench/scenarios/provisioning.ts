/**
 * `npm run bench -- provisioning`: configuration fetches per second with a cold cache.
 *
 * Per backend (the embedded default: a PostgreSQL server of its own in a fresh
 * DATA_DIR; then PostgreSQL in a scratch database created for the run and dropped
 * after it, when one is reachable):
 *   1. setup: the real service as its own process (bun src/main.ts), a platform and a
 *      sandbox account, then BENCH_DEVICES Yealink T54W desk phones through
 *      POST /v1/deskphones (half with one line, half with two), BENCH_SETUP_CONCURRENCY
 *      requests in flight; each device's provisioning_credentials are kept;
 *   2. the service is stopped and started again on the same data: a fresh process, so
 *      nothing about the devices is cached in it; BENCH_WARMUP_DEVICES more phones,
 *      made in the setup too, then fetch their files at the same rate and their device
 *      actors finish, before anything is measured: the measured devices' data stays cold
 *      while the process's code is warm (a service that has just started spends about a
 *      quarter of its CPU compiling its JavaScript, which a running one does not; the
 *      calls bench warms up for the same reason);
 *   3. a load process (test/bench/lib/provisioning-load.ts) fetches each device's
 *      `<mac>.cfg` once, as the phone does (GET without credentials → 401 Digest
 *      challenge → GET with the answer → 200 with the file): by default the phones
 *      start their exchanges on a schedule, BENCH_FETCH_RATE per second, as phones
 *      booting independently do (open loop, latency counted from each scheduled
 *      start); with BENCH_FETCH_RATE=0, BENCH_FETCH_CONCURRENCY exchanges in flight
 *      instead, a phone starting when another finishes (closed loop: the most the
 *      service serves, latency then in-flight / throughput by construction);
 *   4. the device actors' work is awaited (a sample's provisioning-events, then every
 *      device's status, over the API), the service is stopped and its database read:
 *      devices synced, `provisioned` history rows and device.provisioned events.
 * Reported: fetches/s (whole exchanges), p50/p99/max of the 401, of the authenticated
 * request and of the exchange, errors, the CPU per fetch of the service and of its
 * database (embedded: the server's processes; a PostgreSQL server on this machine: the
 * backends of the scratch database, from /proc), setup time, and the goal: at
 * least 2,000 fetches/s on the embedded default with p99 under 50 ms (of the exchange),
 * every device provisioned once. A miss is reported, never an error exit.
 *
 * Environment (besides run.ts's DATABASE_URL, BENCH_SERVICE_ENV, BENCH_PROFILE, BENCH_KEEP_DATA):
 *   BENCH_DEVICES            desk phones created and fetched (default 10000)
 *   BENCH_WARMUP_DEVICES     more desk phones fetched before measuring (default 2000; 0: a cold process)
 *   BENCH_FETCH_RATE         exchanges started per second, open loop (default 2100: the goal and 5 %, so
 *                            that the tail of the last exchanges leaves the measured rate above the goal
 *                            when the service keeps up); 0 for the closed loop
 *   BENCH_FETCH_CONCURRENCY  fetch exchanges in flight in the closed loop (default 64)
 *   BENCH_SETUP_CONCURRENCY  POST /v1/deskphones in flight during setup (default 32)
 *   BENCH_BACKENDS           comma-separated: embedded, postgres (default both)
 * (It has no BENCH_DURATION: the run is one fetch per device.)
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openDatabase, queryRows } from '../../../src/db/client'
import { freshDataDir } from '../../support/data-dir'
import { scratchPostgres } from '../../support/scratch-postgres'
import { type CpuMeter, cpuSeconds, cpuUsedBetween } from '../lib/cpu'
import { descendantsCpuSeconds } from '../lib/process-tree'
import { databaseBackendsCpu, redact } from '../lib/postgres'
import { onCleanup, runCaptured } from '../lib/processes'
import { call, ROOT, sampleAccount, type Server, startServer } from '../lib/service'
import type { BenchContext } from '../run'
import { eachBackend } from '../lib/backends'

export const GOAL = { minFetchesPerSec: 2000, maxP99Ms: 50 }

type Backend = 'embedded' | 'postgres'
const BACKENDS: Backend[] = ['embedded', 'postgres']
const LABEL: Record<Backend, string> = { embedded: 'embedded default (PostgreSQL of its own)', postgres: 'PostgreSQL server' }
/** The load process stops starting exchanges after this long. */
const FETCH_LIMIT_MS = 120_000
/** How long the device actors may take, after the last fetch, to record the sample's provisioning. */
const DRAIN_LIMIT_MS = 60_000

interface Settings {
  devices: number
  /** Fetched first, not measured: they warm the process up, not the measured devices' data. */
  warmupDevices: number
  /** Exchanges started per second (open loop), or 0 for the closed loop. */
  fetchRate: number
  fetchConcurrency: number
  setupConcurrency: number
}

interface LoadOut {
  startedAt: number
  endedAt: number
  exchanges: number
  served: string[]
  challengeMs: number[]
  authMs: number[]
  exchangeMs: number[]
  /** When each served exchange was due, ms from the start. */
  startMs: number[]
  failed: number
  statuses: Record<string, number>
  firstError?: string
  /** The load process's own CPU over the exchanges (it shares the machine's cores with the service). */
  cpuUs?: number
}

interface Latency {
  p50: number
  p99: number
  max: number
}

interface Outcome {
  backend: Backend
  skipped?: string
  failed?: string
  where?: string
  setupS?: number
  lines?: number
  restartS?: number
  fetched?: number
  errors?: number
  statuses?: Record<string, number>
  firstError?: string
  fetchesPerSec?: number
  seconds?: number
  challenge?: Latency
  auth?: Latency
  exchange?: Latency
  /** The exchange's latency by the second it was due in: a fresh process's first second against the rest. */
  bySecond?: Latency[]
  serviceCpuUsPerFetch?: number
  /** The embedded PostgreSQL server's processes (children of the service). */
  databaseCpuUsPerFetch?: number
  /** The load process's (HTTP client, digest answers): what the machine's cores spent on the bench itself. */
  loadCpuUsPerFetch?: number
  /** Both, until every device was synced: the device actors' backlog too (and the bench's status polling). */
  serviceCpuUsToSynced?: number
  databaseCpuUsToSynced?: number
  drainS?: number
  /** From the database after the run. */
  synced?: number
  provisionedRows?: number
  devicesWithOneProvisioned?: number
  provisionedEvents?: number
}

function intEnv(name: string, fallback: number, min = 1): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got "${raw}"`)
  return n
}

const num = (n: number | undefined, digits = 0) =>
  n !== undefined && Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '-'

/** The exchanges' latencies grouped by the whole second (from the start) each was due in. */
function latencyBySecond(startMs: number[], exchangeMs: number[]): Latency[] {
  const seconds: number[][] = []
  for (const [i, start] of startMs.entries()) (seconds[Math.floor(start / 1000)] ??= []).push(exchangeMs[i]!)
  return [...seconds].map((values) => latencyOf(values ?? []))
}

function latencyOf(values: number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]! : NaN)
  return { p50: at(50), p99: at(99), max: sorted.at(-1) ?? NaN }
}

const expectOk = <T>(what: string, r: { status: number; body: T }): T => {
  if (r.status !== 200) throw new Error(`${what} failed: ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`)
  return r.body
}

/** Yealink's OUI and the device's number: unique within the run's fresh database. */
const macOf = (i: number) => `001565${i.toString(16).padStart(6, '0')}`

type Store = { kind: 'embedded'; dataDir: string } | { kind: 'postgres'; url: string }

async function withDatabase<R>(store: Store, fn: (q: <T>(text: string) => Promise<T[]>) => Promise<R>): Promise<R> {
  const database = await openDatabase(
    store.kind === 'postgres' ? { databaseUrl: store.url, dataDir: 'memory://' } : { dataDir: store.dataDir, embedded: 'postgres' },
  )
  try {
    return await fn(<T>(text: string) => queryRows<T>(database.db, sql.raw(text)))
  } finally {
    await database.close()
  }
}

/** Creates the devices with `concurrency` requests in flight; returns [mac, username, password, id] of each and the lines made. */
async function createDevices(service: Server, key: string, account: string, s: Settings) {
  const devices: [string, string, string, string][] = []
  let lines = 0
  let next = 0
  const worker = async () => {
    while (next < s.devices + s.warmupDevices) {
      const i = next++
      const lineCount = 1 + (i % 2)
      const r = await call<{ id: string; provisioning_credentials?: { username: string; password: string } }>(service.baseUrl, 'POST', '/v1/deskphones', {
        token: key,
        account,
        body: {
          vendor: 'yealink',
          model: 'T54W',
          mac_address: macOf(i),
          name: `Bench phone ${i}`,
          lines: Array.from({ length: lineCount }, (_, n) => ({ line_number: n + 1, label: `Line ${n + 1}` })),
        },
      })
      const body = expectOk(`POST /v1/deskphones (device ${i})`, r)
      const creds = body.provisioning_credentials
      if (!creds) throw new Error('POST /v1/deskphones answered no provisioning_credentials to the platform key')
      devices.push([macOf(i), creds.username, creds.password, body.id])
      lines += lineCount
    }
  }
  await Promise.all(Array.from({ length: s.setupConcurrency }, worker))
  // The measured devices are the first s.devices made (by index), whatever order the requests ended in.
  const index = (mac: string) => Number.parseInt(mac.slice(6), 16)
  devices.sort((a, b) => index(a[0]) - index(b[0]))
  return { devices: devices.slice(0, s.devices), warmup: devices.slice(s.devices), lines }
}

/** Devices of the account still pending_sync, walking the device list a page at a time. */
async function countPendingSync(service: Server, key: string, account: string): Promise<number> {
  let pending = 0
  let path: string | null = '/v1/devices?limit=100'
  while (path) {
    const page: { data: { status: string }[]; next_page_url: string | null } = expectOk(
      'GET /v1/devices',
      await call(service.baseUrl, 'GET', path, { token: key, account }),
    )
    pending += page.data.filter((d) => d.status === 'pending_sync').length
    path = page.next_page_url ? new URL(page.next_page_url, service.baseUrl).pathname + new URL(page.next_page_url, service.baseUrl).search : null
  }
  return pending
}

async function runBackend(ctx: BenchContext, backend: Backend, s: Settings): Promise<Outcome> {
  const adminToken = `bench-admin-${randomBytes(12).toString('hex')}`
  let store: Store
  let cleanup: () => Promise<void>
  if (backend === 'postgres') {
    const scratch = await scratchPostgres('bench_provisioning', { base: ctx.databaseUrl })
    store = { kind: 'postgres', url: scratch.url! }
    cleanup = onCleanup(async () => {
      if (!ctx.keepData) await scratch.dispose()
    })
  } else {
    const data = freshDataDir('bench-provisioning')
    store = { kind: 'embedded', dataDir: data.dataDir }
    cleanup = onCleanup(async () => {
      if (!ctx.keepData) await data.dispose()
    })
  }
  const where = store.kind === 'postgres' ? `PostgreSQL scratch database ${redact(store.url)}` : `the embedded PostgreSQL server in ${store.dataDir}`
  const env: Record<string, string> = {
    // An empty value is unset for the service's config: never inherit the caller's.
    DATABASE_URL: store.kind === 'postgres' ? store.url : '',
    DATA_DIR: store.kind === 'postgres' ? '' : store.dataDir,
    EMBEDDED_DATABASE: 'postgres',
    NATS_URL: '',
    VOICE_ADMIN_TOKEN: adminToken,
    RATE_LIMIT_PER_SECOND: '0',
    LOG_LEVEL: 'warn',
    VOICE_TEST_KEY: '',
    VOICE_LIVE_KEY: '',
    ...ctx.serviceEnv,
  }
  const start = (phase: string, profile: boolean) =>
    startServer({
      name: `service-provisioning-${backend}-${phase}`,
      script: join(ROOT, 'src/main.ts'),
      logDir: ctx.logDir,
      readyPath: '/readyz',
      timeoutMs: 60_000,
      // Only the measured process is profiled: the setup's would drown it.
      bunArgs: profile && ctx.profileDir ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${join(ctx.profileDir, backend)}`] : undefined,
      env,
    })
  let service: Server | undefined
  let closeDbMeter: (() => Promise<void>) | undefined
  const devicesFile = join(ctx.logDir, `provisioning-devices-${backend}.json`)
  const warmupFile = join(ctx.logDir, `provisioning-warmup-${backend}.json`)
  try {
    // ---- 1. setup ----
    service = await start('setup', false)
    console.log(`\n[${backend}] service ${service.baseUrl} on ${where}${ctx.keepData ? ' (kept)' : ''}`)
    const platform = expectOk<{ test_key: string }>(
      'POST /admin/platforms',
      await call(service.baseUrl, 'POST', '/admin/platforms', { token: adminToken, body: { name: 'Bench provisioning' } }),
    )
    const key = platform.test_key
    const account = expectOk<{ id: string; provisioning_base_url: string }>(
      'POST /v1/accounts',
      await call(service.baseUrl, 'POST', '/v1/accounts', { token: key, body: { ...sampleAccount(), name: 'Bench Provisioning' } }),
    )
    const basePath = new URL(account.provisioning_base_url).pathname.replace(/\/?$/, '/')
    console.log(
      `[${backend}] creating ${num(s.devices)}${s.warmupDevices ? ` (and ${num(s.warmupDevices)} for the warm-up)` : ''} Yealink T54W desk phones (1–2 lines each), ${s.setupConcurrency} requests in flight ...`,
    )
    const setupStart = performance.now()
    const { devices, warmup, lines } = await createDevices(service, key, account.id, s)
    const setupS = (performance.now() - setupStart) / 1000
    console.log(
      `[${backend}] setup: ${num(devices.length + warmup.length)} devices with ${num(lines)} lines in ${num(setupS, 1)} s (${num((devices.length + warmup.length) / setupS)} devices/s)`,
    )
    writeFileSync(devicesFile, JSON.stringify(devices))
    writeFileSync(warmupFile, JSON.stringify(warmup))

    // ---- 2. a fresh process: nothing cached ----
    await service.stop()
    service = undefined
    const restartStart = performance.now()
    service = await start('measured', true)
    const restartS = (performance.now() - restartStart) / 1000

    const runLoad = async (file: string, out: string) => {
      const r = await runCaptured(
        'provisioning-load',
        [
          process.execPath,
          join(ROOT, 'test/bench/lib/provisioning-load.ts'),
          JSON.stringify({
            baseUrl: service!.baseUrl,
            basePath,
            devicesFile: file,
            rate: s.fetchRate,
            concurrency: s.fetchConcurrency,
            deadlineMs: FETCH_LIMIT_MS,
            out,
          }),
        ],
        { cwd: ROOT, env: process.env, timeoutMs: FETCH_LIMIT_MS + 45_000 },
      )
      if (r.code !== 0) throw new Error(`the load process failed (exit ${r.code}):\n${(r.stderr || r.stdout).trim().slice(-2000)}`)
      const load = JSON.parse(readFileSync(out, 'utf8')) as LoadOut
      rmSync(out, { force: true })
      if (load.served.length === 0) throw new Error(`no fetch succeeded: ${load.firstError ?? JSON.stringify(load.statuses)}`)
      return load
    }

    // ---- 2b. the warm-up: other phones fetch and their actors finish; only the measured devices stay pending ----
    if (warmup.length > 0) {
      console.log(`[${backend}] warming up: ${num(warmup.length)} other devices fetch their files, ${loadShape(s)} ...`)
      const warm = await runLoad(warmupFile, join(ctx.logDir, `provisioning-warmup-load-${backend}.json`))
      if (warm.failed > 0) throw new Error(`the warm-up's fetches failed: ${warm.firstError}`)
      const warmStart = performance.now()
      while ((await countPendingSync(service, key, account.id)) > devices.length) {
        if (performance.now() - warmStart > DRAIN_LIMIT_MS) throw new Error('the warm-up devices were not all synced in time')
        await Bun.sleep(250)
      }
    }

    // ---- 3. the fetches ----
    console.log(`[${backend}] measuring: each device fetches its <mac>.cfg once (401 challenge, then Digest), ${loadShape(s)} ...`)
    const pid = service.child.proc.pid
    // The database's CPU: the embedded server's processes (children of the service), or the server's backends for the scratch database.
    const dbMeter: CpuMeter =
      store.kind === 'postgres'
        ? databaseBackendsCpu(store.url)
        : {
            sample: async () => {
              const seconds = descendantsCpuSeconds(pid)
              return new Map(seconds === undefined ? [] : [[pid, seconds]])
            },
            close: async () => {},
          }
    closeDbMeter = dbMeter.close
    const cpu0 = cpuSeconds(pid)
    const dbCpu0 = await dbMeter.sample()
    const load = await runLoad(devicesFile, join(ctx.logDir, `provisioning-load-${backend}.json`))
    const cpu1 = cpuSeconds(pid)
    const dbCpu1 = await dbMeter.sample()
    const seconds = (load.endedAt - load.startedAt) / 1000
    const perFetch = (cpuS: number | undefined) => (cpuS !== undefined ? (cpuS * 1e6) / load.served.length : undefined)

    // ---- 4. the device actors' work: a sample over the API, then every device in the database ----
    const drainStart = performance.now()
    const sample = load.served.slice(-16)
    const idOf = new Map(devices.map(([mac, , , id]) => [mac, id]))
    const pending = new Set(sample)
    while (pending.size > 0 && performance.now() - drainStart < DRAIN_LIMIT_MS) {
      if (service.child.proc.exitCode !== null) throw new Error(`the service exited:\n${service.child.tail()}`)
      for (const mac of [...pending]) {
        const history = expectOk<{ data: { type: string }[] }>(
          'GET provisioning-events',
          await call(service.baseUrl, 'GET', `/v1/deskphones/${idOf.get(mac)}/provisioning-events`, { token: key, account: account.id }),
        )
        if (history.data.some((e) => e.type === 'provisioned')) pending.delete(mac)
      }
      if (pending.size > 0) await Bun.sleep(100)
    }
    // Then every device: the actors work through their messages in no set order.
    let stillPending = Number.NaN
    while (pending.size === 0 && performance.now() - drainStart < DRAIN_LIMIT_MS) {
      stillPending = await countPendingSync(service, key, account.id)
      if (stillPending === 0) break
      await Bun.sleep(250)
    }
    const drainS = stillPending === 0 ? (performance.now() - drainStart) / 1000 : NaN
    const cpu2 = cpuSeconds(pid)
    const dbCpu2 = await dbMeter.sample()
    await dbMeter.close()
    closeDbMeter = undefined
    await service.stop()
    service = undefined
    const counts = await withDatabase(store, async (q) => {
      const [synced] = await q<{ n: number }>(`select count(*)::int as n from devices where status = 'synced'`)
      const [rows] = await q<{ n: number; devices: number }>(
        `select count(*)::int as n, count(distinct device_id)::int as devices from provisioning_events where type = 'provisioned'`,
      )
      const [events] = await q<{ n: number }>(`select count(*)::int as n from events where type = 'device.provisioned'`)
      return { synced: synced?.n ?? 0, provisionedRows: rows?.n ?? 0, devicesWithOneProvisioned: rows?.devices ?? 0, provisionedEvents: events?.n ?? 0 }
    })
    return {
      backend,
      where,
      setupS,
      lines,
      restartS,
      fetched: load.served.length,
      errors: load.failed,
      statuses: load.statuses,
      firstError: load.firstError,
      fetchesPerSec: seconds > 0 ? load.served.length / seconds : 0,
      seconds,
      challenge: latencyOf(load.challengeMs),
      auth: latencyOf(load.authMs),
      exchange: latencyOf(load.exchangeMs),
      bySecond: latencyBySecond(load.startMs, load.exchangeMs),
      serviceCpuUsPerFetch: perFetch(cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined),
      databaseCpuUsPerFetch: perFetch(cpuUsedBetween(dbCpu0, dbCpu1)),
      loadCpuUsPerFetch: load.cpuUs !== undefined && load.served.length > 0 ? load.cpuUs / load.served.length : undefined,
      drainS,
      serviceCpuUsToSynced: perFetch(cpu0 !== undefined && cpu2 !== undefined ? cpu2 - cpu0 : undefined),
      databaseCpuUsToSynced: perFetch(cpuUsedBetween(dbCpu0, dbCpu2)),
      ...counts,
    }
  } finally {
    await closeDbMeter?.()
    await service?.stop()
    rmSync(devicesFile, { force: true })
    rmSync(warmupFile, { force: true })
    await cleanup()
  }
}

function verdict(o: Outcome, s: Settings): string[] {
  const why: string[] = []
  if ((o.fetchesPerSec ?? 0) < GOAL.minFetchesPerSec) why.push(`${num(o.fetchesPerSec)} fetches/s < ${num(GOAL.minFetchesPerSec)}`)
  if (!((o.exchange?.p99 ?? NaN) < GOAL.maxP99Ms)) why.push(`exchange p99 ${num(o.exchange?.p99, 1)} ms ≥ ${GOAL.maxP99Ms} ms`)
  if (o.fetched !== s.devices) why.push(`${num(s.devices - (o.fetched ?? 0))} devices got no file`)
  const all = s.devices + s.warmupDevices
  if (o.provisionedEvents !== all) why.push(`${num(o.provisionedEvents)} device.provisioned events for ${num(all)} devices`)
  return why
}

const loadShape = (s: Settings) =>
  s.fetchRate > 0 ? `exchanges started at ${num(s.fetchRate)}/s (open loop)` : `${s.fetchConcurrency} exchanges in flight (closed loop)`

function print(outcomes: Outcome[], s: Settings) {
  const lines: string[] = []
  for (const o of outcomes) {
    if (o.skipped || o.failed) continue
    const warm = s.warmupDevices ? `, after a warm-up of ${num(s.warmupDevices)} other devices` : ', a process just started'
    console.log(`\n=== provisioning: ${LABEL[o.backend]}, ${num(s.devices)} devices, cold cache${warm}, ${loadShape(s)} ===`)
    console.log(`  store       ${o.where}`)
    console.log(
      `  setup       ${num(s.devices + s.warmupDevices)} desk phones (${num(s.warmupDevices)} for the warm-up), ${num(o.lines)} lines through POST /v1/deskphones in ${num(o.setupS, 1)} s (${num((s.devices + s.warmupDevices) / (o.setupS ?? NaN))}/s); restart to a fresh process ${num(o.restartS, 1)} s`,
    )
    console.log(`  fetches     ${num(o.fetched)} in ${num(o.seconds, 2)} s = ${num(o.fetchesPerSec)} fetches/s (each a 401 challenge and an authenticated 200)`)
    console.log(`  latency     401 challenge     p50 ${num(o.challenge?.p50, 1)} ms, p99 ${num(o.challenge?.p99, 1)} ms, max ${num(o.challenge?.max, 0)} ms`)
    console.log(`              authenticated GET p50 ${num(o.auth?.p50, 1)} ms, p99 ${num(o.auth?.p99, 1)} ms, max ${num(o.auth?.max, 0)} ms`)
    console.log(`              whole exchange    p50 ${num(o.exchange?.p50, 1)} ms, p99 ${num(o.exchange?.p99, 1)} ms, max ${num(o.exchange?.max, 0)} ms`)
    if (o.bySecond?.length) console.log(`              exchange p99 by the second it was due in: ${o.bySecond.map((l) => num(l.p99, 0)).join(', ')} ms`)
    console.log(`  errors      ${num(o.errors)}${o.errors ? ` ${JSON.stringify(o.statuses)}; first: ${o.firstError}` : ''}`)
    const database = (us: number | undefined) =>
      us === undefined
        ? ''
        : o.backend === 'embedded'
          ? `, its PostgreSQL server ${num(us)} µs more`
          : `, the server's backends for its database ${num(us)} µs more`
    console.log(
      `  CPU         while the load ran: the service ${num(o.serviceCpuUsPerFetch)} µs per fetch${database(o.databaseCpuUsPerFetch)}; until every device was synced: ${num(o.serviceCpuUsToSynced)} µs${database(o.databaseCpuUsToSynced)}`,
    )
    console.log(
      `              (the service process: both requests, the lookups, the fetch's commit and the device actors' steps; the later figure also the bench's status polling${o.databaseCpuUsPerFetch === undefined ? '; the PostgreSQL server not measured' : ''})`,
    )
    if (o.loadCpuUsPerFetch !== undefined)
      console.log(`              the load process (the phones' side, on the same cores): ${num(o.loadCpuUsPerFetch)} µs per fetch`)
    if (o.drainS !== undefined && o.seconds !== undefined && Number.isFinite(o.drainS)) {
      console.log(
        `  end to end  ${num(s.devices)} devices synced within ${num(o.seconds + o.drainS, 1)} s of the first fetch = ${num(s.devices / (o.seconds + o.drainS))} devices provisioned/s`,
      )
    }
    console.log(
      `  provisioned ${s.warmupDevices ? `(the warm-up's ${num(s.warmupDevices)} devices included) ` : ''}${num(o.provisionedEvents)} device.provisioned events, ${num(o.provisionedRows)} 'provisioned' history rows over ${num(o.devicesWithOneProvisioned)} devices, ${num(o.synced)} devices synced; every device synced ${Number.isNaN(o.drainS) ? `NOT within ${DRAIN_LIMIT_MS / 1000} s of the last fetch` : `${num(o.drainS, 2)} s after the last fetch`}`,
    )
  }
  console.log(
    `\ngoal: ≥ ${num(GOAL.minFetchesPerSec)} fetches/s with a cold cache on the embedded default, exchange p99 < ${GOAL.maxP99Ms} ms, each device provisioned once`,
  )
  for (const o of outcomes) {
    const label = o.backend.padEnd(9)
    if (o.skipped) lines.push(`  ${label} SKIPPED (${o.skipped})`)
    else if (o.failed) lines.push(`  ${label} MISS (the run failed: ${o.failed.split('\n')[0]})`)
    else {
      const why = verdict(o, s)
      const headline = o.backend === 'embedded' ? '' : ' (not the goal’s backend)'
      lines.push(
        `  ${label} ${num(o.fetchesPerSec)} fetches/s, exchange p99 ${num(o.exchange?.p99, 1)} ms (authenticated GET p99 ${num(o.auth?.p99, 1)} ms), ${num(o.provisionedEvents)}/${num(s.devices + s.warmupDevices)} provisioned: ${why.length ? 'MISS' : 'PASS'}${why.length ? ` (${why.join('; ')})` : ''}${headline}`,
      )
    }
  }
  for (const l of lines) console.log(l)
}

export async function run(ctx: BenchContext): Promise<void> {
  const s: Settings = {
    devices: intEnv('BENCH_DEVICES', 10_000),
    warmupDevices: intEnv('BENCH_WARMUP_DEVICES', 2_000, 0),
    fetchRate: intEnv('BENCH_FETCH_RATE', Math.round(GOAL.minFetchesPerSec * 1.05), 0),
    fetchConcurrency: intEnv('BENCH_FETCH_CONCURRENCY', 64),
    setupConcurrency: intEnv('BENCH_SETUP_CONCURRENCY', 32),
  }
  const results = await eachBackend(ctx, BACKENDS, (backend) => runBackend(ctx, backend, s))
  if (!results) return
  print(
    results.map((r) => ('outcome' in r ? r.outcome : r)),
    s,
  )
}
