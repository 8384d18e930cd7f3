/**
 * The load process of the `calls` bench: simulated calls through
 * POST /v1/test_helpers/calls (sandbox key + Service-Account) with `concurrency`
 * requests in flight until `durationMs` has passed (closed loop), spread
 * round-robin over the accounts (each with its own user and number).
 *
 *   bun test/bench/calls-load.ts '<json options>'
 *
 * options: { baseUrl, key, tenants: [{account, user}], concurrency, durationMs, scenario, out }
 * out: { started: [[call_id, ms]], startedAt, endedAt, failed, statuses, firstError, latencyMs: {p50, p99, max} }
 * (ms: performance.timeOrigin + performance.now(), when the 200 arrived: the call is planned and its actor spawned).
 */
import { writeFileSync } from 'node:fs'
import { benchNow, newTally, postForId } from './lib/post-for-id'

interface Options {
  baseUrl: string
  key: string
  tenants: { account: string; user: string }[]
  concurrency: number
  durationMs: number
  scenario: Record<string, unknown>
  out: string
}

const opts = JSON.parse(process.argv[2] ?? '{}') as Options
const now = benchNow
const url = `${opts.baseUrl}/v1/test_helpers/calls`

const started: [string, number][] = []
const latencies: number[] = []
const tally = newTally()
let next = 0
let stopped = false
process.on('SIGTERM', () => (stopped = true))

const startedAt = now()
const deadline = startedAt + opts.durationMs

async function worker() {
  while (!stopped && now() < deadline) {
    const t = opts.tenants[next++ % opts.tenants.length]!
    const t0 = now()
    const r = await postForId(tally, url, opts.key, t.account, { user: t.user, from_number: '+15551234567', scenario: opts.scenario })
    if (!r) continue
    started.push([r.id, r.at])
    latencies.push(r.at - t0)
  }
}

await Promise.all(Array.from({ length: opts.concurrency }, worker))
const endedAt = now()
latencies.sort((a, b) => a - b)
const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)]! : NaN)
writeFileSync(opts.out, JSON.stringify({ started, startedAt, endedAt, ...tally, latencyMs: { p50: pct(50), p99: pct(99), max: latencies.at(-1) ?? NaN } }))
