/**
 * Many durable messages, one step (actors/runtime/host.ts, stepTogether): an actor
 * takes every due message waiting in its mailbox (up to the bound) in one step and
 * one transaction. The promise is the one-message step's: every taken message is
 * applied exactly once, in due order (then id order) per actor, its effects in the
 * order the machine emitted them; a message that fails (a write inside the
 * transaction, or the machine itself) fails alone, transiently or for good, and a
 * poison message never stops the others; nothing of an untaken message is committed
 * (its row stays for the next delivery).
 *
 * fast-check writes random durable messages (tells with random due times, durable
 * spawns of actors that do not exist yet, tells to actors that never will) and
 * delivers them all at once, so they meet in mailboxes; failures are injected per
 * message. PGlite, or PostgreSQL when DATABASE_URL is set (kind, keys and account
 * are unique per run; rows are delivered directly, no poll of the shared table).
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, asc, eq, inArray, like } from 'drizzle-orm'
import fc from 'fast-check'
import { assign, setup } from 'xstate'
import { manualClock } from '../../src/clock'
import { openDatabase, type Database } from '../../src/db/client'
import { actorSnapshots, durableTimers, events, settings } from '../../src/db/schema'
import { scheduleTimer, type TimerRow } from '../../src/scheduler/durable-timers'
import { durableMessage } from './commands'
import { ActorHost } from './host'
import { defineActorKind } from './kinds'
import { shardOf } from './shards'

const run = Math.random().toString(36).slice(2, 10)
const KIND = `mm_${run}`
const ACCOUNT = `acct_mm_${run}`
const BASE = new Date(Date.UTC(1991, 0, 1) + Math.floor(Math.random() * 300_000_000_000))
const keyOf = (actor: string, tag: string) => `mm/${run}/${actor}/${tag}`

/** How a message fails: its write or its machine step throws (a number of times, or always), or its fire is stale (read before its row was replaced). */
type Fail = 'none' | 'write-once' | 'write-twice' | 'write-always' | 'machine-once' | 'machine-always' | 'stale'
/** Per message key: how many more attempts must fail, and where. */
const failures = new Map<string, { where: 'write' | 'machine'; left: number }>()
const takeFailure = (key: string, where: 'write' | 'machine') => {
  const f = failures.get(key)
  if (!f || f.where !== where || f.left <= 0) return false
  f.left--
  return true
}

const machine = setup({
  types: {
    context: {} as { id: string; log: string[] },
    events: {} as { type: 'ADD'; tag: string } | { type: 'CLOSE' },
    input: {} as { id: string },
  },
  actions: {
    check: (_, _params: { id: string; tag: string }) => {},
    record: (_, _params: { id: string; tag: string }) => {},
  },
}).createMachine({
  id: 'mm.v1',
  context: ({ input }) => ({ id: input.id, log: [] }),
  initial: 'open',
  states: {
    open: {
      on: {
        ADD: {
          actions: [
            { type: 'check', params: ({ context, event }) => ({ id: context.id, tag: event.tag }) },
            assign(({ context, event }) => ({ log: [...context.log, event.tag] })),
            { type: 'record', params: ({ context, event }) => ({ id: context.id, tag: event.tag }) },
          ],
        },
        CLOSE: 'closed',
      },
    },
    closed: { type: 'final' },
  },
})

const kind = defineActorKind({
  kind: KIND,
  machines: [machine],
  actions: (fx) => ({
    check: (_args, p: { id: string; tag: string }) => {
      if (takeFailure(keyOf(p.id, p.tag), 'machine')) throw new Error(`injected machine failure of ${p.tag}`)
    },
    record: (_args, p: { id: string; tag: string }) => {
      // Two events per message: the outbox must hold them in the order the machine emitted them.
      for (const type of ['mm.first', 'mm.second'])
        fx.emit({ platformId: 'plat_mm', accountId: ACCOUNT, mode: 'test', type, data: { actor: p.id, tag: p.tag } })
      fx.write(async (tx) => {
        const key = keyOf(p.id, p.tag)
        if (takeFailure(key, 'write')) throw new Error(`injected write failure of ${key}`)
        // A primary key: a message applied twice would fail here.
        await tx.insert(settings).values({ key, value: 'x' })
      })
    },
  }),
})

let database: Database
beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
})
afterAll(async () => {
  if (database) {
    await database.db.delete(settings).where(like(settings.key, `mm/${run}/%`))
    await database.db.delete(durableTimers).where(eq(durableTimers.actorKind, KIND))
    await database.close()
  }
})

const MAX_ATTEMPTS = 3
const FAILS: Record<Fail, { where: 'write' | 'machine'; left: number } | undefined> = {
  none: undefined,
  'write-once': { where: 'write', left: 1 },
  'write-twice': { where: 'write', left: 2 },
  'write-always': { where: 'write', left: Number.POSITIVE_INFINITY },
  'machine-once': { where: 'machine', left: 1 },
  'machine-always': { where: 'machine', left: Number.POSITIVE_INFINITY },
  stale: undefined,
}
const poison = (f: Fail) => f === 'write-always' || f === 'machine-always'

