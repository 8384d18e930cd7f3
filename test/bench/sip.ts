/**
 * `npm run bench -- sip`: the media role's SIP server under sipp (Debian sip-tester),
 * over UDP on loopback (issue 11, "Must show, measured").
 *
 * Per backend (the embedded default: a PostgreSQL server of its own in a fresh
 * DATA_DIR; then PostgreSQL in a scratch database, when one is reachable):
 *   0. the real service as its own process (bun src/main.ts, every role, SIP on a free
 *      port of 127.0.0.1, RTP on RTP_PORT_MIN..MAX 12000..19999), a platform, and through
 *      the API: one account with BENCH_SIP_LINES desk phone lines (Yealink T54W, 16
 *      lines each, no user), and BENCH_SIP_PAIRS accounts with a caller and a callee
 *      (each a user, an extension — the callee's is 100 — and a line of one desk phone).
 *      The lines' SIP credentials are read back through GET /v1/deskphones/{id}/lines.
 *   1. REGISTER: sipp (test/bench/sip/register.xml: REGISTER, 401, REGISTER with the
 *      digest answer, 200) walks the lines (injection file, SEQUENTIAL) at each rate of
 *      BENCH_SIP_REG_RATES for BENCH_SIP_STEP_S seconds, at most BENCH_SIP_LIMIT
 *      exchanges in flight (-l); each rate: successful REGISTERs/s (the 200s over the
 *      window from the first to the last), failures, retransmissions, the exchange's
 *      p50/p99, and the CPU of the service (and of its embedded PostgreSQL server) per
 *      REGISTER. The ramp stops at the first rate the service does not keep up with
 *      (a failure, or under 95 % of the rate).
 *   2. Calls through the B2BUA: the callee lines register from one UDP port, where a
 *      sipp UAS (sip/uas.xml: 180, 200, ACK, BYE, 200; no RTP) answers every call; a
 *      sipp UAC (sip/uac.xml: INVITE, 407, ACK, INVITE with the digest answer, 180,
 *      200, ACK, BYE after BENCH_SIP_HOLD_MS, 200) calls extension 100 from the caller
 *      lines, one pair after the other, at each rate of BENCH_SIP_CPS_RATES for
 *      BENCH_SIP_STEP_S seconds. Each call is a call actor: its RING, ANSWER and HANGUP
 *      are durable messages and its events are committed, so the database is in the
 *      path, as in the `calls` bench. Each rate: answered calls/s, failed calls, the
 *      set-up time (INVITE to 200) p50/p99, CPU per call; the ramp stops at the first
 *      rate with a failed call or under 95 % of the rate.
 *   3. Relayed RTP: the answering sipp again, echoing the audio it gets (-rtp_echo), and
 *      BENCH_SIP_RTP_CALLS calls from sip/uac-rtp.xml, started over 5 s and each held
 *      BENCH_SIP_RTP_HOLD_MS while the caller plays µ-law (made by sox) through the
 *      B2BUA: loss, jitter and MOS as the B2BUA measured them (its recentMedia()
 *      figures, which it stores per call in call_quality), both legs.
 *   After the runs, the call log (calls rows by status) and the call quality are read
 *   from the stopped service's database.
 * Goals: ≥ 2,000 REGISTERs/s with digest; ≥ 500 calls/s through the B2BUA with no
 * failed call. A miss is reported, never an error exit.
 *
 * Environment (besides run.ts's DATABASE_URL, BENCH_SERVICE_ENV, BENCH_PROFILE, BENCH_KEEP_DATA):
 *   BENCH_SIP_LINES       lines for the REGISTER run (default 2000)
 *   BENCH_SIP_REG_RATES   REGISTER rates tried, per second (default 250,500,1000,2000,3000)
 *   BENCH_SIP_PAIRS       caller/callee accounts for the call run (default 20)
 *   BENCH_SIP_CPS_RATES   call rates tried, per second (default 50,100,150,200,300,500,700)
 *   BENCH_SIP_HOLD_MS     how long each call stays answered (default 1000)
 *   BENCH_SIP_STEP_S      seconds per rate (default 5)
 *   BENCH_SIP_LIMIT       most exchanges or calls in flight per sipp (default 3000)
 *   BENCH_SIP_SIPP_ARGS   extra arguments for the measuring sipp runs, e.g. "-trace_msg" (with BENCH_KEEP_DATA=1
 *                         the files stay in the log folder)
 *   BENCH_SIP_RTP_CALLS   relayed-RTP calls at once (default 500; 0: none)
 *   BENCH_SIP_RTP_HOLD_MS how long each relayed-RTP call lasts (default 10000)
 *   BENCH_ONLY            register, calls and/or rtp (default all three)
 *   BENCH_BACKENDS        comma-separated: embedded, postgres (default both)
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openDatabase, queryRows } from '../../src/db/client'
import { freshDataDir } from '../support/data-dir'
import { scratchPostgres } from '../support/scratch-postgres'
import { eachBackend } from './lib/backends'
import { cpuSeconds } from './lib/cpu'
import { redact } from './lib/postgres'
import { descendantsCpuSeconds } from './lib/process-tree'
import { freePort, onCleanup, spawnLogged, stopChild } from './lib/processes'
import { call, ROOT, sampleAccount, type Server, startServer } from './lib/service'
import { watchUdpDrops, withReceiveBufferDefault } from './lib/udp-receive'
import type { BenchContext } from './run'

export const GOAL = { registersPerSec: 2000, callsPerSec: 500, relayCallsPerCore: 500, relayLoss: 0.001, relayAddedJitterMs: 5 }

type Backend = 'embedded' | 'postgres'
const BACKENDS: Backend[] = ['embedded', 'postgres']
const LABEL: Record<Backend, string> = { embedded: 'embedded default (PostgreSQL of its own)', postgres: 'PostgreSQL server' }
const SCENARIOS = join(ROOT, 'test/bench/sip')
/** The service's RTP ports: below the ephemeral ports (Linux: 32768..60999), where the sipp ports come from, and above those of sipp's rtp_stream (8000 up). */
const SERVICE_RTP_PORTS = { min: 12000, max: 19999 }
const ECHO_RECEIVE_BUFFER = 4 * 1024 * 1024
const LINES_PER_PHONE = 16
/** A rate is kept up with when this share of it is achieved with no failure. */
const KEPT_UP = 0.95

interface Settings {
  lines: number
  regRates: number[]
  pairs: number
  cpsRates: number[]
  holdMs: number
  stepS: number
  limit: number
  rtpCalls: number
  rtpHoldMs: number
}

interface Credentials {
  username: string
  password: string
  domain: string
}

interface Latency {
  p50: number
  p99: number
  max: number
}

