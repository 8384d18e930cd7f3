/**
 * The actor runtime's durable effects and placement fence (actors/runtime.ts):
 * `fx.write` inside the step's transaction, SpawnOptions timers, `fx.tell` (with
 * `orSpawn` too) and `fx.spawnActor` as durable timer rows claimed by the target's step, the shard
 * fence (`raiseShardFence`, ActorFenced), and one provided machine per kind shared
 * by every actor of the kind.
 *
 * Runs on PGlite, and on PostgreSQL when DATABASE_URL is set. The database may be
 * shared with other runs: the kind name, ids and settings keys are unique per run,
 * the manual clocks start at a random instant in the 1990s (so other runs' timers,
 * due by real-time clocks, are not due here; a stray timer of another run carries an
 * unknown kind for this host), and the fence shards come from a shard count of two
 * million.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq, like } from 'drizzle-orm'
import { assign, setup } from 'xstate'
import { manualClock } from '../../src/clock'
import { openDatabase, type Database, type Db } from '../../src/db/client'
import { actorSnapshots, durableTimers, events, settings, shardFences } from '../../src/db/schema'
import { ActorFenced, ActorStepFailed, type ScheduleRequest } from './client'
import { ActorHost, raiseShardFence, type HostEvent } from './host'
import { defineActorKind } from './kinds'
import { shardOf } from './shards'

// ---------------------------------------------------------------- run-unique names

const run = Math.random().toString(36).slice(2, 10)
let n = 0
const uid = (p: string) => `${p}_${run}_${++n}`
/** The kind name is unique per run: timers of other runs are unknown kinds to these hosts. */
const KIND = `dfx_${run}`
/** Shard count of the hosts here (timer rows and snapshots are tagged with shardOf(id, SC)). */
const SC = 1009
/** Shard count for the fence tests: shard numbers far from those other tests use. */
const FENCE_SC = 2_000_000
const BASE = new Date(Date.UTC(1990, 0, 1) + Math.floor(Math.random() * 300_000_000_000))
const newClock = () => manualClock(BASE)
const settingKey = (id: string, tag: string) => `dfx:${id}/${tag}`

// ---------------------------------------------------------------- the machine

type Input = { id: string; account: string; note?: string }
type WriteMode = 'ok' | 'always' | 'once'
type DfxEvent =
  | { type: 'ADD'; tag: string; write?: WriteMode }
  | { type: 'TELL'; to: string; tag: string }
  | { type: 'SPAWN'; child: string; input: Input; timers?: ScheduleRequest[]; tellTag?: string }
  | { type: 'TELL_OR_SPAWN'; to: string; tags: string[]; input: Input }
  | { type: 'CLOSE' }
type Emitted = { type: string; tag: string }
type Ctx = { id: string; account: string; note?: string; count: number; log: string[] }

/** Keys whose write already failed once (mode 'once'). */
const failedOnce = new Set<string>()

const machine = setup({
  types: { context: {} as Ctx, events: {} as DfxEvent, input: {} as Input },
  actions: {
    emit: (_, _params: Emitted) => {},
    schedule: (_, _params: ScheduleRequest) => {},
    cancelTimer: (_, _params: { name: string }) => {},
    record: (_, _params: { tag: string; mode?: WriteMode }) => {},
    tell: (_, _params: { to: string; tag: string }) => {},
    spawnChild: (_, _params: { child: string; input: Input; timers?: ScheduleRequest[] }) => {},
    tellOrSpawn: (_, _params: { to: string; tags: string[]; input: Input }) => {},
  },
}).createMachine({
  id: 'dfx.v1',
  context: ({ input }) => ({ id: input.id, account: input.account, note: input.note, count: 0, log: [] }),
  initial: 'open',
  entry: { type: 'emit', params: { type: 'dfx.created', tag: 'created' } },
  states: {
    open: {
      on: {
        ADD: {
          actions: [
            assign(({ context, event }) => ({ count: context.count + 1, log: [...context.log, event.tag] })),
            { type: 'emit', params: ({ event }) => ({ type: 'dfx.added', tag: event.tag }) },
            { type: 'record', params: ({ event }) => ({ tag: event.tag, mode: event.write }) },
          ],
        },
        TELL: { actions: { type: 'tell', params: ({ event }) => ({ to: event.to, tag: event.tag }) } },
        SPAWN: {
          actions: [
            { type: 'spawnChild', params: ({ event }) => ({ child: event.child, input: event.input, timers: event.timers }) },
            // in the same step, after the spawn: a message to the new actor
            { type: 'tell', params: ({ event }) => ({ to: event.tellTag ? event.child : '', tag: event.tellTag ?? '' }) },
          ],
        },
        TELL_OR_SPAWN: { actions: { type: 'tellOrSpawn', params: ({ event }) => ({ to: event.to, tags: event.tags, input: event.input }) } },
        CLOSE: 'closed',
      },
    },
    closed: { type: 'final', entry: { type: 'emit', params: { type: 'dfx.closed', tag: 'closed' } } },
  },
})

