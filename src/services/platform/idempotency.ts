/**
 * Idempotency-Key: a retry with the same key and request replays the first
 * response without redoing the work, for 24 hours.
 *
 * claim() inserts a 'running' row before the work (the primary key makes
 * concurrent claims race safely); complete() is called inside the work's own
 * transaction so the change and its replayable response commit together. A
 * 'running' row left by a crashed process has no committed work behind it, so
 * after a lease it may be claimed again.
 *
 * The stored response is sealed under the master key (src/auth/): it may carry a
 * session's client secret or a new webhook or voice-app secret.
 */
import { createHash } from 'node:crypto'
import { and, eq, lt } from 'drizzle-orm'
import { openSecret, sealSecret } from '../../auth/master-key'
import { sealedContext } from '../../auth/sealed-columns'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { idempotencyKeys } from '../../db/schema'
import { ApiError } from '../../errors'

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000
/** A running claim older than this is taken to be abandoned by a crashed process. */
export const IDEMPOTENCY_LEASE_MS = 60 * 1000

export const requestHash = (parts: string[]) => createHash('sha256').update(parts.join('\u0000')).digest('hex')

export type ClaimResult = { kind: 'claimed' } | { kind: 'replay'; status: number; body: string }

export async function claimIdempotencyKey(db: Db, clock: Clock, scope: string, key: string, hash: string): Promise<ClaimResult> {
  // The 24 hours a client may retry in are its hours: real time, whatever the clock speed.
  const now = clock.wallNow()
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db
      .insert(idempotencyKeys)
      .values({ scope, key, requestHash: hash, state: 'running', lockedAt: now, createdAt: now })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key })
    if (inserted.length > 0) return { kind: 'claimed' }
    const [row] = await db
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key)))
    if (!row) continue // released meanwhile: try to claim again
    const expired = now.getTime() - row.createdAt.getTime() > IDEMPOTENCY_TTL_MS
    const abandoned = row.state === 'running' && now.getTime() - row.lockedAt.getTime() > IDEMPOTENCY_LEASE_MS
    if (expired || abandoned) {
      // Take over only the exact row we saw, so two retries cannot both take it.
      const taken = await db
        .update(idempotencyKeys)
        .set({ requestHash: hash, state: 'running', lockedAt: now, createdAt: now, statusCode: null, responseBody: null })
        .where(
          and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key), eq(idempotencyKeys.lockedAt, row.lockedAt), eq(idempotencyKeys.state, row.state)),
        )
        .returning({ key: idempotencyKeys.key })
      if (taken.length > 0) return { kind: 'claimed' }
      continue
    }
    if (row.requestHash !== hash) {
      throw new ApiError(422, 'This Idempotency-Key was already used with a different request.', 'idempotency_key_reused')
    }
    if (row.state === 'running') {
      throw new ApiError(409, 'A request with this Idempotency-Key is still being processed; retry later.', 'idempotency_key_in_use')
    }
    return { kind: 'replay', status: row.statusCode!, body: openSecret(row.responseBody!, sealedContext.idempotentResponse(scope, key)) }
  }
  throw new ApiError(409, 'A request with this Idempotency-Key is still being processed; retry later.', 'idempotency_key_in_use')
}

export async function completeIdempotencyKey(db: Db, scope: string, key: string, status: number, body: string): Promise<void> {
  await db
    .update(idempotencyKeys)
    .set({ state: 'done', statusCode: status, responseBody: sealSecret(body, sealedContext.idempotentResponse(scope, key)) })
    .where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key)))
}

/** Gives the key back after a failure that committed nothing, so a retry does the work. */
export async function releaseIdempotencyKey(db: Db, scope: string, key: string): Promise<void> {
  await db.delete(idempotencyKeys).where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key), eq(idempotencyKeys.state, 'running')))
}

export async function purgeExpiredIdempotencyKeys(db: Db, clock: Clock): Promise<void> {
  await db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, new Date(clock.wallNow().getTime() - IDEMPOTENCY_TTL_MS)))
}
