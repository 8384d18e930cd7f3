/**
 * The browser origins a platform allows (CORS): where its browser components and
 * softphones run with account-session and user tokens. Secret keys are never allowed
 * from a browser, whatever the origin (gateway/plugins/cors.ts).
 *
 * Kept as one `settings` row per platform (`cors_origins:<platform id>`, a JSON array)
 * until `platforms` has a column for them; the functions here are the only readers.
 */
import { like, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { queryRows } from '../../db/client'
import { settings } from '../../db/schema'
import { ValidationError } from '../../errors'
import { getSetting, setSetting } from './secrets'

const PREFIX = 'cors_origins:'
export const MAX_ALLOWED_ORIGINS = 20

/**
 * An origin as a browser sends it: scheme, host and port, nothing else. Written any
 * other way (a path, a wildcard, `null`) it would never match, or match too much.
 */
export function canonicalOrigin(text: string): string | undefined {
  if (!/^https?:\/\/[^/?#@\s*]+\/?$/i.test(text)) return undefined
  try {
    const url = new URL(text)
    return url.origin === 'null' ? undefined : url.origin
  } catch {
    return undefined
  }
}

/** Checked, canonical and without repeats; a field-level 400 otherwise. */
export function checkOrigins(field: string, origins: string[]): string[] {
  const out: string[] = []
  for (const given of origins) {
    const origin = canonicalOrigin(given)
    if (!origin) throw new ValidationError({ [field]: `${JSON.stringify(given)} is not an origin: give scheme://host[:port], e.g. https://app.example.com` })
    if (!out.includes(origin)) out.push(origin)
  }
  if (out.length > MAX_ALLOWED_ORIGINS) throw new ValidationError({ [field]: `at most ${MAX_ALLOWED_ORIGINS} origins` })
  return out
}

export async function setPlatformOrigins(db: Db, platformId: string, origins: string[]): Promise<void> {
  await setSetting(db, `${PREFIX}${platformId}`, JSON.stringify(origins))
}

export async function platformOrigins(db: Db, platformId: string): Promise<string[]> {
  const stored = await getSetting(db, `${PREFIX}${platformId}`)
  return stored ? (JSON.parse(stored) as string[]) : []
}

/** Whether some platform allows this origin: what a preflight, which carries no credential, can know. */
export async function someoneAllows(db: Db, origin: string): Promise<boolean> {
  const rows = await queryRows<{ n: number }>(
    db,
    sql`select count(*)::int as n from ${settings} where ${like(settings.key, `${PREFIX}%`)} and ${settings.value}::jsonb @> ${JSON.stringify([origin])}::jsonb`,
  )
  return (rows[0]?.n ?? 0) > 0
}
