/**
 * Drives load-worker.cjs (autocannon under node, in a second process) and returns
 * its summary.
 */
import { fileURLToPath } from 'node:url'
import { runCaptured } from './processes'

export interface LoadOptions {
  url: string
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'
  headers?: Record<string, string>
  connections?: number
  /** Seconds. */
  duration?: number
  body?: string
  /** Unique `{name, email}` body per request (no 409s on create). */
  uniqueEmail?: { name: string; prefix: string }
}

export interface LoadResult {
  url: string
  method: string
  connections: number
  durationS: number
  requestsPerSec: number
  total: number
  latency: { avg: number; p50: number; p90: number; p99: number; max: number }
  non2xx: number
  errors: number
  timeouts: number
  statusCodes: Record<string, number>
  /** Latency of each 2xx response in 0.1 ms buckets: [bucket, count]. */
  hist: [number, number][]
  /** CPU seconds the server process used during the run, when known. */
  serverCpuS?: number
}

const worker = fileURLToPath(new URL('../load-worker.cjs', import.meta.url))
const root = fileURLToPath(new URL('../../..', import.meta.url))

export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const duration = opts.duration ?? 10
  const r = await runCaptured('autocannon', ['node', worker, JSON.stringify({ ...opts, duration })], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '' },
    timeoutMs: (duration + 20) * 1000,
  })
  const line = r.stdout.trim().split('\n').pop() ?? ''
  if (r.code !== 0 || !line.startsWith('{')) {
    throw new Error(`load generator failed (exit ${r.code}):\n${r.stderr.trim() || r.stdout.trim()}`)
  }
  return JSON.parse(line) as LoadResult
}

/** Latency percentile (ms) of a 0.1 ms histogram. */
export function percentile(hist: [number, number][], p: number): number {
  const sorted = [...hist].sort((a, b) => a[0] - b[0])
  const total = sorted.reduce((n, [, c]) => n + c, 0)
  if (total === 0) return 0
  const rank = Math.ceil((p / 100) * total)
  let seen = 0
  for (const [bucket, count] of sorted) {
    seen += count
    if (seen >= rank) return bucket / 10
  }
  return sorted[sorted.length - 1]![0] / 10
}

/**
 * Several runs against the same target as one: throughput over their summed duration,
 * latency percentiles from their merged histograms.
 */
export function mergeResults(runs: LoadResult[]): LoadResult {
  if (runs.length === 1) return withExactLatency(runs[0]!)
  const buckets = new Map<number, number>()
  for (const r of runs) for (const [b, c] of r.hist) buckets.set(b, (buckets.get(b) ?? 0) + c)
  const statusCodes: Record<string, number> = {}
  for (const r of runs) for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n
  const sum = (f: (r: LoadResult) => number) => runs.reduce((n, r) => n + f(r), 0)
  const total = sum((r) => r.total)
  const durationS = sum((r) => r.durationS)
  const merged: LoadResult = {
    url: runs[0]!.url,
    method: runs[0]!.method,
    connections: runs[0]!.connections,
    durationS,
    requestsPerSec: durationS > 0 ? total / durationS : 0,
    total,
    latency: { avg: total > 0 ? sum((r) => r.latency.avg * r.total) / total : 0, p50: 0, p90: 0, p99: 0, max: Math.max(...runs.map((r) => r.latency.max)) },
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    statusCodes,
    hist: [...buckets.entries()],
    serverCpuS: runs.every((r) => r.serverCpuS !== undefined) ? sum((r) => r.serverCpuS!) : undefined,
  }
  return withExactLatency(merged)
}

/** p50, p90 and p99 from the 0.1 ms histogram (autocannon's own are whole milliseconds). */
function withExactLatency(r: LoadResult): LoadResult {
  if (r.hist.length === 0) return r
  return { ...r, latency: { ...r.latency, p50: percentile(r.hist, 50), p90: percentile(r.hist, 90), p99: percentile(r.hist, 99) } }
}
