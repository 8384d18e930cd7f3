/**
 * `listen --forward-to <url>`: the account's events, forwarded to a local URL as
 * signed webhook deliveries, one line printed per event (as `stripe listen` does).
 *
 * Two sources:
 * - `stream` (default): the account's event stream (GET /v1/events). Each message
 *   becomes the webhook envelope `{id, type, created_at, account_id, data}` (built by
 *   the outbox's own `envelope`), signed by this command with the session's secret
 *   exactly as a delivery is signed (`X-Service-Signature: t=…,v1=…`, HMAC-SHA256 of
 *   `<t>.<body>` over the bytes sent). The stream carries the call.* events except
 *   call.ringing and call.emergency; `created_at` comes from the event id (the real
 *   time it was written) since the stream does not carry it.
 * - `webhook`: a temporary webhook endpoint of the account pointing at a relay this
 *   command serves on 127.0.0.1; every event type arrives as the service delivers
 *   it (body and headers untouched, signed with the endpoint's secret, which is
 *   printed) and is passed on to the local URL. The service must be allowed to reach
 *   the relay (same host with WEBHOOK_ALLOW_PRIVATE_TARGETS=1, or --relay-url). The
 *   endpoint is deleted when the command stops.
 *
 * Either way events are forwarded one at a time, in commit order.
 */
import { decodeTime } from 'ulid'
import { newWebhookSecret } from '../events/signing'
import { envelope } from '../events/outbox'
import { CONNECTION_OPTIONS, type Connection, connection, request, ServiceError } from './api'
import { flag, intOption, type ParsedArgs, stringOption, UsageError } from './args'
import type { Command, CommandContext } from './command'
import { pause, streamEvents } from './event-stream'
import { deliveryHeaders } from '../events/signing'
import { eventLine, type ForwardResult, forward } from './forward'

const USAGE =
  'cli listen --forward-to <url> [--events <type,…>] [--source stream|webhook] [--secret <whsec_…>] [--url <url>] [--key <key>] [--account <acct_…>]'

/** Headers of a delivery that are passed on untouched by the webhook relay. */
const RELAYED_HEADERS = ['content-type', 'user-agent', 'x-service-signature', 'x-service-account-id']

export const listenCommand: Command = {
  name: 'listen',
  summary: "forward the account's events to a local URL, signed as webhooks",
  usage: USAGE,
  description: [
    "Forwards the account's events to a local URL as webhook deliveries (a POST of the envelope",
    '{id, type, created_at, account_id, data} with Content-Type, User-Agent: Service-Webhook/1.0,',
    'X-Service-Account-Id and X-Service-Signature: t=<unix>,v1=<HMAC-SHA256 of "<t>.<body>">, the scheme',
    "Stripe's libraries verify), one at a time in commit order, and prints one line per event: time,",
    "type, id and the local answer's status (or the error). A failed forward is not retried.",
    '',
    'It prints the signing secret first: verify the forwarded requests with it.',
    '  --source stream (default): reads the event stream (GET /v1/events), which carries the call.*',
    '    events except call.ringing and call.emergency. The secret is --secret, else a new one per run.',
    '    created_at is the time the event was written, taken from its id.',
    '  --source webhook: creates a temporary webhook endpoint of the account that points at a relay this',
    '    command serves on 127.0.0.1, so every event type arrives exactly as the service delivers it,',
    "    signed with that endpoint's secret (printed; --secret does not apply). The service must be able",
    '    to reach the relay: on the same host with WEBHOOK_ALLOW_PRIVATE_TARGETS=1, or through --relay-url.',
    '    The endpoint is deleted when the command stops.',
    '',
    'Runs until Ctrl-C (or --max-events); exits 0 when stopped, 1 when the service refuses or goes away.',
  ].join('\n'),
  options: [
    { name: 'forward-to', kind: 'string', value: '<url>', description: 'local URL each event is POSTed to (required)' },
    {
      name: 'events',
      kind: 'string',
      value: '<type,…>',
      description: 'only these event types (comma-separated; "call.*" matches a prefix; default all)',
      repeatable: true,
    },
    { name: 'source', kind: 'string', value: 'stream|webhook', description: 'where events come from (default stream; see above)' },
    { name: 'secret', kind: 'string', value: '<secret>', description: 'signing secret for --source stream (default: a new whsec_… each run)' },
    { name: 'timeout', kind: 'string', value: '<seconds>', description: 'how long to wait for the local answer (default 30)' },
    { name: 'max-events', kind: 'string', value: '<n>', description: 'stop after forwarding n events' },
    { name: 'relay-port', kind: 'string', value: '<port>', description: '--source webhook: port of the relay on 127.0.0.1 (default: a free one)' },
    {
      name: 'relay-url',
      kind: 'string',
      value: '<url>',
      description: '--source webhook: URL the service posts to when it cannot reach 127.0.0.1 (a tunnel to the relay)',
    },
    { name: 'print-json', kind: 'flag', description: 'also print each forwarded body' },
    ...CONNECTION_OPTIONS,
  ],
  examples: [
    'npm run cli -- listen --forward-to http://localhost:3000/hook --key sk_test_… --account acct_…',
    'npm run cli -- listen --forward-to http://localhost:3000/hook --events call.answered,call.end',
    'npm run cli -- listen --source webhook --forward-to http://localhost:3000/hook   # every event type',
  ],
  run: listen,
}

