/**
 * The load process of the `provisioning` bench: every device fetches its own
 * `<mac>.cfg` once, the way a Yealink phone does (its User-Agent, a GET without
 * credentials, the 401 Digest challenge, the GET again with the answer), the devices
 * taken in a shuffled order so that neighbouring rows are not fetched together.
 *
 * Two ways to offer the load:
 *   - rate > 0 (open loop): phones start their exchanges on a fixed schedule, `rate`
 *     per second, whether or not earlier ones have finished, as phones powering up
 *     independently do; each latency is counted from the exchange's scheduled start,
 *     so a service (or a load process) falling behind shows in it rather than
 *     slowing the load down (no coordinated omission);
 *   - rate 0 (closed loop): `concurrency` exchanges in flight, each phone starting when
 *     another finishes: the most the service can serve, latency then being
 *     concurrency / throughput by construction.
 *
 *   bun test/bench/lib/provisioning-load.ts '<json options>'
 *
 * options: { baseUrl, basePath, devicesFile, rate, concurrency, deadlineMs, out }
 * devicesFile: JSON [[mac, username, password, ...more], ...] (mac: 12 lowercase hex digits)
 * out: { startedAt, endedAt, exchanges, served: [mac, ...], challengeMs, authMs, exchangeMs: [ms, ...] (per served device),
 *        startMs: when each served exchange was due, from startedAt,
 *        statuses of the authenticated requests (a wrong first answer as "first NNN"),
 *        failed, statuses, firstError, cpuUs: this process's own CPU while it ran the exchanges } (ms: performance.now() of this process)
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { digestResponse } from '../../../src/auth/digest'
import { KeepAliveHttp } from './keepalive-http'

interface Options {
  baseUrl: string
  /** The account's provisioning path, ending in '/'. */
  basePath: string
  devicesFile: string
  /** Exchanges started per second (open loop); 0: closed loop with `concurrency` in flight. */
  rate: number
  concurrency: number
  /** Stop starting exchanges after this long. */
  deadlineMs: number
  out: string
}

const opts = JSON.parse(process.argv[2] ?? '{}') as Options
const devices = JSON.parse(readFileSync(opts.devicesFile, 'utf8')) as [string, string, string][]
for (let i = devices.length - 1; i > 0; i--) {
  const j = Math.floor(Math.random() * (i + 1))
  ;[devices[i], devices[j]] = [devices[j]!, devices[i]!]
}

// The phones' HTTP: keep-alive connections, one per exchange in flight (./keepalive-http: fetch cost a quarter of the machine).
const target = new URL(opts.baseUrl)
const http = new KeepAliveHttp(target.hostname, Number(target.port))

const userAgent = (mac: string) => `Yealink SIP-T54W 96.86.0.100 ${mac.match(/../g)!.join(':')}`
const attribute = (header: string, name: string) => new RegExp(`${name}="([^"]+)"`).exec(header)?.[1]

const served: string[] = []
const challengeMs: number[] = []
const authMs: number[] = []
const exchangeMs: number[] = []
const startMs: number[] = []
const statuses: Record<string, number> = {}
let failed = 0
let firstError: string | undefined
const fail = (status: string, message: string) => {
  failed++
  statuses[status] = (statuses[status] ?? 0) + 1
  firstError ??= message
}