/** One sipp run at one rate. */
interface Step {
  rate: number
  attempted: number
  succeeded: number
  failed: number
  retransmissions: number
  /** Successes per second over the window from the first success to the last. */
  achieved: number
  windowS: number
  latency: Latency
  serviceCpuUs: number | undefined
  databaseCpuUs: number | undefined
  /** The same net of what the service (its database) uses with no load over the step's time. */
  serviceNetCpuUs: number | undefined
  databaseNetCpuUs: number | undefined
  /** Cores the service (its database) used during the step. */
  serviceCores: number | undefined
  databaseCores: number | undefined
  /** The load generator's own CPU per success (sipp, one core at most). */
  sippCpuUs: number | undefined
  load: number
  exitCode: number
  firstError?: string
  keptUp: boolean
}

/** The relayed-RTP run: sipp's figures, and what says where the time and the packets went. */
interface RelayRun {
  step: Step
  startedAt: number
  calls: number
  /** Cores the service used while every call was up and relaying (the set-ups and hang-ups outside it). */
  steadyCores: number | undefined
  /** Datagrams the kernel dropped at the service's RTP sockets (their receive buffers full); undefined without /proc. */
  serviceDrops: number | undefined
  /** ...and at the load generator's echo socket: loss the B2BUA measures but did not cause. */
  echoDrops: number | undefined
}

interface Outcome {
  backend: Backend
  where: string
  setupS: number
  register?: Step[]
  registerError?: string
  calls?: Step[]
  callsError?: string
  uasFailed?: number
  callLog?: Record<string, number>
  rtp?: RelayRun
  quality?: Quality
  /** Seconds after the call run until the service (and its database) used under 10 % of a core. */
  drainS?: number
  callEvents?: Record<string, number>
}

