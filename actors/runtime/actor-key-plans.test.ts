/**
 * The runtime's statements that find rows by actor (kind and id) must reach them
 * through the tables' (kind, id, ...) indexes, whatever jsonb_to_recordset is
 * estimated at. Cancelling an ended actor's timers once named the ids alone: with no
 * index leading with actor_id, PostgreSQL scanned durable_timers whole in most group
 * commits of the calls bench (430 pages of dead timer rows, 4 ms a batch, auto_explain).
 * The plans are read with EXPLAIN, the statistics fresh: actor_snapshots with 20,000
 * rows; durable_timers as the bench left it, a few hundred live rows among 60,000 dead
 * ones. PGlite, or PostgreSQL when DATABASE_URL is set. Plans depend on the planner's
 * estimates: in a fresh PostgreSQL 15 database (as CI's runs use) the ids-only
 * statements scan both tables whole and fail here; PGlite, and a database holding
 * other tests' rows, happened to plan them well.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { openDatabase, type Database } from '../../src/db/client'
import { MESSAGE_NAME_PREFIX } from '../../src/scheduler/durable-timers'
import { actorKeys, CANCEL_OWN_TIMERS, CANCEL_TIMERS } from './committer'
import { READ_SNAPSHOTS } from './host'
import { planJson } from '../../test/support/query-plans'

let database: Database
const run = Math.random().toString(36).slice(2, 10)
const KINDS = [`plan_a_${run}`, `plan_b_${run}`]
const ACTORS = 20_000
/** Actors whose timer rows stay live. */
const LIVE_TIMERS = 200
const actor = (i: number) => ({ kind: KINDS[i % 2]!, id: `act_${run}_${String(i).padStart(5, '0')}` })

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
  const rows = Array.from({ length: ACTORS }, (_, i) => actor(i))
  await database.db.execute(sql`
    insert into durable_timers (id, actor_kind, actor_id, name, token, due_at, event, shard, created_at)
    select 'tmr_' || x.id || '_' || n.name, x.kind, x.id, n.name, 't', now() + interval '1 hour', '{}'::jsonb, 0, now()
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(kind text, id text)
    cross join (values ('ring'), ('answer'), (${`${MESSAGE_NAME_PREFIX}tell:1`})) as n(name)`)
  await database.db.execute(sql`
    insert into actor_snapshots (kind, id, machine_version, snapshot, status, shard, updated_at)
    select x.kind, x.id, 'v1', '{}'::jsonb, 'active', 0, now() from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(kind text, id text)`)
  // As the timer table is under load: a few live rows among many dead ones (statistics say it is small).
  await database.db.execute(sql`delete from durable_timers where actor_kind = any(${`{${KINDS.join(',')}}`}::text[]) and actor_id > ${actor(LIVE_TIMERS).id}`)
  await database.db.execute(sql`analyze durable_timers`)
  await database.db.execute(sql`analyze actor_snapshots`)
})

afterAll(async () => {
  await database.db.execute(sql`delete from durable_timers where actor_kind = any(${`{${KINDS.join(',')}}`}::text[])`)
  await database.db.execute(sql`delete from actor_snapshots where kind = any(${`{${KINDS.join(',')}}`}::text[])`)
  await database.close()
})

/** The relations a plan reads by sequential scan. */
async function seqScans(text: string, params: string[]): Promise<string[]> {
  const plan = await planJson(database.db, text, params)
  return [...plan.matchAll(/"Node Type":\s*"Seq Scan"[^}]*?"Relation Name":\s*"(\w+)"/g)].map((m) => m[1]!)
}

const someActors = Array.from({ length: 10 }, (_, i) => actor(100 + i * 7))

test('cancelling ended actors’ timers reads durable_timers by index', async () => {
  const params = [JSON.stringify(someActors), `${MESSAGE_NAME_PREFIX}%`, ...actorKeys(someActors)]
  expect(await seqScans(CANCEL_OWN_TIMERS.text, params)).toEqual([])
})

test('cancelling timers by name reads durable_timers by index', async () => {
  const cancels = someActors.map((a) => ({ ...a, name: 'ring' }))
  expect(await seqScans(CANCEL_TIMERS.text, [JSON.stringify(cancels), ...actorKeys(cancels)])).toEqual([])
})

test('rehydrating actors together reads actor_snapshots by index', async () => {
  expect(await seqScans(READ_SNAPSHOTS.text, [JSON.stringify(someActors), ...actorKeys(someActors)])).toEqual([])
})
