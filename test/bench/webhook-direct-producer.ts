/**
 * The second producer of the `webhooks` bench (PostgreSQL only): commits events
 * straight into the outbox with src/events/outbox.ts appendEvents, `batch` events per
 * transaction, offered at `rate` events/s, so that the delivery engine is measured
 * without the gateway's cost per event. An event's commit time is when its
 * transaction's commit has returned. The service is not told (no wake on its bus):
 * it finds the events by polling.
 *
 *   bun test/bench/webhook-direct-producer.ts '<json options>'
 *
 * options: { databaseUrl, platformId, accounts: string[], types: string[], total,
 *            batch, rate, concurrency, deadlineMs, out }   (out: as webhook-producer.ts)
 */
import { writeFileSync } from 'node:fs'
import { systemClock } from '../../src/clock'
import { openDatabase } from '../../src/db/client'
import { appendEvents, type NewEvent } from '../../src/events/outbox'

interface Options {
  databaseUrl: string
  platformId: string
  accounts: string[]
  types: string[]
  total: number
  batch: number
  rate: number
  concurrency: number
  deadlineMs: number
  out: string
}

const opts = JSON.parse(process.argv[2] ?? '{}') as Options
const now = () => performance.timeOrigin + performance.now()
const database = await openDatabase({ databaseUrl: opts.databaseUrl, dataDir: 'memory://' })
const clock = systemClock(1)

const commits: [string, number][] = []
let failed = 0
let firstError: string | undefined
let next = 0
let stopped = false
process.on('SIGTERM', () => (stopped = true))

const startedAt = now()
const deadline = startedAt + opts.deadlineMs

async function worker() {
  for (;;) {
    if (stopped || next >= opts.total || now() > deadline) return
    const first = next
    const n = Math.min(opts.batch, opts.total - first)
    next += n
    if (opts.rate > 0) {
      // The batch is due when its last event is.
      const wait = startedAt + ((first + n - 1) * 1000) / opts.rate - now()
      if (wait > 0) await Bun.sleep(wait)
    }
    const list: NewEvent[] = Array.from({ length: n }, (_, j) => {
      const i = first + j
      return {
        platformId: opts.platformId,
        accountId: opts.accounts[i % opts.accounts.length]!,
        mode: 'test',
        type: opts.types[i % opts.types.length]!,
        data: { bench: i },
      }
    })
    try {
      const stored = await database.db.transaction((tx) => appendEvents(tx, clock, list))
      const t = now()
      for (const e of stored) commits.push([e.id, t])
    } catch (e) {
      failed += n
      firstError ??= e instanceof Error ? e.message : String(e)
    }
  }
}

await Promise.all(Array.from({ length: opts.concurrency }, worker))
const endedAt = now()
await database.close()
writeFileSync(opts.out, JSON.stringify({ commits, startedAt, endedAt, failed, statuses: {}, firstError }))
console.log(JSON.stringify({ committed: commits.length, failed, seconds: (endedAt - startedAt) / 1000 }))
