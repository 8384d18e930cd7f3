/** Finds the PostgreSQL server a bench runs against. */
import postgres from 'postgres'

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
