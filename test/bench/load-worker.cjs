/*
 * The load generator, run by node in its own process so that generating load
 * never shares an event loop with the server being measured.
 *
 *   node test/bench/load-worker.cjs '<json options>'
 *
 * options: { url, method, headers, connections, duration, body?, uniqueEmail? }
 *   uniqueEmail: { name, prefix } makes every request body
 *   {"name": name, "email": "<prefix>-<pid>-<n>@example.com"}, unique per request.
 * Prints one JSON line with the summary on stdout, including `hist`: the latency of
 * every 2xx response in 0.1 ms buckets ([bucket, count] pairs), so that several runs
 * can be merged into exact percentiles.
 */
'use strict'
const autocannon = require('autocannon')

const opts = JSON.parse(process.argv[2] || '{}')

let n = 0
const request = { method: opts.method || 'GET', headers: opts.headers || {} }
if (opts.body !== undefined) request.body = opts.body
if (opts.uniqueEmail) {
  const { name, prefix } = opts.uniqueEmail
  request.setupRequest = (req) => {
    n += 1
    req.body = JSON.stringify({ name, email: `${prefix}-${process.pid}-${n}@example.com` })
    return req
  }
}

const instance = autocannon(
  {
    url: opts.url,
    connections: opts.connections || 50,
    duration: opts.duration || 10,
    timeout: opts.timeout || 10,
    requests: [request],
  },
  (err, result) => {
    if (err) {
      process.stderr.write(String(err && err.stack ? err.stack : err) + '\n')
      process.exit(1)
    }
    const statusCodes = {}
    const hist = [...buckets.entries()]
    for (const [code, v] of Object.entries(result.statusCodeStats || {})) statusCodes[code] = v.count
    const summary = {
      url: opts.url,
      method: request.method,
      connections: result.connections,
      durationS: result.duration,
      requestsPerSec: result.requests.average,
      total: result.requests.total,
      latency: {
        avg: result.latency.average,
        p50: result.latency.p50,
        p90: result.latency.p90,
        p99: result.latency.p99,
        max: result.latency.max,
      },
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statusCodes,
      hist,
    }
    process.stdout.write(JSON.stringify(summary) + '\n')
    process.exit(0)
  },
)

// Latency of every 2xx response, in 0.1 ms buckets.
const buckets = new Map()
instance.on('response', (_client, statusCode, _bytes, responseTime) => {
  if (statusCode < 200 || statusCode > 299) return
  const b = Math.round(responseTime * 10)
  buckets.set(b, (buckets.get(b) || 0) + 1)
})

process.on('SIGTERM', () => instance.stop())
