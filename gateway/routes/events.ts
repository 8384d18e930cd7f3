/** The account's real-time event stream (server-sent events), read from the outbox by src/events/stream. */
import { Elysia, t } from 'elysia'
import { RESUME_WINDOW_MS, RETRY_MS } from '../../src/events/stream'
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
          'Account sessions need the call_logs component.',
        ].join('\n\n'),
      }),
    },
  )
}
