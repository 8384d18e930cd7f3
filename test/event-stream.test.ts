/**
 * The event stream (spec "Events" → "Transports"; GET /v1/events, streamEvents):
 * server-sent events for one account, carrying the call.* events except
 * call.ringing and call.emergency, with flat payloads (`event` instead of `type`,
 * no id, created_at or data wrapper). Heartbeat comments keep it open;
 * Last-Event-ID resumes after a dropped connection; closing the connection frees
 * the stream. With DATABASE_URL and NATS_URL set, a stream on one service sees
 * events committed by another.
 *
 * Events are written as producers will write them: through the outbox, inside a
 * transaction (appendEvents), and through POST /v1/test_helpers/events.
 */
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { manualClock } from '../src/clock'
import { accounts } from '../src/db/schema'
import { EVENT_TYPES, isStreamEvent } from '../src/events/catalog'
import { appendEvents, type StoredEvent } from '../src/events/outbox'
import { OUTBOX_WAKE_SUBJECT, RESUME_WINDOW_MS } from '../src/events/stream'
import { sampleAccount, startTestService, type TestService } from './support/service'

const DATABASE_URL = process.env.DATABASE_URL
const NATS_URL = process.env.NATS_URL

/**
 * With a shared PostgreSQL another process may hold the webhook-delivery lock; the
 * delivery role of a service that never got it then rejects stop() with its
 * abandoned wait ("aborted"). That is the delivery role's business, not the
 * stream's: tolerate exactly that.
 */
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
const t = await service({ EVENT_STREAM_HEARTBEAT_S: '0.2' }, { clock })
/** Polls nearly never: only a bus wake-up brings events in time. */
const quiet = await service({ EVENT_STREAM_POLL_S: '600' })
/** Stopped by a test. */
const stopping = await service()
stopping.stop = async () => {}

if (!DATABASE_URL) console.log('[event-stream] cross-process tests skipped: DATABASE_URL is not set (two services need one PostgreSQL)')
else if (!NATS_URL) console.log('[event-stream] NATS cross-service test skipped: NATS_URL is not set')
/** Two processes on one database, without NATS: they see each other's commits by polling. */
const polled = DATABASE_URL ? [await service(), await service()] : []
/** Two processes on one database and one NATS, polling nearly off. */
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

interface SseMessage {
  id?: string
  event?: string
  data?: string
  retry?: string
}

/** A small SSE reader: collects messages and comments as they arrive. */
class Stream {
  messages: SseMessage[] = []
  comments: string[] = []
  retry: string | undefined
  ended = false
  private buffer = ''
  private constructor(
    readonly response: Response,
    private readonly abort: AbortController,
  ) {
    void this.read()
  }

  static async open(svc: TestService, auth: { key: string; account?: string }, headers: Record<string, string> = {}): Promise<Stream> {
    const abort = new AbortController()
    const h: Record<string, string> = { authorization: `Bearer ${auth.key}`, accept: 'text/event-stream', ...headers }
    if (auth.account) h['service-account'] = auth.account
    const res = await fetch(`${svc.baseUrl}/v1/events`, { headers: h, signal: abort.signal })
    if (res.status !== 200) throw new Error(`stream refused: ${res.status} ${await res.text()}`)
    return new Stream(res, abort)
  }

  private async read() {
    const reader = this.response.body!.getReader()
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        this.buffer += decoder.decode(value, { stream: true })
        let i: number
        while ((i = this.buffer.indexOf('\n\n')) !== -1) {
          const block = this.buffer.slice(0, i)
          this.buffer = this.buffer.slice(i + 2)
          const msg: SseMessage = {}
          let fields = 0
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) {
              this.comments.push(line.slice(1).trim())
              continue
            }
            const colon = line.indexOf(':')
            const name = line.slice(0, colon) as keyof SseMessage
            const value = line.slice(colon + 1).replace(/^ /, '')
            msg[name] = name === 'data' && msg.data !== undefined ? `${msg.data}\n${value}` : value
            fields++
          }
          if (msg.retry !== undefined) this.retry = msg.retry
          if (fields > 0 && msg.data !== undefined) this.messages.push(msg)
        }
      }
    } catch {
      // Aborted by close().
    } finally {
      this.ended = true
    }
  }

  /** The parsed data of each message. */
  get payloads(): Record<string, unknown>[] {
    return this.messages.map((m) => JSON.parse(m.data!))
  }

  get ids(): string[] {
    return this.messages.map((m) => m.id!)
  }

  /** Waits until a message with this id arrives. */
  waitFor(id: string) {
    return until(`event ${id}`, () => this.messages.find((m) => m.id === id))
  }

  waitForComment(prefix: string) {
    return until(`comment "${prefix}"`, () => this.comments.find((c) => c.startsWith(prefix)))
  }

  close() {
    this.abort.abort()
  }
}