const dfxKind = defineActorKind({
  kind: KIND,
  machines: [machine],
  // `id` is the host's step context (the entry whose step runs), `context.id` the actor's own input
  toEvents: (emitted, { id, context }) => {
    const e = emitted as Emitted
    const c = context as Ctx
    return { platformId: 'plat_dfx', accountId: c.account, mode: 'test', type: e.type, data: { tag: e.tag, actor: id, ctxActor: c.id } }
  },
  actions: (fx, ctx) => ({
    record: ({ context }, params: { tag: string; mode?: WriteMode }) => {
      if (!params.mode) return
      const stepId = ctx.id
      const own = (context as Ctx).id
      const key = settingKey(stepId, params.tag)
      const mode = params.mode
      fx.write(async (tx) => {
        // inside the step's transaction, after the snapshot upsert: it sees the step's snapshot
        const [snap] = await tx
          .select({ snapshot: actorSnapshots.snapshot })
          .from(actorSnapshots)
          .where(and(eq(actorSnapshots.kind, KIND), eq(actorSnapshots.id, stepId)))
        const seenCount = (snap?.snapshot as { context: Ctx } | undefined)?.context.count ?? -1
        await tx.insert(settings).values({ key, value: JSON.stringify({ actor: own, tag: params.tag, seenCount }) })
        if (mode === 'always') throw new Error(`write ${key} fails`)
        if (mode === 'once' && !failedOnce.has(key)) {
          failedOnce.add(key)
          throw new Error(`write ${key} fails once`)
        }
      })
    },
    tell: (_args, params: { to: string; tag: string }) => {
      if (params.to) fx.tell(KIND, params.to, { type: 'ADD', tag: params.tag })
    },
    spawnChild: (_args, params: { child: string; input: Input; timers?: ScheduleRequest[] }) => {
      fx.spawnActor(KIND, params.child, params.input, { timers: params.timers })
    },
    tellOrSpawn: (_args, params: { to: string; tags: string[]; input: Input }) => {
      for (const tag of params.tags) fx.tell(KIND, params.to, { type: 'ADD', tag }, { orSpawn: { ...params.input, note: tag } })
    },
  }),
})

// ---------------------------------------------------------------- harness

let database: Database
let db: Db

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
  db = database.db
})
afterAll(async () => {
  if (db) {
    await db.delete(settings).where(like(settings.key, `dfx:%${run}%`))
    await db.delete(durableTimers).where(eq(durableTimers.actorKind, KIND))
  }
  await database?.close()
})

function newHost(
  opts: { clock?: ReturnType<typeof manualClock>; maxAttempts?: number; log?: HostEvent[]; fence?: { shard: number; epoch: number }; shardCount?: number } = {},
) {
  return new ActorHost({
    db,
    clock: opts.clock ?? newClock(),
    kinds: [dfxKind],
    restart: { maxAttempts: opts.maxAttempts ?? 5, baseMs: 2, capMs: 20 },
    pollTimers: false,
    onEvent: (e) => opts.log?.push(e),
    shardCount: opts.shardCount ?? SC,
    fence: opts.fence,
  })
}

type EventData = { tag: string; actor: string; ctxActor: string }
async function eventRows(account: string) {
  const rows = await db.select({ type: events.type, body: events.body }).from(events).where(eq(events.accountId, account)).orderBy(events.seq)
  return rows.map((r) => ({ type: r.type, data: (JSON.parse(r.body) as { data: EventData }).data }))
}
async function eventTags(account: string) {
  return (await eventRows(account)).map((e) => `${e.type}:${e.data.tag}`)
}
async function snapshotRow(id: string) {
  const [row] = await db
    .select()
    .from(actorSnapshots)
    .where(and(eq(actorSnapshots.kind, KIND), eq(actorSnapshots.id, id)))
  return row
}
const ctxOfRow = (row: { snapshot: unknown } | undefined) => (row?.snapshot as { context: Ctx } | undefined)?.context
async function timerRows(id: string) {
  return db
    .select()
    .from(durableTimers)
    .where(and(eq(durableTimers.actorKind, KIND), eq(durableTimers.actorId, id)))
    .orderBy(durableTimers.dueAt)
}
async function settingRows(id: string, tag: string) {
  return db
    .select()
    .from(settings)
    .where(eq(settings.key, settingKey(id, tag)))
}
const ctxOf = (r: { context: unknown }) => r.context as Ctx
const asTimer = (row: typeof durableTimers.$inferSelect) => ({ ...row, event: row.event as Record<string, unknown> })
const droppedIds = (log: HostEvent[]) => log.flatMap((e) => (e.type === 'timer_dropped' ? [e.timerId] : []))
const deliveryFailures = (log: HostEvent[], timerId: string) =>
  log.filter((e): e is Extract<HostEvent, { type: 'timer_delivery_failed' }> => e.type === 'timer_delivery_failed' && e.timerId === timerId)

async function spawnPair(host: ActorHost) {
  const a = uid('a')
  const b = uid('b')
  const accA = uid('acct')
  const accB = uid('acct')
  await host.spawn(KIND, a, { id: a, account: accA })
  await host.spawn(KIND, b, { id: b, account: accB })
  return { a, b, accA, accB }
}

// ---------------------------------------------------------------- 1. fx.write

