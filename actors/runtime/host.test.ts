/**
 * The actor runtime (issue 4, embedded mode), with a toy machine defined here.
 * Runs on PGlite, and again on PostgreSQL when DATABASE_URL is set (ids are unique
 * per run, so a shared database is fine).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import fc from 'fast-check'
import { assign, setup } from 'xstate'
import { manualClock } from '../../src/clock'
import { shardOf } from './shards'
import { openDatabase, type Database } from '../../src/db/client'
import { actorSnapshots, durableTimers, events } from '../../src/db/schema'
import { ActorDone, ActorExists, ActorNotFound, ActorStepFailed, type ScheduleRequest } from './client'
import { scheduleTimer } from '../../src/scheduler/durable-timers'
import { spawnInTx } from './commands'
import { ActorHost, restartDelay, type HostEvent } from './host'
import { defineActorKind, kindClient } from './kinds'

// ---------------------------------------------------------------- the toy machine

type ToyEvent =
  | { type: 'ADD'; tag: string; failTimes?: number; badEvent?: boolean }
  | { type: 'ARM'; tag: string; ms: number }
  | { type: 'DISARM' }
  | { type: 'ALARM'; tag: string }
  | { type: 'CLOSE' }
type ToyEmitted = { type: string; tag: string; bad?: boolean }

/** Per actor and message tag: how many more times the step must throw. */
const failuresLeft = new Map<string, number>()

const toyMachine = setup({
  types: {
    context: {} as { id: string; account: string; count: number; log: string[] },
    events: {} as ToyEvent,
    input: {} as { id: string; account: string },
  },
  actions: {
    emit: (_, _params: ToyEmitted) => {},
    schedule: (_, _params: ScheduleRequest) => {},
    cancelTimer: (_, _params: { name: string }) => {},
    maybeFail: (_, _params: { key: string; times?: number }) => {},
  },
}).createMachine({
  id: 'toy.v1',
  context: ({ input }) => ({ id: input.id, account: input.account, count: 0, log: [] }),
  initial: 'open',
  entry: { type: 'emit', params: { type: 'toy.created', tag: 'created' } },
  states: {
    open: {
      on: {
        ADD: {
          actions: [
            assign(({ context, event }) => ({ count: context.count + 1, log: [...context.log, event.tag] })),
            // after the assign: a failed attempt has already changed the in-memory context
            { type: 'maybeFail', params: ({ context, event }) => ({ key: `${context.id}/${event.tag}`, times: event.failTimes }) },
            { type: 'emit', params: ({ event }) => ({ type: 'toy.added', tag: event.tag, bad: event.badEvent }) },
          ],
        },
        ARM: {
          actions: {
            type: 'schedule',
            params: ({ event }) => ({ name: 'alarm', delayMs: event.ms, event: { type: 'ALARM', tag: event.tag } }),
          },
        },
        DISARM: { actions: { type: 'cancelTimer', params: { name: 'alarm' } } },
        ALARM: {
          actions: [
            assign(({ context, event }) => ({ log: [...context.log, `alarm:${event.tag}`] })),
            { type: 'emit', params: ({ event }) => ({ type: 'toy.alarm', tag: event.tag }) },
          ],
        },
        CLOSE: 'closed',
      },
    },
    closed: { type: 'final', entry: { type: 'emit', params: { type: 'toy.closed', tag: 'closed' } } },
  },
})

const toyKind = defineActorKind({
  kind: 'toy',
  machines: [toyMachine],
  toEvents: (emitted, { context }) => {
    const e = emitted as ToyEmitted
    const account = (context as { account: string }).account
    // bad: a NOT NULL violation inside the step's transaction, after the snapshot upsert
    return { platformId: e.bad ? (null as unknown as string) : 'plat_toy', accountId: account, mode: 'test', type: e.type, data: { tag: e.tag } }
  },
  actions: () => ({
    maybeFail: (_args, params: { key: string; times?: number }) => {
      if (!failuresLeft.has(params.key)) failuresLeft.set(params.key, params.times ?? 0)
      const left = failuresLeft.get(params.key)!
      if (left > 0) {
        failuresLeft.set(params.key, left - 1)
        throw new Error(`boom ${params.key}`)
      }
    },
  }),
})

