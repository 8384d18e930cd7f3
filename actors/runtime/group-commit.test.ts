/**
 * Group commit (actors/runtime/committer.ts) against its promise: steps ready
 * together share one transaction, yet each stays atomic with its events and its
 * writes; a step that fails inside a batch fails only itself (the others commit);
 * and the acknowledgement rule holds: every acknowledged step is committed exactly
 * once, and no unacknowledged one is committed at all.
 *
 * fast-check drives random messages to a handful of actors, all sent at once (so
 * they meet in batches), with failures injected inside the transaction: transient
 * ones (the step's write throws on its first attempts, after the other steps of its
 * batch have written) and permanent ones (every attempt throws: the sender gets
 * ActorStepFailed). PGlite, or PostgreSQL when DATABASE_URL is set.
 *
 * The second property sends the same messages as durable tells (rows, as another
 * actor's step or a request writes them) fired all at once: then an actor takes the
 * messages waiting for it together, several in one step, and several actors' steps
 * share a transaction; a sender's acknowledgement is its fire's promise.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq, inArray, like, sql } from 'drizzle-orm'
import fc from 'fast-check'
import { assign, setup } from 'xstate'
import { manualClock } from '../../src/clock'
import { openDatabase, type Database } from '../../src/db/client'
import { actorSnapshots, durableTimers, events, settings } from '../../src/db/schema'
import { scheduleTimer, type TimerRow } from '../../src/scheduler/durable-timers'
import { ActorStepFailed } from './client'
import { durableMessage } from './commands'
import { ActorHost } from './host'
import { defineActorKind } from './kinds'
import { shardOf } from './shards'

/** Per message key: how many more attempts of its step must fail. */
const failuresLeft = new Map<string, number>()

const tally = setup({
  types: {
    context: {} as { id: string; tags: string[] },
    events: {} as { type: 'ADD'; tag: string },
    input: {} as { id: string },
  },
  actions: { record: (_, _params: { id: string; tag: string }) => {} },
}).createMachine({
  id: 'tally.v1',
  context: ({ input }) => ({ id: input.id, tags: [] }),
  on: {
    ADD: {
      actions: [
        assign(({ context, event }) => ({ tags: [...context.tags, event.tag] })),
        { type: 'record', params: ({ context, event }) => ({ id: context.id, tag: event.tag }) },
      ],
    },
  },
})

const run = Math.random().toString(36).slice(2, 10)
const rowKey = (actor: string, tag: string) => `gc/${run}/${actor}/${tag}`

const tallyKind = defineActorKind({
  kind: 'tally',
  machines: [tally],
  actions: (fx) => ({
    record: (_args, p: { id: string; tag: string }) => {
      fx.emit({ platformId: 'plat_gc', accountId: `acct_gc_${run}`, mode: 'test', type: 'gc.added', data: { actor: p.id, tag: p.tag } })
      // A write of its own, after the batch's shared statements: an insert that must happen once (a second would
      // violate the key), and the place where a failure is injected inside the transaction.
      fx.write(async (tx) => {
        const key = rowKey(p.id, p.tag)
        const left = failuresLeft.get(key) ?? 0
        if (left > 0) {
          failuresLeft.set(key, left - 1)
          throw new Error(`injected failure of ${key}`)
        }
        await tx.insert(settings).values({ key, value: 'x' })
      })
    },
  }),
})

/**
 * A kind with two batch writers where the second needs the first's row: `open`
 * inserts an actor's ledger row, `note` updates it (as the call log's insert and patch
 * do). A step that opens and notes in one go may share its transaction with a step
 * that only notes and was ready first.
 */
const ledgerKey = (id: string) => `gc/${run}/ledger/${id}`
const ledger = setup({
  types: { context: {} as { id: string }, events: {} as { type: 'NOTE' } | { type: 'OPEN_AND_NOTE' }, input: {} as { id: string } },
  actions: { open: (_, _p: { id: string }) => {}, note: (_, _p: { id: string }) => {} },
}).createMachine({
  id: 'ledger.v1',
  context: ({ input }) => ({ id: input.id }),
  on: {
    NOTE: { actions: [{ type: 'note', params: ({ context }) => ({ id: context.id }) }] },
    OPEN_AND_NOTE: {
      actions: [
        { type: 'open', params: ({ context }) => ({ id: context.id }) },
        { type: 'note', params: ({ context }) => ({ id: context.id }) },
      ],
    },
  },
})
const ledgerKind = defineActorKind({
  kind: 'ledger',
  machines: [ledger],
  batchWriters: {
    open: (tx, items) => tx.insert(settings).values((items as string[]).map((id) => ({ key: ledgerKey(id), value: 'opened' }))),
    note: async (tx, items) => {
      for (const id of items as string[])
        await tx
          .update(settings)
          .set({ value: sql`${settings.value} || ' noted'` })
          .where(eq(settings.key, ledgerKey(id)))
    },
  },
  actions: (fx) => ({
    open: (_args, p: { id: string }) => fx.batch('open', p.id),
    note: (_args, p: { id: string }) => fx.batch('note', p.id),
  }),
})