describe('fx.write runs inside the step transaction', () => {
  test('the row commits with the step; a write failing on every attempt fails the step and writes nothing; a write failing once is applied once', async () => {
    const log: HostEvent[] = []
    const host = newHost({ maxAttempts: 3, log })
    const id = uid('w')
    const account = uid('acct')
    await host.spawn(KIND, id, { id, account })

    // committed with the step, and it saw the step's own snapshot (count 1) in the transaction
    const ok = await host.send(KIND, id, { type: 'ADD', tag: 'w1', write: 'ok' })
    expect(ctxOf(ok).count).toBe(1)
    const [row1, ...extra1] = await settingRows(id, 'w1')
    expect(extra1).toHaveLength(0)
    expect(JSON.parse(row1!.value)).toEqual({ actor: id, tag: 'w1', seenCount: 1 })
    expect(await eventTags(account)).toEqual(['dfx.created:created', 'dfx.added:w1'])
    const before = await snapshotRow(id)

    // the write inserts its row and then throws, on every attempt
    const failed = await host.send(KIND, id, { type: 'ADD', tag: 'w2', write: 'always' }).catch((e) => e)
    expect(failed).toBeInstanceOf(ActorStepFailed)
    expect((failed as ActorStepFailed).attempts).toBe(3)
    expect(log.filter((e) => e.type === 'restart')).toHaveLength(2)
    expect(log.filter((e) => e.type === 'gave_up')).toHaveLength(1)
    const after = await snapshotRow(id)
    expect(after?.snapshot).toEqual(before!.snapshot)
    expect(after?.updatedAt.getTime()).toBe(before!.updatedAt.getTime())
    expect(await eventTags(account)).toEqual(['dfx.created:created', 'dfx.added:w1'])
    expect(await settingRows(id, 'w2')).toHaveLength(0)

    // fails once (after inserting its row), then succeeds: one row, one event, applied once
    const once = await host.send(KIND, id, { type: 'ADD', tag: 'w3', write: 'once' })
    expect(ctxOf(once)).toMatchObject({ count: 2, log: ['w1', 'w3'] })
    expect(once.events.map((e) => e.type)).toEqual(['dfx.added'])
    const rows3 = await settingRows(id, 'w3')
    expect(rows3).toHaveLength(1)
    expect(JSON.parse(rows3[0]!.value)).toEqual({ actor: id, tag: 'w3', seenCount: 2 })
    expect(await eventTags(account)).toEqual(['dfx.created:created', 'dfx.added:w1', 'dfx.added:w3'])
    expect(log.filter((e) => e.type === 'restart')).toHaveLength(3)
    expect(ctxOfRow(await snapshotRow(id))).toMatchObject({ count: 2, log: ['w1', 'w3'] })
    await host.close()
  })
})

// ---------------------------------------------------------------- 2. SpawnOptions.timers

describe('spawn with SpawnOptions.timers', () => {
  test('script timers are written with the first snapshot, fire in due order by the manual clock, and are gone after the final state', async () => {
    const clock = newClock()
    const log: HostEvent[] = []
    const host = newHost({ clock, log })
    const id = uid('s')
    const account = uid('acct')
    const t0 = clock.now().getTime()
    // listed out of due order on purpose
    const timers: ScheduleRequest[] = [
      { name: 't3', delayMs: 3_000, event: { type: 'ADD', tag: 't3' } },
      { name: 'late', delayMs: 9_000, event: { type: 'ADD', tag: 'late' } },
      { name: 't1', delayMs: 1_000, event: { type: 'ADD', tag: 't1' } },
      { name: 'close', delayMs: 5_000, event: { type: 'CLOSE' } },
      { name: 't2', at: new Date(t0 + 2_000).toISOString(), event: { type: 'ADD', tag: 't2' } },
    ]
    const spawned = await host.spawn(KIND, id, { id, account }, { timers })
    expect(spawned.events.map((e) => e.type)).toEqual(['dfx.created'])
    const snap0 = await snapshotRow(id)
    expect(snap0).toMatchObject({ status: 'active', shard: shardOf(id, SC) })
    const rows = await timerRows(id)
    expect(rows.map((r) => [r.name, r.dueAt.getTime() - t0, r.shard])).toEqual([
      ['t1', 1_000, shardOf(id, SC)],
      ['t2', 2_000, shardOf(id, SC)],
      ['t3', 3_000, shardOf(id, SC)],
      ['close', 5_000, shardOf(id, SC)],
      ['late', 9_000, shardOf(id, SC)],
    ])
    expect(rows.every((r) => r.createdAt.getTime() === snap0!.updatedAt.getTime())).toBe(true)

    // nothing is due yet
    clock.advance(999)
    await host.timers.tick()
    expect(ctxOfRow(await snapshotRow(id))?.log).toEqual([])

    clock.advance(1)
    await host.timers.tick()
    expect(ctxOfRow(await snapshotRow(id))).toMatchObject({ count: 1, log: ['t1'] })
    expect(await eventTags(account)).toEqual(['dfx.created:created', 'dfx.added:t1'])

    // two due in one poll: applied in due order (together, in one step)
    clock.advance(2_000)
    await host.timers.tick()
    expect(ctxOfRow(await snapshotRow(id))).toMatchObject({ count: 3, log: ['t1', 't2', 't3'] })
    expect(await eventTags(account)).toEqual(['dfx.created:created', 'dfx.added:t1', 'dfx.added:t2', 'dfx.added:t3'])
    expect((await timerRows(id)).map((r) => r.name)).toEqual(['close', 'late'])

    // the final state cancels the rest of the script
    clock.advance(2_000)
    await host.timers.tick()
    const done = await snapshotRow(id)
    expect(done?.status).toBe('done')
    expect(await timerRows(id)).toHaveLength(0)
    clock.advance(60_000)
    await host.timers.tick()
    expect(ctxOfRow(await snapshotRow(id))?.log).toEqual(['t1', 't2', 't3'])
    expect(await eventTags(account)).toEqual(['dfx.created:created', 'dfx.added:t1', 'dfx.added:t2', 'dfx.added:t3', 'dfx.closed:closed'])
    expect(log.filter((e) => e.type === 'timer_delivery_failed')).toHaveLength(0)
    await host.close()
  })

  test('the script timers are one transaction with the first snapshot: a bad timer writes neither', async () => {
    const host = newHost({ maxAttempts: 2 })
    const id = uid('s')
    const account = uid('acct')
    const timers: ScheduleRequest[] = [
      { name: 'good', delayMs: 1_000, event: { type: 'ADD', tag: 'good' } },
      { name: 'bad', at: 'not a date', event: { type: 'ADD', tag: 'bad' } },
    ]
    const failed = await host.spawn(KIND, id, { id, account }, { timers }).catch((e) => e)
    expect(failed).toBeInstanceOf(ActorStepFailed)
    expect(await snapshotRow(id)).toBeUndefined()
    expect(await timerRows(id)).toHaveLength(0)
    expect(await eventTags(account)).toEqual([])
    // the id is still free
    await host.spawn(KIND, id, { id, account }, { timers: [timers[0]!] })
    expect((await timerRows(id)).map((r) => r.name)).toEqual(['good'])
    await host.stop(KIND, id)
    expect(await timerRows(id)).toHaveLength(0)
    await host.close()
  })
})