async function accountFacts(svc: TestService, accountId: string) {
  const [row] = await svc.service.database.db.select({ platformId: accounts.platformId, mode: accounts.mode }).from(accounts).where(eq(accounts.id, accountId))
  return row!
}

/** Commits events to the outbox in one transaction, as a producer does. */
async function emit(svc: TestService, accountId: string, list: { type: string; data?: Record<string, unknown> }[]): Promise<StoredEvent[]> {
  const { platformId, mode } = await accountFacts(svc, accountId)
  return svc.service.database.db.transaction((tx) =>
    appendEvents(
      tx,
      svc.service.clock,
      list.map((e) => ({ platformId, accountId, mode, type: e.type, data: e.data ?? { call_id: `call_${Math.random().toString(36).slice(2)}` } })),
    ),
  )
}

const answered = (callId: string) => ({
  call_id: callId,
  direction: 'inbound',
  from_number: '+15005550199',
  from_name: 'Caller',
  to_number: '+15005550006',
  user_id: 'usr_answering',
  to_user_id: 'usr_answering',
  started_at: '2026-05-04T07:59:50.000Z',
  answered_at: '2026-05-04T07:59:58.000Z',
  connected_at: '2026-05-04T07:59:58.000Z',
})

async function setup(svc: TestService = t) {
  const a = await svc.account()
  return { ...a, k: { key: a.key, account: a.id } }
}

async function accountSession(key: string, account: string, components: Record<string, { enabled: boolean }>) {
  const r = await t.call('POST', '/v1/account_sessions', { key, body: { account, components } })
  expect(r.status).toBe(200)
  return r.body.client_secret as string
}

