/**
 * The database: PGlite (Postgres compiled to WASM) embedded by default, or a
 * PostgreSQL server when DATABASE_URL is set. Same drizzle schema and migrations.
 */
import { PGlite, types } from '@electric-sql/pglite'
import { DEFAULT_DATABASE_POOL_SIZE } from '../config'
import { lockDataDir } from './data-dir-lock'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import type { SQL } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { EmbeddedPostgresUnavailable, startEmbeddedPostgres } from './embedded-postgres'
import { pacedSocketFactory } from './paced-socket'

/**
 * A drizzle handle: the database itself or a transaction inside it. Without the
 * schema's relational query builders (`db.query`), which nothing uses: drizzle builds
 * them for all the tables again in every transaction it opens.
 */
export type Db = PgDatabase<PgQueryResultHKT>

/**
 * The rows of a raw statement (`db.execute(sql\`...\`)`), whichever the driver:
 * postgres.js answers an array, PGlite an object with `rows`.
 */
export async function queryRows<T>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as T[] | { rows?: T[] }
  return Array.isArray(result) ? result : (result.rows ?? [])
}

export interface Database {
  db: Db
  kind: 'pglite' | 'postgres'
  /** The service's own database (on DATA_DIR or in memory), not an operator's server. */
  embedded: boolean
  migrate(): Promise<void>
  ping(): Promise<void>
  /**
   * Opens every connection of the pool now. A service that starts to a crowd (every
   * phone of a site fetching its file after a power cut) otherwise opens them under
   * that load, one server process started per connection, and its first second's
   * requests waited 200 ms and more (`npm run bench -- provisioning`).
   */
  warm(): Promise<void>
  /**
   * Waits until this process holds the named lock, which it keeps until release()
   * or until its connection dies. Embedded (one process) it is held at once.
   */
  leadership(name: string, signal?: AbortSignal): Promise<{ release(): Promise<void>; lost?: Promise<void> }>
  close(): Promise<void>
}

/**
 * How often (real ms) a lock holder checks that its connection still holds the lock: a
 * connection that dies (a network cut, a terminated backend) drops the lock silently.
 */
export const LEADERSHIP_CHECK_MS = 500

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
      if (prop === 'transaction')
        return (fn: (tx: object) => Promise<unknown>) =>
          (value as (f: (tx: object) => Promise<unknown>) => Promise<unknown>).call(t, (tx) => fn(withoutQueryParsers(tx)))
      return typeof value === 'function' ? value.bind(t) : value
    },
  })
}

export interface OpenOptions {
  /** A PostgreSQL server of the operator's. */
  databaseUrl?: string
  /** The embedded database's folder, or `memory://` (PGlite in memory, nothing kept). */
  dataDir: string
  /** The embedded database: a PostgreSQL server of the service's own (default), or PGlite. */
  embedded?: 'postgres' | 'pglite'
  /** A CLI run: use the embedded server of the service running on dataDir, if one does. */
  attach?: boolean
  /** Where the embedded database says what it does (creating, adopting, falling back). */
  log?: (msg: string) => void
  /** Connections to PostgreSQL (DATABASE_POOL_SIZE); default DEFAULT_DATABASE_POOL_SIZE. */
  poolSize?: number
}

/**
 * Every connection runs without JIT compilation. Our statements are short OLTP ones,
 * but a few (the provisioning read, with a dozen subplans) carry planner costs above
 * `jit_above_cost` while the tables have no statistics yet, and a server built with
 * LLVM (Debian's PostgreSQL 15) then compiled them on every run: 70–400 ms each,
 * which took `npm run bench -- provisioning` on the PostgreSQL server from about
 * 1,300 to 260 fetches/s with 20–30 s latencies. The embedded server has no JIT.
 */
const NO_JIT = { jit: 'off' }

/**
 * The database: DATABASE_URL's server; else, on DATA_DIR, the embedded PostgreSQL
 * server (src/db/embedded-postgres); PGlite in memory for `memory://` (tests), for a
 * folder PGlite made (an earlier release's data stays where it is), when asked
 * (EMBEDDED_DATABASE=pglite), or where no PostgreSQL binaries exist for the platform.
 */
export async function openDatabase(opts: OpenOptions): Promise<Database> {
  const pool = {
    max: opts.poolSize ?? DEFAULT_DATABASE_POOL_SIZE,
    onnotice: () => {},
    connect_timeout: 10,
    connection: NO_JIT,
    socket: pacedSocketFactory() as never,
  }
  if (opts.databaseUrl) {
    const url = opts.databaseUrl
    return postgresDatabase((extra = {}) => postgres(url, { ...pool, ...extra }))
  }
  const memory = opts.dataDir === 'memory://'
  const pgliteFolder = !memory && existsSync(join(opts.dataDir, 'PG_VERSION'))
  if (!memory && !pgliteFolder && opts.embedded !== 'pglite') {
    try {
      const server = await startEmbeddedPostgres(opts.dataDir, { attach: opts.attach, log: opts.log })
      const db = postgresDatabase((extra = {}) => postgres({ ...server.connection, ...pool, ...extra }), {
        embedded: true,
      })
      return {
        ...db,
        close: async () => {
          await db.close()
          await server.stop()
        },
      }
    } catch (e) {
      if (!(e instanceof EmbeddedPostgresUnavailable)) throw e
      opts.log?.(`no embedded PostgreSQL server (${e.message}): the data lives in PGlite`)
    }
  }
  if (pgliteFolder) opts.log?.(`${opts.dataDir} holds PGlite data (an earlier release): it stays on PGlite`)
  if (!memory) mkdirSync(opts.dataDir, { recursive: true })
  // PGlite keeps the folder in this process's memory: a second process (a CLI beside the
  // server) would write to a copy that is then lost, so it must fail here (the server's
  // own start shares the lock it took: lockDataDir counts holders within a process).
  const folderLock = memory ? undefined : await lockDataDir(opts.dataDir)
  const client = memory ? await memoryCluster() : new PGlite(opts.dataDir, { parsers: DRIZZLE_PARSERS })
  await client.waitReady.catch((e) => {
    folderLock?.release()
    throw e
  })
  const db = drizzlePglite(withoutQueryParsers(client)) as unknown as Db
  return {
    db,
    kind: 'pglite',
    embedded: true,
    migrate: () => migratePglite(drizzlePglite(client), { migrationsFolder }),
    ping: async () => {
      await client.query('select 1')
    },
    warm: async () => {},
    leadership: async () => ({ release: async () => {} }),
    close: async () => {
      await client.close()
      folderLock?.release()
    },
  }
}