function intEnv(name: string, fallback: number, min = 0): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got "${raw}"`)
  return n
}

function ratesEnv(name: string, fallback: number[]): number[] {
  const raw = process.env[name]
  if (!raw) return fallback
  const rates = raw.split(',').map((s) => Number(s.trim()))
  if (rates.some((r) => !Number.isFinite(r) || r <= 0)) throw new Error(`${name} must be comma-separated positive rates, got "${raw}"`)
  return rates
}

const num = (n: number | undefined, digits = 0) =>
  n !== undefined && Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '-'

function latencyOf(values: number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]! : NaN)
  return { p50: at(50), p99: at(99), max: sorted.at(-1) ?? NaN }
}

const expectOk = <T>(what: string, r: { status: number; body: T }): T => {
  if (r.status !== 200) throw new Error(`${what} failed: ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`)
  return r.body
}

/** Runs `fn` over 0..n-1 with `concurrency` in flight. */
async function pool(n: number, concurrency: number, fn: (i: number) => Promise<void>) {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) await fn(next++)
    }),
  )
}

const auth = (c: Credentials) => `[authentication username=${c.username} password=${c.password}]`

/**
 * sipp 3.6 reads a password that starts with "0x" as hex (for AKA keys) and so answers
 * the MD5 challenge wrongly (a 403): about one line in 4,096 gets such a password.
 * Those lines are left out; a phone has no such quirk.
 */
const sippCanUse = (c: Credentials) => !/^0x/i.test(c.password)

// ---------------------------------------------------------------- setup

interface Pair {
  account: string
  caller: Credentials
  callee: Credentials
  calleeUser: string
}

async function setup(service: Server, adminToken: string, s: Settings, want: (what: string) => boolean) {
  const platform = expectOk<{ test_key: string }>(
    'POST /admin/platforms',
    await call(service.baseUrl, 'POST', '/admin/platforms', { token: adminToken, body: { name: 'Bench SIP' } }),
  )
  const key = platform.test_key
  const newAccount = async (name: string) =>
    expectOk<{ id: string }>('POST /v1/accounts', await call(service.baseUrl, 'POST', '/v1/accounts', { token: key, body: { ...sampleAccount(), name } })).id
  const linesOf = async (account: string, phone: string) =>
    expectOk<{ data: { line_number: number; sip_credentials?: Credentials }[] }>(
      'GET /v1/deskphones/{id}/lines',
      await call(service.baseUrl, 'GET', `/v1/deskphones/${phone}/lines?limit=100`, { token: key, account }),
    ).data.map((l) => {
      if (!l.sip_credentials) throw new Error('GET /v1/deskphones/{id}/lines showed no sip_credentials to the platform key')
      return { line: l.line_number, credentials: l.sip_credentials }
    })
  let macs = 0
  const mac = () => `001565${(macs++).toString(16).padStart(6, '0')}`.toUpperCase()

  // The REGISTER run's lines: one account, T54W phones of 16 lines each, no user.
  const registerLines: Credentials[] = []
  if (want('register') && s.lines > 0) {
    const account = await newAccount('Bench SIP lines')
    const phones = Math.ceil(s.lines / LINES_PER_PHONE)
    await pool(phones, 16, async (p) => {
      const count = Math.min(LINES_PER_PHONE, s.lines - p * LINES_PER_PHONE)
      const phone = expectOk<{ id: string }>(
        'POST /v1/deskphones',
        await call(service.baseUrl, 'POST', '/v1/deskphones', {
          token: key,
          account,
          body: {
            vendor: 'yealink',
            model: 'T54W',
            mac_address: mac(),
            name: `Bench SIP phone ${p}`,
            lines: Array.from({ length: count }, (_, n) => ({ line_number: n + 1, label: `Line ${n + 1}` })),
          },
        }),
      )
      for (const l of await linesOf(account, phone.id)) if (sippCanUse(l.credentials)) registerLines.push(l.credentials)
    })
  }

  // The call run's pairs: an account each, so every callee is extension 100 (sipp has one digest uri per run).
  const pairs: Pair[] = []
  if (want('calls') || want('rtp')) {
    await pool(s.pairs, 8, async (i) => {
      const account = await newAccount(`Bench SIP calls ${i}`)
      const c = { token: key, account }
      const user = async (name: string) =>
        expectOk<{ id: string }>(
          'POST /v1/users',
          await call(service.baseUrl, 'POST', '/v1/users', { ...c, body: { name, email: `${name.toLowerCase()}-${i}@example.com` } }),
        ).id
      const extension = async (number: string, target: string) =>
        expectOk<{ id: string }>('POST /v1/extensions', await call(service.baseUrl, 'POST', '/v1/extensions', { ...c, body: { number, target } })).id
      const [callerUser, calleeUser] = [await user('Caller'), await user('Callee')]
      const [callerExt, calleeExt] = [await extension('200', callerUser), await extension('100', calleeUser)]
      const phone = expectOk<{ id: string }>(
        'POST /v1/deskphones',
        await call(service.baseUrl, 'POST', '/v1/deskphones', {
          ...c,
          body: {
            vendor: 'yealink',
            model: 'T54W',
            mac_address: mac(),
            name: `Bench SIP pair ${i}`,
            lines: [
              { line_number: 1, user: callerUser, extension: callerExt, label: 'Caller' },
              { line_number: 2, user: calleeUser, extension: calleeExt, label: 'Callee' },
            ],
          },
        }),
      )
      const lines = await linesOf(account, phone.id)
      const byNumber = (n: number) => lines.find((l) => l.line === n)!.credentials
      const pair = { account, caller: byNumber(1), callee: byNumber(2), calleeUser }
      if (sippCanUse(pair.caller) && sippCanUse(pair.callee)) pairs.push(pair)
    })
  }
  return { key, registerLines, pairs }
}

// ---------------------------------------------------------------- sipp

interface SippRun {
  exitCode: number
  output: string
  /** The last row of the -trace_stat file, by column. */
  stat: Record<string, string>
  /** [ms since the epoch, response time 1 in ms] per successful call (-trace_rtt). */
  rtts: [number, number][]
  firstError?: string
  /** sipp's own CPU time, µs. */
  cpuUs?: number
}

/**
 * sipp's SIP socket gets a 4 MiB buffer (-buff_size; the kernel caps it at
 * net.core.rmem_max): with the default, a sipp starved of CPU dropped the service's
 * answers at 2,000 REGISTERs/s and its own retransmissions then doubled the load.
 */
function sippCommand(sipPort: number, scenario: string, args: string[]): string[] {
  const sipp = Bun.which('sipp')
  if (!sipp) throw new Error('sipp is not installed (Debian package sip-tester)')
  return [
    sipp,
    `127.0.0.1:${sipPort}`,
    '-sf',
    join(SCENARIOS, scenario),
    '-t',
    'u1',
    '-i',
    '127.0.0.1',
    '-nostdin',
    '-buff_size',
    String(4 * 1024 * 1024),
    ...args,
  ]
}

function readSippFiles(dir: string): Pick<SippRun, 'stat' | 'rtts' | 'firstError'> {
  const stat: Record<string, string> = {}
  const rtts: [number, number][] = []
  let firstError: string | undefined
  for (const f of readdirSync(dir)) {
    const text = readFileSync(join(dir, f), 'latin1')
    if (f.endsWith('_rtt.csv')) {
      for (const line of text.split('\n').slice(1)) {
        const [date, ms] = line.split(';')
        if (date && ms) rtts.push([Number(date), Number(ms)])
      }
    } else if (f === 'stat.csv') {
      const rows = text.trim().split('\n')
      const head = rows[0]?.split(';') ?? []
      const last = rows.at(-1)?.split(';') ?? []
      for (const [i, h] of head.entries()) stat[h] = last[i] ?? ''
    } else if (f === 'errors.log') {
      // What made a call fail, rather than the late retransmissions sipp logs as dead calls.
      const logged = text
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !/^(The following events occurred|-+|sipp\b|Resolving|Last message)/i.test(l))
      firstError = (logged.find((l) => /abort|unexpected|timed? ?out|failed|cannot/i.test(l)) ?? logged.find((l) => !/Dead call/.test(l)) ?? logged[0])?.slice(
        0,
        300,
      )
    }
  }
  return { stat, rtts, firstError }
}

/** One bounded sipp run (its own -timeout, and killed past timeoutMs). */
async function runSipp(cmd: string[], dir: string, timeoutMs: number): Promise<SippRun> {
  const proc = Bun.spawn(cmd, { cwd: dir, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  try {
    const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    const cpu = proc.resourceUsage()?.cpuTime.total
    return { exitCode, output: `${stdout.slice(-3000)}\n${stderr.slice(-2000)}`, ...readSippFiles(dir), cpuUs: cpu === undefined ? undefined : Number(cpu) }
  } finally {
    clearTimeout(timer)
  }
}

const statNumber = (stat: Record<string, string>, column: string) => Number(stat[column] ?? NaN)

/** Successes per second over the window of the successes' times. */
function achievedRate(rtts: [number, number][], fallbackS: number): { rate: number; windowS: number } {
  if (rtts.length < 2) return { rate: rtts.length / Math.max(fallbackS, 1e-3), windowS: fallbackS }
  const times = rtts.map(([t]) => t).sort((a, b) => a - b)
  const windowS = (times.at(-1)! - times[0]!) / 1000
  return { rate: windowS > 0 ? (times.length - 1) / windowS : NaN, windowS }
}

/**
 * sipp `scenario` at `rate` for `stepS` seconds (calls = rate × stepS), the service's
 * CPU (and its children's: the embedded PostgreSQL server) measured around it.
 */
async function step(o: {
  servicePid: number
  sipPort: number
  scenario: string
  rate: number
  stepS: number
  limit: number
  injection: string
  args: string[]
  workDir: string
  label: string
  /** Extra seconds a call lasts past its set-up (the hold), so the run is given time to end. */
  tailS?: number
  /** Cores the service and its database use with no load, subtracted for the net figures. */
  idle: Idle
  /** Makes what the scenario needs in its working folder. */
  prepare?: (dir: string) => void
}): Promise<Step> {
  const dir = mkdtempSync(join(o.workDir, `${o.label}-${o.rate}-`))
  o.prepare?.(dir)
  const calls = Math.max(1, Math.round(o.rate * o.stepS))
  const timeoutS = o.stepS + (o.tailS ?? 0) + 20
  const cmd = sippCommand(o.sipPort, o.scenario, [
    '-inf',
    o.injection,
    '-p',
    String(await freePort()),
    '-mi',
    '127.0.0.1',
    '-mp',
    String(await freePort()),
    '-r',
    String(o.rate),
    '-rp',
    '1000',
    '-l',
    String(o.limit),
    '-m',
    String(calls),
    '-timeout',
    `${timeoutS}s`,
    '-timeout_error',
    '-recv_timeout',
    '10000',
    '-trace_stat',
    '-stf',
    join(dir, 'stat.csv'),
    '-fd',
    '1',
    '-trace_rtt',
    '-rtt_freq',
    '1',
    '-trace_err',
    '-error_file',
    join(dir, 'errors.log'),
    ...o.args,
    ...(process.env.BENCH_SIP_SIPP_ARGS ?? '').split(' ').filter(Boolean),
  ])
  const cpu0 = cpuSeconds(o.servicePid)
  const db0 = descendantsCpuSeconds(o.servicePid)
  const t0 = performance.now()
  const r = await runSipp(cmd, dir, (timeoutS + 15) * 1000)
  const elapsedS = (performance.now() - t0) / 1000
  const cpu1 = cpuSeconds(o.servicePid)
  const db1 = descendantsCpuSeconds(o.servicePid)
  const succeeded = statNumber(r.stat, 'SuccessfulCall(C)')
  const failed = statNumber(r.stat, 'FailedCall(C)')
  const attempted = statNumber(r.stat, 'TotalCallCreated')
  if (!Number.isFinite(succeeded)) throw new Error(`sipp (${o.label} at ${o.rate}/s) wrote no statistics, exit ${r.exitCode}:\n${r.output.trim().slice(-1500)}`)
  const { rate: achieved, windowS } = achievedRate(r.rtts, o.stepS)
  const perCall = (a: number | undefined, b: number | undefined, idleCores = 0) =>
    a !== undefined && b !== undefined && succeeded > 0 ? ((b - a - idleCores * elapsedS) * 1e6) / succeeded : undefined
  const cores = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined ? (b - a) / elapsedS : undefined)
  const hasDatabase = db0 !== undefined && db1 !== undefined && db1 > 0
  const result: Step = {
    rate: o.rate,
    attempted,
    succeeded,
    failed,
    retransmissions: statNumber(r.stat, 'Retransmissions(C)'),
    achieved,
    windowS,
    latency: latencyOf(r.rtts.map(([, ms]) => ms)),
    serviceCpuUs: perCall(cpu0, cpu1),
    databaseCpuUs: hasDatabase ? perCall(db0, db1) : undefined,
    serviceNetCpuUs: perCall(cpu0, cpu1, o.idle.service),
    databaseNetCpuUs: hasDatabase ? perCall(db0, db1, o.idle.database) : undefined,
    serviceCores: cores(cpu0, cpu1),
    databaseCores: hasDatabase ? cores(db0, db1) : undefined,
    sippCpuUs: r.cpuUs !== undefined && succeeded > 0 ? r.cpuUs / succeeded : undefined,
    load: loadavg()[0]!,
    exitCode: r.exitCode,
    firstError: failed > 0 || r.exitCode !== 0 ? (r.firstError ?? r.output.trim().split('\n').at(-1)) : undefined,
    keptUp: failed === 0 && succeeded === calls && achieved >= KEPT_UP * o.rate,
  }
  if (!ctxKeep) rmSync(dir, { recursive: true, force: true })
  return result
}

let ctxKeep = false

interface Idle {
  service: number
  database: number
}

/** Cores the service and its children (the embedded PostgreSQL server) use with no load, over `seconds`. */
async function idleCores(pid: number, seconds = 2): Promise<Idle> {
  const s0 = cpuSeconds(pid) ?? 0
  const d0 = descendantsCpuSeconds(pid) ?? 0
  const t0 = performance.now()
  await Bun.sleep(seconds * 1000)
  const elapsed = (performance.now() - t0) / 1000
  return { service: ((cpuSeconds(pid) ?? 0) - s0) / elapsed, database: ((descendantsCpuSeconds(pid) ?? 0) - d0) / elapsed }
}

function printStep(what: string, s: Step) {
  console.log(
    `  ${num(s.rate).padStart(6)}/s  ${num(s.achieved).padStart(6)} ${what}/s over ${num(s.windowS, 1)} s  ok ${num(s.succeeded)}/${num(s.attempted)}  failed ${num(s.failed)}  retrans ${num(s.retransmissions)}  p50 ${num(s.latency.p50, 1)} ms  p99 ${num(s.latency.p99, 1)} ms  max ${num(s.latency.max)} ms  CPU/op service ${num(s.serviceCpuUs)} µs (net ${num(s.serviceNetCpuUs)}, ${num(s.serviceCores, 2)} cores)${s.databaseCpuUs !== undefined ? ` + database ${num(s.databaseCpuUs)} µs (net ${num(s.databaseNetCpuUs)}, ${num(s.databaseCores, 2)} cores)` : ''}, sipp ${num(s.sippCpuUs)} µs  load ${num(s.load, 2)}${s.keptUp ? '' : '  <- not kept up'}${s.firstError ? `\n           first error: ${s.firstError}` : ''}`,
  )
}

// ---------------------------------------------------------------- the runs

async function registerRun(o: { servicePid: number; sipPort: number; lines: Credentials[]; s: Settings; workDir: string }): Promise<Step[]> {
  const domain = o.lines[0]!.domain
  if (o.lines.some((l) => l.domain !== domain)) throw new Error('the lines have more than one SIP domain: one -auth_uri cannot answer them all')
  const injection = join(o.workDir, 'register-lines.csv')
  writeFileSync(injection, `SEQUENTIAL\n${o.lines.map((l) => `${l.username};${l.domain};${auth(l)};600;`).join('\n')}\n`)
  const steps: Step[] = []
  const idle = await idleCores(o.servicePid)
  console.log(
    `\n=== REGISTER with digest: ${num(o.lines.length)} lines, ${o.s.stepS} s per rate, at most ${num(o.s.limit)} in flight (idle: service ${num(idle.service, 2)} cores, database ${num(idle.database, 2)}) ===`,
  )
  for (const rate of o.s.regRates) {
    const s = await step({
      ...o,
      scenario: 'register.xml',
      rate,
      stepS: o.s.stepS,
      limit: o.s.limit,
      injection,
      args: ['-auth_uri', domain],
      label: 'register',
      idle,
    })
    printStep('REGISTERs', s)
    steps.push(s)
    if (!s.keptUp) break
  }
  return steps
}

async function callsRun(o: {
  service: Server
  key: string
  sipPort: number
  pairs: Pair[]
  s: Settings
  workDir: string
  logDir: string
  want: (what: string) => boolean
}): Promise<{ steps: Step[]; uasFailed?: number; rtp?: RelayRun }> {
  const servicePid = o.service.child.proc.pid
  // The callee lines register from the port their answering sipp then listens on.
  const uasPort = await freePort()
  const calleeInjection = join(o.workDir, 'callee-lines.csv')
  writeFileSync(calleeInjection, `SEQUENTIAL\n${o.pairs.map((p) => `${p.callee.username};${p.callee.domain};${auth(p.callee)};3600;`).join('\n')}\n`)
  const domains = new Set(o.pairs.map((p) => p.callee.domain))
  for (const domain of domains) {
    // One run per SIP domain: the digest uri is the run's. A refused line is registered
    // again once, alone, with the messages traced (in the log folder, with BENCH_KEEP_DATA=1).
    let lines = o.pairs.filter((p) => p.callee.domain === domain).map((p) => p.callee)
    for (let attempt = 1; lines.length > 0; attempt++) {
      const dir = mkdtempSync(join(o.workDir, `callee-register-${attempt}-`))
      const injection = join(dir, 'lines.csv')
      writeFileSync(injection, `SEQUENTIAL\n${lines.map((l) => `${l.username};${l.domain};${auth(l)};3600;`).join('\n')}\n`)
      const r = await runSipp(
        sippCommand(o.sipPort, 'register.xml', [
          '-inf',
          injection,
          '-p',
          String(uasPort),
          '-auth_uri',
          domain,
          '-m',
          String(lines.length),
          '-r',
          '50',
          '-timeout',
          '30s',
          '-timeout_error',
          '-trace_stat',
          '-stf',
          join(dir, 'stat.csv'),
          '-trace_err',
          '-error_file',
          join(dir, 'errors.log'),
          ...(attempt > 1 ? ['-trace_msg'] : []),
        ]),
        dir,
        45_000,
      )
      if (r.exitCode === 0) break
      const refused = new Set(
        [...readFileSync(join(dir, 'errors.log'), 'latin1').matchAll(/Aborting call[^\n]*\n(?:[^\n]+\n)*?From: <sip:([^@>]+)@/g)].map((m) => m[1]),
      )
      const again = lines.filter((l) => refused.has(l.username))
      console.log(
        `  callee lines: ${again.length || 'some'} of ${lines.length} REGISTERs refused (${r.firstError ?? `sipp exit ${r.exitCode}`})${attempt === 1 ? ', registering them again' : ''}`,
      )
      if (attempt > 1 || again.length === 0)
        throw new Error(`the callee lines did not register (sipp exit ${r.exitCode}): ${r.firstError ?? r.output.trim().slice(-800)}`)
      lines = again
    }
  }
  // The device actors hold the bindings: wait until each callee shows available.
  const deadline = performance.now() + 30_000
  let waiting = o.pairs
  while (waiting.length > 0 && performance.now() < deadline) {
    const still: Pair[] = []
    for (const p of waiting) {
      const r = await call<{ status?: string }>(o.service.baseUrl, 'GET', `/v1/users/${p.calleeUser}/presence`, { token: o.key, account: p.account })
      if (r.body?.status !== 'available') still.push(p)
    }
    waiting = still
    if (waiting.length > 0) await Bun.sleep(200)
  }
  if (waiting.length > 0) throw new Error(`${waiting.length} of ${o.pairs.length} callees not available 30 s after registering`)

  /**
   * One sipp answering every call on that port (bounded by its own timeout); `rtp`: it
   * echoes the audio it gets, on one socket for every call, which gets a 4 MiB receive
   * buffer where the kernel's default can be raised (with the default 208 KiB a sipp
   * starved of CPU drops ~1 % of 500 calls' audio there, the relay none).
   */
  const startUas = async (rtp: boolean, timeoutS: number) => {
    const dir = mkdtempSync(join(o.workDir, rtp ? 'uas-rtp-' : 'uas-'))
    const mediaPort = await freePort()
    let child: ReturnType<typeof spawnLogged> | undefined
    const spawn = async () => {
      child = spawnLogged(
        rtp ? 'sipp-uas-rtp' : 'sipp-uas',
        sippCommand(o.sipPort, 'uas.xml', [
          '-p',
          String(uasPort),
          '-mi',
          '127.0.0.1',
          '-mp',
          String(mediaPort),
          ...(rtp ? ['-rtp_echo'] : []),
          '-timeout',
          `${Math.ceil(timeoutS)}s`,
          '-trace_stat',
          '-stf',
          join(dir, 'stat.csv'),
          '-fd',
          '1',
          '-trace_err',
          '-error_file',
          join(dir, 'errors.log'),
        ]),
        { cwd: dir, logFile: join(o.logDir, rtp ? 'sipp-uas-rtp.log' : 'sipp-uas.log') },
      )
      await Bun.sleep(300) // the UAS binds its port before the first call rings it
    }
    let echoBuffer = false
    if (rtp) echoBuffer = await withReceiveBufferDefault(ECHO_RECEIVE_BUFFER, spawn)
    else await spawn()
    const uas = child!
    if (uas.proc.exitCode !== null) throw new Error(`the answering sipp exited at once:\n${uas.tail()}`)
    /** Stops it; the calls it counted failed. */
    const stop = async () => {
      await stopChild(uas)
      const failed = statNumber(readSippFiles(dir).stat, 'FailedCall(C)')
      if (!ctxKeep) rmSync(dir, { recursive: true, force: true })
      return Number.isFinite(failed) ? failed : undefined
    }
    return { stop, mediaPort, echoBuffer }
  }

  const injection = join(o.workDir, 'callers.csv')
  writeFileSync(injection, `SEQUENTIAL\n${o.pairs.map((p) => `${p.caller.username};${p.caller.domain};100;${auth(p.caller)};`).join('\n')}\n`)
  const steps: Step[] = []
  let uasFailed: number | undefined
  if (o.want('calls')) {
    const uas = await startUas(false, o.s.cpsRates.length * (o.s.stepS + o.s.holdMs / 1000 + 25) + 30)
    try {
      console.log(
        `\n=== calls through the B2BUA: ${o.pairs.length} caller/callee pairs (an account each), each call held ${num(o.s.holdMs)} ms, no RTP, ${o.s.stepS} s per rate ===`,
      )
      const idle = await idleCores(servicePid)
      console.log(`  (idle: service ${num(idle.service, 2)} cores, database ${num(idle.database, 2)})`)
      for (const rate of o.s.cpsRates) {
        const s = await step({
          servicePid,
          sipPort: o.sipPort,
          scenario: 'uac.xml',
          rate,
          stepS: o.s.stepS,
          limit: o.s.limit,
          injection,
          args: ['-auth_uri', '100@127.0.0.1', '-d', String(o.s.holdMs)],
          workDir: o.workDir,
          label: 'calls',
          tailS: o.s.holdMs / 1000,
          idle,
        })
        printStep('calls', s)
        steps.push(s)
        if (!s.keptUp) break
        // The last calls' BYEs reach the callees before the next rate starts.
        await Bun.sleep(500)
      }
    } finally {
      uasFailed = await uas.stop()
    }
  }

  // Relayed audio: rtpCalls calls at once, each playing µ-law both ways through the B2BUA for rtpHoldMs.
  let rtp: RelayRun | undefined
  if (o.want('rtp') && o.s.rtpCalls > 0) {
    const holdS = o.s.rtpHoldMs / 1000
    const uas = await startUas(true, holdS + 60)
    try {
      const rate = Math.max(1, Math.ceil(o.s.rtpCalls / 5))
      const rampS = o.s.rtpCalls / rate
      console.log(
        `\n=== relayed RTP: ${o.s.rtpCalls} calls started at ${rate}/s, each held ${num(holdS, 1)} s with µ-law from the caller, echoed by the callee (50 packets/s each way) ===`,
      )
      if (!uas.echoBuffer) console.log('  (the echo socket keeps the kernel default receive buffer: not root; its drops count as loss)')
      const startedAt = Date.now()
      const drops = watchUdpDrops()
      const steady = steadyCores(servicePid, rampS + 1.5, Math.min(5, holdS - 2.5))
      const s = await step({
        servicePid,
        sipPort: o.sipPort,
        scenario: 'uac-rtp.xml',
        rate,
        stepS: rampS,
        limit: o.s.limit,
        injection,
        args: ['-auth_uri', '100@127.0.0.1', '-d', String(o.s.rtpHoldMs)],
        workDir: o.workDir,
        label: 'rtp',
        tailS: holdS,
        idle: { service: 0, database: 0 },
        prepare: (dir) => {
          const sox = Bun.which('sox')
          if (!sox) throw new Error('sox is not installed: it makes the audio the callers play')
          const made = Bun.spawnSync([sox, '-n', '-r', '8000', '-c', '1', '-e', 'u-law', join(dir, 'caller.wav'), 'synth', '4', 'sine', '400'])
          if (made.exitCode !== 0) throw new Error(`sox failed: ${made.stderr.toString()}`)
        },
      })
      printStep('calls', s)
      const byPort = drops.stop()
      let serviceDrops: number | undefined
      if (byPort) {
        serviceDrops = 0
        for (const [port, n] of byPort) if (port >= SERVICE_RTP_PORTS.min && port <= SERVICE_RTP_PORTS.max) serviceDrops += n
      }
      rtp = {
        step: s,
        startedAt,
        calls: o.s.rtpCalls,
        steadyCores: await steady,
        serviceDrops,
        echoDrops: byPort?.get(uas.mediaPort) ?? (byPort ? 0 : undefined),
      }
      console.log(`  ${relayLine(rtp)}`)
    } finally {
      const failed = await uas.stop()
      if (failed) uasFailed = (uasFailed ?? 0) + failed
    }
  }
  return { steps, uasFailed, rtp }
}

const DRAIN_LIMIT_MS = 20_000

/** call_quality over the relayed-RTP calls (the worse leg of each call; numbers come back as strings or numbers). */
interface Quality {
  calls: number
  missing_audio: number
  loss_avg: number | string | null
  loss_max: number | string | null
  jitter_p50: number | string | null
  jitter_p99: number | string | null
  jitter_max: number | string | null
  mos_avg: number | string | null
  mos_min: number | string | null
  received: number | string | null
  lost: number | string | null
  caller_lost: number | string | null
  callee_lost: number | string | null
  /** Jitter of what the callers send (sipp's own pacing), and of what comes back through the relay and sipp's echo. */
  caller_jitter_p99: number | string | null
  callee_jitter_p99: number | string | null
}

const n = (v: number | string | null | undefined) => (v === null || v === undefined ? Number.NaN : Number(v))

function qualityLine(q: Quality): string {
  return `${num(q.calls)} calls with media figures (${num(q.missing_audio)} with a leg that got no RTP): loss avg ${num(n(q.loss_avg) * 100, 3)} %, max ${num(n(q.loss_max) * 100, 3)} % (${num(n(q.lost))} of ${num(n(q.received) + n(q.lost))} packets; lost on the caller's leg ${num(n(q.caller_lost))}, on the callee's, its echo, ${num(n(q.callee_lost))}); jitter p50 ${num(n(q.jitter_p50), 2)} ms, p99 ${num(n(q.jitter_p99), 2)} ms, max ${num(n(q.jitter_max), 2)} ms (p99 from the callers ${num(n(q.caller_jitter_p99), 2)} ms, back through the relay and the echo ${num(n(q.callee_jitter_p99), 2)} ms); MOS avg ${num(n(q.mos_avg), 2)}, min ${num(n(q.mos_min), 2)}`
}

/** Cores the process uses over `forS` seconds starting `afterS` seconds from now (undefined if forS < 1). */
async function steadyCores(pid: number, afterS: number, forS: number): Promise<number | undefined> {
  if (forS < 1) return undefined
  await Bun.sleep(afterS * 1000)
  const c0 = cpuSeconds(pid)
  const t0 = performance.now()
  await Bun.sleep(forS * 1000)
  const c1 = cpuSeconds(pid)
  return c0 !== undefined && c1 !== undefined ? (c1 - c0) / ((performance.now() - t0) / 1000) : undefined
}

function relayLine(r: RelayRun): string {
  const perCore = r.steadyCores ? r.calls / r.steadyCores : undefined
  return `relaying ${num(r.calls)} calls: service ${num(r.steadyCores, 2)} cores with every call up (${num(perCore)} calls per core at that cost); datagrams the kernel dropped: at the service's RTP sockets ${num(r.serviceDrops)}, at sipp's echo socket ${num(r.echoDrops)}`
}

/**
 * The relay goal: ≥ 500 calls per core, loss < 0.1 % and added jitter < 5 ms. The loss
 * is the B2BUA's own count less what the load generator's echo socket dropped; the
 * added jitter, that of the echoed audio less that of the callers' own (an upper
 * bound: sipp's echo adds its share).
 */
function relayVerdict(r: RelayRun, q: Quality | undefined): { pass: boolean; line: string } {
  const perCore = r.steadyCores ? r.calls / r.steadyCores : 0
  const total = q ? n(q.received) + n(q.lost) : Number.NaN
  const loss = q ? Math.max(0, n(q.lost) - (r.echoDrops ?? 0)) / total : Number.NaN
  const added = q ? n(q.callee_jitter_p99) - n(q.caller_jitter_p99) : Number.NaN
  const pass = r.calls >= GOAL.relayCallsPerCore && perCore >= GOAL.relayCallsPerCore && loss < GOAL.relayLoss && added < GOAL.relayAddedJitterMs
  return {
    pass,
    line: `${num(r.calls)} calls, ${num(perCore)} per core; loss not caused by the load generator ${num(loss * 100, 3)} %; jitter p99 added by the relay and the echo ${num(added, 2)} ms; goal ≥ ${num(GOAL.relayCallsPerCore)} calls per core, loss < ${num(GOAL.relayLoss * 100, 1)} %, added jitter < ${num(GOAL.relayAddedJitterMs)} ms: ${pass ? 'PASS' : 'MISS'}`,
  }
}

/** Seconds until the process and its children use under 10 % of a core over half a second (NaN past limitMs). */
async function quiet(pid: number, limitMs: number): Promise<number> {
  const start = performance.now()
  const cpu = () => (cpuSeconds(pid) ?? 0) + (descendantsCpuSeconds(pid) ?? 0)
  let last = cpu()
  while (performance.now() - start < limitMs) {
    await Bun.sleep(500)
    const now = cpu()
    if (now - last < 0.05) return (performance.now() - start) / 1000
    last = now
  }
  return Number.NaN
}

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

async function runBackend(ctx: BenchContext, backend: Backend, s: Settings, want: (what: string) => boolean): Promise<Outcome> {
  const adminToken = `bench-admin-${randomBytes(12).toString('hex')}`
  let store: Store
  let cleanup: () => Promise<void>
  if (backend === 'postgres') {
    const scratch = await scratchPostgres('bench_sip', { base: ctx.databaseUrl })
    store = { kind: 'postgres', url: scratch.url! }
    cleanup = onCleanup(async () => {
      if (!ctx.keepData) await scratch.dispose()
    })
  } else {
    const data = freshDataDir('bench-sip')
    store = { kind: 'embedded', dataDir: data.dataDir }
    cleanup = onCleanup(async () => {
      if (!ctx.keepData) await data.dispose()
    })
  }
  const where = store.kind === 'postgres' ? `PostgreSQL scratch database ${redact(store.url)}` : `the embedded PostgreSQL server in ${store.dataDir}`
  const workDir = mkdtempSync(join(ctx.logDir, `sip-${backend}-`))
  const sipPort = await freePort()
  let service: Server | undefined
  try {
    service = await startServer({
      name: `service-sip-${backend}`,
      script: join(ROOT, 'src/main.ts'),
      logDir: ctx.logDir,
      readyPath: '/readyz',
      timeoutMs: 60_000,
      bunArgs: ctx.profileDir ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${join(ctx.profileDir, backend)}`] : undefined,
      env: {
        // An empty value is unset for the service's config: never inherit the caller's.
        DATABASE_URL: store.kind === 'postgres' ? store.url : '',
        DATA_DIR: store.kind === 'postgres' ? '' : store.dataDir,
        EMBEDDED_DATABASE: 'postgres',
        NATS_URL: '',
        SIP_HOST: '127.0.0.1',
        SIP_PORT: String(sipPort),
        RTP_PORT_MIN: String(SERVICE_RTP_PORTS.min),
        RTP_PORT_MAX: String(SERVICE_RTP_PORTS.max),
        VOICE_ADMIN_TOKEN: adminToken,
        RATE_LIMIT_PER_SECOND: '0',
        LOG_LEVEL: 'warn',
        VOICE_TEST_KEY: '',
        VOICE_LIVE_KEY: '',
        ...ctx.serviceEnv,
      },
    })
    console.log(`\n[${backend}] service ${service.baseUrl}, SIP udp 127.0.0.1:${sipPort}, on ${where}${ctx.keepData ? ' (kept)' : ''}`)
    const setupStart = performance.now()
    const { key, registerLines, pairs } = await setup(service, adminToken, s, want)
    const setupS = (performance.now() - setupStart) / 1000
    console.log(`[${backend}] setup: ${num(registerLines.length)} REGISTER lines, ${pairs.length} caller/callee pairs through the API in ${num(setupS, 1)} s`)
    const outcome: Outcome = { backend, where, setupS }
    const servicePid = service.child.proc.pid
    if (registerLines.length > 0) {
      try {
        outcome.register = await registerRun({ servicePid, sipPort, lines: registerLines, s, workDir })
      } catch (e) {
        outcome.registerError = e instanceof Error ? e.message : String(e)
        console.log(`[${backend}] REGISTER run failed: ${outcome.registerError}`)
      }
    }
    let rtpStartedAt: number | undefined
    if (pairs.length > 0) {
      try {
        const r = await callsRun({ service, key, sipPort, pairs, s, workDir, logDir: ctx.logDir, want })
        if (want('calls')) outcome.calls = r.steps
        outcome.uasFailed = r.uasFailed
        outcome.rtp = r.rtp
        rtpStartedAt = r.rtp?.startedAt
      } catch (e) {
        outcome.callsError = e instanceof Error ? e.message : String(e)
        console.log(`[${backend}] call run failed: ${outcome.callsError}`)
      }
      // Let the call actors work off their backlog (the service and its database go quiet), then read the call log.
      outcome.drainS = await quiet(servicePid, DRAIN_LIMIT_MS)
      console.log(
        `[${backend}] the service went quiet ${Number.isNaN(outcome.drainS) ? `NOT within ${DRAIN_LIMIT_MS / 1000} s` : `${num(outcome.drainS, 1)} s`} after the last call`,
      )
      await service.stop()
      service = undefined
      const log = await withDatabase(store, async (q) => ({
        calls: await q<{ status: string | null; n: number }>(`select status, count(*)::int as n from calls group by status order by status`),
        events: await q<{ type: string; n: number }>(`select type, count(*)::int as n from events where type like 'call.%' group by type order by type`),
        // The media figures the B2BUA kept for the relayed-RTP calls (its recentMedia(), stored per call).
        quality:
          rtpStartedAt === undefined
            ? undefined
            : (
                await q<Quality>(
                  `select count(*)::int as calls, count(*) filter (where missing_audio)::int as missing_audio,
                     avg(packet_loss) as loss_avg, max(packet_loss) as loss_max,
                     percentile_cont(0.5) within group (order by jitter_ms) as jitter_p50,
                     percentile_cont(0.99) within group (order by jitter_ms) as jitter_p99, max(jitter_ms) as jitter_max,
                     avg(mos) as mos_avg, min(mos) as mos_min,
                     sum((caller->>'packets_received')::bigint + (callee->>'packets_received')::bigint)::bigint as received,
                     sum((caller->>'packets_lost')::bigint + (callee->>'packets_lost')::bigint)::bigint as lost,
                     sum((caller->>'packets_lost')::bigint)::bigint as caller_lost, sum((callee->>'packets_lost')::bigint)::bigint as callee_lost,
                     percentile_cont(0.99) within group (order by (caller->>'jitter_ms')::float8) as caller_jitter_p99,
                     percentile_cont(0.99) within group (order by (callee->>'jitter_ms')::float8) as callee_jitter_p99
                   from call_quality where ended_at >= to_timestamp(${rtpStartedAt / 1000})`,
                )
              )[0],
      }))
      outcome.quality = log.quality
      if (log.quality) console.log(`[${backend}] relayed RTP: ${qualityLine(log.quality)}`)
      outcome.callLog = Object.fromEntries(log.calls.map((r) => [r.status ?? 'in flight', r.n]))
      outcome.callEvents = Object.fromEntries(log.events.map((r) => [r.type, r.n]))
      console.log(`[${backend}] call log after the run: ${JSON.stringify(outcome.callLog)}; call events ${JSON.stringify(outcome.callEvents)}`)
    }
    return outcome
  } finally {
    await service?.stop()
    if (!ctx.keepData) rmSync(workDir, { recursive: true, force: true })
    await cleanup()
  }
}

