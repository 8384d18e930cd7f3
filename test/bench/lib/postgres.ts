/** Finds the PostgreSQL server a bench runs against. */
import postgres from 'postgres'
import { type CpuMeter, cpuSeconds } from './cpu'

export const DEFAULT_DATABASE_URL = 'postgres://root@127.0.0.1:5432/test'

export const redact = (url: string) => url.replace(/\/\/[^@/]*@/, (m) => (m.includes(':') ? '//***@' : m))

/** DATABASE_URL (or the default) when a server answers there; otherwise the reason it did not. */
export async function reachablePostgres(): Promise<{ url: string } | { url: string; error: string }> {
  const url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL
  const sql = postgres(url, { max: 1, connect_timeout: 3, idle_timeout: 1, onnotice: () => {} })
  try {
    await Promise.race([sql`select 1`, Bun.sleep(5000).then(() => Promise.reject(new Error('no answer within 5 s')))])
    return { url }
  } catch (e) {
    return { url, error: e instanceof Error ? e.message : String(e) }
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {})
  }
}

/**
 * The CPU of the server's backends for one database, when the server runs on this
 * machine (/proc): what a service's own connections cost the server, without its
 * background processes (WAL writer, checkpointer, autovacuum) or other databases'
 * sessions. A sample is CPU seconds by backend (every backend of `url`'s database but
 * the sampler's own); lib/cpu's cpuUsedBetween compares two.
 */
export function databaseBackendsCpu(url: string): CpuMeter {
  const sql = postgres(url, { max: 1, idle_timeout: 0, onnotice: () => {} })
  return {
    async sample() {
      const rows = await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
      const cpu = new Map<number, number>()
      for (const { pid } of rows) {
        const seconds = cpuSeconds(pid)
        if (seconds !== undefined) cpu.set(pid, seconds)
      }
      return cpu
    },
    close: () => sql.end({ timeout: 1 }).catch(() => {}),
  }
}