let database: Database
beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
})
afterAll(async () => {
  await database?.db.delete(settings).where(like(settings.key, `gc/${run}/%`))
  // The rows of messages that failed for good stay (untaken): this run's only.
  await database?.db.delete(durableTimers).where(and(eq(durableTimers.actorKind, 'tally'), like(durableTimers.actorId, `tally_${run}_%`)))
  await database?.close()
})

const MAX_ATTEMPTS = 3
type Msg = { actor: number; fail: 'none' | 'once' | 'twice' | 'always' }
const FAILS = { none: 0, once: 1, twice: 2, always: Number.POSITIVE_INFINITY } as const

describe('group commit', () => {
  let round = 0
  let batched = 0

  test('property: every acknowledged step is committed exactly once, no unacknowledged one at all, whatever fails inside a batch', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.record({ actor: fc.nat(5), fail: fc.constantFrom<Msg['fail']>('none', 'none', 'none', 'once', 'twice', 'always') }), {
          minLength: 1,
          maxLength: 30,
        }),
        async (actors, msgs) => {
          round++
          const host = new ActorHost({
            db: database.db,
            clock: manualClock(),
            kinds: [tallyKind],
            pollTimers: false,
            restart: { maxAttempts: MAX_ATTEMPTS, baseMs: 1, capMs: 4 },
          })
          try {
            const ids = Array.from({ length: actors }, (_, i) => `tally_${run}_${round}_${i}`)
            await Promise.all(ids.map((id) => host.spawn('tally', id, { id })))
            const sent = msgs.map((m, i) => ({ actor: ids[m.actor % actors]!, tag: `t${i}`, fail: m.fail }))
            for (const s of sent) failuresLeft.set(rowKey(s.actor, s.tag), FAILS[s.fail])
            // All at once: messages to different actors meet in batches; each actor takes its own in order.
            const results = await Promise.allSettled(sent.map((s) => host.send('tally', s.actor, { type: 'ADD', tag: s.tag })))

            const acked = new Set<string>()
            results.forEach((r, i) => {
              const s = sent[i]!
              // Transient failures are retried to success; a step failing every attempt is refused.
              expect({ tag: s.tag, fail: s.fail, ok: r.status === 'fulfilled' }).toEqual({ tag: s.tag, fail: s.fail, ok: s.fail !== 'always' })
              if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ActorStepFailed)
              else acked.add(`${s.actor}/${s.tag}`)
            })

            // The outbox: one event per acknowledged step, none for the others.
            const evs = (
              await database.db
                .select()
                .from(events)
                .where(eq(events.accountId, `acct_gc_${run}`))
            )
              .map((e) => JSON.parse(e.body).data as { actor: string; tag: string })
              .filter((d) => ids.includes(d.actor))
              .map((d) => `${d.actor}/${d.tag}`)
            expect(evs.sort()).toEqual([...acked].sort())
            // The step's own write: once per acknowledged step.
            const rows = await database.db
              .select()
              .from(settings)
              .where(like(settings.key, `gc/${run}/tally_${run}_${round}_%`))
            expect(rows.map((r) => r.key.slice(`gc/${run}/`.length)).sort()).toEqual([...acked].sort())
            // The snapshots: each actor holds exactly its acknowledged messages, in the order it took them.
            for (const id of ids) {
              const [row] = await database.db
                .select()
                .from(actorSnapshots)
                .where(and(eq(actorSnapshots.kind, 'tally'), eq(actorSnapshots.id, id)))
              const tags = (row!.snapshot as { context: { tags: string[] } }).context.tags
              expect(tags).toEqual(sent.filter((s) => s.actor === id && acked.has(`${s.actor}/${s.tag}`)).map((s) => s.tag))
            }
            const stats = host.commitStats()
            if (stats.steps > stats.transactions) batched++
          } finally {
            await host.close()
          }
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 40), seed: Number(process.env.FC_SEED ?? 4242) },
    )
    // The property is about batches: steps did share transactions.
    expect(batched).toBeGreaterThan(0)
  }, 120_000)

  test('property: several durable messages of one actor per step: every acknowledged message committed exactly once and in order per actor, no unacknowledged one at all', async () => {
    let manyMessageSteps = 0
    let sharedTransactions = 0
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.record({ actor: fc.nat(3), fail: fc.constantFrom<Msg['fail']>('none', 'none', 'none', 'none', 'once', 'twice', 'always') }), {
          minLength: 1,
          maxLength: 30,
        }),
        async (actors, msgs) => {
          round++
          const clock = manualClock()
          const host = new ActorHost({
            db: database.db,
            clock,
            kinds: [tallyKind],
            pollTimers: false,
            restart: { maxAttempts: MAX_ATTEMPTS, baseMs: 1, capMs: 4 },
          })
          try {
            const ids = Array.from({ length: actors }, (_, i) => `tally_${run}_${round}_${i}`)
            await Promise.all(ids.map((id) => host.spawn('tally', id, { id })))
            const sent = msgs.map((m, i) => ({ actor: ids[m.actor % actors]!, tag: `d${i}`, fail: m.fail }))
            for (const s of sent) failuresLeft.set(rowKey(s.actor, s.tag), FAILS[s.fail])
            // Written in one transaction, due one millisecond apart in the order sent: an actor's order is the due order.
            const t0 = clock.now().getTime() - 60_000
            const rows = await database.db.transaction(async (tx) => {
              const out: TimerRow[] = []
              for (const [i, s] of sent.entries()) {
                const m = durableMessage.tell({ type: 'ADD', tag: s.tag })
                const dueAt = new Date(t0 + i)
                out.push(await scheduleTimer(tx, clock, { actorKind: 'tally', actorId: s.actor, name: m.name, dueAt, event: m.event, shard: shardOf(s.actor) }))
              }
              return out
            })
            // All at once, as a poll hands over its due rows: each actor's mailbox fills before its next step.
            const results = await Promise.allSettled(rows.map((r) => host.fire(r)))

            const acked = new Set<string>()
            results.forEach((r, i) => {
              const s = sent[i]!
              expect({ tag: s.tag, fail: s.fail, ok: r.status === 'fulfilled' }).toEqual({ tag: s.tag, fail: s.fail, ok: s.fail !== 'always' })
              if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ActorStepFailed)
              else acked.add(`${s.actor}/${s.tag}`)
            })
            const evs = (
              await database.db
                .select()
                .from(events)
                .where(eq(events.accountId, `acct_gc_${run}`))
            )
              .map((e) => JSON.parse(e.body).data as { actor: string; tag: string })
              .filter((d) => ids.includes(d.actor))
              .map((d) => `${d.actor}/${d.tag}`)
            expect(evs.sort()).toEqual([...acked].sort())
            const written = await database.db
              .select()
              .from(settings)
              .where(like(settings.key, `gc/${run}/tally_${run}_${round}_%`))
            expect(written.map((r) => r.key.slice(`gc/${run}/`.length)).sort()).toEqual([...acked].sort())
            for (const id of ids) {
              const [row] = await database.db
                .select()
                .from(actorSnapshots)
                .where(and(eq(actorSnapshots.kind, 'tally'), eq(actorSnapshots.id, id)))
              const tags = (row!.snapshot as { context: { tags: string[] } }).context.tags
              expect({ id, tags }).toEqual({ id, tags: sent.filter((s) => s.actor === id && acked.has(`${s.actor}/${s.tag}`)).map((s) => s.tag) })
            }
            // A message is taken (its row gone) exactly when it is acknowledged: the failed ones stay for a later delivery.
            const left = new Set(
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
            rows.forEach((r, i) => {
              const s = sent[i]!
              expect({ tag: s.tag, kept: left.has(r.id) }).toEqual({ tag: s.tag, kept: !acked.has(`${s.actor}/${s.tag}`) })
            })
            const stats = host.commitStats()
            manyMessageSteps += stats.manyMessageSteps
            if (stats.steps > stats.transactions) sharedTransactions++
          } finally {
            await host.close()
          }
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 40), seed: Number(process.env.FC_SEED ?? 4343) },
    )
    // The property is about both: actors took several messages in one step, and steps shared transactions.
    expect(manyMessageSteps).toBeGreaterThan(0)
    expect(sharedTransactions).toBeGreaterThan(0)
  }, 120_000)
})

