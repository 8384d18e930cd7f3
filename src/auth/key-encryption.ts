/**
 * Secrets at rest. Values the database must keep but must not reveal to whoever can
 * read it (the server's signing keys, webhook and voice-app secrets, replayable
 * responses) are sealed under a master key that lives outside the database
 * (VOICE_MASTER_KEY, or a key file: src/auth/master-key.ts).
 *
 * A sealed value is text: `sealed.v1.<key id>.<base64url(salt ‖ tag ‖ ciphertext)>`.
 * The key id names the master key it was sealed under, so that during a rotation a
 * process holding both the new and the previous key opens either, and one holding
 * neither says which key it lacks. Each value gets a key and nonce of its own,
 * HKDF-SHA256(master key, random salt), for AES-256-GCM: a master key may seal any
 * number of values without nearing GCM's limit for random nonces under one key. The
 * value's context (what it is and whose, e.g. `webhook_endpoints.secret:we_…`) is
 * authenticated with it, so a sealed value copied into another row does not open there.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto'

const PREFIX = 'sealed.v1.'
const SALT_BYTES = 24
const TAG_BYTES = 16
const HKDF_INFO = 'voice sealed value v1'
const KEY_ID_LABEL = 'voice master key id v1'

/**
 * A 32-byte master key. Its bytes stay in a private field: a Config or a log line that
 * carries the key shows only its id, which is a MAC of a fixed label, not the key.
 */
export class MasterKey {
  readonly id: string
  readonly #bytes: Buffer

  constructor(bytes: Uint8Array) {
    if (bytes.length !== 32) throw new Error('a master key is 32 bytes')
    this.#bytes = Buffer.from(bytes)
    this.id = createHmac('sha256', this.#bytes).update(KEY_ID_LABEL).digest('hex').slice(0, 8)
  }

  static generate(): MasterKey {
    return new MasterKey(randomBytes(32))
  }

  /** The key as written in a key file or VOICE_MASTER_KEY (base64). */
  toKeyFileText(): string {
    return this.#bytes.toString('base64')
  }

  /** A value's own AES-256-GCM key (32 bytes) and nonce (12 bytes). */
  valueKey(salt: Uint8Array): { key: Buffer; nonce: Buffer } {
    const okm = Buffer.from(hkdfSync('sha256', this.#bytes, salt, HKDF_INFO, 44))
    return { key: okm.subarray(0, 32), nonce: okm.subarray(32) }
  }

  toJSON(): string {
    return `[master key ${this.id}]`
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toJSON()
  }
}

/** 32 bytes written as 64 hex digits or in base64 (standard or URL alphabet, padding optional); anything else: undefined. */
export function parseMasterKey(text: string): MasterKey | undefined {
  const t = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(t)) return new MasterKey(Buffer.from(t, 'hex'))
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) return undefined
  const bytes = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
  return bytes.length === 32 ? new MasterKey(bytes) : undefined
}

/** A sealed value that cannot be opened: its key is missing, or it was altered. The message names keys by id only. */
export class SealedValueError extends Error {}

export interface KeyRing {
  /** Seals new values; the key the start-up sweep moves every value to. */
  readonly current: MasterKey
  /** Opened but never used to seal: the key a rotation moves away from. */
  readonly previous: MasterKey | undefined
  seal(plain: string, context: string): string
  /** Opens a sealed value; throws SealedValueError when its key is unknown or it was altered. */
  open(sealed: string, context: string): string
}

export const isSealed = (stored: string): boolean => stored.startsWith(PREFIX)

/** The id of the master key a value is sealed under, or undefined for text that is not a sealed value. */
export function sealedKeyId(stored: string): string | undefined {
  if (!isSealed(stored)) return undefined
  const end = stored.indexOf('.', PREFIX.length)
  return end === -1 ? undefined : stored.slice(PREFIX.length, end)
}

/** What every value sealed under `key` starts with (for finding them in SQL). */
export const sealedPrefix = (key: MasterKey): string => `${PREFIX}${key.id}.`

export function createKeyRing(current: MasterKey, previous?: MasterKey): KeyRing {
  const byId = new Map<string, MasterKey>([[current.id, current]])
  if (previous && previous.id !== current.id) byId.set(previous.id, previous)
  return {
    current,
    previous: previous && previous.id !== current.id ? previous : undefined,
    seal(plain, context) {
      const salt = randomBytes(SALT_BYTES)
      const { key, nonce } = current.valueKey(salt)
      const cipher = createCipheriv('aes-256-gcm', key, nonce)
      cipher.setAAD(Buffer.from(`${current.id}\u0000${context}`))
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
      return `${sealedPrefix(current)}${Buffer.concat([salt, cipher.getAuthTag(), body]).toString('base64url')}`
    },
    open(sealed, context) {
      const id = sealedKeyId(sealed)
      if (id === undefined) throw new SealedValueError(`${context} is not a sealed value`)
      const master = byId.get(id)
      if (!master) {
        const held = [...byId.keys()].join(' and ')
        throw new SealedValueError(`${context} is sealed under master key ${id}, which this process does not have (it has ${held})`)
      }
      const raw = Buffer.from(sealed.slice(PREFIX.length + id.length + 1), 'base64url')
      if (raw.length < SALT_BYTES + TAG_BYTES) throw new SealedValueError(`${context} is not a sealed value (too short)`)
      const { key, nonce } = master.valueKey(raw.subarray(0, SALT_BYTES))
      const decipher = createDecipheriv('aes-256-gcm', key, nonce)
      decipher.setAAD(Buffer.from(`${id}\u0000${context}`))
      decipher.setAuthTag(raw.subarray(SALT_BYTES, SALT_BYTES + TAG_BYTES))
      try {
        return Buffer.concat([decipher.update(raw.subarray(SALT_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
      } catch {
        throw new SealedValueError(`${context} failed its integrity check under master key ${id}: it was altered, or belongs to another row`)
      }
    },
  }
}