// ---------------------------------------------------------------- 3. fx.tell

describe('fx.tell', () => {
  test('a tell is a timer row due now: the target is untouched until it fires, then applies it exactly once', async () => {
    const clock = newClock()
    const log: HostEvent[] = []
    const host = newHost({ clock, log })
    const { a, b, accA, accB } = await spawnPair(host)
    const bBefore = await snapshotRow(b)

    const told = await host.send(KIND, a, { type: 'TELL', to: b, tag: 'hello' })
    expect(told.events).toEqual([])
    // B is untouched: same snapshot, no event; the message is a durable row on B's shard
    const bAfterTell = await snapshotRow(b)
    expect(bAfterTell?.snapshot).toEqual(bBefore!.snapshot)
    expect(bAfterTell?.updatedAt.getTime()).toBe(bBefore!.updatedAt.getTime())
    expect(await eventTags(accB)).toEqual(['dfx.created:created'])
    const [row, ...more] = await timerRows(b)
    expect(more).toHaveLength(0)
    expect(row).toMatchObject({ actorKind: KIND, actorId: b, shard: shardOf(b, SC), event: { type: 'ADD', tag: 'hello' } })
    expect(row!.name.startsWith('$tell:')).toBe(true)
    expect(row!.dueAt.getTime()).toBe(clock.now().getTime())
    expect(await timerRows(a)).toHaveLength(0)

    // the same fire delivered twice (concurrently): the claim takes one, the other is dropped
    await Promise.all([host.fire(asTimer(row!)), host.fire(asTimer(row!))])
    expect(ctxOfRow(await snapshotRow(b))).toMatchObject({ count: 1, log: ['hello'] })
    expect(await eventTags(accB)).toEqual(['dfx.created:created', 'dfx.added:hello'])
    expect(droppedIds(log)).toEqual([row!.id])
    expect(await timerRows(b)).toHaveLength(0)
    // and once more, late
    await host.fire(asTimer(row!))
    expect(droppedIds(log)).toEqual([row!.id, row!.id])
    expect(ctxOfRow(await snapshotRow(b))?.count).toBe(1)

    // by the poller: ticking twice applies it once
    await host.send(KIND, a, { type: 'TELL', to: b, tag: 'again' })
    const [row2] = await timerRows(b)
    expect(ctxOfRow(await snapshotRow(b))?.count).toBe(1)
    await host.timers.tick()
    await host.timers.tick()
    expect(ctxOfRow(await snapshotRow(b))).toMatchObject({ count: 2, log: ['hello', 'again'] })
    expect(await eventTags(accB)).toEqual(['dfx.created:created', 'dfx.added:hello', 'dfx.added:again'])
    expect(await timerRows(b)).toHaveLength(0)
    await host.fire(asTimer(row2!))
    expect(ctxOfRow(await snapshotRow(b))?.count).toBe(2)
    // A's own state and events were never touched by B's steps
    expect(ctxOfRow(await snapshotRow(a))).toMatchObject({ count: 0, log: [] })
    expect(await eventTags(accA)).toEqual(['dfx.created:created'])
    expect(log.filter((e) => e.type === 'timer_delivery_failed')).toHaveLength(0)
    await host.close()
  })

  test('a tell to an actor that does not exist is dropped: the row goes, no error, no actor created', async () => {
    const log: HostEvent[] = []
    const host = newHost({ log })
    const a = uid('a')
    await host.spawn(KIND, a, { id: a, account: uid('acct') })
    const ghost = uid('ghost')
    await host.send(KIND, a, { type: 'TELL', to: ghost, tag: 'boo' })
    const [row] = await timerRows(ghost)
    expect(row).toBeDefined()
    await host.timers.tick()
    expect(await timerRows(ghost)).toHaveLength(0)
    expect(droppedIds(log)).toEqual([row!.id])
    expect(deliveryFailures(log, row!.id)).toHaveLength(0)
    expect(await host.inspect(KIND, ghost)).toBeUndefined()
    expect(host.liveCount()).toBe(1)
    await host.close()
  })
})

