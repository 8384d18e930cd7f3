/**
 * The actor-density process of the `calls` bench, alone in its process so that its
 * heap is the call actors' (plus the runtime's fixed cost, measured before and
 * subtracted):
 *   an ActorHost with the call kind on a scratch PostgreSQL database when DATABASE_URL
 *   is set, else on PGlite in memory (memory://, migrated; foreign
 *   keys off so the call-log projection needs no account rows), timers not polled;
 *   call actors spawned as inbound calls and rung (incoming → ringing), never ended,
 *   so each stays live in the host's registry.
 *
 *   bun test/bench/calls-density.ts '<json options>'
 *
 * options: { target, timeLimitMs, concurrency, ring, checkpoint, out }
 * out: { checkpoints: [{live, heapUsed, rss, external, arrayBuffers, elapsedMs}], baseline, warmup,
 *        peakLive, reachedTarget, spawnPerSec, effectErrors, topObjectTypes: [[type, perActor]] }
 */
import { writeFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import { heapStats } from 'bun:jsc'
import { systemClock } from '../../src/clock'
import { openDatabase } from '../../src/db/client'
import { ActorHost } from '../../actors/runtime/host'
import { createCallKind } from '../../actors/calls/call-actor'
import { CALL_KIND, type CallActorInput } from '../../actors/calls/messages'
import { scratchPostgres } from '../support/scratch-postgres'

interface Options {
  target: number
  timeLimitMs: number
  concurrency: number
  ring: boolean
  checkpoint: number
  out: string
}
const opts = JSON.parse(process.argv[2] ?? '{}') as Options
const WARMUP = 500

// With DATABASE_URL: a scratch database on that server (as a distributed worker runs), so
// that the heap measured is the actors' and not an embedded database's. Foreign keys
// off (the call-log projection then needs no account rows): on PostgreSQL through the
// connection's startup parameter, on PGlite for its one session.
const scratch = process.env.DATABASE_URL ? await scratchPostgres('density', { params: { session_replication_role: 'replica' } }) : undefined
const database = await openDatabase({ dataDir: 'memory://', databaseUrl: scratch?.url })
await database.migrate()
if (!scratch) await database.db.execute(sql`set session_replication_role = replica`)
const clock = systemClock(1)
let effectErrors = 0
let firstEffectError: string | undefined
const callKind = createCallKind({ db: database.db, clock })
const host = new ActorHost({
  db: database.db,
  clock,
  kinds: [callKind.kind] as never,
  pollTimers: false,
  onEvent: (e) => {
    if (e.type !== 'gave_up') return
    effectErrors++
    firstEffectError ??= e.error instanceof Error ? e.error.message : String(e.error)
  },
})
host.start()

const owner = { platformId: 'plat_density', accountId: 'acct_density', mode: 'test' as const }
const user = 'user_density'
let spawned = 0

async function one(i: number) {
  const id = `call_density_${i.toString(36).padStart(8, '0')}`
  const at = clock.now().toISOString()
  const input: CallActorInput = {
    call_id: id,
    direction: 'inbound',
    from_number: '+15551234567',
    from_name: null,
    to_number: '+15555550100',
    started_at: at,
    user_id: user,
    to_user_id: user,
    record: false,
    owner,
    simulated: true,
  }
  await host.spawn(CALL_KIND, id, input)
  if (opts.ring) await host.send(CALL_KIND, id, { type: 'RING', user_id: user, at })
}

/** Spawns actors up to `upTo` (or until the deadline), `concurrency` at a time. */
async function spawnUpTo(upTo: number, deadline: number) {
  let next = spawned
  const worker = async () => {
    while (next < upTo && performance.now() < deadline) await one(next++)
  }
  await Promise.all(Array.from({ length: opts.concurrency }, worker))
  spawned = next
}

function measure(elapsedMs: number) {
  Bun.gc(true)
  Bun.gc(true)
  const m = process.memoryUsage()
  return { live: host.liveCount(), heapUsed: m.heapUsed, rss: m.rss, external: m.external, arrayBuffers: m.arrayBuffers, elapsedMs }
}

const counts = () => heapStats().objectTypeCounts as Record<string, number>

const t0 = performance.now()
const deadline = t0 + opts.timeLimitMs
// Warm-up: JIT, PGlite's caches, prepared plans; the fixed cost is measured after it.
await spawnUpTo(WARMUP, Infinity)
const warmupMs = performance.now() - t0
const baseline = measure(performance.now() - t0)
const baseCounts = counts()
const checkpoints = [baseline]
const spawnStart = performance.now()
while (spawned < opts.target && performance.now() < deadline) {
  await spawnUpTo(Math.min(opts.target, spawned + opts.checkpoint), deadline)
  checkpoints.push(measure(performance.now() - t0))
}
const spawnMs = performance.now() - spawnStart
const last = checkpoints.at(-1)!
const endCounts = counts()
const added = last.live - baseline.live
const topObjectTypes = Object.entries(endCounts)
  .map(([type, n]) => [type, added > 0 ? (n - (baseCounts[type] ?? 0)) / added : 0] as [string, number])
  .filter(([, n]) => n > 0.5)
  .sort((a, b) => b[1] - a[1])
  .slice(0, 15)

writeFileSync(
  opts.out,
  JSON.stringify({
    checkpoints,
    baseline,
    warmup: { actors: WARMUP, ms: warmupMs },
    peakLive: Math.max(...checkpoints.map((c) => c.live)),
    reachedTarget: spawned >= opts.target,
    spawned,
    spawnPerSec: spawnMs > 0 ? ((spawned - WARMUP) * 1000) / spawnMs : 0,
    stepsPerActor: opts.ring ? 2 : 1,
    effectErrors,
    firstEffectError,
    topObjectTypes,
    database: scratch ? 'postgres' : 'pglite',
  }),
)
if (scratch) {
  await database.close().catch(() => {})
  await scratch.dispose()
}
// The actors are live on purpose; nothing to drain. Exit without closing (close would wait on nothing but take time).
process.exit(0)
