/**
 * Issue 13, "Loose ends": migration 0004 added durable_timers.shard with a default of
 * 0, so timers written before it all sat on shard 0, where only the worker holding
 * shard 0 looks. The backfill migration sets each timer's shard to its actor's
 * (actors/runtime/shards.ts shardOf, written again in SQL): its SQL is run here on
 * timers left on shard 0 (src/db/migrations/0019_durable_timer_shards.sql), and its
 * hash is held to shardOf's.
 */
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { shardOf } from '../actors/runtime/shards'
import { openDatabase, queryRows } from '../src/db/client'
import { durableTimers } from '../src/db/schema'

const folder = join(import.meta.dir, '../src/db/migrations')
const backfill = readdirSync(folder)
  .filter((f) => f.endsWith('.sql'))
  .map((f) => readFileSync(join(folder, f), 'utf8'))
  .find((text) => text.includes('voice_shard_of'))

describe('the shard backfill of durable timers', () => {
  test('timers left on shard 0 move to their actor’s shard; the SQL hash is shardOf', async () => {
    const database = await openDatabase({ dataDir: 'memory://' })
    try {
      await database.migrate()
      const db = database.db
      const now = new Date()
      const ids = Array.from({ length: 200 }, (_, i) => `call_${crypto.randomUUID().replace(/-/g, '')}${i}`)
      await db.insert(durableTimers).values(
        ids.map((actorId, i) => ({
          id: `tmr_${i}`,
          actorKind: 'call',
          actorId,
          name: 'ring',
          token: 't',
          dueAt: now,
          event: { type: 'x' },
          shard: 0,
          createdAt: now,
        })),
      )
      expect(backfill).toBeDefined()
      expect(ids.some((id) => shardOf(id) !== 0)).toBe(true)
      for (const statement of backfill!.split('--> statement-breakpoint')) await db.execute(sql.raw(statement))
      const rows = await queryRows<{ actor_id: string; shard: number }>(db, sql`select actor_id, shard from durable_timers`)
      expect(rows).toHaveLength(ids.length)
      for (const row of rows) expect({ id: row.actor_id, shard: row.shard }).toEqual({ id: row.actor_id, shard: shardOf(row.actor_id) })
    } finally {
      await database.close()
    }
  }, 60_000)
})
