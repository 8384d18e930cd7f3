/**
 * The database: PGlite (Postgres compiled to WASM) embedded by default, or a
 * PostgreSQL server when DATABASE_URL is set. Same drizzle schema and migrations.
 */
import { PGlite, types } from '@electric-sql/pglite'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import * as schema from './schema'

export type Schema = typeof schema
/** A drizzle handle: the database itself or a transaction inside it. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>

export interface Database {
  db: Db
  kind: 'pglite' | 'postgres'
  migrate(): Promise<void>
  ping(): Promise<void>
  /**
   * Waits until this process holds the named lock, which it keeps until release()
   * or until its connection dies. Embedded (one process) it is held at once.
   */
  leadership(name: string, signal?: AbortSignal): Promise<{ release(): Promise<void> }>
  close(): Promise<void>
}

const lockKey = (name: string) => {
  let h = 0
  for (const c of name) h = (Math.imul(h, 31) + c.charCodeAt(0)) | 0
  return h
}

const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url))

/**
 * drizzle runs every query through `client.unsafe(text, params, { prepare: false })`,
 * and postgres.js sends an unprepared query with parameters as two round trips
 * (parse + describe, then bind + execute), parsed and planned anew each time. This
 * view of the client prepares parameterised queries instead (postgres.js caches them
 * per connection by text), in transactions and savepoints too: one round trip per
 * query once warm. Same SQL, same results; 60-90% more queries per second and a third
 * less client CPU under load (npm run bench -- api). Like any use of prepared
 * statements, this needs a session-level pooler (or none) in front of PostgreSQL,
 * not PgBouncer in transaction mode.
 */
function preparing(sql: postgres.Sql): postgres.Sql {
  return new Proxy(sql, {
    get(target, prop, receiver) {
      if (prop === 'unsafe') {
        return (text: string, params?: unknown[], options?: postgres.UnsafeQueryOptions) =>
          target.unsafe(text, params as never, Array.isArray(params) && params.length > 0 ? { ...options, prepare: true } : options)
      }
      if (prop === 'begin' || prop === 'savepoint') {
        const original = Reflect.get(target, prop, receiver) as (...args: unknown[]) => unknown
        return (...args: unknown[]) => {
          const fn = args.pop() as (tx: postgres.Sql) => unknown
          return original.call(target, ...args, (tx: postgres.Sql) => fn(preparing(tx)))
        }
      }
      return Reflect.get(target, prop, receiver)
    },
  })
}

/**
 * drizzle's PGlite driver hands these parsers to every query (dates stay strings
 * for drizzle to map), and PGlite then copies its whole parser table, hundreds of
 * array types, to merge them: 12% of the CPU of the calls bench. Set once on the
 * instance instead, and stripped from each query by `withoutQueryParsers`.
 */
const DRIZZLE_PARSERS = {
  [types.TIMESTAMP]: (v: string) => v,
  [types.TIMESTAMPTZ]: (v: string) => v,
  [types.INTERVAL]: (v: string) => v,
  [types.DATE]: (v: string) => v,
}

type Queryable = { query: (q: string, params?: unknown[], options?: { parsers?: unknown }) => Promise<unknown> }

function withoutQueryParsers<T extends object>(target: T): T {
  return new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop, t)
      if (prop === 'query')
        return (q: string, params?: unknown[], options?: { parsers?: unknown }) =>
          (t as unknown as Queryable).query(q, params, options?.parsers ? { ...options, parsers: undefined } : options)
      if (prop === 'transaction') return (fn: (tx: object) => Promise<unknown>) => (value as (f: (tx: object) => Promise<unknown>) => Promise<unknown>).call(t, (tx) => fn(withoutQueryParsers(tx)))
      return typeof value === 'function' ? value.bind(t) : value
    },
  })
}

export async function openDatabase(opts: { databaseUrl?: string; dataDir: string }): Promise<Database> {
  if (opts.databaseUrl) {
    const client = postgres(opts.databaseUrl, { max: 20, onnotice: () => {}, connect_timeout: 10 })
    const db = drizzlePostgres(preparing(client), { schema }) as unknown as Db
    return {
      db,
      kind: 'postgres',
      migrate: async () => {
        // Several processes may start at once: one migrates, the others wait on the lock.
        const lock = await client.reserve()
        try {
          await lock`select pg_advisory_lock(72873461)`
          await migratePostgres(drizzlePostgres(client), { migrationsFolder })
        } finally {
          await lock`select pg_advisory_unlock(72873461)`.catch(() => {})
          lock.release()
        }
      },
      ping: async () => {
        await client`select 1`
      },
      leadership: async (name, signal) => {
        const conn = await client.reserve()
        try {
          for (;;) {
            const [row] = await conn`select pg_try_advisory_lock(${lockKey(name)}) as held`
            if (row?.held) break
            if (signal?.aborted) throw new Error('aborted')
            await new Promise((r) => setTimeout(r, 1000))
          }
        } catch (e) {
          conn.release()
          throw e
        }
        return {
          release: async () => {
            await conn`select pg_advisory_unlock(${lockKey(name)})`.catch(() => {})
            conn.release()
          },
        }
      },
      close: () => client.end({ timeout: 5 }),
    }
  }
  const memory = opts.dataDir === 'memory://'
  if (!memory) mkdirSync(opts.dataDir, { recursive: true })
  const client = memory ? new PGlite({ parsers: DRIZZLE_PARSERS }) : new PGlite(opts.dataDir, { parsers: DRIZZLE_PARSERS })
  await client.waitReady
  const db = drizzlePglite(withoutQueryParsers(client), { schema }) as unknown as Db
  return {
    db,
    kind: 'pglite',
    migrate: () => migratePglite(drizzlePglite(client), { migrationsFolder }),
    ping: async () => {
      await client.query('select 1')
    },
    leadership: async () => ({ release: async () => {} }),
    close: () => client.close(),
  }
}
