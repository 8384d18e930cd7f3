/**
 * Releasing deferred messages touches deferred messages only: of the kind asked
 * (or the one actor), with a deadline in the window; everything else keeps its due
 * time. PGlite, and PostgreSQL when DATABASE_URL is set.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { inArray } from 'drizzle-orm'
import { manualClock } from '../clock'
import { type Database, openDatabase } from '../db/client'
import { durableTimers } from '../db/schema'
import { DEFERRED_PREFIX, releaseDeferred, releaseDeferredOf } from './deferred-messages'
import { scheduleTimers } from './durable-timers'

let database: Database
const run = Math.random().toString(36).slice(2, 10)

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
})
afterAll(async () => {
  await database?.close()
})

test('a release makes due, when they were written, the deferred messages it names and nothing else', async () => {
  const clock = manualClock('2026-11-29T10:00:00.000Z')
  const now = clock.now().getTime()
  const kind = `gadget_${run}`
  const at = (ms: number) => new Date(now + ms)
  const row = (actorId: string, name: string, dueInMs: number, actorKind = kind) => ({
    actorKind,
    actorId,
    name,
    dueAt: at(dueInMs),
    event: { type: 'PING' },
  })
  const rows = await scheduleTimers(database.db, clock, [
    row('a', `${DEFERRED_PREFIX}1`, 5_000), // released by the kind's release
    row('a', `${DEFERRED_PREFIX}2`, 60_000), // deadline past `until`: kept
    row('a', '$tell:3', 5_000), // a message written for later, not deferred: kept
    row('a', 'ring', 5_000), // the actor's own timer: kept
    row('b', `${DEFERRED_PREFIX}4`, 5_000, `other_${run}`), // another kind: kept
    row('c', `${DEFERRED_PREFIX}5`, 60_000), // released by the one actor's release
    row('d', `${DEFERRED_PREFIX}6`, 60_000), // another actor: kept
  ])
  clock.advance(1_000)
  expect(await releaseDeferred(database.db, kind, clock.now(), at(1_000 + 10_000))).toBe(1)
  expect(await releaseDeferredOf(database.db, kind, 'c', clock.now())).toBe(1)

  const after = await database.db
    .select()
    .from(durableTimers)
    .where(
      inArray(
        durableTimers.id,
        rows.map((r) => r.id),
      ),
    )
  const dueOf = new Map(after.map((r) => [r.name, r.dueAt.getTime()]))
  expect(Object.fromEntries(dueOf)).toEqual({
    [`${DEFERRED_PREFIX}1`]: now,
    [`${DEFERRED_PREFIX}2`]: now + 60_000,
    '$tell:3': now + 5_000,
    ring: now + 5_000,
    [`${DEFERRED_PREFIX}4`]: now + 5_000,
    [`${DEFERRED_PREFIX}5`]: now,
    [`${DEFERRED_PREFIX}6`]: now + 60_000,
  })
})
