/**
 * Phones first. When phones fetch their files in numbers (power comes back to a
 * building, a firmware push reboots a fleet), each fetch is a phone waiting on
 * HTTP, while what the device actor makes of it (device.provisioned, the device
 * row, the history) can wait a few seconds. On two cores the actors' steps took
 * the CPU the phones were waiting for: exchange p99 121 ms at 2,100 fetches/s,
 * 35 ms with the steps out of the way (`npm run bench -- provisioning`).
 *
 * So while fetches arrive faster than `busyPerSecond`, their messages are written as
 * deferred messages (src/scheduler/deferred-messages) due `maxDelayMs` later at
 * most; once the rate falls below it they are released, all at once, and the
 * actors take them at their own pace. The fetch itself is unchanged: its message is
 * committed before the phone gets its file, so nothing is lost by a crash, and a
 * deferred message is due at its deadline whatever happens, so a burst that never
 * ends delays the bookkeeping by that bound, no more.
 *
 * Order: this process writes messages due now only after it has released the ones
 * it deferred (one write or release at a time), and a release makes them due when
 * they were written; the API's messages to a device release its deferred ones
 * first (src/services/devices/records: tellDevice). Each actor therefore takes its
 * messages in the order they were committed.
 */
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import { type DeviceMessage, type DeviceTellWriter, tellBatcher } from '../device-tell-batcher'

export interface DeferralSettings {
  /** Fetches per second, over the last quarter of a second, from which their messages wait. */
  busyPerSecond: number
  /** The longest a message waits (milliseconds of the service's clock). */
  maxDelayMs: number
}

export const DEFAULT_DEFERRAL: DeferralSettings = { busyPerSecond: 300, maxDelayMs: 10_000 }

/** Real milliseconds between checks for the end of a burst, while messages are deferred. */
const QUIET_CHECK_MS = 100

/**
 * Events per second over a sliding window of `buckets` × `bucketMs` real
 * milliseconds (the bucket under way included): cheap enough to count every fetch.
 */
export class EventRate {
  private readonly counts: number[]
  /** The newest bucket's number (time / bucketMs). */
  private newest = Number.NEGATIVE_INFINITY

  constructor(
    private readonly bucketMs = 50,
    buckets = 5,
  ) {
    this.counts = new Array(buckets).fill(0)
  }

  add(nowMs: number, n = 1): void {
    this.roll(nowMs)
    this.counts[this.newest % this.counts.length]! += n
  }

  perSecond(nowMs: number): number {
    this.roll(nowMs)
    let sum = 0
    for (const c of this.counts) sum += c
    return (sum * 1000) / (this.bucketMs * this.counts.length)
  }

  /** Empties the buckets that time has moved past. */
  private roll(nowMs: number): void {
    const bucket = Math.floor(nowMs / this.bucketMs)
    if (bucket <= this.newest) return
    const n = this.counts.length
    const from = Math.max(this.newest + 1, bucket - n + 1)
    for (let b = from; b <= bucket; b++) this.counts[((b % n) + n) % n] = 0
    this.newest = bucket
  }
}

export interface DeferredTellsDeps {
  db: Db
  clock: Clock
  write: DeviceTellWriter
  /** Makes the device actors' deferred messages with deadlines up to `until` due (src/scheduler/deferred-messages: releaseDeferred). */
  release: (db: Db, now: Date, until: Date) => Promise<unknown>
  settings?: Partial<DeferralSettings>
  /** Real time in ms (tests drive it); default performance.now. */
  nowMs?: () => number
  /** A release that failed (its messages stay due at their deadline; the next check tries again). */
  onError?: (err: unknown) => void
}

/**
 * The provisioning server's messages to device actors: group-committed as every
 * phone-facing server's (media/device-tell-batcher), deferred while fetches come in
 * a burst.
 */
export function deferredTells(deps: DeferredTellsDeps) {
  const settings = { ...DEFAULT_DEFERRAL, ...deps.settings }
  const nowMs = deps.nowMs ?? (() => performance.now())
  const rate = new EventRate()
  const busy = () => rate.perSecond(nowMs()) >= settings.busyPerSecond
  const later = () => new Date(deps.clock.now().getTime() + settings.maxDelayMs)

  // One write or release at a time, in the order asked: what is written due now follows the release of what was deferred.
  let chain: Promise<unknown> = Promise.resolve()
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = chain.then(fn)
    chain = p.catch(() => {})
    return p
  }
  /** This process deferred messages that it has not released yet. */
  let owed = false
  let check: ReturnType<typeof setTimeout> | undefined
  let stopped = false

  const releaseOwed = async () => {
    const now = deps.clock.now()
    await deps.release(deps.db, now, new Date(now.getTime() + settings.maxDelayMs))
    owed = false
  }

  const watchForQuiet = () => {
    if (check || stopped) return
    check = setTimeout(() => {
      check = undefined
      if (!owed || stopped) return
      if (busy()) return watchForQuiet()
      serial(async () => {
        if (owed && !busy()) await releaseOwed()
      })
        .catch((err) => deps.onError?.(err))
        .finally(() => owed && watchForQuiet())
    }, QUIET_CHECK_MS)
    check.unref?.()
  }

  const write: DeviceTellWriter = (db, batch) =>
    serial(async () => {
      if (busy()) {
        owed = true
        watchForQuiet()
        return deps.write(db, batch, later())
      }
      if (owed) await releaseOwed()
      return deps.write(db, batch)
    })

  const send = tellBatcher(deps.db, write)
  return {
    /** Records one message for the device's actor; resolves once it is committed (deferred or not). */
    tell(deviceId: string, event: DeviceMessage): Promise<void> {
      rate.add(nowMs())
      return send(deviceId, [event])
    },
    /** Whether messages written now are deferred (tests and metrics). */
    deferring: busy,
    /** Stops watching for the end of a burst: what is still deferred comes due at its deadline. */
    stop(): void {
      stopped = true
      if (check) clearTimeout(check)
      check = undefined
    },
  }
}
