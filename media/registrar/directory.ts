/**
 * The registrar on the database: lines found by SIP username (given: batched by
 * the media role), accepted bindings written as durable messages to the device
 * actor (committed before the phone gets its 200, many REGISTERs per statement), and
 * what a registrar that just started knows of a line's bindings read from the device
 * actor's snapshot.
 */
import { createHmac } from 'node:crypto'
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import { DEVICE_ACTOR } from '../../src/services/devices/records'
import { deviceBindings, type RegistrarLine } from '../../src/services/devices/registrations'
import type { AuthFailures } from '../sip/auth-failures'
import type { SipRequestHandler } from '../sip/handler'
import { createRegistrar, type RegistrarDeps } from './registrar'
import { type DeviceTellWriter, tellBatcher } from '../device-tell-batcher'

export interface RegistrarOnDatabase {
  db: Db
  clock: Clock
  /** Writes device actors' durable tells (actors/devices/registrar-messages: deviceTellWriter, given by the composition root). */
  writeTells: DeviceTellWriter
  /** A server secret (e.g. the session key): the registrar's nonce key is derived from it, the same in every process. */
  secret: Uint8Array | string
  /**
   * Runs the device actor's due messages now rather than at the owner's next poll
   * (ActorClient.wake). Without the rows on purpose: the owner then reads the actor's
   * due messages in order, so a device spawned a moment ago takes its spawn before
   * the REGISTER (a tell delivered first would be dropped: no actor yet).
   */
  wake?(kind: string, deviceId: string): Promise<void> | void
  onError?(error: unknown, during: string): void
  /** The line a SIP username names (the media role's batched lookup, shared with the INVITEs'). */
  lookupLine(username: string): Promise<RegistrarLine | undefined>
  /** Password guessing, counted with the INVITEs' (../sip/auth-failures.ts). */
  failures?: AuthFailures
  limits?: Pick<RegistrarDeps, 'minExpiresS' | 'maxExpiresS' | 'defaultExpiresS' | 'nonceTtlMs'>
}

export function registrarOnDatabase(o: RegistrarOnDatabase): SipRequestHandler {
  const tell = tellBatcher(o.db, o.writeTells)
  return createRegistrar({
    ...o.limits,
    clock: o.clock,
    nonceKey: createHmac('sha256', o.secret).update('sip registrar digest nonces').digest(),
    lookupLine: o.lookupLine,
    knownBindings: async (line) =>
      (await deviceBindings(o.db, line.device, o.clock.now()))
        .filter((b) => b.line === line.line)
        .map((b) => ({ contact: b.contact, expires_at: b.expires_at })),
    async tellDevice(deviceId, events) {
      await tell(deviceId, events)
      // Only a shortcut (the owner's poll delivers them anyway): the phone does not wait for it.
      if (o.wake) Promise.resolve(o.wake(DEVICE_ACTOR, deviceId)).catch((error) => o.onError?.(error, 'device wake'))
    },
    onError: o.onError,
    failures: o.failures,
  })
}