// ---------------------------------------------------------------- harness

let database: Database
const run = Math.random().toString(36).slice(2, 10)
let n = 0
const uid = (p: string) => `${p}_${run}_${++n}`

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
})
afterAll(async () => {
  await database?.close()
})

function newHost(opts: { clock?: ReturnType<typeof manualClock>; maxAttempts?: number; log?: HostEvent[] } = {}) {
  return new ActorHost({
    db: database.db,
    clock: opts.clock ?? manualClock(),
    kinds: [toyKind],
    restart: { maxAttempts: opts.maxAttempts ?? 5, baseMs: 2, capMs: 20 },
    pollTimers: false,
    onEvent: (e) => opts.log?.push(e),
  })
}

async function eventTypes(account: string) {
  const rows = await database.db.select({ type: events.type, body: events.body }).from(events).where(eq(events.accountId, account)).orderBy(events.seq)
  return rows.map((r) => `${r.type}:${(JSON.parse(r.body) as { data: { tag: string } }).data.tag}`)
}
async function snapshotRow(id: string) {
  const [row] = await database.db
    .select()
    .from(actorSnapshots)
    .where(and(eq(actorSnapshots.kind, 'toy'), eq(actorSnapshots.id, id)))
  return row
}
async function timerRows(id: string) {
  return database.db
    .select()
    .from(durableTimers)
    .where(and(eq(durableTimers.actorKind, 'toy'), eq(durableTimers.actorId, id)))
}
const ctxOf = (r: { context: unknown }) => r.context as { count: number; log: string[] }

// ---------------------------------------------------------------- tests

describe('actor runtime: spawn, address, stop by id', () => {
  test('a spawned actor takes messages by id; its snapshot and events are committed before the sender is answered', async () => {
    const host = newHost()
    const toy = kindClient(host, toyKind)
    const id = uid('toy')
    const account = uid('acct')
    const spawned = await toy.spawn(id, { id, account })
    expect(spawned.value).toBe('open')
    expect(spawned.events.map((e) => e.type)).toEqual(['toy.created'])
    const r = await toy.send(id, { type: 'ADD', tag: 'a' })
    expect(ctxOf(r).count).toBe(1)
    expect(r.events.map((e) => e.type)).toEqual(['toy.added'])
    const row = await snapshotRow(id)
    expect(row).toMatchObject({ machineVersion: 'toy.v1', status: 'active', shard: shardOf(id) })
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.added:a'])
    await expect(toy.spawn(id, { id, account })).rejects.toBeInstanceOf(ActorExists)
    await expect(host.send('toy', uid('missing'), { type: 'ADD', tag: 'x' })).rejects.toBeInstanceOf(ActorNotFound)
    await host.close()
  })

  test('disposal after a final state: timers cancelled, status done, later messages refused', async () => {
    const host = newHost()
    const id = uid('toy')
    const account = uid('acct')
    await host.spawn('toy', id, { id, account })
    await host.send('toy', id, { type: 'ARM', tag: 't', ms: 1000 })
    expect(await timerRows(id)).toHaveLength(1)
    const r = await host.send('toy', id, { type: 'CLOSE' })
    expect(r.status).toBe('done')
    expect(host.liveCount()).toBe(0)
    expect((await snapshotRow(id))?.status).toBe('done')
    expect(await timerRows(id)).toHaveLength(0)
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.closed:closed'])
    await expect(host.send('toy', id, { type: 'ADD', tag: 'late' })).rejects.toBeInstanceOf(ActorDone)
    await host.close()
  })

  test('stop terminates an actor by id: status done, timers gone', async () => {
    const host = newHost()
    const id = uid('toy')
    await host.spawn('toy', id, { id, account: uid('acct') })
    await host.send('toy', id, { type: 'ARM', tag: 't', ms: 1000 })
    await host.stop('toy', id)
    expect((await snapshotRow(id))?.status).toBe('done')
    expect(await timerRows(id)).toHaveLength(0)
    await expect(host.send('toy', id, { type: 'ADD', tag: 'x' })).rejects.toBeInstanceOf(ActorDone)
    await host.close()
  })
})

