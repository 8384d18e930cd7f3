/**
 * Event stream limits (issue 13, "Data lifecycle and caps"): one key opened 680
 * streams in 25 s and slowed other platforms' requests. So, per gateway process:
 * at most MAX_STREAMS_PER_CREDENTIAL open streams per credential and
 * MAX_STREAMS_PER_ACCOUNT per account, one more refused with 429 rate_limited and
 * Retry-After; a stream opened by an account session ends when the session
 * expires; and a commit wakes only the streams of the accounts it wrote events for.
 */
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { manualClock } from '../src/clock'
import { accounts } from '../src/db/schema'
import { appendEvents, type StoredEvent } from '../src/events/outbox'
import { MAX_STREAMS_PER_ACCOUNT, MAX_STREAMS_PER_CREDENTIAL, publishOutboxWake, STREAM_LIMIT_RETRY_AFTER_S } from '../src/events/stream'
import { ACCOUNT_SESSION_TTL_S } from '../src/services/platform/sessions'
import { startTestService, type TestService } from './support/service'

const DATABASE_URL = process.env.DATABASE_URL
const NATS_URL = process.env.NATS_URL

/** As in event-stream.test.ts: a standby delivery role on a shared PostgreSQL rejects stop() with "aborted". */
const standbyAbort = (err: unknown) => {
  if (!(DATABASE_URL && String(err).includes('aborted'))) throw err
}
async function service(env: Record<string, string> = {}, opts: Parameters<typeof startTestService>[1] = {}) {
  const svc = await startTestService(env, opts)
  const stop = svc.stop
  svc.stop = () => stop().catch(standbyAbort)
  return svc
}

const clock = manualClock('2026-05-04T08:00:00.000Z')
/** Heartbeats often, so that a clock set past a session's expiry is noticed soon. */
const t = await service({ EVENT_STREAM_HEARTBEAT_S: '0.2' }, { clock })
/** Polls nearly never: only wake-ups bring events in time. */
const quiet = await service({ EVENT_STREAM_POLL_S: '600' })
if (!DATABASE_URL || !NATS_URL) console.log('[event-stream-caps] NATS per-account wake-up test skipped: DATABASE_URL and NATS_URL are not both set')
const natsPair =
  DATABASE_URL && NATS_URL ? [await service({ NATS_URL, EVENT_STREAM_POLL_S: '600' }), await service({ NATS_URL, EVENT_STREAM_POLL_S: '600' })] : []

/** Waits for a condition, bounded; fails with `what` if it never holds. */
async function until<T>(what: string, probe: () => T | undefined | false, ms = 10_000): Promise<T> {
  const deadline = performance.now() + ms
  for (;;) {
    const v = probe()
    if (v !== undefined && v !== false) return v
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(10)
  }
}

type Auth = { key: string; account?: string }

/** A small SSE reader: event ids and comments as they arrive. */
class Stream {
  ids: string[] = []
  comments: string[] = []
  ended = false
  private constructor(
    readonly response: Response,
    private readonly abort: AbortController,
  ) {
    void this.read()
  }

  static async open(svc: TestService, auth: Auth): Promise<Stream> {
    const res = await request(svc, auth)
    if (res.response.status !== 200) throw new Error(`stream refused: ${res.response.status} ${await res.response.text()}`)
    return new Stream(res.response, res.abort)
  }

  private async read() {
    const reader = this.response.body!.getReader()
    const decoder = new TextDecoder()
    let buffer = ''
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buffer += decoder.decode(value, { stream: true })
        let i: number
        while ((i = buffer.indexOf('\n\n')) !== -1) {
          for (const line of buffer.slice(0, i).split('\n')) {
            if (line.startsWith(':')) this.comments.push(line.slice(1).trim())
            else if (line.startsWith('id: ')) this.ids.push(line.slice(4))
          }
          buffer = buffer.slice(i + 2)
        }
      }
    } catch {
      // Aborted by close().
    } finally {
      this.ended = true
    }
  }

  waitFor(id: string) {
    return until(`event ${id}`, () => this.ids.includes(id))
  }

  close() {
    this.abort.abort()
  }
}

async function request(svc: TestService, auth: Auth) {
  const abort = new AbortController()
  const headers: Record<string, string> = { authorization: `Bearer ${auth.key}`, accept: 'text/event-stream' }
  if (auth.account) headers['service-account'] = auth.account
  return { response: await fetch(`${svc.baseUrl}/v1/events`, { headers, signal: abort.signal }), abort }
}

async function setup(svc: TestService = t) {
  const a = await svc.account()
  return { ...a, k: { key: a.key, account: a.id } }
}

async function accountSession(svc: TestService, key: string, account: string) {
  const r = await svc.call('POST', '/v1/account_sessions', { key, body: { account, components: { call_logs: { enabled: true } } } })
  expect(r.status).toBe(200)
  return r.body.client_secret as string
}

