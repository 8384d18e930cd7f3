/**
 * Server-wide secrets shared by every process (cursor signing, session JWTs, download
 * URLs, the SIP credential key). Made once, stored in the database sealed under the
 * master key (src/auth/), so gateways agree without extra configuration while a reader
 * of the database learns none of them.
 */
import { randomBytes } from 'node:crypto'
import { eq, sql } from 'drizzle-orm'
import type { KeyRing } from '../../auth/key-encryption'
import { type SealedSetting, sealedContext } from '../../auth/sealed-columns'
import type { Db } from '../../db/client'
import { settings } from '../../db/schema'

export interface Secrets {
  cursorKey: string
  sessionKey: Uint8Array
}

// Opened once per process: sip credentials read their key in every transaction.
const opened = new Map<string, string>()

/**
 * The server key `name`, made on first use. Insert-if-absent then read, so two
 * processes starting together agree on one key. The stored value must be sealed (the
 * start-up sweep sealed any older plain one): a plain value written in its place is
 * refused rather than used as a key.
 */
export async function loadServerKey(db: Db, ring: KeyRing, name: SealedSetting): Promise<string> {
  const context = sealedContext.setting(name)
  const read = async () => (await db.select().from(settings).where(eq(settings.key, name)))[0]?.value
  let stored = await read()
  if (stored === undefined) {
    await db
      .insert(settings)
      .values({ key: name, value: ring.seal(randomBytes(32).toString('base64url'), context) })
      .onConflictDoNothing()
    stored = (await read())!
  }
  const known = opened.get(`${name}\u0000${stored}`)
  if (known !== undefined) return known
  const plain = ring.open(stored, context)
  opened.set(`${name}\u0000${stored}`, plain)
  return plain
}

export async function loadSecrets(db: Db, ring: KeyRing): Promise<Secrets> {
  const cursorKey = await loadServerKey(db, ring, 'cursor_key')
  const sessionKey = await loadServerKey(db, ring, 'session_jwt_key')
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