describe('GET /v1/events', () => {
  test('answers text/event-stream, no-cache, with X-Request-Id, and opens with a retry hint', async () => {
    const a = await setup()
    const s = await Stream.open(t, a.k)
    expect(s.response.headers.get('content-type')).toStartWith('text/event-stream')
    expect(s.response.headers.get('cache-control')).toBe('no-cache')
    expect(s.response.headers.get('x-request-id')).toMatch(/^req_/)
    expect(await until('the retry hint', () => s.retry)).toBe('3000')
    s.close()
  })

  test('each event is one message: id is the event id, event is its type, data is the flat payload', async () => {
    const a = await setup()
    const s = await Stream.open(t, a.k)
    const data = answered('call_flat_1')
    const [e] = await emit(t, a.id, [{ type: 'call.answered', data }])
    const m = await s.waitFor(e!.id)
    expect(m.id).toMatch(/^evt_/)
    expect(m.event).toBe('call.answered')
    const payload = JSON.parse(m.data!)
    // Flat: the data fields plus `event`; no id, type, created_at, account_id or data wrapper.
    expect(payload).toEqual({ event: 'call.answered', ...data })
    for (const wrapper of ['id', 'type', 'created_at', 'data', 'account_id']) expect(payload).not.toHaveProperty(wrapper)
    s.close()
  })

  test('carries exactly the stream call.* events, in commit order: never call.ringing, call.emergency or other types', async () => {
    const a = await setup()
    const s = await Stream.open(t, a.k)
    // One of every type in the catalog, in one transaction.
    const all = await emit(
      t,
      a.id,
      EVENT_TYPES.map((type) => ({ type })),
    )
    // Non-call types through the sandbox helper (the mutation path, with its bus wake-up), and one stream type.
    for (const event of ['fax.received', 'queue.call.queued', 'user.created', 'device.provisioned', 'call.mobile_push_wakeup']) {
      const r = await t.call('POST', '/v1/test_helpers/events', { ...a.k, body: { event } })
      expect(r.status).toBe(200)
    }
    const [sentinel] = await emit(t, a.id, [{ type: 'call.end' }])
    await s.waitFor(sentinel!.id)

    const expected = all.filter((e) => isStreamEvent(e.type)).map((e) => e.type)
    expect(expected).toEqual(EVENT_TYPES.filter((type) => type.startsWith('call.') && type !== 'call.ringing' && type !== 'call.emergency'))
    const types = s.messages.map((m) => m.event)
    expect(types).toEqual([...expected, 'call.mobile_push_wakeup', 'call.end'])
    expect(types).not.toContain('call.ringing')
    expect(types).not.toContain('call.emergency')
    expect(s.ids.slice(0, expected.length)).toEqual(all.filter((e) => isStreamEvent(e.type)).map((e) => e.id))
    for (const m of s.messages) expect(JSON.parse(m.data!).event).toBe(m.event)
    s.close()
  })

  test("account isolation: another account's events never appear, on the same platform or another", async () => {
    const a = await setup()
    const sibling = await t.call('POST', '/v1/accounts', { key: a.key, body: sampleAccount({ name: 'Sibling' }) })
    expect(sibling.status).toBe(200)
    const stranger = await setup()
    const sa = await Stream.open(t, a.k)
    const sb = await Stream.open(t, { key: a.key, account: sibling.body.id })
    const others = [
      ...(await emit(t, sibling.body.id, [{ type: 'call.initiated' }, { type: 'call.end' }])),
      ...(await emit(t, stranger.id, [{ type: 'call.answered' }])),
    ]
    const [mine] = await emit(t, a.id, [{ type: 'call.initiated' }])
    await sa.waitFor(mine!.id)
    await sb.waitFor(others[1]!.id)
    expect(sa.ids).toEqual([mine!.id])
    expect(sb.ids).toEqual([others[0]!.id, others[1]!.id])
    sa.close()
    sb.close()
  })

  test('an account session with the call_logs component streams its own account', async () => {
    const a = await setup()
    const token = await accountSession(a.key, a.id, { call_logs: { enabled: true } })
    const s = await Stream.open(t, { key: token })
    const [e] = await emit(t, a.id, [{ type: 'call.incoming' }])
    expect((await s.waitFor(e!.id)).event).toBe('call.incoming')
    s.close()
  })
})

describe('authentication (spec Conventions 2, Authentication)', () => {
  test('no credentials → 401; a key without Service-Account → 400 account_header_required', async () => {
    const a = await setup()
    const none = await t.call('GET', '/v1/events', { account: a.id })
    expect(none.status).toBe(401)
    expect(none.body.code).toBe('unauthorized')
    const bad = await t.call('GET', '/v1/events', { key: 'sk_test_not_a_real_key_0000000000', account: a.id })
    expect(bad.status).toBe(401)
    const noHeader = await t.call('GET', '/v1/events', { key: a.key })
    expect(noHeader.status).toBe(400)
    expect(noHeader.body.code).toBe('account_header_required')
  })

  test("another platform's key → 403; a live key on a sandbox account → 403", async () => {
    const a = await setup()
    const other = await t.platform({ live_enabled: true })
    const r = await t.call('GET', '/v1/events', { key: other.test_key, account: a.id })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('account_forbidden')
    const own = await t.call('GET', '/v1/events', { key: other.live_key, account: (await t.account({ key: other.test_key })).id })
    expect(own.status).toBe(403)
    expect(own.body.code).toBe('account_mode_mismatch')
  })

  test('a user token → 403; an account session without call_logs → 403 missing_capability, or for another account → 403', async () => {
    const a = await setup()
    const user = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'streamer@example.com' } })
    expect(user.status).toBe(200)
    const us = await t.call('POST', '/v1/user_sessions', { key: a.key, body: { user: user.body.id } })
    expect(us.status).toBe(200)
    const asUser = await t.call('GET', '/v1/events', { key: us.body.client_secret })
    expect(asUser.status).toBe(403)

    const onboarding = await accountSession(a.key, a.id, { account_onboarding: { enabled: true } })
    const lacking = await t.call('GET', '/v1/events', { key: onboarding })
    expect(lacking.status).toBe(403)
    expect(lacking.body.code).toBe('missing_capability')

    const b = await t.account({ key: a.key })
    const callLogs = await accountSession(a.key, a.id, { call_logs: { enabled: true } })
    const elsewhere = await t.call('GET', '/v1/events', { key: callLogs, account: b.id })
    expect(elsewhere.status).toBe(403)
    expect(elsewhere.body.code).toBe('account_forbidden')
  })

  test('a Last-Event-ID longer than an id can be → 400 validation_error', async () => {
    const a = await setup()
    const r = await t.call('GET', '/v1/events', { ...a.k, headers: { 'last-event-id': 'e'.repeat(256) } })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
  })

  test('HEAD answers the stream headers without opening a stream', async () => {
    const a = await setup()
    const before = t.service.eventStreams.size
    const r = await fetch(`${t.baseUrl}/v1/events`, { method: 'HEAD', headers: { authorization: `Bearer ${a.key}`, 'service-account': a.id } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/event-stream')
    expect(t.service.eventStreams.size).toBe(before)
  })
})