/** Commits events to the outbox in one transaction, as a producer does (no wake-up published). */
async function emit(svc: TestService, accountId: string, type = 'call.initiated'): Promise<StoredEvent> {
  const [row] = await svc.service.database.db.select({ platformId: accounts.platformId, mode: accounts.mode }).from(accounts).where(eq(accounts.id, accountId))
  const [e] = await svc.service.database.db.transaction((tx) =>
    appendEvents(tx, svc.service.clock, [
      { platformId: row!.platformId, accountId, mode: row!.mode, type, data: { call_id: `call_${Math.random().toString(36).slice(2)}` } },
    ]),
  )
  return e!
}

/** Opens `n` streams at once (the limits hold for concurrent opens too). */
const openMany = (svc: TestService, n: number, auth: (i: number) => Auth) => Promise.all(Array.from({ length: n }, (_, i) => Stream.open(svc, auth(i))))

describe('open streams per credential', () => {
  test(`stream ${MAX_STREAMS_PER_CREDENTIAL + 1} of one key gets 429 rate_limited with Retry-After while ${MAX_STREAMS_PER_CREDENTIAL} are open; closing one frees a slot`, async () => {
    const a = await setup()
    const before = t.service.eventStreams.size
    const streams = await openMany(t, MAX_STREAMS_PER_CREDENTIAL, () => a.k)
    expect(t.service.eventStreams.size).toBe(before + MAX_STREAMS_PER_CREDENTIAL)

    const refused = await t.call('GET', '/v1/events', a.k)
    expect(refused.status).toBe(429)
    expect(refused.body.code).toBe('rate_limited')
    expect(refused.body.error).toContain(`This credential already holds ${MAX_STREAMS_PER_CREDENTIAL} open event streams`)
    expect(refused.headers.get('retry-after')).toBe(String(STREAM_LIMIT_RETRY_AFTER_S))
    // The limit is the key's, whichever account it streams.
    const sibling = await t.account({ key: a.key })
    const elsewhere = await t.call('GET', '/v1/events', { key: a.key, account: sibling.id })
    expect(elsewhere.status).toBe(429)
    expect(elsewhere.body.error).toContain('This credential')
    // HEAD opens no stream, so it is not refused.
    const head = await fetch(`${t.baseUrl}/v1/events`, { method: 'HEAD', headers: { authorization: `Bearer ${a.key}`, 'service-account': a.id } })
    expect(head.status).toBe(200)
    expect(t.service.eventStreams.size).toBe(before + MAX_STREAMS_PER_CREDENTIAL)

    streams[0]!.close()
    await until('the server to drop the closed stream', () => t.service.eventStreams.size === before + MAX_STREAMS_PER_CREDENTIAL - 1)
    const again = await Stream.open(t, a.k)
    const e = await emit(t, a.id)
    await again.waitFor(e.id)
    for (const s of [...streams.slice(1), again]) s.close()
    await until('the server to drop every stream', () => t.service.eventStreams.size === before)
  })

  test('a refused stream leaves no slot taken: after the streams close, the key opens its full share again', async () => {
    const a = await setup()
    const before = t.service.eventStreams.size
    // Asked at once, one more than the limit: exactly one is refused.
    const answers = await Promise.all(Array.from({ length: MAX_STREAMS_PER_CREDENTIAL + 1 }, () => request(t, a.k)))
    expect(answers.filter((r) => r.response.status === 429)).toHaveLength(1)
    expect(answers.filter((r) => r.response.status === 200)).toHaveLength(MAX_STREAMS_PER_CREDENTIAL)
    for (const r of answers) r.abort.abort()
    await until('the server to drop the streams', () => t.service.eventStreams.size === before)
    const streams = await openMany(t, MAX_STREAMS_PER_CREDENTIAL, () => a.k)
    for (const s of streams) s.close()
    await until('the server to drop the streams', () => t.service.eventStreams.size === before)
  })
})

describe('open streams per account', () => {
  test(`stream ${MAX_STREAMS_PER_ACCOUNT + 1} of one account gets 429 whatever the credential; other accounts are not affected`, async () => {
    const a = await setup()
    const before = t.service.eventStreams.size
    const sessions = await Promise.all(
      Array.from({ length: Math.ceil(MAX_STREAMS_PER_ACCOUNT / MAX_STREAMS_PER_CREDENTIAL) + 1 }, () => accountSession(t, a.key, a.id)),
    )
    const streams = await openMany(t, MAX_STREAMS_PER_ACCOUNT, (i) => ({ key: sessions[Math.floor(i / MAX_STREAMS_PER_CREDENTIAL)]! }))
    // A session with no stream yet, and the platform key: both refused for the account.
    for (const key of [sessions.at(-1)!, a.key]) {
      const r = await t.call('GET', '/v1/events', { key, account: key === a.key ? a.id : undefined })
      expect(r.status).toBe(429)
      expect(r.body.code).toBe('rate_limited')
      expect(r.body.error).toContain(`This account already holds ${MAX_STREAMS_PER_ACCOUNT} open event streams`)
      expect(r.headers.get('retry-after')).toBe(String(STREAM_LIMIT_RETRY_AFTER_S))
    }
    // The same key streams its other accounts.
    const sibling = await t.account({ key: a.key })
    const other = await Stream.open(t, { key: a.key, account: sibling.id })
    other.close()
    for (const s of streams) s.close()
    await until('the server to drop the streams', () => t.service.eventStreams.size === before)
  })
})

