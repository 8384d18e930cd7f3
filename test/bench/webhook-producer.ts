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
const now = () => performance.timeOrigin + performance.now()
const url = `${opts.baseUrl}/v1/test_helpers/events`

const commits: [string, number][] = []
const statuses: Record<string, number> = {}
let failed = 0
let firstError: string | undefined
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
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${opts.key}`, 'service-account': account, 'content-type': 'application/json' },
        body: JSON.stringify({ event: type }),
        signal: AbortSignal.timeout(30_000),
      })
      const text = await res.text()
      const t = now()
      statuses[res.status] = (statuses[res.status] ?? 0) + 1
      if (res.status !== 200) {
        failed++
        firstError ??= `${res.status} ${text.slice(0, 300)}`
        continue
      }
      commits.push([(JSON.parse(text) as { id: string }).id, t])
    } catch (e) {
      failed++
      statuses.error = (statuses.error ?? 0) + 1
      firstError ??= e instanceof Error ? e.message : String(e)
    }
  }
}

await Promise.all(Array.from({ length: opts.concurrency }, worker))
const endedAt = now()
writeFileSync(opts.out, JSON.stringify({ commits, startedAt, endedAt, failed, statuses, firstError }))
console.log(JSON.stringify({ committed: commits.length, failed, seconds: (endedAt - startedAt) / 1000 }))
