/**
 * Platforms and their secret keys. A key is shown once, when made; only its
 * SHA-256 hash is stored, so a database leak does not leak working keys.
 */
import { createHash, randomBytes } from 'node:crypto'
import { and, asc, eq, isNull, ne, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { apiKeys, platforms } from '../../db/schema'
import { ApiError, notFound } from '../../errors'
import { newId } from '../../ids'
import { checkOrigins, setPlatformOrigins } from './origins'
import { getSetting, setSetting } from './secrets'

export type Mode = 'test' | 'live'

export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex')

export function generateKey(mode: Mode): string {
  return `sk_${mode}_${randomBytes(24).toString('base64url')}`
}

export interface PlatformView {
  id: string
  name: string
  live_enabled: boolean
}

async function addKey(db: Db, clock: Clock, platformId: string, mode: Mode, key: string) {
  await db.insert(apiKeys).values({
    id: newId('apiKey'),
    platformId,
    mode,
    keyHash: hashKey(key),
    hint: key.slice(-4),
    createdAt: clock.now(),
  })
}

export async function createPlatform(
  db: Db,
  clock: Clock,
  input: { name: string; live_enabled?: boolean; admin_emails?: string[]; allowed_origins?: string[] },
) {
  const origins = input.allowed_origins && checkOrigins('allowed_origins', input.allowed_origins)
  const now = clock.now()
  const id = newId('platform')
  const testKey = generateKey('test')
  const liveKey = generateKey('live')
  await db.transaction(async (tx) => {
    await tx
      .insert(platforms)
      .values({ id, name: input.name, liveEnabled: input.live_enabled ?? false, adminEmails: input.admin_emails ?? [], createdAt: now, updatedAt: now })
    await addKey(tx, clock, id, 'test', testKey)
    await addKey(tx, clock, id, 'live', liveKey)
    if (origins) await setPlatformOrigins(tx, id, origins)
  })
  // The answer's shape is fixed by the operator interface: admin_emails is accepted, not echoed.
  return { id, name: input.name, test_key: testKey, live_key: liveKey, live_enabled: input.live_enabled ?? false }
}

export async function updatePlatform(
  db: Db,
  clock: Clock,
  id: string,
  input: { name?: string; live_enabled?: boolean; admin_emails?: string[]; allowed_origins?: string[] },
): Promise<PlatformView> {
  const origins = input.allowed_origins && checkOrigins('allowed_origins', input.allowed_origins)
  const set: Partial<typeof platforms.$inferInsert> = { updatedAt: clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.live_enabled !== undefined) set.liveEnabled = input.live_enabled
  if (input.admin_emails !== undefined) set.adminEmails = input.admin_emails
  return db.transaction(async (tx) => {
    const [row] = await tx.update(platforms).set(set).where(eq(platforms.id, id)).returning()
    if (!row) throw notFound('platform', id)
    if (origins) await setPlatformOrigins(tx, id, origins)
    return { id: row.id, name: row.name, live_enabled: row.liveEnabled }
  })
}

export interface KeyIdentity {
  keyId: string
  platformId: string
  mode: Mode
  liveEnabled: boolean
}

export async function findKey(db: Db, key: string): Promise<KeyIdentity | undefined> {
  const [row] = await db
    .select({ keyId: apiKeys.id, platformId: apiKeys.platformId, mode: apiKeys.mode, liveEnabled: platforms.liveEnabled })
    .from(apiKeys)
    .innerJoin(platforms, eq(platforms.id, apiKeys.platformId))
    .where(and(eq(apiKeys.keyHash, hashKey(key)), isNull(apiKeys.revokedAt)))
  return row
}

/**
 * Makes sure the bootstrap platform exists and holds the configured keys. A key
 * given in the environment replaces the platform's other keys of that mode; a key
 * not given is generated once and returned so the caller can print it once.
 */
export async function ensureBootstrapPlatform(
  db: Db,
  clock: Clock,
  opts: { testKey?: string; liveKey?: string; liveEnabled: boolean },
): Promise<{ platformId: string; generated: { test?: string; live?: string } }> {
  return db.transaction(async (tx) => {
    // Processes starting together on an empty database take turns, so exactly one
    // creates the bootstrap platform and the others find it.
    await tx.execute(sql`select pg_advisory_xact_lock(72873462)`)
    let platformId = await getSetting(tx, 'bootstrap_platform_id')
    const now = clock.now()
    if (!platformId) {
      platformId = newId('platform')
      await tx.insert(platforms).values({ id: platformId, name: 'Bootstrap platform', liveEnabled: opts.liveEnabled, createdAt: now, updatedAt: now })
      await setSetting(tx, 'bootstrap_platform_id', platformId)
    } else {
      await tx.update(platforms).set({ liveEnabled: opts.liveEnabled, updatedAt: now }).where(eq(platforms.id, platformId))
    }
    const generated: { test?: string; live?: string } = {}
    for (const mode of ['test', 'live'] as const) {
      const wanted = mode === 'test' ? opts.testKey : opts.liveKey
      if (wanted) {
        const hash = hashKey(wanted)
        const [existing] = await tx.select().from(apiKeys).where(eq(apiKeys.keyHash, hash))
        if (existing && existing.platformId !== platformId) {
          throw new Error(`VOICE_${mode.toUpperCase()}_KEY already belongs to another platform`)
        }
        if (!existing) await addKey(tx, clock, platformId, mode, wanted)
        else if (existing.revokedAt) await tx.update(apiKeys).set({ revokedAt: null }).where(eq(apiKeys.id, existing.id))
        await tx
          .update(apiKeys)
          .set({ revokedAt: now })
          .where(and(eq(apiKeys.platformId, platformId), eq(apiKeys.mode, mode), ne(apiKeys.keyHash, hash), isNull(apiKeys.revokedAt)))
      } else {
        const [active] = await tx
          .select({ id: apiKeys.id })
          .from(apiKeys)
          .where(and(eq(apiKeys.platformId, platformId), eq(apiKeys.mode, mode), isNull(apiKeys.revokedAt)))
        if (!active) {
          const key = generateKey(mode)
          await addKey(tx, clock, platformId, mode, key)
          generated[mode] = key
        }
      }
    }
    return { platformId, generated }
  })
}

/** A platform's key as the operator sees it: never the key itself, which is shown once when made. */
export interface KeyView {
  id: string
  object: 'api_key'
  mode: Mode
  /** The key's last four characters, to tell keys apart. */
  hint: string
  created_at: string
  revoked_at: string | null
}

const keyView = (row: typeof apiKeys.$inferSelect): KeyView => ({
  id: row.id,
  object: 'api_key',
  mode: row.mode,
  hint: row.hint,
  created_at: row.createdAt.toISOString(),
  revoked_at: row.revokedAt?.toISOString() ?? null,
})

async function platformExists(db: Db, id: string) {
  const [row] = await db.select({ id: platforms.id }).from(platforms).where(eq(platforms.id, id))
  if (!row) throw notFound('platform', id)
}

export async function listKeys(db: Db, platformId: string): Promise<KeyView[]> {
  await platformExists(db, platformId)
  const rows = await db.select().from(apiKeys).where(eq(apiKeys.platformId, platformId)).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id))
  return rows.map(keyView)
}

/**
 * Rotation: a new key of the mode is made and shown once; the platform's other keys
 * keep working until the operator revokes them, so the platform can switch over
 * without downtime. (A live key is made whether or not live mode is enabled, as at
 * platform creation: live mode gates live accounts, not keys.)
 */
export async function createKey(db: Db, clock: Clock, platformId: string, mode: Mode): Promise<KeyView & { key: string }> {
  await platformExists(db, platformId)
  const key = generateKey(mode)
  await addKey(db, clock, platformId, mode, key)
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.keyHash, hashKey(key)))
  return { ...keyView(row!), key }
}

/** Revocation is final (a revoked key never works again) and idempotent. */
export async function revokeKey(db: Db, clock: Clock, platformId: string, keyId: string): Promise<KeyView> {
  await platformExists(db, platformId)
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, ${clock.now().toISOString()}::timestamptz)` })
    .where(and(eq(apiKeys.id, keyId), eq(apiKeys.platformId, platformId)))
    .returning()
  if (!row) throw new ApiError(404, `No such key on this platform: ${keyId}`, 'api_key_not_found')
  return keyView(row)
}
