/**
 * The PostgreSQL database of each worker process of a parallel run (test/suite.ts
 * makes them): set before any test file reads DATABASE_URL, by preload.ts.
 */

/** The workers' database URLs, space-separated, in worker order (bun numbers its workers from 1). */
export const WORKER_DATABASES_ENV = 'VOICE_TEST_WORKER_DATABASES'

/** Points this process's DATABASE_URL at its worker's database; nothing outside a parallel run on PostgreSQL. */
export function useWorkerDatabase(env: Record<string, string | undefined> = process.env): void {
  const urls = env[WORKER_DATABASES_ENV]?.split(' ').filter(Boolean)
  const worker = Number(env.BUN_TEST_WORKER_ID)
  if (!urls?.length || !Number.isInteger(worker) || worker < 1) return
  const url = urls[(worker - 1) % urls.length]
  if (url) env.DATABASE_URL = url
}
