/**
 * Web Push for softphones: the server's VAPID key (RFC 8292) that browsers subscribe
 * with, and the subscriptions they hand back (POST /v1/webrtc/push-subscriptions), by
 * which a call can wake a softphone that is not open.
 *
 * A push endpoint names one browser profile: subscribing it again updates its keys and
 * keeps its id, and a profile another user signs in to moves to that user (the
 * previous user's calls must not wake it). A user keeps at most MAX_PER_USER browsers;
 * the one subscribed longest ago gives way to a new one.
 */
import { createECDH, createHmac, createPublicKey } from 'node:crypto'
import { and, asc, eq, notInArray } from 'drizzle-orm'
import { sealSecret } from '../../auth/master-key'
import type { KeyRing } from '../../auth/key-encryption'
import { sealedContext } from '../../auth/sealed-columns'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { pushSubscriptions } from '../../db/schema'
import { ValidationError } from '../../errors'
import { newId } from '../../ids'
import { loadServerKey } from '../platform/secrets'

export const MAX_PER_USER = 20
export const MAX_ENDPOINT_LENGTH = 2048

export type PushSubscriptionRow = typeof pushSubscriptions.$inferSelect

export interface PushSubscriptionRequest {
  endpoint: string
  keys: { p256dh: string; auth: string }
}

/**
 * The VAPID key pair: a P-256 private key derived from the sealed server key
 * `web_push_key` (made on first use, shared by every process), and its public key as
 * browsers take it (`applicationServerKey`: the uncompressed point, base64url).
 */
export async function loadWebPushKey(db: Db, ring: KeyRing): Promise<{ publicKey: string; privateKey: string }> {
  const seed = Buffer.from(await loadServerKey(db, ring, 'web_push_key'), 'base64url')
  const ecdh = createECDH('prime256v1')
  // A 32-byte value is a valid P-256 scalar unless it is ≥ the group order (odds 2^-32): derive the next candidate then.
  for (let i = 0; ; i++) {
    try {
      ecdh.setPrivateKey(i === 0 ? seed : createHmac('sha256', seed).update(String(i)).digest())
      return { publicKey: ecdh.getPublicKey().toString('base64url'), privateKey: ecdh.getPrivateKey().toString('base64url') }
    } catch (err) {
      if (i >= 8) throw err
    }
  }
}

const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/

/** The subscription's fields as RFC 8030 and RFC 8291 define them; every problem named by its field. */
export function validatePushSubscription(body: PushSubscriptionRequest): void {
  const details: Record<string, string> = {}
  let url: URL | undefined
  try {
    url = new URL(body.endpoint)
  } catch {
    details.endpoint = 'must be the push service URL the browser gave (PushSubscription.endpoint)'
  }
  if (url && url.protocol !== 'https:') details.endpoint = 'must be an https URL (push services are reached over HTTPS, RFC 8030)'
  else if (url && (url.username || url.password)) details.endpoint = 'must not carry credentials'
  const key = BASE64URL.test(body.keys.p256dh) ? Buffer.from(body.keys.p256dh, 'base64url') : undefined
  if (key?.length !== 65 || key[0] !== 4 || !onP256(key)) {
    details['keys.p256dh'] = 'must be the subscription’s P-256 public key: an uncompressed point (65 bytes), base64url'
  }
  const auth = BASE64URL.test(body.keys.auth) ? Buffer.from(body.keys.auth, 'base64url') : undefined
  if (auth?.length !== 16) details['keys.auth'] = 'must be the subscription’s authentication secret: 16 bytes, base64url'
  if (Object.keys(details).length > 0) throw new ValidationError(details)
}

function onP256(point: Buffer): boolean {
  try {
    createPublicKey({
      key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') },
      format: 'jwk',
    })
    return true
  } catch {
    return false
  }
}

/** Stores the user's subscription (or refreshes the one for this endpoint), keeping the user's newest MAX_PER_USER. */
export async function subscribe(tx: Db, clock: Clock, me: { accountId: string; userId: string }, body: PushSubscriptionRequest): Promise<PushSubscriptionRow> {
  validatePushSubscription(body)
  const now = clock.now()
  const id = newId('pushSubscription')
  const [row] = await tx
    .insert(pushSubscriptions)
    .values({
      id,
      accountId: me.accountId,
      userId: me.userId,
      endpoint: body.endpoint,
      p256dh: body.keys.p256dh,
      auth: sealSecret(body.keys.auth, sealedContext.pushAuth(id)),
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing({ target: pushSubscriptions.endpoint })
    .returning()
  let stored = row
  if (!stored) {
    // This browser subscribed before (for this user or another): its id stays, its keys and user are this request's.
    const [existing] = await tx.select({ id: pushSubscriptions.id }).from(pushSubscriptions).where(eq(pushSubscriptions.endpoint, body.endpoint)).for('update')
    // Gone meanwhile (its user was deleted): subscribe afresh.
    if (!existing) return subscribe(tx, clock, me, body)
    ;[stored] = await tx
      .update(pushSubscriptions)
      .set({
        accountId: me.accountId,
        userId: me.userId,
        p256dh: body.keys.p256dh,
        auth: sealSecret(body.keys.auth, sealedContext.pushAuth(existing.id)),
        updatedAt: now,
      })
      .where(eq(pushSubscriptions.id, existing.id))
      .returning()
  }
  const keep = await tx
    .select({ id: pushSubscriptions.id })
    .from(pushSubscriptions)
    .where(eq(pushSubscriptions.userId, me.userId))
    .orderBy(asc(pushSubscriptions.updatedAt), asc(pushSubscriptions.id))
  if (keep.length > MAX_PER_USER) {
    const newest = keep.slice(keep.length - MAX_PER_USER).map((r) => r.id)
    await tx.delete(pushSubscriptions).where(and(eq(pushSubscriptions.userId, me.userId), notInArray(pushSubscriptions.id, newest)))
  }
  return stored!
}

/** A PushSubscription: id, endpoint, created_at (the keys are the browser's; they are not shown back). */
export function pushSubscriptionView(row: PushSubscriptionRow) {
  return { id: row.id, object: 'push_subscription' as const, endpoint: row.endpoint, created_at: row.createdAt.toISOString() }
}