describe('session expiry', () => {
  test("a stream opened by an account session ends at the session's expiry, with a last comment; a key's stream goes on", async () => {
    const a = await setup()
    const token = await accountSession(t, a.key, a.id)
    const bySession = await Stream.open(t, { key: token })
    const byKey = await Stream.open(t, a.k)
    const e = await emit(t, a.id)
    await bySession.waitFor(e.id)
    const before = t.service.eventStreams.size

    clock.advance(ACCOUNT_SESSION_TTL_S * 1000 - 60_000)
    // Still valid a minute before: a few heartbeats later it is still open.
    const beats = bySession.comments.filter((c) => c === 'heartbeat').length
    await until('two more heartbeats', () => bySession.comments.filter((c) => c === 'heartbeat').length >= beats + 2)
    expect(bySession.ended).toBe(false)

    clock.advance(60_000)
    await until('the session stream to end', () => bySession.ended)
    expect(bySession.comments.at(-1)).toStartWith('session-expired')
    expect(t.service.eventStreams.size).toBe(before - 1)
    // Reconnecting with the same token is refused; the key's stream still carries events.
    const retried = await t.call('GET', '/v1/events', { key: token })
    expect(retried.status).toBe(401)
    expect(retried.body.code).toBe('session_expired')
    expect(byKey.ended).toBe(false)
    const later = await emit(t, a.id)
    await byKey.waitFor(later.id)
    byKey.close()
  })
})

describe('wake-ups by account', () => {
  test("a stream of account A is not woken by account B's commits, by any path; A's own commits wake it", async () => {
    const svc = t
    const a = await setup(svc)
    const b = await setup(svc)
    const sa = await Stream.open(svc, a.k)
    const sb = await Stream.open(svc, b.k)
    // The read every stream makes when it opens; A has no event, so nothing reads again for it.
    await until('the first read of A', () => svc.service.eventStreams.reads(a.id) >= 1)
    const readsOfA = svc.service.eventStreams.reads(a.id)
    const readsOfB = svc.service.eventStreams.reads(b.id)

    // A mutation (global wake-up, no account named): the scan wakes B only.
    const r = await svc.call('POST', '/v1/test_helpers/events', { ...b.k, body: { event: 'call.mobile_push_wakeup' } })
    expect(r.status).toBe(200)
    await sb.waitFor(r.body.id)
    // A commit with no wake-up at all: the poll's scan finds it.
    const polled = await emit(svc, b.id)
    await sb.waitFor(polled.id)
    // A producer that names its account on the per-account subject.
    const named = await emit(svc, b.id)
    publishOutboxWake(svc.service.bus, [b.id])
    await sb.waitFor(named.id)

    expect(svc.service.eventStreams.reads(a.id)).toBe(readsOfA)
    expect(svc.service.eventStreams.reads(b.id)).toBeGreaterThan(readsOfB)
    expect(sa.ids).toEqual([])

    const mine = await emit(svc, a.id)
    await sa.waitFor(mine.id)
    expect(svc.service.eventStreams.reads(a.id)).toBeGreaterThan(readsOfA)
    sa.close()
    sb.close()
  })

  test('the per-account subject wakes the stream with polling nearly off', async () => {
    const a = await setup(quiet)
    const s = await Stream.open(quiet, a.k)
    const e = await emit(quiet, a.id)
    publishOutboxWake(quiet.service.bus, [a.id])
    await s.waitFor(e.id)
    s.close()
  })

  test.skipIf(!DATABASE_URL || !NATS_URL)("with NATS: a per-account wake-up published by one process wakes that account's stream on another", async () => {
    const [one, two] = natsPair as [TestService, TestService]
    const a = await setup(one)
    const other = await setup(one)
    const onTwo = await Stream.open(two, a.k)
    const otherOnTwo = await Stream.open(two, other.k)
    await until('the first read of the other account', () => two.service.eventStreams.reads(other.id) >= 1)
    const readsOfOther = two.service.eventStreams.reads(other.id)
    const e = await emit(one, a.id)
    publishOutboxWake(one.service.bus, [a.id])
    await onTwo.waitFor(e.id)
    expect(two.service.eventStreams.reads(other.id)).toBe(readsOfOther)
    onTwo.close()
    otherOnTwo.close()
  })
})
