/** Printing bench results: real route against its baseline, and the goal verdict. */
import type { LoadResult } from './load'

export interface Goal {
  /** Real throughput must be at least this fraction of the baseline's. */
  minRatio: number
  /** Real p99 latency must be below this, in ms. */
  maxP99Ms: number
  connections: number
}

export interface Comparison {
  scenario: string
  real: LoadResult
  baseline: LoadResult
  /** false: the goal sets this route no latency bound (its p99 is still printed). */
  latencyGoal?: boolean
}

const num = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const pad = (s: string, w: number) => (s.length >= w ? s : ' '.repeat(w - s.length) + s)
const padEnd = (s: string, w: number) => (s.length >= w ? s : s + ' '.repeat(w - s.length))

export const goalLine = (g: Goal, comparisons: Comparison[] = []) => {
  const without = comparisons.filter((c) => c.latencyGoal === false).map((c) => c.scenario)
  return `goal: real ≥ ${Math.round(g.minRatio * 100)}% of baseline throughput, p99 < ${g.maxP99Ms} ms at ${g.connections} connections${without.length ? ` (the p99 bound not for ${without.join(', ')})` : ''}`
}

export function verdict(c: Comparison, g: Goal) {
  const ratio = c.baseline.requestsPerSec > 0 ? c.real.requestsPerSec / c.baseline.requestsPerSec : 0
  const ratioOk = ratio >= g.minRatio
  const p99Ok = c.latencyGoal === false || c.real.latency.p99 < g.maxP99Ms
  const clean = c.real.non2xx === 0 && c.real.errors === 0 && c.real.timeouts === 0
  return { ratio, ratioOk, p99Ok, clean, pass: ratioOk && p99Ok && clean }
}

export function printComparisons(title: string, comparisons: Comparison[], g: Goal) {
  const head = ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'requests', 'non-2xx', 'errors', 'CPU µs/req']
  const widths = [22, 9, 10, 8, 8, 8, 10, 8, 7, 10]
  const row = (cells: string[]) => cells.map((c, i) => (i < 2 ? padEnd(c, widths[i]!) : pad(c, widths[i]!))).join('  ')
  const line = (scenario: string, target: string, r: LoadResult) =>
    row([
      scenario,
      target,
      num(r.requestsPerSec),
      num(r.latency.p50, 1),
      num(r.latency.p99, 1),
      num(r.latency.max, 0),
      num(r.total),
      num(r.non2xx),
      num(r.errors + r.timeouts),
      r.serverCpuS !== undefined && r.total > 0 ? num((r.serverCpuS * 1e6) / r.total) : '-',
    ])

  console.log(`\n=== ${title} ===`)
  console.log(row(head))
  console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  for (const c of comparisons) {
    console.log(line(c.scenario, 'real', c.real))
    console.log(line('', 'baseline', c.baseline))
  }
  console.log('(CPU µs/req: CPU time of the server process alone, per request; PostgreSQL and the load generator not included)')
  console.log('')
  console.log(goalLine(g, comparisons))
  for (const c of comparisons) {
    const v = verdict(c, g)
    const why: string[] = []
    if (!v.ratioOk) why.push(`throughput ${Math.round(v.ratio * 100)}% < ${Math.round(g.minRatio * 100)}%`)
    if (!v.p99Ok) why.push(`p99 ${num(c.real.latency.p99, 1)} ms ≥ ${g.maxP99Ms} ms`)
    if (!v.clean) why.push(`${c.real.non2xx} non-2xx, ${c.real.errors} errors, ${c.real.timeouts} timeouts`)
    console.log(
      `  ${padEnd(c.scenario, 22)} real/baseline = ${(v.ratio * 100).toFixed(0)}% (${num(c.real.requestsPerSec)} / ${num(c.baseline.requestsPerSec)} req/s), real p99 ${num(c.real.latency.p99, 1)} ms (baseline ${num(c.baseline.latency.p99, 1)} ms), non-2xx ${c.real.non2xx}: ${v.pass ? 'PASS' : 'MISS'}${why.length ? ` (${why.join('; ')})` : ''}`,
    )
  }
}
