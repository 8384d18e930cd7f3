/**
 * Migrations that move data, checked on a database as the migration before them
 * left it (drizzle applies what the folder's journal lists, in order).
 */
import { describe, expect, test } from 'bun:test'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PGlite } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'

const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url))

/** The migrations folder as it was before the migration tagged `tag`. */
function folderBefore(tag: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'voice-migrations-'))
  cpSync(migrationsFolder, dir, { recursive: true })
  const journalPath = join(dir, 'meta', '_journal.json')
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] }
  const at = journal.entries.findIndex((e) => e.tag === tag)
  if (at < 0) throw new Error(`no migration ${tag}`)
  journal.entries = journal.entries.slice(0, at)
  writeFileSync(journalPath, JSON.stringify(journal))
  return dir
}

describe('0027_event_outbox', () => {
  test('events not dispatched yet wait in the outbox afterwards, dispatched ones do not; new events go there by themselves', async () => {
    const before = folderBefore('0027_event_outbox')
    const client = new PGlite()
    try {
      const db = drizzle(client)
      await migrate(db, { migrationsFolder: before })
      await client.exec(`insert into events (id, platform_id, account_id, mode, type, body, created_at, dispatched) values
        ('evt_sent', 'plat_1', 'acct_1', 'test', 'user.created', '{}', now(), true),
        ('evt_waiting', 'plat_1', 'acct_1', 'test', 'user.created', '{}', now(), false)`)

      await migrate(db, { migrationsFolder })
      const waiting = async () =>
        (await client.query<{ id: string }>('select e.id from event_outbox o join events e on e.seq = o.seq order by e.seq')).rows.map((r) => r.id)
      expect(await waiting()).toEqual(['evt_waiting'])
      await client.exec(`insert into events (id, platform_id, account_id, mode, type, body, created_at) values
        ('evt_new_1', 'plat_1', 'acct_1', 'test', 'user.created', '{}', now()), ('evt_new_2', 'plat_1', 'acct_1', 'test', 'user.created', '{}', now())`)
      expect(await waiting()).toEqual(['evt_waiting', 'evt_new_1', 'evt_new_2'])
    } finally {
      await client.close()
      rmSync(before, { recursive: true, force: true })
    }
  })
})