describe('batch writers', () => {
  test("a batch runs each kind's writers in the order the kind declares them, whichever step came first", async () => {
    const host = new ActorHost({ db: database.db, clock: manualClock(), kinds: [ledgerKind], pollTimers: false })
    try {
      let shared = 0
      for (let round = 0; round < 5; round++) {
        const noting = Array.from({ length: 4 }, (_, i) => `ledger_${run}_${round}_noting_${i}`)
        const opening = Array.from({ length: 4 }, (_, i) => `ledger_${run}_${round}_opening_${i}`)
        await Promise.all([...noting, ...opening].map((id) => host.spawn('ledger', id, { id })))
        await Promise.all(noting.map((id) => host.send('ledger', id, { type: 'OPEN_AND_NOTE' })))
        const before = host.commitStats()
        // All at once, the steps that only note first: they meet in one transaction with those that open and note.
        await Promise.all([
          ...noting.map((id) => host.send('ledger', id, { type: 'NOTE' })),
          ...opening.map((id) => host.send('ledger', id, { type: 'OPEN_AND_NOTE' })),
        ])
        const after = host.commitStats()
        if (after.steps - before.steps > after.transactions - before.transactions) shared++
        const rows = await database.db
          .select()
          .from(settings)
          .where(inArray(settings.key, [...noting, ...opening].map(ledgerKey)))
        const value = new Map(rows.map((r) => [r.key, r.value]))
        for (const id of opening) expect({ id, value: value.get(ledgerKey(id)) }).toEqual({ id, value: 'opened noted' })
        for (const id of noting) expect({ id, value: value.get(ledgerKey(id)) }).toEqual({ id, value: 'opened noted noted' })
      }
      // The case is about steps sharing a transaction: they did.
      expect(shared).toBeGreaterThan(0)
    } finally {
      await host.close()
    }
  })
})
