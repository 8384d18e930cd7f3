/**
 * Platforms and their secret keys. A key is shown once, when made; only its
 * SHA-256 hash is stored, so a database leak does not leak working keys.
 */
import { createHash, randomBytes } from 'node:crypto'
import { and, eq, isNull, ne, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { apiKeys, platforms } from '../../db/schema'
import { notFound } from '../../errors'
import { newId } from '../../ids'
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

export async function createPlatform(db: Db, clock: Clock, input: { name: string; live_enabled?: boolean; admin_emails?: string[] }) {
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
  })
  // The answer's shape is fixed by the operator interface: admin_emails is accepted, not echoed.
  return { id, name: input.name, test_key: testKey, live_key: liveKey, live_enabled: input.live_enabled ?? false }
}

export async function updatePlatform(
  db: Db,
  clock: Clock,
  id: string,
  input: { name?: string; live_enabled?: boolean; admin_emails?: string[] },
): Promise<PlatformView> {
  const set: Partial<typeof platforms.$inferInsert> = { updatedAt: clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.live_enabled !== undefined) set.liveEnabled = input.live_enabled
  if (input.admin_emails !== undefined) set.adminEmails = input.admin_emails
  const [row] = await db.update(platforms).set(set).where(eq(platforms.id, id)).returning()
  if (!row) throw notFound('platform', id)
  return { id: row.id, name: row.name, live_enabled: row.liveEnabled }
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
