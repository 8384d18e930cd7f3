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
const now = () => performance.timeOrigin + performance.now()
const url = `${opts.baseUrl}/v1/test_helpers/calls`

const started: [string, number][] = []
const latencies: number[] = []
const statuses: Record<string, number> = {}
let failed = 0
let firstError: string | undefined
let next = 0
let stopped = false
process.on('SIGTERM', () => (stopped = true))

const startedAt = now()
const deadline = startedAt + opts.durationMs

async function worker() {
  while (!stopped && now() < deadline) {
    const t = opts.tenants[next++ % opts.tenants.length]!
    const t0 = now()
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${opts.key}`, 'service-account': t.account, 'content-type': 'application/json' },
        body: JSON.stringify({ user: t.user, from_number: '+15551234567', scenario: opts.scenario }),
        signal: AbortSignal.timeout(30_000),
      })
      const text = await res.text()
      const t1 = now()
      statuses[res.status] = (statuses[res.status] ?? 0) + 1
      if (res.status !== 200) {
        failed++
        firstError ??= `${res.status} ${text.slice(0, 300)}`
        continue
      }
      started.push([(JSON.parse(text) as { id: string }).id, t1])
      latencies.push(t1 - t0)
    } catch (e) {
      failed++
      statuses.error = (statuses.error ?? 0) + 1
      firstError ??= e instanceof Error ? e.message : String(e)
    }
  }
}

await Promise.all(Array.from({ length: opts.concurrency }, worker))
const endedAt = now()
latencies.sort((a, b) => a - b)
const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)]! : NaN)
writeFileSync(
  opts.out,
  JSON.stringify({ started, startedAt, endedAt, failed, statuses, firstError, latencyMs: { p50: pct(50), p99: pct(99), max: latencies.at(-1) ?? NaN } }),
)