describe('keeping the connection', () => {
  test('heartbeat comments arrive while nothing happens', async () => {
    const a = await setup()
    const s = await Stream.open(t, a.k)
    await until('two heartbeats', () => s.comments.filter((c) => c === 'heartbeat').length >= 2)
    expect(s.messages).toEqual([])
    s.close()
  })

  test('closing the connection ends the stream on the server: no subscription or poll is left behind', async () => {
    const a = await setup()
    const before = t.service.eventStreams.size
    const streams = await Promise.all([1, 2, 3].map(() => Stream.open(t, a.k)))
    expect(t.service.eventStreams.size).toBe(before + 3)
    for (const s of streams) s.close()
    await until('the server to drop the streams', () => t.service.eventStreams.size === before)
  })
})

describe('Last-Event-ID', () => {
  test('resuming after a dropped connection replays exactly the missed events, in order, then goes live', async () => {
    const a = await setup()
    const first = await Stream.open(t, a.k)
    const seen = await emit(t, a.id, [{ type: 'call.initiated' }, { type: 'call.answered' }])
    await first.waitFor(seen[1]!.id)
    first.close()
    await until('the first stream to close', () => first.ended)

    // While disconnected: stream events, skipped types, and another account's events.
    const other = await setup()
    const missed = [
      ...(await emit(t, a.id, [{ type: 'call.transfer' }, { type: 'call.ringing' }])),
      ...(await emit(t, other.id, [{ type: 'call.end' }])),
      ...(await emit(t, a.id, [{ type: 'queue.call.queued' }, { type: 'call.end' }])),
    ].filter((e) => e.accountId === a.id && isStreamEvent(e.type))
    expect(missed.map((e) => e.type)).toEqual(['call.transfer', 'call.end'])

    const resumed = await Stream.open(t, a.k, { 'last-event-id': seen[1]!.id })
    await resumed.waitFor(missed[1]!.id)
    const [live] = await emit(t, a.id, [{ type: 'call.initiated' }])
    await resumed.waitFor(live!.id)
    expect(resumed.ids).toEqual([...missed.map((e) => e.id), live!.id])
    expect(resumed.comments.filter((c) => c.startsWith('resume-'))).toEqual([])
    resumed.close()
  })

  test("an unknown id, or another account's, streams from now and says so", async () => {
    const a = await setup()
    const other = await setup()
    const before = await emit(t, a.id, [{ type: 'call.initiated' }])
    const [foreign] = await emit(t, other.id, [{ type: 'call.initiated' }])
    for (const id of ['evt_does_not_exist', foreign!.id]) {
      const s = await Stream.open(t, a.k, { 'last-event-id': id })
      await s.waitForComment('resume-unknown')
      const [live] = await emit(t, a.id, [{ type: 'call.end' }])
      await s.waitFor(live!.id)
      expect(s.ids).toEqual([live!.id])
      expect(s.ids).not.toContain(before[0]!.id)
      s.close()
    }
  })

  test('an id older than the retention window (24 h of the service clock) streams from now and says so', async () => {
    const a = await setup()
    const [old] = await emit(t, a.id, [{ type: 'call.initiated' }])
    const [later] = await emit(t, a.id, [{ type: 'call.end' }])
    clock.advance(RESUME_WINDOW_MS + 60_000)
    const s = await Stream.open(t, a.k, { 'last-event-id': old!.id })
    await s.waitForComment('resume-expired')
    const [live] = await emit(t, a.id, [{ type: 'call.answered' }])
    await s.waitFor(live!.id)
    expect(s.ids).toEqual([live!.id])
    expect(s.ids).not.toContain(later!.id)
    s.close()
  })
})

