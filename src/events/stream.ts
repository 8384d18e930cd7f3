/**
 * The account's server-sent event stream (GET /v1/events), fed from the outbox.
 *
 * Postgres is the source of truth: a stream reads the committed events of its
 * account in `seq` order and sends each stream event (`isStreamEvent`: call.*
 * except call.ringing and call.emergency) as
 *
 *     id: <event id>
 *     event: <type>
 *     data: <flat JSON: {event: <type>, ...the envelope's data fields}>
 *
 * Other types are skipped. The bus only says "look now", and only to the streams
 * of the accounts that got events (./stream-wakes: a per-account subject, and one
 * scan per process for global wake-ups and every `pollMs`); a stream never polls
 * on its own, so idle streams cost no queries.
 *
 * A transaction takes its `seq` when it inserts and becomes visible when it
 * commits, so a lower seq can appear after a higher one. A stream therefore keeps
 * reading behind the highest seq it has sent for SETTLE_MS of real time (at most
 * MAX_UNSETTLED events), skipping the ones it has sent, and only then moves its
 * cursor past them: an event committed up to SETTLE_MS late is still streamed, in
 * the order it became visible.
 *
 * Resuming: `Last-Event-ID` naming an event of the account that is at most
 * RESUME_WINDOW_MS old (by the injected clock) replays the events after it, then
 * goes live. An unknown id (or another account's) or an older one starts from now
 * and says so in an SSE comment. Comments: `: heartbeat` every `heartbeatMs`,
 * `: resume-unknown ...` and `: resume-expired ...`.
 *
 * Limits, counted per gateway process (each gateway of a deployment enforces its
 * own; a client's streams are spread over them by the load balancer): at most
 * MAX_STREAMS_PER_CREDENTIAL open streams per credential (a secret key, an account
 * session, a user) and MAX_STREAMS_PER_ACCOUNT per account. One more is refused
 * with 429 rate_limited and Retry-After, until one of them closes. A stream opened
 * with a token that expires (`expiresAt`, real time: the clock's wallNow) ends when
 * it does, with `: session-expired ...` as its last line: the token no longer
 * authorises what the stream keeps sending.
 */
import { and, asc, eq, gt, max, notInArray } from 'drizzle-orm'
import type { Bus } from '../bus/bus'
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { events } from '../db/schema'
import { ApiError } from '../errors'
import type { Logger } from '../logger'
import { decodeTime } from 'ulid'
import { isStreamEvent } from './catalog'
import { createAccountWakes, SETTLE_MS } from './stream-wakes'

export { accountWakeSubject, OUTBOX_WAKE_SUBJECT, publishOutboxWake } from './stream-wakes'
/** How far back (simulated time) a Last-Event-ID may point and still be resumed. */
export const RESUME_WINDOW_MS = 24 * 3600_000
/** The reconnection delay the stream asks EventSource clients to use. */
export const RETRY_MS = 3000
/**
 * Open streams one credential may hold in one gateway process: a browser with a few
 * tabs, or a back end with a stream per worker, stays far below; a reconnect loop
 * that never closes its old connections (680 in 25 s, issue 13) stops here.
 */
export const MAX_STREAMS_PER_CREDENTIAL = 10
/** Open streams of one account in one gateway process, whatever the credentials. */
export const MAX_STREAMS_PER_ACCOUNT = 50
/**
 * Retry-After of a refused stream. A slot frees only when a stream closes, which
 * no one can predict; this is a little longer than RETRY_MS so that a client that
 * honours it retries no faster than EventSource reconnects.
 */
export const STREAM_LIMIT_RETRY_AFTER_S = 5
/** At most this many sent events are kept for the SETTLE_MS look-behind. */
const MAX_UNSETTLED = 256
/** Events read per query. */
const BATCH = 200
/** Chunks queued for a slow reader before the stream stops reading the outbox. */
const HIGH_WATER_MARK = 64

export type ResumeOutcome = 'live' | 'resumed' | 'unknown' | 'expired'

