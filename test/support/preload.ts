// Says plainly, once, what this run covers and what it skips.
import { useWorkerDatabase } from './worker-databases'

// First: the test files read DATABASE_URL when they load.
useWorkerDatabase()
const db = process.env.DATABASE_URL ? `PostgreSQL (${process.env.DATABASE_URL.replace(/\/\/[^@/]*@/, '//***@')})` : 'PGlite (embedded, in memory)'
const bus = process.env.NATS_URL ? `NATS (${process.env.NATS_URL})` : 'in-process bus'
if (!(globalThis as { __voicePreloaded?: boolean }).__voicePreloaded) {
  ;(globalThis as { __voicePreloaded?: boolean }).__voicePreloaded = true
  console.log(`[suite] database: ${db}; bus: ${bus}`)
  if (!process.env.DATABASE_URL) console.log('[suite] PostgreSQL runs skipped: DATABASE_URL is not set (.ci/run sets it when 127.0.0.1:5432 answers)')
}
