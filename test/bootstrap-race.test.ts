/**
 * The bootstrap platform is made once even when several processes start together
 * on an empty PostgreSQL database (PGlite has one process per data folder, so the
 * race exists only there).
 */
import { expect, test } from 'bun:test'
import postgres from 'postgres'
import { loadConfig } from '../src/config'
import { startService } from '../src/server'
import { scratchPostgres } from './support/scratch-postgres'

const run = process.env.DATABASE_URL ? test : test.skip
if (!process.env.DATABASE_URL) console.log('[bootstrap-race] skipped: needs DATABASE_URL (the race needs a shared PostgreSQL)')

run('three services starting at once on an empty database agree on one bootstrap platform holding the configured keys', async () => {
  const pg = await scratchPostgres('bootstrap')
  try {
    const env = {
      ...pg.env,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      VOICE_TEST_KEY: 'sk_test_bootstrap_race_0123456789',
      VOICE_LIVE_KEY: 'sk_live_bootstrap_race_0123456789',
    }
    const services = await Promise.all([0, 1, 2].map(() => startService(loadConfig(env, ['--role', 'gateway']))))
    try {
      expect(new Set(services.map((s) => s.bootstrap.platformId)).size).toBe(1)
      const db = postgres(pg.url!, { max: 1, onnotice: () => {} })
      try {
        const [row] = await db`select count(*)::int as n from platforms`
        expect(row?.n).toBe(1)
        const keys = await db`select mode from api_keys where revoked_at is null order by mode`
        expect(keys.map((k) => k.mode)).toEqual(['live', 'test'])
      } finally {
        await db.end()
      }
    } finally {
      await Promise.all(services.map((s) => s.stop()))
    }
  } finally {
    await pg.dispose()
  }
})