// ---------------------------------------------------------------- 4. fx.spawnActor

describe('fx.spawnActor', () => {
  test('creates the actor durably after the step, with its input and timers; a second spawn of the id does not reset it', async () => {
    const clock = newClock()
    const log: HostEvent[] = []
    const host = newHost({ clock, log })
    const a = uid('a')
    await host.spawn(KIND, a, { id: a, account: uid('acct') })
    const b = uid('b')
    const accB = uid('acct')
    const script: ScheduleRequest[] = [{ name: 'script', delayMs: 60_000, event: { type: 'ADD', tag: 'scripted' } }]

    await host.send(KIND, a, { type: 'SPAWN', child: b, input: { id: b, account: accB, note: 'first' }, timers: script })
    // not yet: only the durable spawn row, on B's shard
    expect(await host.inspect(KIND, b)).toBeUndefined()
    const [spawnRow, ...more] = await timerRows(b)
    expect(more).toHaveLength(0)
    expect(spawnRow).toMatchObject({ name: '$spawn', shard: shardOf(b, SC) })

    await host.timers.tick()
    const created = await snapshotRow(b)
    expect(created).toMatchObject({ status: 'active', shard: shardOf(b, SC), machineVersion: 'dfx.v1' })
    expect(ctxOfRow(created)).toEqual({ id: b, account: accB, note: 'first', count: 0, log: [] })
    expect(await eventTags(accB)).toEqual(['dfx.created:created'])
    const bTimers = await timerRows(b)
    expect(bTimers.map((r) => [r.name, r.dueAt.getTime() - clock.now().getTime(), r.shard])).toEqual([['script', 60_000, shardOf(b, SC)]])
    // a second tick does not create it again
    await host.timers.tick()
    expect(await eventTags(accB)).toEqual(['dfx.created:created'])

    await host.send(KIND, b, { type: 'ADD', tag: 'x' })

    // spawned again (B live on this host): dropped, B keeps its state, the extra timer is not written
    const extra: ScheduleRequest[] = [{ name: 'extra', delayMs: 1_000, event: { type: 'ADD', tag: 'extra' } }]
    await host.send(KIND, a, { type: 'SPAWN', child: b, input: { id: b, account: accB, note: 'second' }, timers: extra })
    const [again] = (await timerRows(b)).filter((r) => r.name === '$spawn')
    await host.timers.tick()
    expect(droppedIds(log)).toContain(again!.id)
    expect(ctxOfRow(await snapshotRow(b))).toEqual({ id: b, account: accB, note: 'first', count: 1, log: ['x'] })
    expect((await timerRows(b)).map((r) => r.name)).toEqual(['script'])

    // spawned again, delivered by another host where B is not live: same
    await host.send(KIND, a, { type: 'SPAWN', child: b, input: { id: b, account: accB, note: 'third' }, timers: extra })
    const other = newHost({ clock, log })
    await other.timers.tick()
    expect(ctxOfRow(await snapshotRow(b))).toEqual({ id: b, account: accB, note: 'first', count: 1, log: ['x'] })
    expect((await timerRows(b)).map((r) => r.name)).toEqual(['script'])
    expect(await eventTags(accB)).toEqual(['dfx.created:created', 'dfx.added:x'])
    await other.close()

    // B's own script timer still fires
    clock.advance(60_000)
    await host.timers.tick()
    expect(ctxOfRow(await snapshotRow(b))?.log).toEqual(['x', 'scripted'])
    expect(await timerRows(b)).toHaveLength(0)
    expect(log.filter((e) => e.type === 'timer_delivery_failed')).toHaveLength(0)
    await host.close()
  })

  test('a spawn and a tell to the new actor in the same step: the tell is applied after the spawn', async () => {
    const host = newHost()
    const a = uid('a')
    await host.spawn(KIND, a, { id: a, account: uid('acct') })
    const c = uid('c')
    await host.send(KIND, a, { type: 'SPAWN', child: c, input: { id: c, account: uid('acct') }, tellTag: 'welcome' })
    expect((await timerRows(c)).map((r) => r.name.split(':')[0])).toEqual(['$spawn', '$tell'])
    await host.timers.tick()
    expect(ctxOfRow(await snapshotRow(c))).toMatchObject({ count: 1, log: ['welcome'] })
    expect(await timerRows(c)).toHaveLength(0)
    await host.close()
  })
})

