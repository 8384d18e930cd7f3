/**
 * SIP credentials of device lines. SIP digest authentication (MD5 and SHA-256
 * realms) needs the password itself, and platforms fetch it again to provision
 * phones, so it is sealed (AES-256-GCM) rather than hashed. The key is a server-wide
 * setting, made once, like the cursor and session keys, and kept sealed under the
 * master key like them (src/auth/).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { keyRingInUse } from '../../auth/master-key'
import type { Db } from '../../db/client'
import { deviceLines } from '../../db/schema'
import { notFound } from '../../errors'
import type { Principal } from '../platform/principal'
import { loadServerKey } from '../platform/secrets'

export interface Sealer {
  seal(plain: string): string
  open(sealed: string): string
}

function sealerFrom(key: Buffer): Sealer {
  return {
    seal(plain) {
      const iv = randomBytes(12)
      const c = createCipheriv('aes-256-gcm', key, iv)
      const body = Buffer.concat([c.update(plain, 'utf8'), c.final()])
      return `v1.${Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url')}`
    },
    open(sealed) {
      const raw = Buffer.from(sealed.slice(3), 'base64url')
      const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12))
      d.setAuthTag(raw.subarray(12, 28))
      return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8')
    },
  }
}

// The key never changes once made; reading it on every line view would cost a query each.
const cached = new Map<string, Sealer>()
// Per database handle: a process's root handle reads the key once (a transaction's handle is new each time).
const byHandle = new WeakMap<Db, Sealer>()

/** The sealer of this database's key (made on first use). `db` may be a transaction. */
export async function credentialSealer(db: Db): Promise<Sealer> {
  const known = byHandle.get(db)
  if (known) return known
  const value = await loadServerKey(db, keyRingInUse(), 'sip_credential_key')
  let s = cached.get(value)
  if (!s) {
    s = sealerFrom(Buffer.from(value, 'base64url'))
    cached.set(value, s)
  }
  byHandle.set(db, s)
  return s
}

const ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789'

function randomWord(length: number): string {
  const bytes = randomBytes(length)
  let out = ''
  for (const b of bytes) out += ALPHABET[b % ALPHABET.length]
  return out
}

/** A new line's credentials: a service-wide unique username (the registrar looks lines up by it) and a 24-character password. */
export function newCredentials(domain: string) {
  return { username: `u${randomWord(11)}`, password: randomBytes(18).toString('base64url'), domain }
}

/** What a phone presents (HTTP digest, or basic over TLS) to fetch its configuration file. */
export function newProvisioningCredentials() {
  return { username: `p${randomWord(11)}`, password: randomBytes(18).toString('base64url') }
}

export interface SipCredentials {
  username: string
  password: string
  domain: string
}

/** The line a registrar authenticates: by SIP username; 404 credentials_not_found when no line has it. */
export async function sipCredentialsFor(db: Db, username: string) {
  const [row] = await db.select().from(deviceLines).where(eq(deviceLines.sipUsername, username))
  if (!row) throw notFound('credentials', username)
  const sealer = await credentialSealer(db)
  return {
    line: row.id,
    device: row.deviceId,
    account: row.accountId,
    credentials: { username: row.sipUsername, password: sealer.open(row.sipPasswordSealed), domain: row.sipDomain } satisfies SipCredentials,
  }
}

/** SIP passwords are shown to platform secret keys only (the platform provisions phones it does not control), never to account sessions or user tokens. */
export async function sealerFor(db: Db, principal: Principal): Promise<Sealer | undefined> {
  return principal.kind === 'secret_key' ? credentialSealer(db) : undefined
}
