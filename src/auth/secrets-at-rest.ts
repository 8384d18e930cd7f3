/**
 * What a starting service does about secrets at rest: find its master key, make it the
 * process's key ring, and sweep the database (refuse a wrong key, seal plain values,
 * move values off the previous key) before anything reads a sealed value.
 */
import type { Config } from '../config'
import type { Db } from '../db/client'
import type { Logger } from '../logger'
import type { KeyRing } from './key-encryption'
import { holdKeyRing, resolveKeyRing } from './master-key'
import { sweepSealedValues } from './sealed-columns'

export interface LoadedKeyRing {
  ring: KeyRing
  /** Called by the service's stop: the process no longer serves with this key. */
  release(): void
}

export async function loadKeyRing(config: Config, db: Db, log: Logger): Promise<LoadedKeyRing> {
  const { ring, source } = resolveKeyRing(config, log)
  const release = holdKeyRing(ring)
  try {
    const swept = await sweepSealedValues(db, ring, source)
    if (swept.sealed > 0 || swept.resealed > 0) {
      log.info({ ...swept, keyId: ring.current.id }, 'secrets at rest: sealed plain values and moved values off the previous master key')
    }
    if (ring.previous)
      log.info({ keyId: ring.current.id, previousKeyId: ring.previous.id }, 'VOICE_MASTER_KEY_PREVIOUS is read only to open values sealed under it')
  } catch (e) {
    release()
    throw e
  }
  return { ring, release }
}