describe('fx.tell with orSpawn', () => {
  test('to a missing actor: one row; its step creates the actor from the input, without applying the event', async () => {
    const host = newHost()
    const a = uid('a')
    await host.spawn(KIND, a, { id: a, account: uid('acct') })
    const b = uid('b')
    const accB = uid('acct')
    await host.send(KIND, a, { type: 'TELL_OR_SPAWN', to: b, tags: ['first'], input: { id: b, account: accB } })
    const rows = await timerRows(b)
    expect(rows.map((r) => r.name.split(':')[0])).toEqual(['$tell'])
    expect(await host.inspect(KIND, b)).toBeUndefined()
    await host.timers.tick()
    expect(ctxOfRow(await snapshotRow(b))).toEqual({ id: b, account: accB, note: 'first', count: 0, log: [] })
    expect(await eventTags(accB)).toEqual(['dfx.created:created'])
    expect(await timerRows(b)).toHaveLength(0)

    // Now it exists: the next one is a tell (the input is not used).
    await host.send(KIND, a, { type: 'TELL_OR_SPAWN', to: b, tags: ['second'], input: { id: b, account: accB } })
    await host.timers.tick()
    expect(ctxOfRow(await snapshotRow(b))).toEqual({ id: b, account: accB, note: 'first', count: 1, log: ['second'] })
    expect(await timerRows(b)).toHaveLength(0)
    await host.close()
  })

  test('several to a missing actor, taken together: the first creates it, the others are applied after it, in order', async () => {
    const log: HostEvent[] = []
    const host = newHost({ log })
    const a = uid('a')
    await host.spawn(KIND, a, { id: a, account: uid('acct') })
    const b = uid('b')
    const accB = uid('acct')
    await host.send(KIND, a, { type: 'TELL_OR_SPAWN', to: b, tags: ['x', 'y', 'z'], input: { id: b, account: accB } })
    expect(await timerRows(b)).toHaveLength(3)
    // Another host, where nothing is live, takes the three at once.
    const other = newHost({ log })
    await other.timers.tick()
    expect(ctxOfRow(await snapshotRow(b))).toEqual({ id: b, account: accB, note: 'x', count: 2, log: ['y', 'z'] })
    expect(await eventTags(accB)).toEqual(['dfx.created:created', 'dfx.added:y', 'dfx.added:z'])
    expect(await timerRows(b)).toHaveLength(0)
    expect(log.filter((e) => e.type === 'timer_delivery_failed' || e.type === 'gave_up')).toHaveLength(0)
    await other.close()
    await host.close()
  })

  test('to a finished actor: dropped, the actor stays finished', async () => {
    const log: HostEvent[] = []
    const host = newHost({ log })
    const { a, b, accB } = await spawnPair(host)
    await host.send(KIND, b, { type: 'CLOSE' })
    await host.send(KIND, a, { type: 'TELL_OR_SPAWN', to: b, tags: ['late'], input: { id: b, account: accB } })
    const [row] = await timerRows(b)
    await host.timers.tick()
    expect(droppedIds(log)).toContain(row!.id)
    expect(await snapshotRow(b)).toMatchObject({ status: 'done' })
    expect(await eventTags(accB)).toEqual(['dfx.created:created', 'dfx.closed:closed'])
    expect(await timerRows(b)).toHaveLength(0)
    await host.close()
  })
})

// ---------------------------------------------------------------- 5. fencing