/** One phone's exchange, its latencies counted from `t0`; true when it ended with the file. */
async function exchange(mac: string, username: string, password: string, t0 = performance.now()): Promise<boolean> {
  const path = `${opts.basePath}${mac}.cfg`
  const headers = { 'User-Agent': userAgent(mac) }
  const first = await http.get(path, headers)
  const tChallenge = performance.now()
  const challenge = first.challenges.find((c) => c.startsWith('Digest')) ?? ''
  if (first.status !== 401 || !challenge) {
    fail(`first ${first.status}`, `unauthenticated GET ${path}: ${first.status}, expected a 401 Digest challenge`)
    return false
  }
  // The first challenge is the strongest algorithm offered (SHA-256), as a current phone takes it.
  const realm = attribute(challenge, 'realm')
  const nonce = attribute(challenge, 'nonce')
  const algorithm = /algorithm=(SHA-256|MD5)/.exec(challenge)?.[1] as 'SHA-256' | 'MD5' | undefined
  if (!realm || !nonce || !algorithm) {
    fail('bad challenge', `unparsable challenge: ${challenge.slice(0, 200)}`)
    return false
  }
  const cnonce = randomBytes(8).toString('hex')
  const nc = '00000001'
  const response = digestResponse({ algorithm, username, realm, password, method: 'GET', uri: path, nonce, nc, cnonce, qop: 'auth' })
  const authorization = `Digest username="${username}", realm="${realm}", nonce="${nonce}", uri="${path}", algorithm=${algorithm}, qop=auth, nc=${nc}, cnonce="${cnonce}", response="${response}"`
  const t1 = performance.now()
  const second = await http.get(path, { ...headers, Authorization: authorization })
  const body = second.body
  const t2 = performance.now()
  statuses[second.status] = (statuses[second.status] ?? 0) + 1
  if (second.status !== 200 || !body.includes(`account.1.user_name`)) {
    failed++
    firstError ??= `authenticated GET ${path}: ${second.status} ${body.slice(0, 300)}`
    return false
  }
  served.push(mac)
  challengeMs.push(tChallenge - t0)
  authMs.push(t2 - t1)
  exchangeMs.push(t2 - t0)
  startMs.push(t0 - startedAt)
  return true
}

/**
 * This process's own code compiled before its clock starts: a freshly started Bun
 * spends its first few hundred milliseconds compiling, and on an open-loop
 * schedule that lag would count as the service's latency. The digest and the
 * header parsing run on made-up values; the HTTP client asks /healthz, which
 * reads nothing of any device.
 */
async function warmOwnCode() {
  const header = 'Digest realm="warm-up", nonce="bm9uY2U", algorithm=SHA-256, qop="auth"'
  for (let i = 0; i < 2_000; i++) {
    const algorithm = /algorithm=(SHA-256|MD5)/.exec(header)?.[1] as 'SHA-256'
    const [realm, nonce] = [attribute(header, 'realm')!, attribute(header, 'nonce')!]
    const cnonce = randomBytes(8).toString('hex')
    digestResponse({
      algorithm,
      username: userAgent('001565000000'),
      realm,
      password: 'p',
      method: 'GET',
      uri: '/x',
      nonce,
      nc: '00000001',
      cnonce,
      qop: 'auth',
    })
  }
  for (let i = 0; i < 300; i++) await http.get('/healthz', {})
}

await warmOwnCode()
let next = 0
const cpuAtStart = process.cpuUsage()
const startedAt = performance.now()
const deadline = startedAt + opts.deadlineMs

async function guarded(device: [string, string, string], t0?: number) {
  try {
    await exchange(device[0], device[1], device[2], t0)
  } catch (e) {
    fail('error', e instanceof Error ? e.message : String(e))
  }
}

async function worker() {
  while (next < devices.length && performance.now() < deadline) await guarded(devices[next++]!)
}

async function openLoop(rate: number) {
  const started: Promise<void>[] = []
  while (next < devices.length) {
    const due = startedAt + (next * 1000) / rate
    const wait = due - performance.now()
    // Timers have about a millisecond's resolution: what is due within it starts now, on its schedule.
    if (wait >= 1) await Bun.sleep(wait)
    if (performance.now() >= deadline) break
    started.push(guarded(devices[next++]!, due))
  }
  await Promise.all(started)
}

await (opts.rate > 0 ? openLoop(opts.rate) : Promise.all(Array.from({ length: opts.concurrency }, worker)))
const endedAt = performance.now()
const cpu = process.cpuUsage(cpuAtStart)
http.close()
const cpuUs = cpu.user + cpu.system
writeFileSync(
  opts.out,
  JSON.stringify({ startedAt, endedAt, exchanges: next, served, challengeMs, authMs, exchangeMs, startMs, failed, statuses, firstError, cpuUs }),
)
