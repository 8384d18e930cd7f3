/**
 * Group commit of the phone-facing servers' messages to device actors (the
 * registrar's bindings, the provisioning server's fetches). Phones register and
 * fetch concurrently, by the thousand per second; a statement and a commit (a WAL
 * flush) per request would bound both by the database's round trips. The messages
 * that arrive while a write is under way are written together by the next one (one
 * multi-row statement, one commit), and each caller's promise resolves only once its
 * messages committed: nothing is acknowledged before that.
 */
import type { Db } from '../src/db/client'

export type DeviceMessage = { type: string } & Record<string, unknown>

/** Writes durable tells for device actors, several devices at once, in the order given. */
export type DeviceTellWriter = (db: Db, batch: { deviceId: string; events: DeviceMessage[] }[]) => Promise<void>

interface Pending {
  deviceId: string
  events: DeviceMessage[]
  resolve: () => void
  reject: (e: unknown) => void
}

export function tellBatcher(db: Db, write: DeviceTellWriter, maxBatch = 512) {
  const queue: Pending[] = []
  let flushing = false

  const commit = async (batch: Pending[]): Promise<void> => {
    try {
      await write(db, batch)
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err)
      // One bad message must not fail the others: each is written again alone.
      for (const p of batch) await commit([p])
      return
    }
    for (const p of batch) p.resolve()
  }

  const flush = async () => {
    try {
      while (queue.length > 0) await commit(queue.splice(0, maxBatch))
    } finally {
      flushing = false
    }
  }

  return (deviceId: string, events: DeviceMessage[]): Promise<void> =>
    new Promise((resolve, reject) => {
      queue.push({ deviceId, events, resolve, reject })
      if (flushing) return
      flushing = true
      // REGISTERs arriving in the same turn of the event loop go in the same statement.
      setImmediate(() => void flush())
    })
}
