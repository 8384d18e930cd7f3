/**
 * The per-backend loop every multi-backend scenario runs: the backends
 * BENCH_BACKENDS selects (all by default), in order; PostgreSQL skipped with its
 * reason when unreachable; a failing backend reported and the next one run; Ctrl-C
 * (run.ts stops the processes and cleans up) starts nothing more and reports nothing.
 */
import type { BenchContext } from '../run'
import { redact } from './postgres'

export type BackendResult<B extends string, O> = { backend: B; outcome: O } | { backend: B; skipped: string } | { backend: B; failed: string }

/** The results, in order, or undefined when interrupted. */
export async function eachBackend<B extends string, O>(
  ctx: BenchContext,
  all: readonly B[],
  run: (backend: B) => Promise<O>,
): Promise<BackendResult<B, O>[] | undefined> {
  const wanted = (process.env.BENCH_BACKENDS || all.join(',')).split(',').map((x) => x.trim())
  for (const b of wanted) if (!(all as readonly string[]).includes(b)) throw new Error(`BENCH_BACKENDS: unknown backend "${b}" (${all.join(', ')})`)
  let interrupted = false
  const onSignal = () => (interrupted = true)
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal)
  const results: BackendResult<B, O>[] = []
  try {
    for (const backend of all) {
      if (interrupted) return undefined
      if (!wanted.includes(backend)) continue
      if (backend === 'postgres' && ctx.postgresUnavailable) {
        const reason = `no PostgreSQL reachable at ${redact(ctx.databaseUrl)}: ${ctx.postgresUnavailable}`
        console.log(`\n[postgres] skipped: ${reason}`)
        results.push({ backend, skipped: reason })
        continue
      }
      try {
        results.push({ backend, outcome: await run(backend) })
      } catch (e) {
        if (interrupted) return undefined
        const msg = e instanceof Error ? e.message : String(e)
        console.log(`\n[${backend}] failed: ${msg}`)
        results.push({ backend, failed: msg })
      }
    }
    return interrupted ? undefined : results
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal)
  }
}
