/**
 * Where this process's master key comes from, and the one key ring it seals and
 * opens secrets at rest with (src/auth/key-encryption.ts).
 *
 * - VOICE_MASTER_KEY (and VOICE_MASTER_KEY_PREVIOUS during a rotation), when set.
 * - Otherwise the key file `master.key` in DATA_DIR, made on the first start (0600).
 *   With DATABASE_URL the same file is used (DATA_DIR, or ./data when DATA_DIR is
 *   memory://), loudly: every process sharing that database needs this very key.
 * - DATA_DIR=memory:// without DATABASE_URL keeps nothing, so neither does its key:
 *   one key per process, made at random.
 *
 * A process holds one key ring, set by startService: the services that seal and open
 * (webhook endpoints, voice apps, idempotency, SIP credentials) take only a database
 * handle, as the one master key of a process is as global as its configuration.
 */
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { randomBytes } from 'node:crypto'
import { ConfigError, type Config } from '../config'
import { createKeyRing, isSealed, type KeyRing, MasterKey, parseMasterKey } from './key-encryption'

export const KEY_FILE_NAME = 'master.key'

export interface ResolvedKeyRing {
  ring: KeyRing
  /** Where the current key came from, for messages: `VOICE_MASTER_KEY`, the key file's path, or `a key of this process`. */
  source: string
}

interface KeyLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

/** The key of DATA_DIR=memory:// services: shared by all of them in this process, gone with it. */
let processKey: MasterKey | undefined

export function resolveKeyRing(config: Pick<Config, 'masterKey' | 'masterKeyPrevious' | 'dataDir' | 'databaseUrl'>, log: KeyLog): ResolvedKeyRing {
  if (config.masterKey) return { ring: createKeyRing(config.masterKey, config.masterKeyPrevious), source: 'VOICE_MASTER_KEY' }
  if (config.dataDir === 'memory://' && !config.databaseUrl) {
    processKey ??= MasterKey.generate()
    return { ring: createKeyRing(processKey), source: 'a key of this process (DATA_DIR=memory://)' }
  }
  const folder = config.dataDir === 'memory://' ? './data' : config.dataDir
  const path = resolve(join(folder, KEY_FILE_NAME))
  const { key, made } = readOrMakeKeyFile(path)
  if ((statSync(path).mode & 0o077) !== 0) log.warn({ keyFile: path }, `${path} is open to other users: chmod 600 it`)
  if (config.databaseUrl) {
    log.warn(
      { keyFile: path, keyId: key.id },
      `VOICE_MASTER_KEY is not set: secrets in the database are sealed with the master key in ${path}${made ? ' (made now)' : ''}. ` +
        'Every process sharing this database needs the same key, and the database cannot be read without it: set VOICE_MASTER_KEY to the content of that file and keep a copy apart from the database',
    )
  } else if (made) {
    log.info({ keyFile: path, keyId: key.id }, `made the master key ${path}: keep a copy apart from the database's backups`)
  }
  return { ring: createKeyRing(key), source: path }
}

/**
 * Made by one process even when several start at once: the key is written to a file of
 * this process and linked into place, which fails if another process linked first.
 */
function readOrMakeKeyFile(path: string): { key: MasterKey; made: boolean } {
  try {
    return { key: readKeyFile(path), made: false }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
  }
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 })
  const key = MasterKey.generate()
  const draft = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`
  const fd = openSync(draft, 'wx', 0o600)
  try {
    writeSync(fd, `${key.toKeyFileText()}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(draft, path)
    return { key, made: true }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
    return { key: readKeyFile(path), made: false }
  } finally {
    unlinkSync(draft)
  }
}

function readKeyFile(path: string): MasterKey {
  const key = parseMasterKey(readFileSync(path, 'utf8'))
  if (!key) throw new ConfigError(`${path} does not hold a master key (32 bytes in base64 or hex): restore it from a copy`)
  return key
}

let held: { ring: KeyRing; holders: number } | undefined

/**
 * Makes `ring` this process's key ring until the returned release is called (by the
 * service's stop). Services in one process share it, so they must agree on the key.
 */
export function holdKeyRing(ring: KeyRing): () => void {
  if (held && held.ring.current.id !== ring.current.id) {
    throw new ConfigError(
      `this process already serves with master key ${held.ring.current.id}; a second service in it cannot use master key ${ring.current.id}`,
    )
  }
  if (held) held.holders++
  else held = { ring, holders: 1 }
  let released = false
  return () => {
    if (released || !held) return
    released = true
    if (--held.holders === 0) held = undefined
  }
}

/** The key ring of the service running in this process. */
export function keyRingInUse(): KeyRing {
  if (!held) {
    throw new Error('no master key is loaded in this process: startService loads it (a test that opens a database itself calls holdKeyRing)')
  }
  return held.ring
}

/** Seals a value under this process's master key. */
export const sealSecret = (plain: string, context: string): string => keyRingInUse().seal(plain, context)

/**
 * Opens a stored value. Text that is not sealed is returned as it is: a row written
 * before secrets were sealed, or by an older process during an upgrade (the next
 * start seals it).
 */
export const openSecret = (stored: string, context: string): string => (isSealed(stored) ? keyRingInUse().open(stored, context) : stored)