describe('wake-ups and shutdown', () => {
  test('a committed mutation wakes the stream over the bus (polling nearly off)', async () => {
    const svc = quiet
    const a = await setup(svc)
    const s = await Stream.open(svc, a.k)
    const r = await svc.call('POST', '/v1/test_helpers/events', { ...a.k, body: { event: 'call.mobile_push_wakeup' } })
    expect(r.status).toBe(200)
    expect((await s.waitFor(r.body.id)).event).toBe('call.mobile_push_wakeup')
    // A producer outside the gateway commits, then publishes the wake-up itself.
    const [e] = await emit(svc, a.id, [{ type: 'call.initiated' }])
    svc.service.bus.publish(OUTBOX_WAKE_SUBJECT, '')
    await s.waitFor(e!.id)
    s.close()
  })

  test('stopping the service ends its open streams', async () => {
    const svc = stopping
    const a = await setup(svc)
    const s = await Stream.open(svc, a.k)
    await svc.service.stop().catch(standbyAbort)
    await until('the stream to end', () => s.ended)
    expect(svc.service.eventStreams.size).toBe(0)
  })
})

describe('commit order', () => {
  // Needs two transactions open at once: PGlite runs one at a time, and so does a pool of one connection.
  test.skipIf(!DATABASE_URL || process.env.DATABASE_POOL_SIZE === '1')(
    'an event committed after a later one (a lower seq, visible late) is still streamed, once',
    async () => {
      const a = await setup()
      const s = await Stream.open(t, a.k)
      let commit!: () => void
      const held = new Promise<void>((r) => (commit = r))
      let early: StoredEvent[] = []
      const { platformId, mode } = await accountFacts(t, a.id)
      // Takes its seq first, commits last.
      const slow = t.service.database.db.transaction(async (tx) => {
        early = await appendEvents(tx, t.service.clock, [{ platformId, accountId: a.id, mode, type: 'call.initiated', data: { call_id: 'call_late' } }])
        await held
      })
      await until('the slow transaction to take its seq', () => early.length === 1)
      const [later] = await emit(t, a.id, [{ type: 'call.answered' }])
      expect(later!.seq).toBeGreaterThan(early[0]!.seq)
      await s.waitFor(later!.id)
      commit()
      await slow
      await s.waitFor(early[0]!.id)
      const [last] = await emit(t, a.id, [{ type: 'call.end' }])
      await s.waitFor(last!.id)
      expect(s.ids).toEqual([later!.id, early[0]!.id, last!.id])
      s.close()
    },
  )
})

describe('across processes', () => {
  test.skipIf(!DATABASE_URL)('two services on one database: a stream on one sees events committed by the other (polling)', async () => {
    const [one, two] = polled as [TestService, TestService]
    const a = await setup(one)
    const s = await Stream.open(two, a.k)
    const [e] = await emit(one, a.id, [{ type: 'call.initiated' }])
    await s.waitFor(e!.id)
    s.close()
  })

  test.skipIf(!DATABASE_URL || !NATS_URL)('with NATS: a stream on any gateway sees events committed by any process, woken over NATS', async () => {
    // Polling nearly off: only the NATS wake-up can bring the events across in time.
    const [one, two] = natsPair as [TestService, TestService]
    const a = await setup(one)
    const onTwo = await Stream.open(two, a.k)
    const onOne = await Stream.open(one, a.k)

    // Committed by a mutation on one; streamed by two (and by one).
    const r = await one.call('POST', '/v1/test_helpers/events', { ...a.k, body: { event: 'call.mobile_push_wakeup' } })
    expect(r.status).toBe(200)
    await onTwo.waitFor(r.body.id)
    await onOne.waitFor(r.body.id)

    // Committed on two by a producer that publishes the wake-up; streamed by one.
    const [e] = await emit(two, a.id, [{ type: 'call.end' }])
    two.service.bus.publish(OUTBOX_WAKE_SUBJECT, '')
    await onOne.waitFor(e!.id)
    await onTwo.waitFor(e!.id)
    expect(onOne.ids).toEqual([r.body.id, e!.id])
    expect(onTwo.ids).toEqual([r.body.id, e!.id])
    onOne.close()
    onTwo.close()
  })
})
