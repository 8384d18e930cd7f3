/**
 * `npm test`: every test file, with bun's runner, the files shared out between
 * worker processes, one per core up to four, each keeping its own module registry
 * across its files as a single run does (`--no-isolate`).
 *
 * Embedded (no DATABASE_URL or NATS_URL) every test service has its own database in
 * memory and its own in-process bus: the workers share nothing. On PostgreSQL each
 * worker gets a scratch database of its own, dropped after the run (preload.ts
 * points the worker's DATABASE_URL at it): two workers' services in one database
 * would take each other's timers and shards. On NATS the services of a
 * database are one cluster, and everything of theirs on NATS is under the cluster's
 * id (actor subjects, shard leases, bus subjects), so the workers' services do not
 * meet there either.
 * Arguments after `npm test --` go to `bun test`.
 */
import { cpus } from 'node:os'
import { type ScratchDatabase, scratchPostgres } from './support/scratch-postgres'
import { WORKER_DATABASES_ENV } from './support/worker-databases'

const workers = Math.min(cpus().length, 4)
const parallel = workers > 1 ? [`--parallel=${workers}`, '--no-isolate'] : []
const env: Record<string, string | undefined> = { ...process.env }

const base = process.env.DATABASE_URL
const databases: ScratchDatabase[] = []
if (base && parallel.length > 0) {
  for (let n = 1; n <= workers; n++) databases.push(await scratchPostgres(`worker_${n}`))
  env[WORKER_DATABASES_ENV] = databases.map((d) => d.url).join(' ')
}

console.log(
  parallel.length > 0
    ? `[suite] test files shared out between ${workers} worker processes${base ? ', each with a PostgreSQL database of its own' : ''}${process.env.NATS_URL ? ' (on NATS, each database is a cluster of its own)' : ''}`
    : '[suite] test files in one process (one core)',
)
const proc = Bun.spawn([process.execPath, 'test', '--timeout', '30000', ...parallel, ...process.argv.slice(2)], {
  stdio: ['inherit', 'inherit', 'inherit'],
  env,
})
const code = await proc.exited

for (const d of databases) await d.dispose()
process.exit(code)
