/**
 * Wakes event streams by account. A commit wakes only the streams of the accounts
 * it wrote events for, so that one account holding many streams costs the others
 * nothing, and an idle stream never reads the outbox.
 *
 * Two ways in:
 * - the per-account subject `accountWakeSubject(id)`: a producer that knows which
 *   accounts its commit touched publishes it (`publishOutboxWake`); each process
 *   subscribes once per account it holds streams for, so with NATS a gateway only
 *   hears the accounts it serves;
 * - the global OUTBOX_WAKE_SUBJECT with an empty payload (a producer that does not
 *   say which accounts), and a poll every `pollMs` as the safety net for lost
 *   wake-ups and for processes sharing a database without NATS: one scan per
 *   process reads which accounts got events since the last scan and wakes those.
 *   The cost is one query per process, however many streams are open.
 *
 * The scan looks behind what it has seen for SETTLE_MS, like each stream does, so
 * a lower seq that commits late still wakes its account.
 */
import { and, asc, gt, max, notInArray } from 'drizzle-orm'
import type { Bus, Unsubscribe } from '../bus/bus'
import type { Db } from '../db/client'
import { events } from '../db/schema'
import type { Logger } from '../logger'

/** Published on the bus after every commit that may have written events. */
export const OUTBOX_WAKE_SUBJECT = 'voice.outbox.committed'
/**
 * The payload of OUTBOX_WAKE_SUBJECT when the publisher has already woken each
 * account on its own subject: streams then skip the scan. An empty payload asks
 * for the scan. The delivery engine ignores the payload.
 */
export const ACCOUNTS_WOKEN = 'accounts'
/** Real time the scan keeps looking behind what it has seen, for late commits (as a stream does). */
export const SETTLE_MS = 10_000
/** At most this many seen events are kept for that look-behind, across all accounts. */
const MAX_UNSETTLED = 4096
/** Rows read per scan query. */
const BATCH = 1000

/** The subject that wakes the event streams of one account. */
export const accountWakeSubject = (accountId: string) => `${OUTBOX_WAKE_SUBJECT}.account.${accountId}`

/**
 * What a producer calls after a commit: wakes the streams of these accounts on
 * their own subjects, and the delivery engine (and any stream of an account it
 * does not name, through the scan when `accountIds` is omitted) on the global one.
 */
export function publishOutboxWake(bus: Bus, accountIds?: Iterable<string>): void {
  if (accountIds === undefined) {
    bus.publish(OUTBOX_WAKE_SUBJECT, '')
    return
  }
  for (const id of new Set(accountIds)) bus.publish(accountWakeSubject(id), '')
  bus.publish(OUTBOX_WAKE_SUBJECT, ACCOUNTS_WOKEN)
}

export interface AccountWakes {
  /**
   * Calls `wake` whenever the account may have new events, until the returned
   * function is called. Resolves once the scan's starting point is fixed: events
   * committed after that wake the account.
   */
  watch(accountId: string, wake: () => void): Promise<() => void>
  close(): Promise<void>
}

export function createAccountWakes(deps: { db: Db; bus: Bus; log: Logger; pollMs: number }): AccountWakes {
  const { db, bus, log, pollMs } = deps
  const watchers = new Map<string, { wakes: Set<() => void>; unsubscribe: Unsubscribe }>()
  /** The scan's state; undefined while no account is watched. */
  let scanState: { cursor: number; unsettled: { seq: number; at: number }[] } | undefined
  let starting: Promise<void> | undefined
  let poll: ReturnType<typeof setInterval> | undefined
  let draining: Promise<void> | undefined
  let again = false
  let closed = false

  const wakeAccount = (accountId: string) => {
    for (const w of [...(watchers.get(accountId)?.wakes ?? [])]) w()
  }

  const globalWake = bus.subscribe(OUTBOX_WAKE_SUBJECT, (payload) => {
    if (payload !== ACCOUNTS_WOKEN) scan()
  })

  const settle = (state: NonNullable<typeof scanState>) => {
    const horizon = performance.now() - SETTLE_MS
    let i = 0
    while (i < state.unsettled.length && (state.unsettled[i]!.at <= horizon || state.unsettled.length - i > MAX_UNSETTLED)) {
      state.cursor = Math.max(state.cursor, state.unsettled[i]!.seq)
      i++
    }
    if (i > 0) state.unsettled = state.unsettled.slice(i).filter((e) => e.seq > state.cursor)
  }

  const scanOnce = async () => {
    const state = scanState
    if (!state) return
    settle(state)
    const found = new Set<string>()
    let after = state.cursor
    for (;;) {
      const skip = state.unsettled.map((e) => e.seq)
      const rows = await db
        .select({ seq: events.seq, accountId: events.accountId })
        .from(events)
        .where(and(gt(events.seq, after), skip.length ? notInArray(events.seq, skip) : undefined))
        .orderBy(asc(events.seq))
        .limit(BATCH)
      // Every stream left while the query ran: its state is gone with them.
      if (scanState !== state) return
      const at = performance.now()
      for (const row of rows) {
        state.unsettled.push({ seq: row.seq, at })
        found.add(row.accountId)
      }
      if (rows.length < BATCH) break
      after = rows[rows.length - 1]!.seq
      settle(state)
    }
    for (const accountId of found) wakeAccount(accountId)
  }

  /** Scans now, or once more after the scan under way: wake-ups coalesce. */
  function scan() {
    if (closed || !scanState) return
    if (draining) {
      again = true
      return
    }
    draining = (async () => {
      do {
        again = false
        try {
          await scanOnce()
        } catch (err) {
          if (!closed) log.warn({ err }, 'event stream scan failed; the next poll retries')
        }
      } while (again && !closed)
    })().finally(() => {
      draining = undefined
    })
  }

  const start = async () => {
    const [latest] = await db.select({ seq: max(events.seq) }).from(events)
    // Streams may all have left while the starting point was read.
    if (watchers.size === 0 || closed) return
    scanState = { cursor: Number(latest?.seq ?? 0), unsettled: [] }
    poll = setInterval(scan, pollMs)
  }

  const stop = () => {
    clearInterval(poll)
    poll = undefined
    scanState = undefined
  }

  return {
    async watch(accountId, wake) {
      let entry = watchers.get(accountId)
      if (!entry) {
        const wakes = new Set<() => void>()
        entry = { wakes, unsubscribe: bus.subscribe(accountWakeSubject(accountId), () => wakeAccount(accountId)) }
        watchers.set(accountId, entry)
      }
      entry.wakes.add(wake)
      const unwatch = () => {
        const e = watchers.get(accountId)
        if (!e?.wakes.delete(wake)) return
        if (e.wakes.size > 0) return
        e.unsubscribe()
        watchers.delete(accountId)
        if (watchers.size === 0) stop()
      }
      // A start that found no watcher left sets nothing: this watcher starts it again.
      while (!scanState && !closed && watchers.get(accountId)?.wakes.has(wake)) {
        starting ??= start().finally(() => {
          starting = undefined
        })
        try {
          await starting
        } catch (err) {
          unwatch()
          throw err
        }
      }
      return unwatch
    },

    async close() {
      closed = true
      globalWake()
      for (const e of watchers.values()) e.unsubscribe()
      watchers.clear()
      stop()
      await starting?.catch(() => {})
      await draining
    },
  }
}
