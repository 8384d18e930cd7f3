/**
 * The account's event stream (GET /v1/events) as the CLI reads it: opened with
 * the connection's key and account, reconnected with `Last-Event-ID` when it
 * drops (a bounded number of times in a row), so no committed event is missed and
 * none is read twice.
 */
import { answerOf, type Connection, ServiceError } from './api'
import { readSse } from './sse'

export interface StreamEvent {
  id: string
  type: string
  /** The flat payload: the event's data fields plus `event`. */
  payload: Record<string, unknown>
}

export interface StreamOptions {
  signal: AbortSignal
  /** Called each time the stream is open (its cursor fixed), before any event of that connection. */
  onOpen?: (reconnect: boolean) => void | Promise<void>
  /** Things worth telling the user: reconnects, resume comments. */
  notice: (text: string) => void
  /** Failed opens or drops in a row before giving up (default 5). */
  maxReconnects?: number
}

/** Waits `ms`, or less when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

export async function* streamEvents(c: Connection, o: StreamOptions): AsyncGenerator<StreamEvent> {
  const maxReconnects = o.maxReconnects ?? 5
  let lastId: string | undefined
  let retryMs = 3000
  let failures = 0
  let opened = false
  while (!o.signal.aborted) {
    let waitMs = retryMs
    try {
      const headers: Record<string, string> = {
        authorization: `Bearer ${c.key}`,
        'service-account': c.account,
        accept: 'text/event-stream',
        'user-agent': 'voice-cli/1.0',
      }
      if (lastId) headers['last-event-id'] = lastId
      const res = await fetch(`${c.baseUrl}/v1/events`, { headers, signal: o.signal })
      if (!res.ok || !res.body) {
        const err = await answerOf(res).then(
          () => new ServiceError(`the event stream answered ${res.status} without a body`, res.status),
          (e: unknown) => e as ServiceError,
        )
        // Too many streams open (429) or a service in trouble (5xx) may pass; anything else will not.
        if (res.status !== 429 && res.status < 500) throw err
        const after = Number(res.headers.get('retry-after'))
        if (Number.isFinite(after) && after > 0) waitMs = Math.min(after * 1000, 60_000)
        if (++failures > maxReconnects) throw err
        o.notice(`event stream: ${err.message}; retrying in ${Math.round(waitMs / 1000)} s (${failures}/${maxReconnects})`)
        await pause(waitMs, o.signal)
        continue
      }
      await o.onOpen?.(opened)
      opened = true
      for await (const item of readSse(res.body)) {
        // Only a stream that says something counts as working: one that opens and closes at once keeps counting.
        if (item.kind !== 'retry') failures = 0
        if (item.kind === 'retry') retryMs = Math.min(Math.max(item.ms, 100), 60_000)
        else if (item.kind === 'comment') {
          if (item.text !== 'heartbeat') o.notice(`event stream: ${item.text}`)
        } else if (item.id) {
          lastId = item.id
          let payload: Record<string, unknown>
          try {
            payload = JSON.parse(item.data)
          } catch {
            o.notice(`event stream: message ${item.id} is not JSON; skipped`)
            continue
          }
          yield { id: item.id, type: item.event, payload }
        }
      }
    } catch (e) {
      if (o.signal.aborted) return
      if (e instanceof ServiceError && e.status !== undefined) throw e
      if (++failures > maxReconnects) throw new ServiceError(`the event stream failed ${failures} times in a row: ${(e as Error).message}`)
      o.notice(`event stream: ${(e as Error).message}; reconnecting in ${Math.round(waitMs / 1000)} s (${failures}/${maxReconnects})`)
      await pause(waitMs, o.signal)
      continue
    }
    if (o.signal.aborted) return
    if (++failures > maxReconnects) throw new ServiceError(`the event stream closed ${failures} times in a row`)
    o.notice(`event stream: closed by the service; reconnecting in ${Math.round(waitMs / 1000)} s (${failures}/${maxReconnects})`)
    await pause(waitMs, o.signal)
  }
}