describe('a spawn with timers already due', () => {
  test('they are applied in the spawn step, in due order: no row written for them, the later ones scheduled', async () => {
    const clock = manualClock()
    const host = newHost({ clock })
    const id = uid('toy')
    const account = uid('acct')
    const now = clock.now().getTime()
    const at = (ms: number) => new Date(now + ms).toISOString()
    const spawned = await host.spawn(
      'toy',
      id,
      { id, account },
      {
        timers: [
          { name: 'later', at: at(5_000), event: { type: 'ADD', tag: 'later' } },
          { name: 'second', at: at(0), event: { type: 'ADD', tag: 'second' } },
          { name: 'first', at: at(-1_000), event: { type: 'ADD', tag: 'first' } },
        ],
      },
    )
    expect(ctxOf(spawned).log).toEqual(['first', 'second'])
    expect(spawned.events.map((e) => e.type)).toEqual(['toy.created', 'toy.added', 'toy.added'])
    expect((await timerRows(id)).map((t) => t.name)).toEqual(['later'])
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.added:first', 'toy.added:second'])
    await host.close()
  })

  test('a durable spawn (a request’s, delivered as a fire) does the same', async () => {
    const clock = manualClock()
    const host = newHost({ clock })
    const id = uid('toy')
    const account = uid('acct')
    const row = await spawnInTx(database.db, clock, 'toy', id, { id, account }, { timers: [{ name: 'ring', delayMs: 0, event: { type: 'ADD', tag: 'ring' } }] })
    await host.wake('toy', id, [row])
    expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { log: ['ring'] } })
    expect(await timerRows(id)).toHaveLength(0)
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.added:ring'])
    await host.close()
  })

  test('a due message the machine fails on does not stop the actor’s creation: it is scheduled, and fails alone as a fire', async () => {
    const clock = manualClock()
    const log: HostEvent[] = []
    const host = newHost({ clock, maxAttempts: 2, log })
    const id = uid('toy')
    const account = uid('acct')
    const spawned = await host.spawn(
      'toy',
      id,
      { id, account },
      {
        timers: [
          { name: 'ok', delayMs: 0, event: { type: 'ADD', tag: 'ok' } },
          { name: 'poison', delayMs: 0, event: { type: 'ADD', tag: 'poison', failTimes: 99 } },
        ],
      },
    )
    expect(ctxOf(spawned).log).toEqual([])
    expect((await timerRows(id)).map((t) => t.name).sort()).toEqual(['ok', 'poison'])
    await host.timers.tick()
    expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { log: ['ok'] } })
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.added:ok'])
    expect(log.some((e) => e.type === 'gave_up')).toBe(true)
    await host.close()
  })
})

