/**
 * The event producer of the `webhooks` bench, in its own process: `total` events
 * through POST /v1/test_helpers/events (sandbox key + Service-Account), `concurrency`
 * requests in flight, spread round-robin over the accounts. An event's commit time is
 * when its 200 response has arrived (the transaction holding it has committed).
 *
 *   bun test/bench/webhook-producer.ts '<json options>'
 *
 * options: { baseUrl, key, accounts: string[], types: string[], total, concurrency,
 *            deadlineMs, rate?, out }
 *   rate      events/s to offer (open loop, request i is sent at start + i/rate);
 *             0 or absent: as fast as `concurrency` requests in flight allow
 *   deadlineMs  stop sending after this long (what was sent is still awaited)
 *   out       file the result is written to:
 *             { commits: [[id, ms], ...], startedAt, endedAt, failed, statuses, firstError }
 * Times are performance.timeOrigin + performance.now(), like the receiver's.
 */
import { writeFileSync } from 'node:fs'
import { benchNow, newTally, postForId } from './lib/post-for-id'

interface Options {
  baseUrl: string
  key: string
  accounts: string[]
  types: string[]
  total: number
  concurrency: number
  deadlineMs: number
  rate?: number
  out: string
}

const opts = JSON.parse(process.argv[2] ?? '{}') as Options
const now = benchNow
const url = `${opts.baseUrl}/v1/test_helpers/events`

const commits: [string, number][] = []
const tally = newTally()
let next = 0
let stopped = false

const startedAt = now()
const deadline = startedAt + opts.deadlineMs
process.on('SIGTERM', () => (stopped = true))

async function worker() {
  for (;;) {
    if (stopped || next >= opts.total || now() > deadline) return
    const i = next++
    if (opts.rate && opts.rate > 0) {
      const due = startedAt + (i * 1000) / opts.rate
      const wait = due - now()
      if (wait > 0) await Bun.sleep(wait)
    }
    const account = opts.accounts[i % opts.accounts.length]!
    const type = opts.types[i % opts.types.length]!
    const r = await postForId(tally, url, opts.key, account, { event: type })
    if (r) commits.push([r.id, r.at])
  }
}

await Promise.all(Array.from({ length: opts.concurrency }, worker))
const endedAt = now()
writeFileSync(opts.out, JSON.stringify({ commits, startedAt, endedAt, ...tally }))
console.log(JSON.stringify({ committed: commits.length, failed: tally.failed, seconds: (endedAt - startedAt) / 1000 }))
