/**
 * A real HTTP webhook receiver for end-to-end tests: Bun.serve on 127.0.0.1 with a
 * free port, recording every request with its exact raw body and headers.
 *
 *   const rx = await startWebhookReceiver()          // stopped by afterAll (see below)
 *   // register rx.url as a webhook endpoint, trigger events, then:
 *   const [hit] = await rx.waitFor(1)                 // bounded polling, throws on timeout
 *   const event = await rx.verify(hit, secret)        // stripe's verifier; returns the parsed event
 *
 * Answers: 200 unless told otherwise. `rx.respond(500)` answers 500 to every
 * later request; `rx.respond([500, 503, 200])` answers by arrival order (the
 * first later request gets 500, the second 503, ...; once the list is used up,
 * 200); `rx.respond((req) => ...)` decides per request and may be async (to delay
 * an answer, e.g. past the service's timeout). The status sent is recorded on
 * each request.
 *
 * Lifetime: the receiver registers `afterAll(stop)` in the scope it is started
 * in: at a file's top level it lives for the file; started inside a test, Bun
 * runs that hook when the test ends. Pass `{ autoStop: false }` to stop it yourself.
 *
 * Only requests to the receiver's own path (`rx.url`, which carries a random
 * segment) are recorded; anything else (say, a stale endpoint of an earlier run
 * on a shared database whose port happens to match) gets 410 and is ignored.
 */
import { afterAll } from 'bun:test'
import Stripe from 'stripe'

export interface ReceivedWebhook {
  /** Arrival order at this receiver, from 0. */
  index: number
  method: string
  /** Path and query as requested. */
  path: string
  /** Header names in lower case. */
  headers: Record<string, string>
  /** The body exactly as received (UTF-8 text). */
  rawBody: string
  /** The body parsed as JSON, or undefined when it is not JSON. */
  body: any
  /** Wall-clock ms when it arrived. */
  receivedAt: number
  /** The status this receiver answered (set once the answer is decided). */
  status?: number
}

export type Responder = (req: ReceivedWebhook) => number | Promise<number>

export interface WaitOptions {
  /** Give up after this long (default 10 s); the error lists what did arrive. */
  timeoutMs?: number
  /** Count only the requests this accepts. */
  where?: (req: ReceivedWebhook) => boolean
}

export interface WebhookReceiver {
  /** The URL to register as a webhook endpoint. */
  url: string
  /** Every recorded request, in arrival order. */
  readonly requests: ReceivedWebhook[]
  /** Parsed bodies of the recorded requests, in arrival order. */
  events(): any[]
  /** How to answer later requests (see the file header). */
  respond(how: number | number[] | Responder): void
  /** Waits (bounded polling loop) until `n` requests (matching `where`) have arrived; returns the first `n` of them. */
  waitFor(n: number, opts?: WaitOptions): Promise<ReceivedWebhook[]>
  /** Waits for the request carrying the event with this id. */
  waitForEvent(eventId: string, opts?: Omit<WaitOptions, 'where'>): Promise<ReceivedWebhook>
  /** Verifies X-Service-Signature with stripe's verifier; resolves to the parsed event, rejects when invalid. */
  verify(req: ReceivedWebhook, secret: string, toleranceSeconds?: number): Promise<any>
  /** Forgets the recorded requests (arrival indexes keep counting). */
  clear(): void
  stop(): Promise<void>
}

const stripe = new Stripe('sk_test_x')

/** Stripe's webhook verifier over `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export function verifySignature(rawBody: string, header: string, secret: string, toleranceSeconds = 300): Promise<any> {
  return stripe.webhooks.constructEventAsync(rawBody, header, secret, toleranceSeconds)
}

export async function startWebhookReceiver(opts: { autoStop?: boolean } = {}): Promise<WebhookReceiver> {
  const path = `/hooks/${crypto.randomUUID()}`
  const requests: ReceivedWebhook[] = []
  let arrivals = 0
  let responder: Responder = () => 200

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      const rawBody = await request.text()
      if (url.pathname !== path) return new Response('unknown hook', { status: 410 })
      const headers: Record<string, string> = {}
      request.headers.forEach((v, k) => {
        headers[k.toLowerCase()] = v
      })
      let body: unknown
      try {
        body = JSON.parse(rawBody)
      } catch {}
      const req: ReceivedWebhook = {
        index: arrivals++,
        method: request.method,
        path: url.pathname + url.search,
        headers,
        rawBody,
        body,
        receivedAt: Date.now(),
      }
      requests.push(req)
      let status = 500
      try {
        status = await responder(req)
      } finally {
        req.status = status
      }
      return new Response(status >= 200 && status < 300 ? 'ok' : 'no', { status })
    },
  })

  const rx: WebhookReceiver = {
    url: `http://127.0.0.1:${server.port}${path}`,
    requests,
    events: () => requests.map((r) => r.body),
    respond(how) {
      if (typeof how === 'number') responder = () => how
      else if (Array.isArray(how)) {
        const queue = [...how]
        responder = () => queue.shift() ?? 200
      } else responder = how
    },
    async waitFor(n, o = {}) {
      const timeoutMs = o.timeoutMs ?? 10_000
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const matching = o.where ? requests.filter(o.where) : requests
        if (matching.length >= n) return matching.slice(0, n)
        if (Date.now() >= deadline) {
          const seen = requests.map((r) => `${r.body?.type ?? '?'} ${r.body?.id ?? ''}`).join(', ') || 'nothing'
          throw new Error(`webhook receiver: expected ${n} request(s) within ${timeoutMs} ms, got ${matching.length} matching (all received: ${seen})`)
        }
        await Bun.sleep(10)
      }
    },
    async waitForEvent(eventId, o = {}) {
      const [hit] = await rx.waitFor(1, { ...o, where: (r) => r.body?.id === eventId })
      return hit!
    },
    verify(req, secret, toleranceSeconds = 300) {
      return verifySignature(req.rawBody, req.headers['x-service-signature'] ?? '', secret, toleranceSeconds)
    },
    clear() {
      requests.length = 0
    },
    async stop() {
      await server.stop(true)
    },
  }
  if (opts.autoStop !== false) afterAll(() => rx.stop())
  return rx
}