export interface OpenedStream {
  body: ReadableStream<Uint8Array>
  /** What became of Last-Event-ID: none given (live), resumed, unknown or expired (both live). */
  resume: ResumeOutcome
}

export interface OpenOptions {
  lastEventId?: string
  signal?: AbortSignal
  /** Who opens it (a key id, session id or user id, with its kind): the per-credential limit counts by it. */
  credential?: string
  /** When the credential expires (real time, compared with the clock's wallNow); the stream ends then. */
  expiresAt?: Date
}

export interface EventStreams {
  /**
   * Opens one account's stream; its cursor is fixed before this resolves. Throws
   * 429 rate_limited when the credential or the account holds its limit of streams.
   */
  open(accountId: string, opts?: OpenOptions): Promise<OpenedStream>
  /** Streams open in this process. */
  readonly size: number
  /**
   * Outbox reads made for the streams of this account while it has streams open in
   * this process: tests observe with it which commits wake which streams.
   */
  reads(accountId: string): number
  /** Ends every open stream and stops listening to the bus. */
  close(): Promise<void>
}

/** The flat stream payload: the envelope's data fields plus `event`; no id, created_at or data wrapper. */
export function flatPayload(type: string, envelopeBody: string): Record<string, unknown> {
  const envelope = JSON.parse(envelopeBody) as { data?: Record<string, unknown> }
  const out: Record<string, unknown> = { event: type }
  for (const [k, v] of Object.entries(envelope.data ?? {})) if (k !== 'event') out[k] = v
  return out
}

/** One SSE message. Ids and types never hold line breaks; JSON.stringify escapes them in data. */
export function sseMessage(id: string, type: string, data: Record<string, unknown>): string {
  return `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`
}

const sseComment = (text: string) => `: ${text.replace(/[\r\n]+/g, ' ')}\n\n`