describe('persistence', () => {
  test('round trip: a new host on the same database continues the actor from its snapshot (lazily rehydrated)', async () => {
    const id = uid('toy')
    const account = uid('acct')
    const first = newHost()
    await first.spawn('toy', id, { id, account })
    await first.send('toy', id, { type: 'ADD', tag: 'a' })
    await first.send('toy', id, { type: 'ADD', tag: 'b' })
    await first.close()

    const second = newHost()
    expect(second.liveCount()).toBe(0)
    const r = await second.send('toy', id, { type: 'ADD', tag: 'c' })
    expect(second.liveCount()).toBe(1)
    expect(ctxOf(r)).toMatchObject({ count: 3, log: ['a', 'b', 'c'] })
    // restoring did not re-run the entry action: one toy.created only
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.added:a', 'toy.added:b', 'toy.added:c'])
    const row = await snapshotRow(id)
    expect((row!.snapshot as { context: { count: number } }).context.count).toBe(3)
    await second.close()
  })

  test('the snapshot and the events of a step are one transaction: a failing transaction writes neither', async () => {
    const id = uid('toy')
    const account = uid('acct')
    const log: HostEvent[] = []
    const host = newHost({ maxAttempts: 2, log })
    await host.spawn('toy', id, { id, account })
    await host.send('toy', id, { type: 'ADD', tag: 'a' })
    const before = await snapshotRow(id)

    const failed = await host.send('toy', id, { type: 'ADD', tag: 'bad', badEvent: true }).catch((e) => e)
    expect(failed).toBeInstanceOf(ActorStepFailed)
    expect((failed as ActorStepFailed).attempts).toBe(2)
    expect(log.filter((e) => e.type === 'restart')).toHaveLength(1)
    expect(log.filter((e) => e.type === 'gave_up')).toHaveLength(1)
    // neither the snapshot (upserted first in the transaction) nor the event
    const after = await snapshotRow(id)
    expect(after?.snapshot).toEqual(before!.snapshot)
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.added:a'])

    // the actor goes on from the last committed snapshot
    const r = await host.send('toy', id, { type: 'ADD', tag: 'b' })
    expect(ctxOf(r)).toMatchObject({ count: 2, log: ['a', 'b'] })
    await host.close()
  })
})

describe('supervision', () => {
  test('an actor that throws is restarted from its last persisted snapshot, with backoff, and the message is not lost', async () => {
    const id = uid('toy')
    const account = uid('acct')
    const log: HostEvent[] = []
    const host = newHost({ log })
    await host.spawn('toy', id, { id, account })
    await host.send('toy', id, { type: 'ADD', tag: 'a' })
    const r = await host.send('toy', id, { type: 'ADD', tag: 'flaky', failTimes: 3 })
    // applied exactly once, although three attempts had already incremented the in-memory count
    expect(ctxOf(r)).toMatchObject({ count: 2, log: ['a', 'flaky'] })
    const restarts = log.filter((e): e is Extract<HostEvent, { type: 'restart' }> => e.type === 'restart')
    expect(restarts.map((e) => e.attempt)).toEqual([1, 2, 3])
    expect(restarts.every((e) => e.delayMs > 0 && e.delayMs <= 20)).toBe(true)
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.added:a', 'toy.added:flaky'])
    expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { count: 2 } })
    await host.close()
  })

  test('after bounded attempts the sender gets a typed error and nothing was written', async () => {
    const id = uid('toy')
    const account = uid('acct')
    const host = newHost({ maxAttempts: 3 })
    await host.spawn('toy', id, { id, account })
    const e = await host.send('toy', id, { type: 'ADD', tag: 'doomed', failTimes: 99 }).catch((x) => x)
    expect(e).toBeInstanceOf(ActorStepFailed)
    expect((e as ActorStepFailed).code).toBe('actor_step_failed')
    expect(await eventTypes(account)).toEqual(['toy.created:created'])
    expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { count: 0 } })
    await host.close()
  })

  test('restart delay: capped exponential backoff with jitter', () => {
    const p = { maxAttempts: 9, baseMs: 10, capMs: 100 }
    expect(restartDelay(p, 1, () => 0)).toBe(5)
    expect(restartDelay(p, 1, () => 1)).toBe(10)
    expect(restartDelay(p, 3, () => 1)).toBe(40)
    expect(restartDelay(p, 10, () => 1)).toBe(100)
    expect(restartDelay(p, 10, () => 0)).toBe(50)
  })
})

