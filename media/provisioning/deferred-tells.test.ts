/**
 * Phones first (./deferred-tells): the fetch rate it measures, and what it writes on
 * a real database (PGlite, or PostgreSQL when DATABASE_URL is set): messages due
 * now while fetches are few, deferred messages during a burst, released when the
 * burst ends, and never a message due now ahead of deferred ones still owed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { deviceTellWriter } from '../../actors/devices/registrar-messages'
import { manualClock } from '../../src/clock'
import { type Database, openDatabase, queryRows } from '../../src/db/client'
import { pgArray } from '../../src/db/statements'
import { DEFERRED_PREFIX, releaseDeferred } from '../../src/scheduler/deferred-messages'
import { DEVICE_ACTOR } from '../../src/services/devices/records'
import { until } from '../../test/support/polling'
import { deferredTells, EventRate } from './deferred-tells'

describe('EventRate', () => {
  test('counts what arrived in the window that ends with the bucket under way, per second', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5_000 }), { maxLength: 200 }), fc.integer({ min: 0, max: 6_000 }), (times, probe) => {
        const arrivals = [...times].sort((a, b) => a - b).filter((t) => t <= probe)
        const rate = new EventRate(100, 5)
        for (const t of arrivals) rate.add(t)
        const newest = Math.floor(probe / 100)
        const inWindow = arrivals.filter((t) => Math.floor(t / 100) > newest - 5).length
        expect(rate.perSecond(probe)).toBe((inWindow * 1000) / 500)
      }),
    )
  })

  test('a long silence empties it', () => {
    const rate = new EventRate(100, 5)
    rate.add(10, 400)
    expect(rate.perSecond(20)).toBe(800)
    expect(rate.perSecond(60_000)).toBe(0)
  })
})

describe('deferred tells on the database', () => {
  let database: Database
  const run = Math.random().toString(36).slice(2, 10)
  let n = 0
  const device = () => `device_defer_${run}_${++n}`

  beforeAll(async () => {
    database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
    await database.migrate()
  })
  afterAll(async () => {
    await database?.close()
  })

  type Row = { actor_id: string; name: string; due_at: string | Date; created_at: string | Date }
  const rowsOf = (ids: string[]) =>
    queryRows<Row>(
      database.db,
      sql`select actor_id, name, due_at, created_at from durable_timers where actor_kind = ${DEVICE_ACTOR} and actor_id = any(${pgArray(ids)}::text[]) order by due_at, id`,
    )
  const ms = (d: string | Date) => new Date(d).getTime()
  const fetched = (at: Date) => ({ type: 'CONFIG_FETCHED', ip_address: '192.0.2.7', at: at.toISOString() })

  /** A provisioning server's tells on a manual clock, busy from 5 fetches a second, its rate measured on `time.ms`. */
  function server(maxDelayMs = 10_000) {
    const clock = manualClock('2026-11-29T10:00:00.000Z')
    const time = { ms: 1_000_000 }
    const errors: unknown[] = []
    const tells = deferredTells({
      db: database.db,
      clock,
      write: deviceTellWriter(clock),
      release: (db, now, until) => releaseDeferred(db, DEVICE_ACTOR, now, until),
      settings: { busyPerSecond: 5, maxDelayMs },
      nowMs: () => time.ms,
      onError: (e) => errors.push(e),
    })
    return { clock, time, tells, errors }
  }

  test('few fetches: each message is due now', async () => {
    const { clock, tells } = server()
    const id = device()
    await tells.tell(id, fetched(clock.now()))
    const [row] = await rowsOf([id])
    expect(row!.name.startsWith('$tell:')).toBe(true)
    expect(ms(row!.due_at)).toBe(clock.now().getTime())
    tells.stop()
  })

  test('a burst defers its messages to the deadline; its end releases them, due when they were written', async () => {
    const { clock, time, tells, errors } = server()
    const ids = Array.from({ length: 6 }, device)
    // Six fetches at once are 24 a second over the quarter second: over 5/s, so their batch is deferred.
    await Promise.all(ids.map((id) => tells.tell(id, fetched(clock.now()))))
    expect(tells.deferring()).toBe(true)
    let rows = await rowsOf(ids)
    const deferred = rows.filter((r) => r.name.startsWith(DEFERRED_PREFIX))
    expect(deferred.length).toBeGreaterThan(0)
    for (const r of deferred) expect(ms(r.due_at)).toBe(clock.now().getTime() + 10_000)

    // The burst is over: the watcher releases what was deferred.
    clock.advance(2_000)
    time.ms += 1_000
    await until('the deferred messages released', async () => (await rowsOf(ids)).every((r) => ms(r.due_at) <= clock.now().getTime()))
    rows = await rowsOf(ids)
    for (const r of rows) expect(ms(r.due_at)).toBe(ms(r.created_at))
    expect(errors).toEqual([])
    tells.stop()
  })

  test('after a burst, a message due now is written only once the deferred ones are released', async () => {
    const { clock, time, tells } = server()
    const ids = Array.from({ length: 6 }, device)
    await Promise.all(ids.map((id) => tells.tell(id, fetched(clock.now()))))
    // No watcher: the burst ends and the next fetch comes at once.
    tells.stop()
    clock.advance(1_000)
    time.ms += 1_000
    const last = ids[0]!
    await tells.tell(last, fetched(clock.now()))
    const rows = await rowsOf(ids)
    expect(rows.filter((r) => ms(r.due_at) > clock.now().getTime())).toEqual([])
    // Each device's messages come due in the order they were written.
    const own = rows.filter((r) => r.actor_id === last)
    expect(own.map((r) => ms(r.created_at))).toEqual([...own.map((r) => ms(r.created_at))].sort((a, b) => a - b))
    expect(own.at(-1)!.name.startsWith('$tell:')).toBe(true)
  })

  test('never released, a deferred message is due at its deadline', async () => {
    const { clock, tells } = server(3_000)
    const ids = Array.from({ length: 6 }, device)
    await Promise.all(ids.map((id) => tells.tell(id, fetched(clock.now()))))
    tells.stop()
    const latest = Math.max(...(await rowsOf(ids)).map((r) => ms(r.due_at)))
    expect(latest).toBe(clock.now().getTime() + 3_000)
  })
})