describe('shard fence', () => {
  test('a new owner raises the fence: the old host is fenced (nothing written, live actor discarded), the new one continues from the last commit', async () => {
    const clock = newClock()
    const log1: HostEvent[] = []
    const id = uid('f')
    const account = uid('acct')
    const shard = shardOf(id, FENCE_SC)
    const e1 = await raiseShardFence(db, shard)
    const host1 = newHost({ clock, log: log1, fence: { shard, epoch: e1 }, shardCount: FENCE_SC })
    await host1.spawn(KIND, id, { id, account }, { timers: [{ name: 'ping', delayMs: 1_000, event: { type: 'ADD', tag: 'ping' } }] })
    await host1.send(KIND, id, { type: 'ADD', tag: 'a' })
    const last = await host1.send(KIND, id, { type: 'ADD', tag: 'b', write: 'ok' })
    expect(ctxOf(last)).toMatchObject({ count: 2, log: ['a', 'b'] })
    expect((await snapshotRow(id))?.shard).toBe(shard)
    expect(host1.liveCount()).toBe(1)

    // the new owner
    const e2 = await raiseShardFence(db, shard)
    expect(e2).toBe(e1 + 1)
    const host2 = newHost({ clock, fence: { shard, epoch: e2 }, shardCount: FENCE_SC })
    const before = await snapshotRow(id)
    const eventsBefore = await eventTags(account)

    const fenced = await host1.send(KIND, id, { type: 'ADD', tag: 'c', write: 'ok' }).catch((e) => e)
    expect(fenced).toBeInstanceOf(ActorFenced)
    expect((fenced as ActorFenced).code).toBe('fenced')
    const after = await snapshotRow(id)
    expect(after?.snapshot).toEqual(before!.snapshot)
    expect(after?.updatedAt.getTime()).toBe(before!.updatedAt.getTime())
    expect(await eventTags(account)).toEqual(eventsBefore)
    expect(await settingRows(id, 'c')).toHaveLength(0)
    expect(host1.liveCount()).toBe(0)
    // not retried: a fence is not a failure to restart from
    expect(log1.filter((e) => e.type === 'restart' || e.type === 'gave_up')).toHaveLength(0)
    // still fenced on the next message (rehydrated from the database, rolled back again)
    await expect(host1.send(KIND, id, { type: 'ADD', tag: 'c2' })).rejects.toBeInstanceOf(ActorFenced)
    expect(host1.liveCount()).toBe(0)

    // a timer fire on the old host is fenced too: the row stays for the new owner
    clock.advance(1_000)
    const [ping] = await timerRows(id)
    expect(ping?.name).toBe('ping')
    await host1.timers.tick()
    expect(deliveryFailures(log1, ping!.id).map((e) => e.error instanceof ActorFenced)).toEqual([true])
    expect((await timerRows(id)).map((r) => r.id)).toEqual([ping!.id])
    expect((await snapshotRow(id))?.updatedAt.getTime()).toBe(before!.updatedAt.getTime())

    // the new owner continues from host1's last commit
    const cont = await host2.send(KIND, id, { type: 'ADD', tag: 'd' })
    expect(ctxOf(cont)).toMatchObject({ count: 3, log: ['a', 'b', 'd'] })
    await host2.timers.tick()
    expect(ctxOfRow(await snapshotRow(id))).toMatchObject({ count: 4, log: ['a', 'b', 'd', 'ping'] })
    expect(await timerRows(id)).toHaveLength(0)
    expect(await eventTags(account)).toEqual(['dfx.created:created', 'dfx.added:a', 'dfx.added:b', 'dfx.added:d', 'dfx.added:ping'])

    // stop respects the fence
    await expect(host1.stop(KIND, id)).rejects.toBeInstanceOf(ActorFenced)
    expect((await snapshotRow(id))?.status).toBe('active')
    await host2.stop(KIND, id)
    expect((await snapshotRow(id))?.status).toBe('done')

    await host1.close()
    await host2.close()
  })

  test('stop on a fenced host leaves the actor and its timers', async () => {
    const clock = newClock()
    const id = uid('f')
    const shard = shardOf(id, FENCE_SC)
    const e1 = await raiseShardFence(db, shard)
    const host1 = newHost({ clock, fence: { shard, epoch: e1 }, shardCount: FENCE_SC })
    await host1.spawn(KIND, id, { id, account: uid('acct') }, { timers: [{ name: 'later', delayMs: 5_000, event: { type: 'ADD', tag: 'later' } }] })
    const e2 = await raiseShardFence(db, shard)
    await expect(host1.stop(KIND, id)).rejects.toBeInstanceOf(ActorFenced)
    expect((await snapshotRow(id))?.status).toBe('active')
    expect((await timerRows(id)).map((r) => r.name)).toEqual(['later'])
    const host2 = newHost({ clock, fence: { shard, epoch: e2 }, shardCount: FENCE_SC })
    await host2.stop(KIND, id)
    expect((await snapshotRow(id))?.status).toBe('done')
    expect(await timerRows(id)).toHaveLength(0)
    await host1.close()
    await host2.close()
  })

  // A dropped fire (target missing or done, a $spawn for an existing actor) is fenced too:
  // with a spawn and a tell in one step, the fenced host must not delete the tell as "actor
  // not found" while its $spawn fails, or the new owner would create the actor without it.
  test('a fenced host does not drop (delete) timer rows: a spawn + tell fired on the old owner reaches the new owner intact', async () => {
    const clock = newClock()
    const log1: HostEvent[] = []
    const c = uid('c')
    const shard = shardOf(c, FENCE_SC)
    const e1 = await raiseShardFence(db, shard)
    const host1 = newHost({ clock, log: log1, fence: { shard, epoch: e1 }, shardCount: FENCE_SC })
    const e2 = await raiseShardFence(db, shard)
    const host2 = newHost({ clock, fence: { shard, epoch: e2 }, shardCount: FENCE_SC })
    const free = newHost({ clock, shardCount: FENCE_SC })
    const a = uid('a')
    await free.spawn(KIND, a, { id: a, account: uid('acct') })
    await free.send(KIND, a, { type: 'SPAWN', child: c, input: { id: c, account: uid('acct') }, tellTag: 'welcome' })
    const rows = await timerRows(c)
    expect(rows.map((r) => r.name.split(':')[0])).toEqual(['$spawn', '$tell'])
    try {
      // the old owner's poll: both fires are fenced, both rows stay
      await host1.timers.tick()
      expect(droppedIds(log1)).toEqual([])
      expect((await timerRows(c)).map((r) => r.id)).toEqual(rows.map((r) => r.id))
      // the new owner: C is created and gets the message
      await host2.timers.tick()
      expect(ctxOfRow(await snapshotRow(c))).toMatchObject({ count: 1, log: ['welcome'] })
    } finally {
      await host2.stop(KIND, c).catch(() => {})
      await db.delete(durableTimers).where(and(eq(durableTimers.actorKind, KIND), eq(durableTimers.actorId, c)))
      await host1.close()
      await host2.close()
      await free.close()
    }
  })

  test('a host whose fence row is missing (never raised) is fenced', async () => {
    let shard = FENCE_SC + Math.floor(Math.random() * 1_000_000)
    for (;;) {
      const [row] = await db.select().from(shardFences).where(eq(shardFences.shard, shard))
      if (!row) break
      shard++
    }
    const host = newHost({ fence: { shard, epoch: 1 } })
    const id = uid('f')
    const account = uid('acct')
    const e = await host.spawn(KIND, id, { id, account }).catch((x) => x)
    expect(e).toBeInstanceOf(ActorFenced)
    expect(await snapshotRow(id)).toBeUndefined()
    expect(await eventTags(account)).toEqual([])
    expect(host.liveCount()).toBe(0)
    // an actor that exists (made by an unfenced host) can be neither sent to nor stopped
    const free = newHost()
    await free.spawn(KIND, id, { id, account })
    await expect(host.send(KIND, id, { type: 'ADD', tag: 'x' })).rejects.toBeInstanceOf(ActorFenced)
    await expect(host.stop(KIND, id)).rejects.toBeInstanceOf(ActorFenced)
    expect(await snapshotRow(id)).toMatchObject({ status: 'active' })
    expect(ctxOfRow(await snapshotRow(id))?.count).toBe(0)
    await free.stop(KIND, id)
    await host.close()
    await free.close()
  })
})

