/**
 * `npm test`: every test file, with bun's runner. Embedded (no DATABASE_URL or
 * NATS_URL) the files are shared out between worker processes, one per core up to
 * four, each keeping its own module registry across its files as a single run does
 * (`--no-isolate`): every test service there has its own database in memory and its
 * own in-process bus, so workers share nothing. On PostgreSQL and NATS the services
 * of two workers would meet in one database and on one bus (one worker's actor hosts
 * taking the other's timers and shards), so that run stays in one process.
 * Arguments after `npm test --` go to `bun test`.
 */
import { cpus } from 'node:os'

const shared = Boolean(process.env.DATABASE_URL || process.env.NATS_URL)
const workers = Math.min(cpus().length, 4)
const parallel = !shared && workers > 1 ? [`--parallel=${workers}`, '--no-isolate'] : []
console.log(
  parallel.length > 0
    ? `[suite] test files shared out between ${workers} worker processes (embedded: nothing shared between them)`
    : `[suite] test files in one process${shared ? ' (PostgreSQL or NATS is shared by every test service)' : ''}`,
)
const proc = Bun.spawn([process.execPath, 'test', '--timeout', '30000', ...parallel, ...process.argv.slice(2)], { stdio: ['inherit', 'inherit', 'inherit'] })
process.exit(await proc.exited)
