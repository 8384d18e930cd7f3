/**
 * Signed, expiring download URLs for stored blobs (call recordings, voicemails).
 * `GET /v1/calls/{id}/recording` answers with such a URL; whoever holds it may fetch
 * the audio without an API key until it expires, so the token carries the storage key
 * and content type under an HMAC and the route serving it trusts nothing else.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { KeyRing } from '../auth/key-encryption'
import type { Db } from '../db/client'
import { loadServerKey } from '../services/platform/secrets'

/**
 * Where the route serving downloads is mounted (outside /v1: every /v1 operation
 * takes a bearer credential, a download URL is the credential); the token is the last path segment.
 */
export const DOWNLOAD_PATH_PREFIX = '/downloads/'
/** Long enough to start playback or hand the URL to a player, short enough to leak little. */
export const DEFAULT_DOWNLOAD_TTL_MS = 60 * 60 * 1000
// Domain separation: a MAC made for something else with the same secret never verifies here.
const CONTEXT = 'voice.download.v1.'

export interface DownloadGrant {
  /** Storage key of the blob (see src/storage). */
  key: string
  /** Served as Content-Type, e.g. audio/wav. */
  contentType: string
  expiresAt: Date
}

export type DownloadRejection = 'malformed' | 'bad_signature' | 'expired'
export type VerifiedDownload = { ok: true; grant: DownloadGrant } | { ok: false; reason: DownloadRejection }

type Secret = string | Uint8Array

function mac(secret: Secret, body: string): Buffer {
  return createHmac('sha256', secret)
    .update(CONTEXT + body)
    .digest()
}

/** A URL path (no origin: the caller prefixes BASE_URL) granting `grant` until it expires. */
export function signDownload(secret: Secret, grant: DownloadGrant): string {
  const body = Buffer.from(JSON.stringify({ k: grant.key, t: grant.contentType, e: grant.expiresAt.getTime() })).toString('base64url')
  return `${DOWNLOAD_PATH_PREFIX}${body}.${mac(secret, body).toString('base64url')}`
}

/**
 * Check a token (the last path segment) or a whole path/URL ending in one. The
 * signature is checked before expiry so that a forged token learns nothing about time.
 */
export function verifyDownload(secret: Secret, tokenOrPath: string, now: Date): VerifiedDownload {
  const token = tokenOrPath.slice(tokenOrPath.lastIndexOf('/') + 1).split('?')[0]!
  const parts = token.split('.')
  if (parts.length !== 2 || !/^[A-Za-z0-9_-]+$/.test(parts[0]!) || !/^[A-Za-z0-9_-]+$/.test(parts[1]!)) {
    return { ok: false, reason: 'malformed' }
  }
  const [body, sig] = parts as [string, string]
  const given = Buffer.from(sig, 'base64url')
  // Only the canonical spelling is accepted: base64url's last character may carry
  // unused bits, and one grant should have exactly one URL.
  if (given.toString('base64url') !== sig || Buffer.from(body, 'base64url').toString('base64url') !== body) {
    return { ok: false, reason: 'malformed' }
  }
  const expected = mac(secret, body)
  // timingSafeEqual throws on unequal lengths; the length of a MAC is no secret.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad_signature' }
  let payload: { k?: unknown; t?: unknown; e?: unknown }
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
  } catch {
    return { ok: false, reason: 'malformed' }
  }
  if (typeof payload.k !== 'string' || typeof payload.t !== 'string' || typeof payload.e !== 'number') {
    return { ok: false, reason: 'malformed' }
  }
  if (now.getTime() >= payload.e) return { ok: false, reason: 'expired' }
  return { ok: true, grant: { key: payload.k, contentType: payload.t, expiresAt: new Date(payload.e) } }
}

/**
 * The server-wide signing secret, made once and kept (sealed) in the settings table so
 * that every gateway verifies URLs any other one signed.
 */
export function loadDownloadSigningKey(db: Db, ring: KeyRing): Promise<string> {
  return loadServerKey(db, ring, 'download_url_key')
}