// ---------------------------------------------------------------- report

/** The highest rate kept up with (no failure, ≥ 95 % achieved), and the first that was not. */
function ramp(steps: Step[] | undefined) {
  const kept = (steps ?? []).filter((s) => s.keptUp)
  const best = kept.reduce<Step | undefined>((b, s) => (!b || s.achieved > b.achieved ? s : b), undefined)
  const broke = (steps ?? []).find((s) => !s.keptUp)
  return { best, broke }
}

/** CPU at the highest rate tried (the fixed costs best spread), and what one core of the service would carry at that cost. */
function cpuLine(what: string, steps: Step[]): string {
  const top = steps.filter((x) => x.succeeded > 0).at(-1)
  if (!top) return `    CPU per ${what}: -`
  const perCore = top.serviceNetCpuUs !== undefined && top.serviceNetCpuUs > 0 ? 1e6 / top.serviceNetCpuUs : undefined
  return `    CPU per ${what} at ${num(top.rate)}/s offered: service ${num(top.serviceCpuUs)} µs (${num(top.serviceNetCpuUs)} µs net of idle; it used ${num(top.serviceCores, 2)} cores)${top.databaseCpuUs !== undefined ? `, its PostgreSQL server ${num(top.databaseCpuUs)} µs (${num(top.databaseNetCpuUs)} net)` : ''}, sipp ${num(top.sippCpuUs)} µs; one core of the service at that cost: ${num(perCore)} ${what}s/s`
}