interface Session {
  forwardTo: string
  timeoutMs: number
  maxEvents?: number
  printJson: boolean
  types: string[]
  wanted: (type: string) => boolean
  count: number
  ctx: CommandContext
}

async function listen(a: ParsedArgs, ctx: CommandContext): Promise<number> {
  const forwardTo = stringOption(a, 'forward-to')
  if (!forwardTo) throw new UsageError('--forward-to is required', USAGE)
  if (!/^https?:\/\//.test(forwardTo) || !URL.canParse(forwardTo)) throw new UsageError(`--forward-to must be an http(s) URL, got "${forwardTo}"`, USAGE)
  if (a.positionals.length > 0) throw new UsageError(`unexpected argument ${a.positionals[0]}`, USAGE)
  const source = stringOption(a, 'source') ?? 'stream'
  if (source !== 'stream' && source !== 'webhook') throw new UsageError(`--source must be stream or webhook, got "${source}"`, USAGE)
  const types = (a.all.get('events') ?? [])
    .flatMap((v) => v.split(','))
    .map((s) => s.trim())
    .filter(Boolean)
  const conn = connection(a, ctx.env, USAGE)
  const s: Session = {
    forwardTo,
    timeoutMs: (intOption(a, 'timeout', 1, 600, USAGE) ?? 30) * 1000,
    maxEvents: intOption(a, 'max-events', 1, 1_000_000, USAGE),
    printJson: flag(a, 'print-json'),
    types,
    wanted: matcher(types),
    count: 0,
    ctx,
  }
  if (source === 'stream') {
    if (a.options.has('relay-port') || a.options.has('relay-url')) throw new UsageError('--relay-port and --relay-url go with --source webhook', USAGE)
    const secret = stringOption(a, 'secret') ?? newWebhookSecret()
    if (secret.length < 8) throw new UsageError('--secret must be at least 8 characters', USAGE)
    return fromStream(conn, secret, s)
  }
  if (a.options.has('secret')) throw new UsageError("--secret does not apply to --source webhook: the temporary endpoint's secret is the service's", USAGE)
  return fromWebhook(conn, s, intOption(a, 'relay-port', 1, 65535, USAGE), stringOption(a, 'relay-url'))
}

/** `a.b` exact, `a.*` a prefix, `*` (or nothing) everything. */
function matcher(types: string[]): (type: string) => boolean {
  if (types.length === 0 || types.includes('*')) return () => true
  return (type) => types.some((t) => (t.endsWith('.*') ? type.startsWith(t.slice(0, -1)) : t === type))
}

function banner(s: Session, secret: string, from: string) {
  s.ctx.out(`Ready! Forwarding ${from} to ${s.forwardTo} (Ctrl-C to stop)\n`)
  s.ctx.out(`Your webhook signing secret is ${secret}\n`)
}

/** Prints the line of a forwarded event; returns true once --max-events is reached. */
function report(s: Session, type: string, id: string, body: string, result: ForwardResult): boolean {
  s.ctx.out(eventLine(new Date(), type, id, result, s.forwardTo))
  if (s.printJson) s.ctx.out(`${body}\n`)
  s.count++
  return s.maxEvents !== undefined && s.count >= s.maxEvents
}

async function fromStream(conn: Connection, secret: string, s: Session): Promise<number> {
  const stop = new AbortController()
  const signal = AbortSignal.any([s.ctx.signal, stop.signal])
  try {
    for await (const ev of streamEvents(conn, {
      signal,
      notice: (t) => s.ctx.err(`${t}\n`),
      onOpen: (reconnect) => {
        if (!reconnect) {
          banner(s, secret, `the call events of ${conn.account} (event stream: call.* but call.ringing and call.emergency)`)
        }
      },
    })) {
      if (!s.wanted(ev.type)) continue
      const { event: _type, ...data } = ev.payload
      const body = envelope(ev.id, ev.type, createdAt(ev.id), conn.account, data)
      const headers = deliveryHeaders(secret, conn.account, body, Math.floor(Date.now() / 1000))
      const result = await forward(s.forwardTo, body, headers, s.timeoutMs, signal)
      if (signal.aborted) break
      if (report(s, ev.type, ev.id, body, result)) stop.abort()
    }
  } catch (e) {
    if (e instanceof ServiceError) {
      s.ctx.err(e.describe())
      return 1
    }
    throw e
  }
  return 0
}

/** The time an event was written, from its id (`evt_<ULID>`); now when the id is not one. */
function createdAt(id: string): Date {
  try {
    return new Date(decodeTime(id.slice(id.indexOf('_') + 1)))
  } catch {
    return new Date()
  }
}

async function fromWebhook(conn: Connection, s: Session, relayPort: number | undefined, relayUrl: string | undefined): Promise<number> {
  const path = `/cli-listen/${crypto.randomUUID()}`
  const stop = new AbortController()
  const signal = AbortSignal.any([s.ctx.signal, stop.signal])
  /** Forwards run one after another, in the order the service delivered them. */
  let chain = Promise.resolve()
  const relay = Bun.serve({
    hostname: '127.0.0.1',
    port: relayPort ?? 0,
    fetch(req) {
      if (req.method !== 'POST' || new URL(req.url).pathname !== path) return new Response('not here', { status: 404 })
      const done = req.text().then((body) => {
        const next = chain.then(() => relayOne(s, req.headers, body, signal, stop))
        chain = next.catch(() => {})
        return next
      })
      // The service is always acknowledged: a failed forward is reported, not retried.
      return done.then(
        () => new Response('forwarded', { status: 200 }),
        () => new Response('forwarded', { status: 200 }),
      )
    },
  })
  let endpointId: string | undefined
  try {
    const url = relayUrl ?? `http://127.0.0.1:${relay.port}${path}`
    if (relayUrl && !URL.canParse(relayUrl)) throw new UsageError(`--relay-url is not a URL: ${relayUrl}`, USAGE)
    // Exact types narrow the endpoint itself; prefixes are matched here.
    const enabled = s.types.length > 0 && s.types.every((t) => !t.includes('*')) ? s.types : ['*']
    const endpoint = await request<{ id: string; secret: string }>(
      conn,
      'POST',
      '/v1/webhook_endpoints',
      { url, enabled_events: enabled, description: 'voice cli listen (temporary)' },
      signal,
    )
    endpointId = endpoint.id
    banner(s, endpoint.secret, `every event of ${conn.account} (temporary webhook endpoint ${endpoint.id} → ${url})`)
    if (!relayUrl) s.ctx.err('(the service must be allowed to reach 127.0.0.1: WEBHOOK_ALLOW_PRIVATE_TARGETS=1; otherwise use --relay-url)\n')
    await pause(2 ** 31 - 1, signal)
    await chain
    return 0
  } catch (e) {
    if (e instanceof ServiceError) {
      s.ctx.err(e.describe())
      return 1
    }
    if (signal.aborted && e instanceof Error && e.name === 'AbortError') return 0
    throw e
  } finally {
    if (endpointId) {
      const removed = await request(conn, 'DELETE', `/v1/webhook_endpoints/${endpointId}`).then(
        () => true,
        (e: unknown) => {
          s.ctx.err(`could not delete the temporary webhook endpoint ${endpointId}: ${(e as Error).message}\n`)
          return false
        },
      )
      if (removed) s.ctx.err(`deleted the temporary webhook endpoint ${endpointId}\n`)
    }
    relay.stop(true)
  }
}

async function relayOne(s: Session, received: Headers, body: string, signal: AbortSignal, stop: AbortController) {
  if (signal.aborted) return
  let type = '?'
  let id = '?'
  try {
    const parsed = JSON.parse(body) as { id?: unknown; type?: unknown }
    if (typeof parsed.type === 'string') type = parsed.type
    if (typeof parsed.id === 'string') id = parsed.id
  } catch {}
  if (!s.wanted(type)) return
  const headers: Record<string, string> = {}
  for (const name of RELAYED_HEADERS) {
    const v = received.get(name)
    if (v !== null) headers[name] = v
  }
  const result = await forward(s.forwardTo, body, headers, s.timeoutMs, signal)
  if (signal.aborted) return
  if (report(s, type, id, body, result)) stop.abort()
}
