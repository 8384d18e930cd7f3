/**
 * The webhook receiver of the `webhooks` bench: a bare Bun.serve, in its own process,
 * that answers every POST with 200 at once and records, per event id (the `id` of the
 * JSON body), when it first arrived. Repeated ids are counted as duplicates.
 *
 *   PORT=... HOST=127.0.0.1 bun test/bench/webhook-receiver.ts
 *
 *   POST <any path>   a webhook; 200 (400 when the body is not an event)
 *   GET  /healthz     200
 *   GET  /stats       {received, unique, duplicates, bad, signed}
 *   GET  /dump        {receipts: [[id, ms], ...], duplicates, bad, signed}
 *
 * Times are wall-clock milliseconds with sub-millisecond precision
 * (performance.timeOrigin + performance.now()), as the producer records commits, so
 * the two processes on one machine can be compared.
 */
const port = Number(process.env.PORT ?? 0)
const hostname = process.env.HOST || '127.0.0.1'
const now = () => performance.timeOrigin + performance.now()

const firstSeen = new Map<string, number>()
let received = 0
let duplicates = 0
let bad = 0
let signed = 0

const server = Bun.serve({
  port,
  hostname,
  // The delivery engine keeps connections alive; never let an idle one be cut mid-run.
  idleTimeout: 120,
  async fetch(req) {
    const url = new URL(req.url)
    if (req.method === 'POST') {
      const text = await req.text()
      const t = now()
      received++
      if (req.headers.get('x-service-signature')) signed++
      let id: unknown
      try {
        id = (JSON.parse(text) as { id?: unknown }).id
      } catch {}
      if (typeof id !== 'string') {
        bad++
        return new Response('not an event', { status: 400 })
      }
      if (firstSeen.has(id)) duplicates++
      else firstSeen.set(id, t)
      return new Response(null, { status: 200 })
    }
    if (url.pathname === '/healthz') return new Response('ok')
    if (url.pathname === '/stats') return Response.json({ received, unique: firstSeen.size, duplicates, bad, signed })
    if (url.pathname === '/dump') return Response.json({ receipts: [...firstSeen.entries()], duplicates, bad, signed })
    return new Response('not found', { status: 404 })
  },
})

console.log(`webhook receiver listening on ${server.hostname}:${server.port}`)
process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