// ---------------------------------------------------------------- 6. one provided machine per kind

describe('one provided machine per kind', () => {
  test('200 actors of a kind share one provided machine; the effects of interleaved concurrent steps land in the right actor', async () => {
    const originalProvide = machine.provide
    let provides = 0
    machine.provide = function (this: typeof machine, ...args: Parameters<typeof machine.provide>) {
      provides++
      return originalProvide.apply(this, args)
    } as typeof machine.provide
    const log: HostEvent[] = []
    const host = newHost({ log })
    try {
      const account = uid('acct')
      const ids = Array.from({ length: 200 }, () => uid('m'))
      const spawned = await Promise.all(ids.map((id) => host.spawn(KIND, id, { id, account })))
      expect(spawned.map((r) => r.id)).toEqual(ids)
      expect(host.liveCount()).toBe(200)
      expect(provides).toBe(1)

      // three messages per actor, all sent at once; every seventh write fails once (restarts interleave too)
      const tags = ['m0', 'm1', 'm2']
      let k = 0
      const results = await Promise.all(
        ids.flatMap((id) => tags.map((tag) => host.send(KIND, id, { type: 'ADD', tag, write: ++k % 7 === 0 ? 'once' : 'ok' }).then((r) => ({ id, tag, r })))),
      )
      expect(provides).toBe(1)
      expect(log.filter((e) => e.type === 'restart').length).toBeGreaterThan(0)
      for (const { id, tag, r } of results) {
        expect(r.id).toBe(id)
        expect(ctxOf(r).id).toBe(id)
        expect(ctxOf(r).log.at(-1)).toBe(tag)
        expect(r.events.map((e) => (JSON.parse(e.body) as { data: EventData }).data)).toEqual([{ tag, actor: id, ctxActor: id }])
      }

      // the database: every event and row belongs to the actor that caused it
      const evs = await eventRows(account)
      expect(evs).toHaveLength(200 * 4)
      for (const e of evs) expect(e.data.actor).toBe(e.data.ctxActor)
      const byActor = new Map<string, string[]>()
      for (const e of evs) byActor.set(e.data.actor, [...(byActor.get(e.data.actor) ?? []), `${e.type}:${e.data.tag}`])
      expect([...byActor.keys()].sort()).toEqual([...ids].sort())
      for (const tagsOf of byActor.values()) expect(tagsOf).toEqual(['dfx.created:created', 'dfx.added:m0', 'dfx.added:m1', 'dfx.added:m2'])

      const rows = await db
        .select()
        .from(settings)
        .where(like(settings.key, `dfx:m_${run}_%`))
      expect(rows).toHaveLength(200 * 3)
      const keys = new Set<string>()
      for (const row of rows) {
        const v = JSON.parse(row.value) as { actor: string; tag: string; seenCount: number }
        expect(row.key).toBe(settingKey(v.actor, v.tag))
        // the write ran in that actor's step: it saw that actor's snapshot at that message
        expect(v.seenCount).toBe(tags.indexOf(v.tag) + 1)
        keys.add(row.key)
      }
      expect(keys.size).toBe(600)

      for (const id of ids) {
        const row = await snapshotRow(id)
        expect(ctxOfRow(row)).toEqual({ id, account, note: undefined, count: 3, log: tags } as never)
      }
      expect(provides).toBe(1)
    } finally {
      machine.provide = originalProvide
      await host.close()
    }
  }, 120_000)
})
