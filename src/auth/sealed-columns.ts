/**
 * Which stored values are sealed (src/auth/key-encryption.ts), under which context,
 * and the sweep that runs at every start before anything reads them: it refuses a
 * master key the database was not sealed with, seals values written in plain text
 * (a database made before sealing, or rows an older process wrote during an upgrade),
 * and moves values sealed under VOICE_MASTER_KEY_PREVIOUS to VOICE_MASTER_KEY. Every
 * rewrite is conditional on the value read, so processes starting at once on one
 * database do not fight: one rewrites a value, the others' updates match nothing.
 */
import { and, eq, inArray, isNotNull, like, notLike, or, type SQL, sql } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import { ConfigError } from '../config'
import type { Db } from '../db/client'
import { idempotencyKeys, pushSubscriptions, settings, voiceApps, webhookEndpoints } from '../db/schema'
import { isSealed, type KeyRing, SealedValueError, sealedKeyId, sealedPrefix } from './key-encryption'

/** The server-wide keys kept in `settings`; its other rows (ids, not secrets) stay plain. */
export const SEALED_SETTINGS = ['cursor_key', 'session_jwt_key', 'download_url_key', 'sip_credential_key', 'web_push_key'] as const
export type SealedSetting = (typeof SEALED_SETTINGS)[number]

/** The context each sealed value is bound to: a value copied into another row or column does not open there. */
export const sealedContext = {
  setting: (key: SealedSetting) => `settings.value:${key}`,
  webhookSecret: (endpointId: string) => `webhook_endpoints.secret:${endpointId}`,
  voiceAppSecret: (voiceAppId: string) => `voice_apps.secret:${voiceAppId}`,
  idempotentResponse: (scope: string, key: string) => `idempotency_keys.response_body:${scope}\u0000${key}`,
  pushAuth: (subscriptionId: string) => `push_subscriptions.auth:${subscriptionId}`,
}

interface SealedColumn {
  name: string
  table: PgTable
  value: PgColumn
  keys: PgColumn[]
  context(keys: string[]): string
  /** Which rows of the table hold a sealed value. */
  rows?: SQL
}

const COLUMNS: SealedColumn[] = [
  {
    name: 'settings.value',
    table: settings,
    value: settings.value,
    keys: [settings.key],
    context: ([key]) => sealedContext.setting(key as SealedSetting),
    rows: inArray(settings.key, [...SEALED_SETTINGS]),
  },
  {
    name: 'webhook_endpoints.secret',
    table: webhookEndpoints,
    value: webhookEndpoints.secret,
    keys: [webhookEndpoints.id],
    context: ([id]) => sealedContext.webhookSecret(id!),
  },
  { name: 'voice_apps.secret', table: voiceApps, value: voiceApps.secret, keys: [voiceApps.id], context: ([id]) => sealedContext.voiceAppSecret(id!) },
  {
    name: 'push_subscriptions.auth',
    table: pushSubscriptions,
    value: pushSubscriptions.auth,
    keys: [pushSubscriptions.id],
    context: ([id]) => sealedContext.pushAuth(id!),
  },
  {
    name: 'idempotency_keys.response_body',
    table: idempotencyKeys,
    value: idempotencyKeys.responseBody,
    keys: [idempotencyKeys.scope, idempotencyKeys.key],
    context: ([scope, key]) => sealedContext.idempotentResponse(scope!, key!),
    rows: isNotNull(idempotencyKeys.responseBody),
  },
]

const BATCH = 500

export interface SweepResult {
  /** Values that were plain text and are now sealed. */
  sealed: number
  /** Values moved from the previous master key to the current one. */
  resealed: number
}

/**
 * Run at start, after migrations, before anything reads a sealed value. `source` says
 * where the current key came from, for the message refusing a wrong one.
 */
export async function sweepSealedValues(db: Db, ring: KeyRing, source: string): Promise<SweepResult> {
  await refuseUnknownKeys(db, ring, source)
  const result: SweepResult = { sealed: 0, resealed: 0 }
  const current = `${sealedPrefix(ring.current)}%`
  for (const column of COLUMNS) {
    const stale = or(notLike(column.value, 'sealed.%'), ...(ring.previous ? [like(column.value, `${sealedPrefix(ring.previous)}%`)] : []))
    const where = and(column.rows, notLike(column.value, current), stale)
    const fields = Object.fromEntries([...column.keys.map((k, i) => [`k${i}`, k]), ['value', column.value]])
    for (;;) {
      const rows = (await db.select(fields).from(column.table).where(where).limit(BATCH)) as Record<string, string>[]
      for (const row of rows) {
        const keys = column.keys.map((_, i) => row[`k${i}`]!)
        const context = column.context(keys)
        const old = row.value!
        let next: string
        try {
          next = ring.seal(isSealed(old) ? ring.open(old, context) : old, context)
        } catch (e) {
          if (e instanceof SealedValueError) throw new ConfigError(`cannot move ${column.name} to the new master key: ${e.message}`)
          throw e
        }
        await db.execute(
          sql`update ${column.table} set ${sql.identifier(column.value.name)} = ${next} where ${and(...column.keys.map((k, i) => eq(k, keys[i])), eq(column.value, old))}`,
        )
        if (isSealed(old)) result.resealed++
        else result.sealed++
      }
      if (rows.length < BATCH) break
    }
  }
  return result
}

/** A database sealed under another key is refused before anything is written to it. */
async function refuseUnknownKeys(db: Db, ring: KeyRing, source: string) {
  const known = [ring.current, ...(ring.previous ? [ring.previous] : [])]
  for (const column of COLUMNS) {
    const [row] = (await db
      .select({ value: column.value })
      .from(column.table)
      .where(and(column.rows, like(column.value, 'sealed.%'), ...known.map((k) => notLike(column.value, `${sealedPrefix(k)}%`))))
      .limit(1)) as { value: string }[]
    if (!row) continue
    const given = ring.previous
      ? `master key ${ring.current.id} (${source}) and previous key ${ring.previous.id} (VOICE_MASTER_KEY_PREVIOUS)`
      : `master key ${ring.current.id} (${source})`
    throw new ConfigError(
      `the database's secrets are sealed under master key ${sealedKeyId(row.value)}, but this process has ${given}. ` +
        'Start it with the master key the database was sealed with; to change keys, give the old one as VOICE_MASTER_KEY_PREVIOUS beside the new VOICE_MASTER_KEY',
    )
  }
}