describe('durable timers', () => {
  test('a durable timer fires after a restart, by the injected (manual) clock', async () => {
    const clock = manualClock()
    const id = uid('toy')
    const account = uid('acct')
    const first = newHost({ clock })
    await first.spawn('toy', id, { id, account })
    await first.send('toy', id, { type: 'ARM', tag: 'ring', ms: 30_000 })
    const [row] = await timerRows(id)
    expect(row?.dueAt.getTime()).toBe(clock.now().getTime() + 30_000)
    await first.close()

    const second = newHost({ clock })
    // (assertions on this actor's rows, not on tick counts: a shared database may hold other runs' timers)
    clock.advance(29_999)
    await second.timers.tick()
    expect(await timerRows(id)).toHaveLength(1)
    expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { log: [] } })
    clock.advance(1)
    await second.timers.tick()
    const [snap] = [await snapshotRow(id)]
    expect(snap?.snapshot).toMatchObject({ context: { log: ['alarm:ring'] } })
    expect(await timerRows(id)).toHaveLength(0)
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.alarm:ring'])
    // a fire that already happened does not happen again
    clock.advance(60_000)
    await second.timers.tick()
    expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { log: ['alarm:ring'] } })
    await second.close()
  })

  test('rehydration after a restart: the actors one poll wakes read their snapshots in one statement, and a message to a missing actor is dropped', async () => {
    // A clock of its own, long before the other tests' timers, so that this poll sees only this test's rows.
    const clock = manualClock('2001-02-03T00:00:00.000Z')
    const account = uid('acct')
    const ids = [uid('toy'), uid('toy'), uid('toy'), uid('toy')]
    const missing = uid('toy')
    const first = newHost({ clock })
    for (const id of ids) {
      await first.spawn('toy', id, { id, account })
      await first.send('toy', id, { type: 'ARM', tag: id, ms: 1_000 })
    }
    await first.close()
    await scheduleTimer(database.db, clock, {
      actorKind: 'toy',
      actorId: missing,
      name: '$tell:x',
      dueAt: new Date(clock.now().getTime() + 1_000),
      event: { type: 'ADD', tag: 'x' },
    })

    const log: HostEvent[] = []
    const second = newHost({ clock, log })
    clock.advance(1_000)
    await second.timers.tick()
    for (const id of ids) expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { log: [`alarm:${id}`] } })
    expect(await timerRows(missing)).toHaveLength(0)
    expect(log.filter((e) => e.type === 'timer_dropped').map((e) => (e as { id: string }).id)).toEqual([missing])
    expect(second.snapshotReads()).toEqual({ rows: ids.length + 1, statements: 1 })
    await second.close()
    // Actors at rest in a database other runs share: removed, with their events.
    for (const id of ids) await database.db.delete(actorSnapshots).where(and(eq(actorSnapshots.kind, 'toy'), eq(actorSnapshots.id, id)))
    await database.db.delete(events).where(eq(events.accountId, account))
  })

  test('the background poller delivers due timers (real-time polling, injected clock)', async () => {
    const clock = manualClock()
    const id = uid('toy')
    const account = uid('acct')
    const host = new ActorHost({ db: database.db, clock, kinds: [toyKind], timerPollMs: 2 }).start()
    await host.spawn('toy', id, { id, account })
    await host.send('toy', id, { type: 'ARM', tag: 'bg', ms: 5_000 })
    clock.advance(5_000)
    for (let i = 0; i < 500 && (await timerRows(id)).length > 0; i++) await Bun.sleep(5)
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.alarm:bg'])
    await host.close()
  })

  test('a replaced or cancelled timer: its stale fire is dropped', async () => {
    const clock = manualClock()
    const id = uid('toy')
    const account = uid('acct')
    const log: HostEvent[] = []
    const host = newHost({ clock, log })
    await host.spawn('toy', id, { id, account })
    await host.send('toy', id, { type: 'ARM', tag: 'one', ms: 1_000 })
    const [old] = await timerRows(id)
    await host.send('toy', id, { type: 'ARM', tag: 'two', ms: 2_000 })
    const [replaced] = await timerRows(id)
    expect(await timerRows(id)).toHaveLength(1)
    expect(replaced!.token).not.toBe(old!.token)

    // the fire read before the replacement arrives late: dropped
    await host.fire({ ...old!, event: old!.event as Record<string, unknown> })
    expect(log.filter((e) => e.type === 'timer_dropped')).toHaveLength(1)
    expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { log: [] } })

    // cancelled: the current fire is dropped too
    await host.send('toy', id, { type: 'DISARM' })
    await host.fire({ ...replaced!, event: replaced!.event as Record<string, unknown> })
    expect(log.filter((e) => e.type === 'timer_dropped')).toHaveLength(2)
    clock.advance(10_000)
    await host.timers.tick()
    expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { log: [] } })

    // re-armed: only the newest fires, once, even if delivered twice
    await host.send('toy', id, { type: 'ARM', tag: 'three', ms: 500 })
    const [current] = await timerRows(id)
    clock.advance(500)
    await Promise.all([host.fire(current as never), host.fire(current as never)])
    expect((await snapshotRow(id))?.snapshot).toMatchObject({ context: { log: ['alarm:three'] } })
    expect(await eventTypes(account)).toEqual(['toy.created:created', 'toy.alarm:three'])
    await host.close()
  })

  test('a fire for a finished actor is dropped and its orphan row removed', async () => {
    const clock = manualClock()
    const id = uid('toy')
    const host = newHost({ clock })
    await host.spawn('toy', id, { id, account: uid('acct') })
    await host.send('toy', id, { type: 'ARM', tag: 'x', ms: 10 })
    const [t] = await timerRows(id)
    // simulate an orphan: the actor row is done but its timer row survived
    await database.db
      .update(actorSnapshots)
      .set({ status: 'done' })
      .where(and(eq(actorSnapshots.kind, 'toy'), eq(actorSnapshots.id, id)))
    const other = newHost({ clock })
    await other.fire(t as never)
    expect(await timerRows(id)).toHaveLength(0)
    await host.close()
    await other.close()
  })
})

