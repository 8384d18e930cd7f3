/**
 * The hot-path helpers against a real database (PGlite; a scratch PostgreSQL database
 * with DATABASE_URL): whole rows read through selectRows are exactly what drizzle's
 * select gives, and a statement run with a transaction's handle is part of it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { scratchPostgres } from '../../test/support/scratch-postgres'
import { type Database, openDatabase } from './client'
import { durableTimers, events, webhookEndpoints } from './schema'
import { pgArray, selectRows, statement, tableStatement } from './statements'

let database: Database
let dispose: () => Promise<void>

beforeAll(async () => {
  const scratch = await scratchPostgres('statements')
  database = await openDatabase({ databaseUrl: scratch.url, dataDir: 'memory://' })
  await database.migrate()
  dispose = async () => {
    await database.close()
    await scratch.dispose()
  }
})
afterAll(() => dispose?.())

const at = new Date('2026-11-23T10:11:12.345Z')

describe('selectRows', () => {
  test('gives the rows drizzle select gives: text arrays, nulls, timestamps, booleans, jsonb, bigint', async () => {
    const { db } = database
    await db.insert(webhookEndpoints).values([
      {
        id: 'we_1',
        platformId: 'plat_1',
        accountId: null,
        mode: 'test',
        url: 'https://example.com/hook',
        secret: 'whsec_x',
        enabledEvents: ['call.completed', 'fax.*'],
        description: 'a "quoted" one',
        status: 'enabled',
        createdAt: at,
        updatedAt: at,
      },
    ])
    await db.insert(durableTimers).values({
      id: 'tmr_1',
      actorKind: 'call',
      actorId: 'call_1',
      name: 'ring',
      token: 't',
      dueAt: at,
      event: { type: 'X', n: [1, 2] },
      shard: 3,
      createdAt: at,
    })
    await db.insert(events).values({ id: 'evt_1', platformId: 'plat_1', accountId: 'acct_1', mode: 'test', type: 't', body: '{}', createdAt: at })

    expect(await selectRows(db, webhookEndpoints, sql`where id = ${'we_1'}`)).toEqual(
      await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, 'we_1')),
    )
    expect(await selectRows(db, durableTimers, sql``)).toEqual(await db.select().from(durableTimers))
    const [event] = await selectRows(db, events, sql`where seq in (select seq from event_outbox)`)
    expect(event).toEqual((await db.select().from(events))[0]!)
    expect(typeof event!.seq).toBe('number')
    expect(event!.createdAt).toEqual(at)
  })
})

describe('statement', () => {
  const insert = statement('insert into events (id, platform_id, account_id, mode, type, body, created_at) values ($1, $2, $3, $4, $5, $6, $7::timestamptz)')
  const count = statement<{ n: number | string }>('select count(*) as n from events where id = any($1::text[])')
  const params = (id: string) => [id, 'plat_1', 'acct_1', 'test', 't', '{}', at.toISOString()]

  test('run with a transaction handle, it is part of that transaction', async () => {
    const { db } = database
    await expect(
      db.transaction(async (tx) => {
        await insert.rows(tx, params('evt_rolled_back'))
        expect(Number((await count.rows(tx, [pgArray(['evt_rolled_back'])]))[0]!.n)).toBe(1)
        throw new Error('roll back')
      }),
    ).rejects.toThrow('roll back')
    await db.transaction((tx) => insert.rows(tx, params('evt_committed')))
    expect(Number((await count.rows(db, [pgArray(['evt_rolled_back', 'evt_committed'])]))[0]!.n)).toBe(1)
  })

  test('the same statement serves any number of runs, each with its own parameters', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `evt_many_${i}`)
    await Promise.all(ids.map((id) => insert.rows(database.db, params(id))))
    expect(Number((await count.rows(database.db, [pgArray(ids)]))[0]!.n)).toBe(30)
  })
})

test('tableStatement answers whole rows as drizzle select gives them, from `returning` as from `select`', async () => {
  const { db } = database
  const insert = tableStatement(
    durableTimers,
    (columns) => `insert into durable_timers (id, actor_kind, actor_id, name, token, due_at, event, shard, created_at)
      values ($1, 'call', 'call_t', 'ring', 't', $2, $3::jsonb, 5, $2) returning ${columns}`,
  )
  const [inserted] = await insert.rows(db, ['tmr_table', at.toISOString(), JSON.stringify({ type: 'Y', n: [3] })])
  const [selected] = await db.select().from(durableTimers).where(eq(durableTimers.id, 'tmr_table'))
  expect(inserted).toEqual(selected!)
  expect(inserted!.dueAt).toEqual(at)
  expect(inserted!.event).toEqual({ type: 'Y', n: [3] })
  const read = tableStatement(durableTimers, (columns) => `select ${columns} from durable_timers where id = $1`)
  expect(await read.rows(db, ['tmr_table'])).toEqual([selected!])
})

test('pgArray quotes text elements so that any id survives', () => {
  expect(pgArray(['a', 'b"c', 'd\\e'])).toBe('{"a","b\\"c","d\\\\e"}')
  expect(pgArray([1, 22])).toBe('{1,22}')
  expect(pgArray([])).toBe('{}')
})
