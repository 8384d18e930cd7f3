/**
 * The periodic data-lifecycle work of a process: blob deletions owed (where blobs are
 * written: the worker role) and the outbox's retention purge (where the outbox is
 * read: the delivery role). Every run is bounded, runs never overlap within a
 * process, several processes may run at once, and `stop()` waits for a run in flight.
 */
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { purgeOldEvents } from '../../events/retention'
import type { Logger } from '../../logger'
import type { BlobStorage } from '../../storage/blob-storage'
import { sweepBlobDeletions } from './blob-deletions'

export interface DataLifecycleDeps {
  db: Db
  clock: Clock
  log: Logger
  /** Present: this process sweeps blob deletions. */
  storage?: BlobStorage
  /** True: this process purges old events. */
  events?: boolean
  /** Real milliseconds between blob sweeps; default one minute. */
  blobIntervalMs?: number
  /** Real milliseconds between event purges; default one hour. */
  eventIntervalMs?: number
}

export interface DataLifecycle {
  /** Runs both jobs now (as far as this process has them), after any run in flight. */
  runOnce(): Promise<void>
  stop(): Promise<void>
}

export function startDataLifecycle(deps: DataLifecycleDeps): DataLifecycle {
  const log = deps.log.child({ component: 'data-lifecycle' })
  let eventCursor = 0
  let running: Promise<void> = Promise.resolve()
  let stopped = false

  const sweepBlobs = async () => {
    if (!deps.storage || stopped) return
    const r = await sweepBlobDeletions({ db: deps.db, storage: deps.storage, clock: deps.clock, log })
    if (r.deleted + r.failed + r.kept > 0) log.info(r, 'blob deletions swept')
  }
  const purgeEvents = async () => {
    if (!deps.events || stopped) return
    const r = await purgeOldEvents(deps.db, deps.clock, { after: eventCursor })
    eventCursor = r.next
    if (r.events > 0) log.info({ events: r.events, deliveries: r.deliveries }, 'old events purged')
  }
  // One chain: a slow run delays the next instead of running beside it.
  const enqueue = (job: () => Promise<void>, what: string) => {
    running = running.then(() => job().catch((err) => log.warn({ err }, `${what} failed`)))
    return running
  }

  const timers: ReturnType<typeof setInterval>[] = []
  if (deps.storage) timers.push(setInterval(() => void enqueue(sweepBlobs, 'blob sweep'), deps.blobIntervalMs ?? 60_000))
  if (deps.events) timers.push(setInterval(() => void enqueue(purgeEvents, 'event purge'), deps.eventIntervalMs ?? 3600_000))
  for (const t of timers) t.unref?.()
  // What a crash left owed is swept soon after start, not an interval later.
  if (deps.storage) void enqueue(sweepBlobs, 'blob sweep')

  return {
    runOnce() {
      enqueue(sweepBlobs, 'blob sweep')
      return enqueue(purgeEvents, 'event purge')
    },
    async stop() {
      stopped = true
      for (const t of timers) clearInterval(t)
      await running
    },
  }
}
