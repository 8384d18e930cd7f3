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
 * Other types are skipped. The bus only says "look now": every committed mutation
 * publishes OUTBOX_WAKE_SUBJECT (over NATS when configured, so a gateway hears
 * commits of any process) and a poll every `pollMs` covers commits whose wake-up
 * was lost or never sent (processes sharing a database without NATS).
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
 */
import { and, asc, eq, gt, max, notInArray } from 'drizzle-orm'
import type { Bus, Unsubscribe } from '../bus/bus'
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { events } from '../db/schema'
import type { Logger } from '../logger'
import { isStreamEvent } from './catalog'

/** Published on the bus after every commit that may have written events. */
export const OUTBOX_WAKE_SUBJECT = 'voice.outbox.committed'
/** How far back (simulated time) a Last-Event-ID may point and still be resumed. */
export const RESUME_WINDOW_MS = 24 * 3600_000
/** The reconnection delay the stream asks EventSource clients to use. */
export const RETRY_MS = 3000
/** Real time a stream keeps looking behind what it has sent, for late commits. */
const SETTLE_MS = 10_000
/** At most this many sent events are kept for that look-behind. */
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

export interface EventStreams {
  /** Opens one account's stream; its cursor is fixed before this resolves. */
  open(accountId: string, opts?: { lastEventId?: string; signal?: AbortSignal }): Promise<OpenedStream>
  /** Streams open in this process. */
  readonly size: number
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
  const sessions = new Set<{ wake(): void; close(): void; idle(): Promise<void> }>()
  let closed = false
  const unsubscribe: Unsubscribe = bus.subscribe(OUTBOX_WAKE_SUBJECT, () => {
    for (const s of sessions) s.wake()
  })

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
      return { seq: Number(latest?.seq ?? 0), resume: row ? 'expired' : 'unknown' }
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

    async open(accountId, opts = {}) {
      if (closed) throw new Error('event streams are closed')
      const start = await startingPoint(accountId, opts.lastEventId)
      let cursor = start.seq
      /** Events read above the cursor, in the order read, with when (real ms). */
      let unsettled: { seq: number; at: number }[] = []
      let ended = false
      let controller!: ReadableStreamDefaultController<Uint8Array>
      let pullWaiter: (() => void) | undefined
      let draining: Promise<void> | undefined
      let again = false
      let heartbeat: ReturnType<typeof setInterval> | undefined
      let poll: ReturnType<typeof setInterval> | undefined

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
              if (!ended) log.warn({ err, accountId }, 'event stream read failed; the next poll retries')
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
        clearInterval(poll)
        opts.signal?.removeEventListener('abort', onAbort)
        sessions.delete(session)
        pullWaiter?.()
        try {
          controller.close()
        } catch {
          // Already closed or cancelled by the reader.
        }
      }

      const session = { wake, close: end, idle: async () => void (await draining) }

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
      poll = setInterval(wake, pollMs)
      // Replays what follows Last-Event-ID at once; a fresh stream finds nothing yet.
      wake()
      return { body, resume: start.resume }
    },

    async close() {
      closed = true
      unsubscribe()
      const open = [...sessions]
      for (const s of open) s.close()
      // Reads under way finish before the caller closes the database.
      await Promise.all(open.map((s) => s.idle().catch(() => {})))
    },
  }
}