export function createEventStreams(deps: { db: Db; clock: Clock; bus: Bus; log: Logger; heartbeatMs: number; pollMs: number }): EventStreams {
  const { db, clock, bus, heartbeatMs, pollMs } = deps
  const log = deps.log.child({ component: 'event-stream' })
  const encoder = new TextEncoder()
  const sessions = new Set<{ close(): void; idle(): Promise<void> }>()
  /** Streams opened or opening, by account and by credential: slots are taken before the first await. */
  const byAccount = new Map<string, { open: number; reads: number }>()
  const byCredential = new Map<string, number>()
  const wakes = createAccountWakes({ db, bus, log, pollMs })
  let closed = false

  /** Takes a slot for one more stream, or refuses it; the returned function gives it back (once). */
  function reserve(accountId: string, credential: string | undefined): () => void {
    const account = byAccount.get(accountId)
    const held = credential === undefined ? 0 : (byCredential.get(credential) ?? 0)
    if (held >= MAX_STREAMS_PER_CREDENTIAL) throw limitReached('credential', MAX_STREAMS_PER_CREDENTIAL)
    if ((account?.open ?? 0) >= MAX_STREAMS_PER_ACCOUNT) throw limitReached('account', MAX_STREAMS_PER_ACCOUNT)
    if (account) account.open++
    else byAccount.set(accountId, { open: 1, reads: 0 })
    if (credential !== undefined) byCredential.set(credential, held + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const a = byAccount.get(accountId)
      if (a && --a.open === 0) byAccount.delete(accountId)
      if (credential === undefined) return
      const n = (byCredential.get(credential) ?? 1) - 1
      if (n === 0) byCredential.delete(credential)
      else byCredential.set(credential, n)
    }
  }

  async function startingPoint(accountId: string, lastEventId: string | undefined): Promise<{ seq: number; resume: ResumeOutcome }> {
    if (lastEventId !== undefined && lastEventId.length > 0 && lastEventId.length <= 255) {
      const [row] = await db
        .select({ seq: events.seq, createdAt: events.createdAt })
        .from(events)
        .where(and(eq(events.id, lastEventId), eq(events.accountId, accountId)))
      if (row && clock.now().getTime() - row.createdAt.getTime() <= RESUME_WINDOW_MS) return { seq: row.seq, resume: 'resumed' }
      const [latest] = await db
        .select({ seq: max(events.seq) })
        .from(events)
        .where(eq(events.accountId, accountId))
      // A purged event (older than the window) has no row left, but its id carries its time.
      return { seq: Number(latest?.seq ?? 0), resume: row || olderThanWindow(lastEventId, clock.now()) ? 'expired' : 'unknown' }
    }
    const [latest] = await db
      .select({ seq: max(events.seq) })
      .from(events)
      .where(eq(events.accountId, accountId))
    return { seq: Number(latest?.seq ?? 0), resume: lastEventId === undefined ? 'live' : 'unknown' }
  }

  return {
    get size() {
      return sessions.size
    },

    reads(accountId) {
      return byAccount.get(accountId)?.reads ?? 0
    },

    async open(accountId, opts = {}) {
      if (closed) throw new Error('event streams are closed')
      const release = reserve(accountId, opts.credential)
      let start: { seq: number; resume: ResumeOutcome }
      try {
        start = await startingPoint(accountId, opts.lastEventId)
      } catch (err) {
        release()
        throw err
      }
      let cursor = start.seq
      /** Events read above the cursor, in the order read, with when (real ms). */
      let unsettled: { seq: number; at: number }[] = []
      let ended = false
      let controller!: ReadableStreamDefaultController<Uint8Array>
      let pullWaiter: (() => void) | undefined
      let draining: Promise<void> | undefined
      let again = false
      let heartbeat: ReturnType<typeof setInterval> | undefined
      let expiry: ReturnType<typeof setTimeout> | undefined
      let retry: ReturnType<typeof setTimeout> | undefined
      let unwatch: (() => void) | undefined

      const send = (text: string) => {
        if (ended) return
        try {
          controller.enqueue(encoder.encode(text))
        } catch {
          end()
        }
      }

      /** Resolves once the reader has room (or the stream ended). */
      const room = async () => {
        while (!ended && (controller.desiredSize ?? 1) <= 0) await new Promise<void>((r) => (pullWaiter = r))
      }

      /** Moves the cursor past events read long enough ago that nothing below them can still commit. */
      const settle = () => {
        const horizon = performance.now() - SETTLE_MS
        let i = 0
        while (i < unsettled.length && (unsettled[i]!.at <= horizon || unsettled.length - i > MAX_UNSETTLED)) {
          cursor = Math.max(cursor, unsettled[i]!.seq)
          i++
        }
        if (i > 0) unsettled = unsettled.slice(i).filter((e) => e.seq > cursor)
      }

      const readOnce = async () => {
        settle()
        let after = cursor
        for (;;) {
          await room()
          if (ended) return
          const counter = byAccount.get(accountId)
          if (counter) counter.reads++
          const skip = unsettled.map((e) => e.seq)
          const rows = await db
            .select({ seq: events.seq, id: events.id, type: events.type, body: events.body })
            .from(events)
            .where(and(eq(events.accountId, accountId), gt(events.seq, after), skip.length ? notInArray(events.seq, skip) : undefined))
            .orderBy(asc(events.seq))
            .limit(BATCH)
          if (ended) return
          const at = performance.now()
          for (const row of rows) {
            unsettled.push({ seq: row.seq, at })
            if (isStreamEvent(row.type)) send(sseMessage(row.id, row.type, flatPayload(row.type, row.body)))
          }
          if (rows.length < BATCH) return
          after = rows[rows.length - 1]!.seq
          settle()
        }
      }

      /** Reads now, or once more after the read under way: wake-ups coalesce. */
      const wake = () => {
        if (ended) return
        if (draining) {
          again = true
          return
        }
        draining = (async () => {
          do {
            again = false
            try {
              await readOnce()
            } catch (err) {
              if (ended) return
              // No poll of its own comes back to this stream: it retries by itself.
              log.warn({ err, accountId }, 'event stream read failed; retrying')
              clearTimeout(retry)
              retry = setTimeout(wake, pollMs)
            }
          } while (again && !ended)
        })().finally(() => {
          draining = undefined
        })
      }

      const onAbort = () => end()
      function end() {
        if (ended) return
        ended = true
        clearInterval(heartbeat)
        clearTimeout(expiry)
        clearTimeout(retry)
        unwatch?.()
        release()
        opts.signal?.removeEventListener('abort', onAbort)
        sessions.delete(session)
        pullWaiter?.()
        try {
          controller.close()
        } catch {
          // Already closed or cancelled by the reader.
        }
      }

      /** Ends the stream once the credential has expired; a clock set forward (tests) is noticed within a heartbeat. */
      const watchExpiry = (expiresAt: Date) => {
        const left = expiresAt.getTime() - clock.wallNow().getTime()
        if (left <= 0) {
          send(sseComment('session-expired: the token that opened this stream has expired; open a new stream with a new token'))
          return end()
        }
        expiry = setTimeout(() => watchExpiry(expiresAt), Math.min(left, heartbeatMs))
      }

      const session = { close: end, idle: async () => void (await draining) }

      const body = new ReadableStream<Uint8Array>(
        {
          start(c) {
            controller = c
            send(`retry: ${RETRY_MS}\n\n`)
            if (start.resume === 'unknown') send(sseComment('resume-unknown: Last-Event-ID names no event of this account; streaming from now'))
            if (start.resume === 'expired') send(sseComment(`resume-expired: Last-Event-ID is older than ${RESUME_WINDOW_MS / 3600_000} h; streaming from now`))
          },
          pull() {
            pullWaiter?.()
            pullWaiter = undefined
          },
          cancel() {
            end()
          },
        },
        { highWaterMark: HIGH_WATER_MARK },
      )

      // The client left, or the service began stopping, while the cursor was read.
      if (closed || opts.signal?.aborted) {
        end()
        return { body, resume: start.resume }
      }
      opts.signal?.addEventListener('abort', onAbort, { once: true })
      sessions.add(session)
      heartbeat = setInterval(() => {
        if ((controller.desiredSize ?? 1) > 0) send(sseComment('heartbeat'))
      }, heartbeatMs)
      if (opts.expiresAt) watchExpiry(opts.expiresAt)
      try {
        const stopWatching = await wakes.watch(accountId, wake)
        if (ended) stopWatching()
        else unwatch = stopWatching
      } catch (err) {
        end()
        throw err
      }
      // Replays what follows Last-Event-ID, and what committed while the wake-ups were set up.
      wake()
      return { body, resume: start.resume }
    },

    async close() {
      closed = true
      const open = [...sessions]
      for (const s of open) s.close()
      // Reads under way finish before the caller closes the database.
      await Promise.all(open.map((s) => s.idle().catch(() => {})))
      await wakes.close()
    },
  }
}

function limitReached(scope: 'credential' | 'account', limit: number): ApiError {
  const who = scope === 'credential' ? 'This credential' : 'This account'
  return new ApiError(
    429,
    `${who} already holds ${limit} open event streams in this gateway; close one (or reuse one) before opening another.`,
    'rate_limited',
    // No details: they are field-level context, and the message names the limit.
    undefined,
    { 'Retry-After': String(STREAM_LIMIT_RETRY_AFTER_S) },
  )
}

/** An event id (`evt_` + a ULID) minted more than the resume window before `now`. */
function olderThanWindow(eventId: string, now: Date): boolean {
  if (!/^evt_[0-9a-hjkmnp-tv-z]{26}$/i.test(eventId)) return false
  try {
    return now.getTime() - decodeTime(eventId.slice(4).toUpperCase()) > RESUME_WINDOW_MS
  } catch {
    return false
  }
}