export async function run(ctx: BenchContext): Promise<void> {
  ctxKeep = ctx.keepData
  const s: Settings = {
    lines: intEnv('BENCH_SIP_LINES', 2000),
    regRates: ratesEnv('BENCH_SIP_REG_RATES', [250, 500, 1000, 2000, 3000]),
    pairs: intEnv('BENCH_SIP_PAIRS', 20, 1),
    cpsRates: ratesEnv('BENCH_SIP_CPS_RATES', [50, 100, 150, 200, 300, 500, 700]),
    holdMs: intEnv('BENCH_SIP_HOLD_MS', 1000),
    stepS: intEnv('BENCH_SIP_STEP_S', 5, 1),
    limit: intEnv('BENCH_SIP_LIMIT', 3000, 1),
    rtpCalls: intEnv('BENCH_SIP_RTP_CALLS', 500),
    rtpHoldMs: intEnv('BENCH_SIP_RTP_HOLD_MS', 10_000, 1),
  }
  const only = ctx.only ?? ['register', 'calls', 'rtp']
  const want = (what: string) => only.some((o) => what.includes(o))
  if (!Bun.which('sipp')) {
    console.log('bench sip: skipped, sipp is not installed (Debian package sip-tester)')
    return
  }
  const results = await eachBackend(ctx, BACKENDS, (backend) => runBackend(ctx, backend, s, want))
  if (!results) return
  const lines: string[] = []
  for (const r of results) {
    const label = LABEL[r.backend]
    if ('skipped' in r) {
      lines.push(`  ${label}: skipped (${r.skipped})`)
      continue
    }
    if ('failed' in r) {
      lines.push(`  ${label}: MISS (the run failed: ${r.failed.split('\n')[0]})`)
      continue
    }
    const o = r.outcome
    if (want('register')) {
      const { best, broke } = ramp(o.register)
      const pass = (best?.achieved ?? 0) >= GOAL.registersPerSec
      lines.push(
        o.registerError
          ? `  REGISTER (${label})  MISS (the run failed: ${o.registerError.split('\n')[0]})`
          : `  REGISTER (${label})  ${num(best?.achieved)} REGISTERs/s with digest kept up (p99 ${num(best?.latency.p99, 1)} ms)${broke ? `; broke at ${num(broke.rate)}/s (${num(broke.achieved)}/s, ${num(broke.failed)} failed, p99 ${num(broke.latency.p99)} ms)` : '; did not break in the rates tried'} ≥ ${num(GOAL.registersPerSec)}: ${pass ? 'PASS' : 'MISS'}`,
      )
      if (o.register?.length) lines.push(cpuLine('REGISTER', o.register))
    }
    if (want('calls')) {
      const { best, broke } = ramp(o.calls)
      const pass = (best?.achieved ?? 0) >= GOAL.callsPerSec * KEPT_UP && (best?.rate ?? 0) >= GOAL.callsPerSec
      lines.push(
        o.callsError
          ? `  calls (${label})  MISS (the run failed: ${o.callsError.split('\n')[0]})`
          : `  calls (${label})  ${num(best?.achieved)} calls/s through the B2BUA kept up with 0 failed (set-up p99 ${num(best?.latency.p99, 1)} ms)${broke ? `; broke at ${num(broke.rate)}/s (${num(broke.achieved)}/s, ${num(broke.failed)} failed, p99 ${num(broke.latency.p99)} ms)` : '; did not break in the rates tried'} ≥ ${num(GOAL.callsPerSec)}: ${pass ? 'PASS' : 'MISS'}`,
      )
      if (o.calls?.length) lines.push(cpuLine('call', o.calls))
      if (o.callLog) {
        const attempted = [...(o.calls ?? []), ...(o.rtp ? [o.rtp.step] : [])].reduce((n, s) => n + s.attempted, 0)
        lines.push(
          `    call log ${JSON.stringify(o.callLog)} for ${num(attempted)} calls placed${o.uasFailed ? `; the answering sipp counted ${o.uasFailed} failed` : ''}`,
        )
      }
    }
    if (want('rtp') && (o.rtp || o.quality)) {
      const step = o.rtp?.step
      lines.push(
        `  relayed RTP (${label})  ${num(step?.succeeded)} of ${num(step?.attempted)} calls with audio both ways (${num(step?.failed)} failed, service ${num(step?.serviceCores, 2)} cores while they were set up, relayed and ended)${o.quality ? `; ${qualityLine(o.quality)}` : ''}`,
      )
      if (o.rtp) lines.push(`    ${relayLine(o.rtp)}`, `    ${relayVerdict(o.rtp, o.quality).line}`)
    }
  }
  console.log(
    `\ngoal: ≥ ${num(GOAL.registersPerSec)} REGISTERs/s with digest; ≥ ${num(GOAL.callsPerSec)} calls/s through the B2BUA with no failed call; ≥ ${num(GOAL.relayCallsPerCore)} relayed calls per core, loss < ${num(GOAL.relayLoss * 100, 1)} %, added jitter < ${num(GOAL.relayAddedJitterMs)} ms`,
  )
  for (const l of lines) console.log(l)
  if (existsSync(ctx.logDir)) console.log(`(service and sipp logs in ${ctx.logDir})`)
}
