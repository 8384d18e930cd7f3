/**
 * Group commit of the phone-facing servers' messages to device actors (the
 * registrar's bindings, the provisioning server's fetches): src/db/write-batcher.ts,
 * with device actors' tells as the items.
 */
import type { Db } from '../src/db/client'
import { writeBatcher } from '../src/db/write-batcher'

export type DeviceMessage = { type: string } & Record<string, unknown>

/**
 * Writes durable tells for device actors, several devices at once, in the order given;
 * with `deferUntil`, as deferred messages due by then (src/scheduler/deferred-messages).
 */
export type DeviceTellWriter = (db: Db, batch: { deviceId: string; events: DeviceMessage[] }[], deferUntil?: Date) => Promise<void>

export function tellBatcher(db: Db, write: DeviceTellWriter, maxBatch = 512) {
  const send = writeBatcher<{ deviceId: string; events: DeviceMessage[] }, void>(async (batch) => {
    await write(db, batch)
    return batch.map(() => undefined)
  }, maxBatch)
  return (deviceId: string, events: DeviceMessage[]): Promise<void> => send({ deviceId, events })
}
