/**
 * Server-wide secrets shared by every process (cursor signing, session JWTs). Made
 * once, stored in the database, so gateways agree without extra configuration.
 */
import { randomBytes } from 'node:crypto'
import { eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { settings } from '../../db/schema'

export interface Secrets {
  cursorKey: string
  sessionKey: Uint8Array
}

async function getOrCreate(db: Db, key: string): Promise<string> {
  await db
    .insert(settings)
    .values({ key, value: randomBytes(32).toString('base64url') })
    .onConflictDoNothing()
  const [row] = await db.select().from(settings).where(eq(settings.key, key))
  return row!.value
}

export async function loadSecrets(db: Db): Promise<Secrets> {
  const cursorKey = await getOrCreate(db, 'cursor_key')
  const sessionKey = await getOrCreate(db, 'session_jwt_key')
  return { cursorKey, sessionKey: new TextEncoder().encode(sessionKey) }
}

/**
 * The id of the cluster of processes sharing this database: it namespaces actor
 * placement on NATS (lease keys and actor subjects), so that two deployments (or two
 * test databases) on one NATS server never serve each other's actors.
 */
export async function loadClusterId(db: Db): Promise<string> {
  await db
    .insert(settings)
    .values({ key: 'cluster_id', value: randomBytes(6).toString('hex') })
    .onConflictDoNothing()
  const [row] = await db.select().from(settings).where(eq(settings.key, 'cluster_id'))
  return row!.value
}

export async function getSetting(db: Db, key: string): Promise<string | undefined> {
  const [row] = await db.select().from(settings).where(eq(settings.key, key))
  return row?.value
}

export async function setSetting(db: Db, key: string, value: string): Promise<void> {
  await db
    .insert(settings)
    .values({ key, value })
    .onConflictDoUpdate({ target: settings.key, set: { value: sql`excluded.value` } })
}