/** How an actor of a round begins: spawned before the messages, by a durable spawn among them, or never. */
type Start = 'spawned' | 'durable-spawn' | 'missing'

const byDue = (a: TimerRow, b: TimerRow) => a.dueAt.getTime() - b.dueAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

describe('many messages, one step', () => {
  let round = 0
  let applied = 0
  let together = 0

  test('property: every taken message applied once, in due order per actor, its events in emitted order; a failing one fails alone; nothing of an untaken one committed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom<Start>('spawned', 'spawned', 'durable-spawn', 'missing'), { minLength: 1, maxLength: 4 }),
        fc.array(
          fc.record({
            actor: fc.nat(3),
            // Due up to a minute before now, in whole seconds: ties are frequent (then the row id decides).
            dueBack: fc.nat(60).map((s) => s * 1_000),
            // One message in six fails somehow: most steps of several messages hold none, many hold one.
            fail: fc.oneof(
              { arbitrary: fc.constant<Fail>('none'), weight: 5 },
              { arbitrary: fc.constantFrom<Fail>('write-once', 'write-twice', 'write-always', 'machine-once', 'machine-always', 'stale'), weight: 1 },
            ),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.constantFrom(2, 3, 256),
        fc.boolean(),
        async (starts, msgs, bound, shuffle) => {
          round++
          const clock = manualClock(BASE)
          const host = new ActorHost({
            db: database.db,
            clock,
            kinds: [kind],
            pollTimers: false,
            restart: { maxAttempts: MAX_ATTEMPTS, baseMs: 1, capMs: 4 },
            maxMessagesPerStep: bound,
          })
          try {
            const ids = starts.map((_, i) => `mm_${run}_${round}_${i}`)
            await Promise.all(ids.flatMap((id, i) => (starts[i] === 'spawned' ? [host.spawn(KIND, id, { id })] : [])))

            // The messages, written as durable rows (as another actor's step or a request would), due in the past.
            const sent = msgs.map((m, i) => ({ actor: ids[m.actor % ids.length]!, tag: `t${i}`, fail: m.fail, dueAt: new Date(BASE.getTime() - m.dueBack) }))
            for (const s of sent) {
              const f = FAILS[s.fail]
              failures.set(keyOf(s.actor, s.tag), f ? { ...f } : { where: 'write', left: 0 })
            }
            const rows: TimerRow[] = []
            const spawnRows = new Map<string, TimerRow>()
            await database.db.transaction(async (tx) => {
              for (const [i, id] of ids.entries()) {
                if (starts[i] !== 'durable-spawn') continue
                const m = durableMessage.spawn({ id })
                // Due before every tell: the actor exists by the time they are applied.
                const row = await scheduleTimer(tx, clock, {
                  actorKind: KIND,
                  actorId: id,
                  name: m.name,
                  dueAt: new Date(BASE.getTime() - 3_600_000),
                  event: m.event,
                  shard: shardOf(id),
                })
                spawnRows.set(id, row)
                rows.push(row)
              }
              for (const s of sent) {
                const m = durableMessage.tell({ type: 'ADD', tag: s.tag })
                rows.push(
                  await scheduleTimer(tx, clock, { actorKind: KIND, actorId: s.actor, name: m.name, dueAt: s.dueAt, event: m.event, shard: shardOf(s.actor) }),
                )
              }
            })
            const tagOfRow = new Map(rows.map((r) => [r.id, (r.event as { tag?: string }).tag]))
            const failOf = (r: TimerRow) => sent.find((s) => s.tag === tagOfRow.get(r.id))?.fail ?? 'none'
            // A stale fire carries a token the row no longer has.
            const fired = rows.map((r) => (failOf(r) === 'stale' ? { ...r, token: randomUUID() } : r))

            // All delivered at once, as a poll does (in due order), or in any order when the bound lets one step take an actor's whole mail.
            const order = fired.sort(byDue)
            if (shuffle && bound === 256) order.sort(() => Math.random() - 0.5)
            await host.timers.deliverNow(order)

            const survivors = new Set(
              (
                await database.db
                  .select({ id: durableTimers.id })
                  .from(durableTimers)
                  .where(
                    inArray(
                      durableTimers.id,
                      rows.map((r) => r.id),
                    ),
                  )
              ).map((r) => r.id),
            )
            const exists = (id: string) => starts[ids.indexOf(id)] !== 'missing'
            // What must have been applied: every message to an existing actor but the poison ones, in due order, then row id.
            const expected = new Map<string, string[]>()
            for (const id of ids) {
              const mine = rows.filter((r) => r.actorId === id && tagOfRow.get(r.id) !== undefined)
              expected.set(
                id,
                exists(id)
                  ? mine
                      .sort(byDue)
                      .map((r) => tagOfRow.get(r.id)!)
                      .filter((tag) => {
                        const fail = sent.find((s) => s.tag === tag)!.fail
                        return !poison(fail) && fail !== 'stale'
                      })
                  : [],
              )
            }

            for (const s of sent) {
              const row = rows.find((r) => tagOfRow.get(r.id) === s.tag)!
              // Taken (row gone) exactly when applied, or dropped for an actor that does not exist; a poison message stays, untaken, and so does the row of a stale fire.
              const kept = s.fail === 'stale' || (exists(s.actor) && poison(s.fail))
              expect({ tag: s.tag, fail: s.fail, kept: survivors.has(row.id) }).toEqual({ tag: s.tag, fail: s.fail, kept })
            }
            for (const row of spawnRows.values()) expect(survivors.has(row.id)).toBe(false)

            const eventRows = await database.db
              .select({ id: events.id, body: events.body })
              .from(events)
              .where(eq(events.accountId, ACCOUNT))
              .orderBy(asc(events.id))
            const evs = eventRows.map((e) => JSON.parse(e.body) as { type: string; data: { actor: string; tag: string } })
            const settingRows = await database.db
              .select({ key: settings.key })
              .from(settings)
              .where(like(settings.key, `mm/${run}/mm_${run}_${round}_%`))
            const writtenKeys = new Set(settingRows.map((r) => r.key))
            expect(writtenKeys.size).toBe(settingRows.length)

            for (const id of ids) {
              const want = expected.get(id)!
              const [snap] = await database.db
                .select()
                .from(actorSnapshots)
                .where(and(eq(actorSnapshots.kind, KIND), eq(actorSnapshots.id, id)))
              if (!exists(id)) {
                expect(snap).toBeUndefined()
                continue
              }
              // Applied exactly once each, in due order (the snapshot is the machine's own record).
              expect({ id, log: (snap!.snapshot as { context: { log: string[] } }).context.log }).toEqual({ id, log: want })
              // The outbox: the events of each applied message, in the order the machine emitted them, and nothing of the others.
              const mine = evs.filter((e) => e.data.actor === id).map((e) => `${e.type}:${e.data.tag}`)
              expect(mine).toEqual(want.flatMap((tag) => [`mm.first:${tag}`, `mm.second:${tag}`]))
              // The step's own write: once per applied message.
              expect([...writtenKeys].filter((k) => k.startsWith(`mm/${run}/${id}/`)).sort()).toEqual(want.map((tag) => keyOf(id, tag)).sort())
              applied += want.length
            }
            together += host.commitStats().messagesInThem
          } finally {
            await host.close()
          }
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 40), seed: Number(process.env.FC_SEED ?? 8080) },
    )
    // The property is about many messages per step: a good share of them were applied together.
    expect(together).toBeGreaterThan(applied / 4)
  }, 180_000)

  test('a final state inside a step: the messages before it are applied together, those after it are taken and dropped', async () => {
    const clock = manualClock(BASE)
    const host = new ActorHost({ db: database.db, clock, kinds: [kind], pollTimers: false })
    try {
      const id = `mm_${run}_final`
      await host.spawn(KIND, id, { id })
      const events = [{ type: 'ADD', tag: 'a' }, { type: 'ADD', tag: 'b' }, { type: 'CLOSE' }, { type: 'ADD', tag: 'late1' }, { type: 'ADD', tag: 'late2' }]
      const rows = await database.db.transaction(async (tx) => {
        const out: TimerRow[] = []
        for (const [i, event] of events.entries()) {
          const m = durableMessage.tell(event)
          out.push(
            await scheduleTimer(tx, clock, {
              actorKind: KIND,
              actorId: id,
              name: m.name,
              dueAt: new Date(BASE.getTime() - 10_000 + i),
              event: m.event,
              shard: shardOf(id),
            }),
          )
        }
        return out
      })
      for (const tag of ['a', 'b', 'late1', 'late2']) failures.delete(keyOf(id, tag))
      await host.timers.deliverNow(rows)

      const [snap] = await database.db
        .select()
        .from(actorSnapshots)
        .where(and(eq(actorSnapshots.kind, KIND), eq(actorSnapshots.id, id)))
      expect(snap!.status).toBe('done')
      expect((snap!.snapshot as { context: { log: string[] } }).context.log).toEqual(['a', 'b'])
      // Every row taken: the late ones as messages to a finished actor.
      const left = await database.db
        .select({ id: durableTimers.id })
        .from(durableTimers)
        .where(
          inArray(
            durableTimers.id,
            rows.map((r) => r.id),
          ),
        )
      expect(left).toEqual([])
      expect(host.commitStats()).toMatchObject({ manyMessageSteps: 1, messagesInThem: 3 })
    } finally {
      await host.close()
    }
  })
})