describe('mailbox', () => {
  test('per-actor message order under concurrent senders (fast-check scheduler), with flaky steps retried in place', async () => {
    const host = newHost()
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.array(fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }), { minLength: 2, maxLength: 4 }), async (s, senders) => {
        const id = uid('toy')
        await host.spawn('toy', id, { id, account: uid('acct') })
        const invoked: string[] = []
        const acked: string[] = []
        const work = senders.map(async (flaky, i) => {
          for (let j = 0; j < flaky.length; j++) {
            await s.schedule(Promise.resolve(`sender ${i} message ${j}`))
            const tag = `${i}.${j}`
            invoked.push(tag)
            const r = await host.send('toy', id, { type: 'ADD', tag, failTimes: flaky[j] ? 1 : 0 })
            acked.push(tag)
            expect(ctxOf(r).log.at(-1)).toBe(tag)
          }
        })
        await s.waitFor(Promise.all(work))
        const row = await snapshotRow(id)
        const log = (row!.snapshot as { context: { log: string[] } }).context.log
        // every acknowledged message is in the snapshot, once, in the order it was sent
        expect(log).toEqual(invoked)
        expect(acked).toEqual(invoked)
        for (let i = 0; i < senders.length; i++) {
          const mine = log.filter((t) => t.startsWith(`${i}.`))
          expect(mine).toEqual(senders[i]!.map((_, j) => `${i}.${j}`))
        }
      }),
      { numRuns: 15 },
    )
    await host.close()
  }, 60_000)
})

describe('registry', () => {
  test('a message to a missing actor does not block a spawn queued behind it; idle entries without a live actor leave the registry', async () => {
    const host = newHost()
    const id = uid('toy')
    const account = uid('acct')
    const [missing, spawned] = await Promise.allSettled([host.send('toy', id, { type: 'ADD', tag: 'early' }), host.spawn('toy', id, { id, account })])
    expect(missing.status === 'rejected' && missing.reason).toBeInstanceOf(ActorNotFound)
    expect(spawned.status).toBe('fulfilled')
    expect(ctxOf(await host.send('toy', id, { type: 'ADD', tag: 'a' })).log).toEqual(['a'])
    await host.send('toy', id, { type: 'CLOSE' })
    await expect(host.send('toy', uid('nobody'), { type: 'CLOSE' })).rejects.toBeInstanceOf(ActorNotFound)
    expect(host.liveCount()).toBe(0)
    expect((host as unknown as { registry: Map<string, unknown> }).registry.size).toBe(0)
    await host.close()
  })
})
