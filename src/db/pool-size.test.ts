/**
 * The service's own PostgreSQL server gets its whole pool opened at start (warm).
 *
 * DATABASE_POOL_SIZE down to one connection (PostgreSQL; nothing to test on PGlite,
 * which has one connection by nature): a fresh database migrates, with several
 * processes' worth of migrations racing for the lock, and transactions and plain
 * queries issued together all complete (a transaction never waits on the pool it holds).
 */
import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { freshDataDir } from '../../test/support/data-dir'
import { scratchPostgres } from '../../test/support/scratch-postgres'
import { openDatabase, queryRows } from './client'

const postgres = process.env.DATABASE_URL

if (!postgres) test.skip('a PostgreSQL pool of one connection (skipped: DATABASE_URL is not set)', () => {})

describe.skipIf(!postgres)('a PostgreSQL pool of one connection', () => {
  test('two processes migrate a fresh database at once, then transactions and queries together all complete', async () => {
    const scratch = await scratchPostgres('pool_size')
    const [a, b] = await Promise.all([0, 1].map(() => openDatabase({ databaseUrl: scratch.url, dataDir: 'memory://', poolSize: 1 })))
    try {
      await Promise.all([a!.migrate(), b!.migrate()])
      const work = Array.from({ length: 20 }, (_, i) =>
        i % 2
          ? a!.db.transaction(async (tx) => (await queryRows<{ n: number }>(tx, sql`select ${i}::int as n`))[0]!.n)
          : queryRows<{ n: number }>(a!.db, sql`select ${i}::int as n`).then((r) => r[0]!.n),
      )
      expect(await Promise.all(work)).toEqual(Array.from({ length: 20 }, (_, i) => i))
    } finally {
      await Promise.all([a!.close(), b!.close()])
      await scratch.dispose()
    }
  }, 30_000)
})

test('warm opens every connection of the pool of the embedded PostgreSQL server', async () => {
  const folder = freshDataDir('pool-warm')
  const database = await openDatabase({ dataDir: folder.dataDir, poolSize: 5 })
  try {
    expect(database.kind).toBe('postgres')
    const clients = async () =>
      (await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from pg_stat_activity where backend_type = 'client backend'`))[0]!.n
    expect(await clients()).toBe(1)
    await database.warm()
    expect(await clients()).toBe(5)
  } finally {
    await database.close()
    await folder.dispose()
  }
}, 60_000)

// Without `jit: off` a server built with LLVM compiles statements whose estimated cost passes jit_above_cost, on every run.
describe.skipIf(!postgres)('connections to a PostgreSQL server', () => {
  test('run without JIT compilation, whatever the server is configured with', async () => {
    const database = await openDatabase({ databaseUrl: postgres!, dataDir: 'memory://', poolSize: 2 })
    try {
      const settings = await Promise.all([0, 1].map(() => database.db.transaction(async (tx) => (await queryRows<{ jit: string }>(tx, sql`show jit`))[0]!.jit)))
      expect(settings).toEqual(['off', 'off'])
    } finally {
      await database.close()
    }
  }, 30_000)
})

test('connections to the embedded PostgreSQL server run without JIT compilation', async () => {
  const folder = freshDataDir('pool-jit')
  const database = await openDatabase({ dataDir: folder.dataDir, poolSize: 2 })
  try {
    expect((await queryRows<{ jit: string }>(database.db, sql`show jit`))[0]!.jit).toBe('off')
  } finally {
    await database.close()
    await folder.dispose()
  }
}, 60_000)