/**
 * A PGlite cluster in memory with every migration applied. The first of a process
 * is made (initdb inside PGlite's WASM, 2 to 5 s, then the migrations) and dumped as
 * a tar image; every later one loads that image (0.9 s), so it opens migrated and its
 * `migrate` finds nothing to do. The test suite opens one or more per file.
 */
let clusterImage: Promise<Blob> | undefined
async function memoryCluster(): Promise<PGlite> {
  const image = await clusterImage?.catch(() => undefined)
  if (image) return new PGlite({ parsers: DRIZZLE_PARSERS, loadDataDir: image })
  const first = new PGlite({ parsers: DRIZZLE_PARSERS })
  try {
    // Dumped before it is ready, the image is one that never finishes loading.
    await first.waitReady
    await migratePglite(drizzlePglite(first), { migrationsFolder })
    clusterImage = first.dumpDataDir('none')
    await clusterImage
    return first
  } catch (e) {
    await first.close().catch(() => {})
    throw e
  }
}

/** What a second client of the same server may set differently (the leadership lock's own). */
type ClientExtras = { max?: number; idle_timeout?: number; max_lifetime?: number; onclose?: (connId: number) => void }

function postgresDatabase(connect: (extra?: ClientExtras) => postgres.Sql, opts: { embedded?: boolean } = {}): Database {
  const client = connect()
  const db = drizzlePostgres(preparing(client)) as unknown as Db
  return {
    db,
    kind: 'postgres',
    embedded: opts.embedded ?? false,
    migrate: async () => {
      // Several processes may start at once: one migrates, the others wait on the lock.
      // The lock's connection is its own, not one of the pool's: the migrations need the
      // pool, which may be a single connection (DATABASE_POOL_SIZE=1).
      const lock = connect({ max: 1, idle_timeout: 0, max_lifetime: 0 })
      try {
        await lock`select pg_advisory_lock(72873461)`
        await migratePostgres(drizzlePostgres(client), { migrationsFolder })
      } finally {
        await lock`select pg_advisory_unlock(72873461)`.catch(() => {})
        await lock.end({ timeout: 1 }).catch(() => {})
      }
    },
    ping: async () => {
      await client`select 1`
    },
    warm: async () => {
      // Queries sent together each take a connection of their own while one is free to open.
      const max = (client.options as { max: number }).max
      await Promise.all(Array.from({ length: max }, () => client`select 1`))
    },
    leadership: async (name, signal) => {
      // A client of its own, one connection: postgres.js hangs (and throws from a timer)
      // on a reserved connection whose backend was terminated, while a client's own
      // connection reports its close at once, and that close drops the lock.
      let onClose = () => {}
      const conn = connect({ max: 1, idle_timeout: 0, max_lifetime: 0, onclose: () => onClose() })
      try {
        for (;;) {
          const [row] = await conn`select pg_try_advisory_lock(${lockKey(name)}) as held`
          if (row?.held) break
          if (signal?.aborted) throw new Error('aborted')
          await new Promise((r) => setTimeout(r, 1000))
        }
      } catch (e) {
        await conn.end({ timeout: 1 }).catch(() => {})
        throw e
      }
      let released = false
      // Settles once the lock's connection is gone, or when a check (every
      // LEADERSHIP_CHECK_MS) answers that its backend holds no lock.
      const lost = new Promise<void>((resolve) => {
        onClose = () => {
          if (!released) resolve()
        }
        const check = async () => {
          while (!released) {
            await new Promise((r) => setTimeout(r, LEADERSHIP_CHECK_MS))
            if (released) return
            // Only an answer saying so is a loss: a check that fails says nothing (a dead
            // connection is reported by onclose), and a false loss would stop delivery
            // mid-attempt and send those attempts again under the next lead.
            const held = await conn`select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and pid = pg_backend_pid()`
              .then((rows) => (rows[0]?.n ?? 0) > 0)
              .catch(() => true)
            if (!held && !released) return resolve()
          }
        }
        void check()
      })
      return {
        lost,
        release: async () => {
          if (released) return
          released = true
          await conn`select pg_advisory_unlock(${lockKey(name)})`.catch(() => {})
          await conn.end({ timeout: 1 }).catch(() => {})
        },
      }
    },
    close: () => client.end({ timeout: 5 }),
  }
}
