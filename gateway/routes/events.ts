/** The account's real-time event stream (server-sent events), read from the outbox by src/events/stream. */
import { Elysia, t } from 'elysia'
import { decodeJwt } from 'jose'
import { MAX_STREAMS_PER_ACCOUNT, MAX_STREAMS_PER_CREDENTIAL, RESUME_WINDOW_MS, RETRY_MS } from '../../src/events/stream'
import type { Principal } from '../../src/services/platform/principal'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import type { requestContext } from '../plugins/request-context'

const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  // Proxies that buffer responses (nginx) must pass each message on at once.
  'x-accel-buffering': 'no',
}

export function eventRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/events' }).use(base).get(
    '/v1/events',
    async ({ auth, headers, request, requestId, server }) => {
      const responseHeaders = { ...STREAM_HEADERS, 'x-request-id': requestId }
      // HEAD (answered by this handler) gets the headers and no stream.
      if (request.method === 'HEAD') return new Response(null, { status: 200, headers: responseHeaders })
      const stream = await deps.eventStreams.open(auth.account!.id, {
        // EventSource sends no header until it has an id; an empty one is the same.
        lastEventId: headers['last-event-id'] || undefined,
        signal: request.signal,
        credential: `${auth.principal.kind}:${auth.principal.actor}`,
        expiresAt: tokenExpiry(auth.principal, request.headers.get('authorization')),
      })
      // Open for as long as the client reads: the server never times it out as idle;
      // heartbeats keep proxies from doing so and find a vanished client.
      server?.timeout(request, 0)
      return new Response(stream.body, { status: 200, headers: responseHeaders })
    },
    {
      headers: t.Object({
        'last-event-id': t.Optional(
          t.String({ maxLength: 255, description: 'Id of the last message received: the stream replays the events after it (24 h window)' }),
        ),
      }),
      detail: op('streamEvents', {
        summary: "Stream the account's call events (server-sent events)",
        tag: 'Events',
        auth: accountLevel(),
        description: [
          "A `text/event-stream` of the account's call.* events as they commit, in commit order: every call.* type except call.ringing and call.emergency, which are webhook-only. Other event types are not streamed.",
          'Each message is `id: <event id>`, `event: <type>` and `data: <JSON>`, where the JSON is flat: the event\'s data fields plus `event` (the type), with no id, created_at or data wrapper, for example `{"event":"call.answered","call_id":"…","direction":"inbound",…}`.',
          `Comments (lines starting with a colon) are not events: \`: heartbeat\` is sent every EVENT_STREAM_HEARTBEAT_S seconds (default 15) to keep the connection open. The stream opens with \`retry: ${RETRY_MS}\`.`,
          `Resuming: send \`Last-Event-ID\` with the id of the last message received (EventSource does so when it reconnects) and the events after it are replayed, then the stream goes live. An id that names no event of this account gives the comment \`: resume-unknown …\`, and one older than ${RESUME_WINDOW_MS / 3600_000} hours gives \`: resume-expired …\`; both then stream from now.`,
          'Account sessions need the call_logs component. A stream opened with an account session ends when the session expires, with the comment `: session-expired …` as its last line; open a new one with a new session.',
          `Limits, per gateway process: at most ${MAX_STREAMS_PER_CREDENTIAL} open streams per credential (secret key or session) and ${MAX_STREAMS_PER_ACCOUNT} per account. One more is refused with 429 \`rate_limited\` (details: \`scope\` credential or account, \`limit\`) and Retry-After; a slot frees when a stream of that credential or account closes.`,
        ].join('\n\n'),
      }),
    },
  )
}

/**
 * When the session token that authenticated this request expires (real time). The
 * auth plugin has verified the token already; only its exp is read here.
 */
function tokenExpiry(principal: Principal, authorization: string | null): Date | undefined {
  if (principal.kind === 'secret_key' || authorization === null) return undefined
  const token = authorization.match(/^Bearer\s+(\S+)\s*$/i)?.[1]
  if (token === undefined) return undefined
  const exp = decodeJwt(token).exp
  return typeof exp === 'number' ? new Date(exp * 1000) : undefined
}
