/**
 * Durable timers: rows with a due time and a token; a stale or replaced fire is
 * dropped; due by the injected clock. PGlite, and PostgreSQL when DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { manualClock, systemClock } from '../clock'
import { until } from '../../test/support/polling'
import { openDatabase, type Database } from '../db/client'
import { durableTimers } from '../db/schema'
import { cancelActorTimers, cancelTimer, claimTimer, DurableScheduler, scheduleTimer, scheduleTimers, type TimerRow, RecentTokens } from './durable-timers'

let database: Database
const run = Math.random().toString(36).slice(2, 10)
let n = 0
const uid = () => `thing_${run}_${++n}`

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
})
afterAll(async () => {
  await database?.close()
})

const rowsOf = (actorId: string) =>
  database.db
    .select()
    .from(durableTimers)
    .where(and(eq(durableTimers.actorKind, 'thing'), eq(durableTimers.actorId, actorId)))

describe('durable timer rows', () => {
  test('one live timer per name: scheduling again replaces the token, due time and event', async () => {
    const clock = manualClock()
    const actorId = uid()
    const a = await scheduleTimer(database.db, clock, {
      actorKind: 'thing',
      actorId,
      name: 'ring',
      dueAt: new Date(clock.now().getTime() + 1000),
      event: { type: 'A' },
    })
    expect(a.id).toStartWith('tmr_')
    const b = await scheduleTimer(database.db, clock, {
      actorKind: 'thing',
      actorId,
      name: 'ring',
      dueAt: new Date(clock.now().getTime() + 2000),
      event: { type: 'B' },
    })
    expect(b.id).toBe(a.id)
    expect(b.token).not.toBe(a.token)
    expect(await rowsOf(actorId)).toHaveLength(1)
    // the stale fire (old token) is neither current nor claimable
    const [row] = await rowsOf(actorId)
    expect(row!.token).toBe(b.token)
    expect(await claimTimer(database.db, a.id, a.token)).toBe(false)
    expect(row!.event).toEqual({ type: 'B' })
    // claimed once only
    expect(await claimTimer(database.db, b.id, b.token)).toBe(true)
    expect(await claimTimer(database.db, b.id, b.token)).toBe(false)
  })

  test('several timers in one statement: rows in the order asked, a replaced one keeps its id, each claimable with its own token', async () => {
    const clock = manualClock()
    const [x, y] = [uid(), uid()]
    const before = await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId: y, name: 'b', dueAt: clock.now(), event: { type: 'OLD' } })
    const rows = await scheduleTimers(database.db, clock, [
      { actorKind: 'thing', actorId: x, name: 'a', dueAt: clock.now(), event: { type: 'A' } },
      { actorKind: 'thing', actorId: y, name: 'b', dueAt: clock.now(), event: { type: 'B' } },
      { actorKind: 'thing', actorId: x, name: 'c', dueAt: clock.now(), event: { type: 'C' } },
    ])
    expect(rows.map((r) => [r.actorId, r.name, r.event.type])).toEqual([
      [x, 'a', 'A'],
      [y, 'b', 'B'],
      [x, 'c', 'C'],
    ])
    expect(rows[1]!.id).toBe(before.id)
    expect((await rowsOf(x)).map((r) => r.id).sort()).toEqual([rows[0]!.id, rows[2]!.id].sort())
    expect(await claimTimer(database.db, before.id, before.token)).toBe(false)
    for (const r of rows) expect(await claimTimer(database.db, r.id, r.token)).toBe(true)
    // The same timer twice in one statement is refused whole: the caller sends those apart.
    const dup = { actorKind: 'thing', actorId: x, name: 'd', dueAt: clock.now(), event: { type: 'D' } }
    await expect(scheduleTimers(database.db, clock, [dup, dup])).rejects.toThrow()
    expect(await rowsOf(x)).toHaveLength(0)
  })

  test('cancel by name and cancel all of an actor', async () => {
    const clock = manualClock()
    const actorId = uid()
    const t = await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId, name: 'x', dueAt: clock.now(), event: { type: 'X' } })
    await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId, name: 'y', dueAt: clock.now(), event: { type: 'Y' } })
    expect(await cancelTimer(database.db, 'thing', actorId, 'x')).toBe(true)
    expect(await cancelTimer(database.db, 'thing', actorId, 'x')).toBe(false)
    expect(await claimTimer(database.db, t.id, t.token)).toBe(false)
    await cancelActorTimers(database.db, 'thing', actorId)
    expect(await rowsOf(actorId)).toHaveLength(0)
  })
})

describe('DurableScheduler', () => {
  test('delivers a timer when the injected clock reaches its due time, and resumes from rows in a new scheduler', async () => {
    const clock = manualClock('2031-01-01T00:00:00.000Z')
    const actorId = uid()
    await scheduleTimer(database.db, clock, {
      actorKind: 'thing',
      actorId,
      name: 'ring',
      dueAt: new Date(clock.now().getTime() + 30_000),
      event: { type: 'T' },
    })
    const got: TimerRow[] = []
    const deliver = async (t: TimerRow) => {
      if (t.actorId !== actorId) return
      got.push(t)
      await claimTimer(database.db, t.id, t.token)
    }
    const first = new DurableScheduler({ db: database.db, clock, deliver })
    clock.advance(10_000)
    await first.tick()
    expect(got).toHaveLength(0)
    await first.stop()
    // "restart": a new scheduler over the same rows
    const second = new DurableScheduler({ db: database.db, clock, deliver })
    clock.advance(20_000)
    await second.tick()
    expect(got.map((t) => t.event)).toEqual([{ type: 'T' }])
    await second.tick()
    expect(got).toHaveLength(1)
  })

  test("deliverDueOf: one actor's due timers now, without a poll; a delivery already under way is waited for, not repeated", async () => {
    const clock = manualClock('2032-01-01T00:00:00.000Z')
    const actorId = uid()
    const other = uid()
    for (const id of [actorId, other])
      await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId: id, name: 'm', dueAt: clock.now(), event: { type: 'M' } })
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const handled: string[] = []
    const deliver = async (t: TimerRow) => {
      if (t.actorId !== actorId && t.actorId !== other) return
      await gate
      handled.push(t.actorId)
      await claimTimer(database.db, t.id, t.token)
    }
    const s = new DurableScheduler({ db: database.db, clock, deliver })
    const polled = s.tick() // the poll takes both rows and waits at the gate
    await Bun.sleep(0)
    let woken = false
    const wake = s.deliverDueOf('thing', actorId).then(() => (woken = true))
    await Bun.sleep(0)
    expect(woken).toBe(false) // waits for the poll's delivery of the same row
    release()
    await Promise.all([polled, wake])
    expect(handled.sort()).toEqual([actorId, other].sort()) // each row once
    expect(await rowsOf(actorId)).toEqual([])
    expect(await s.deliverDueOf('thing', actorId)).toBe(0)
  })

  test('a row rewritten while an older fire of it is in flight is delivered when that delivery ends, without another poll', async () => {
    const clock = manualClock('2032-06-01T00:00:00.000Z')
    const actorId = uid()
    const first = await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId, name: '$spawn', dueAt: clock.now(), event: { type: 'A' } })
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let entered!: () => void
    const inFlight = new Promise<void>((r) => (entered = r))
    const delivered: { event: unknown; current: boolean }[] = []
    const s = new DurableScheduler({
      db: database.db,
      clock,
      deliver: async (t) => {
        if (t.actorId !== actorId) return
        if (delivered.length === 0) {
          entered()
          await gate
        }
        delivered.push({ event: t.event, current: await claimTimer(database.db, t.id, t.token) })
      },
    })
    const polled = s.tick() // delivers A and waits at the gate
    await inFlight
    // The writer replaces the row (a new token) and hands it over, as a step's commit does.
    const second = await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId, name: '$spawn', dueAt: clock.now(), event: { type: 'B' } })
    expect(second.id).toBe(first.id)
    const handed = s.deliverNow([second])
    // The same fire handed over again is not queued twice.
    const again = s.deliverNow([second])
    release()
    await Promise.all([polled, handed, again])
    // A was stale by its claim; B came right behind it, from no poll of ours (only the one tick ran).
    expect(delivered).toEqual([
      { event: { type: 'A' }, current: false },
      { event: { type: 'B' }, current: true },
    ])
    expect(await rowsOf(actorId)).toEqual([])
  })

  test('a failed delivery leaves the row and is retried after a backoff', async () => {
    const clock = manualClock('2032-01-01T00:00:00.000Z')
    const actorId = uid()
    await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId, name: 'ring', dueAt: clock.now(), event: { type: 'T' } })
    let calls = 0
    const errors: unknown[] = []
    const s = new DurableScheduler({
      db: database.db,
      clock,
      onError: (e) => errors.push(e),
      deliver: async (t) => {
        if (t.actorId !== actorId) return
        calls++
        if (calls === 1) throw new Error('actor busy')
        await claimTimer(database.db, t.id, t.token)
      },
    })
    await s.tick()
    expect(calls).toBe(1)
    expect(errors).toHaveLength(1)
    await s.tick() // still backing off (>= 50 ms real)
    expect(calls).toBe(1)
    await Bun.sleep(120)
    await s.tick()
    expect(calls).toBe(2)
    expect(await rowsOf(actorId)).toHaveLength(0)
  })

  test('the loop polls when the next timer comes due (read by the poll before), and at once when woken, not only every interval', async () => {
    const clock = systemClock(1000) // 5 simulated seconds = 5 real ms
    const actorId = uid()
    const fired: string[] = []
    const s = new DurableScheduler({
      db: database.db,
      clock,
      pollIntervalMs: 3_600_000, // the safety poll never comes within the test
      deliver: async (t) => {
        if (t.actorId !== actorId) return
        fired.push(t.name)
        await claimTimer(database.db, t.id, t.token)
      },
    })
    await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId, name: 'soon', dueAt: new Date(clock.now().getTime() + 5_000), event: { type: 'T' } })
    s.start()
    await until('the timer the first poll saw coming', () => fired.includes('soon'), 5_000)
    // A row written now: the loop sleeps (nothing else is due), so only the wake-up brings it in.
    await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId, name: 'now', dueAt: clock.now(), event: { type: 'T' } })
    s.wake()
    await until('the timer it was woken for', () => fired.includes('now'), 5_000)
    await s.stop()
    expect(fired).toEqual(['soon', 'now'])
  })

  test('the background loop polls every few real milliseconds', async () => {
    const clock = manualClock('2033-01-01T00:00:00.000Z')
    const actorId = uid()
    await scheduleTimer(database.db, clock, { actorKind: 'thing', actorId, name: 'ring', dueAt: new Date(clock.now().getTime() + 1000), event: { type: 'T' } })
    let fired = 0
    const s = new DurableScheduler({
      db: database.db,
      clock,
      pollIntervalMs: 2,
      deliver: async (t) => {
        if (t.actorId !== actorId) return
        fired++
        await claimTimer(database.db, t.id, t.token)
      },
    })
    s.start()
    await Bun.sleep(20)
    expect(fired).toBe(0)
    clock.advance(1000)
    for (let i = 0; i < 200 && fired === 0; i++) await Bun.sleep(5)
    await s.stop()
    expect(fired).toBe(1)
  })
})

test('RecentTokens remembers at least the last `generation` deliveries, the newest token of an id winning', () => {
  const recent = new RecentTokens(100)
  for (let i = 0; i < 1_000; i++) recent.set(`t${i}`, `a${i}`)
  // The last 100 are always remembered, whatever the generations' boundaries.
  for (let i = 900; i < 1_000; i++) expect(recent.get(`t${i}`)).toBe(`a${i}`)
  expect(recent.get('t0')).toBeUndefined()
  recent.set('t950', 'b')
  expect(recent.get('t950')).toBe('b')
  for (let i = 0; i < 100; i++) recent.set(`u${i}`, 'c')
  expect(recent.get('t950')).toBe('b')
})
