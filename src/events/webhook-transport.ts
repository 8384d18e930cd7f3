/**
 * Sends one webhook POST. `fetch` ignores custom agents and resolves names
 * itself, so this uses node:http(s) with our own `lookup`: the address checked
 * is the address connected to, which defeats DNS rebinding. Redirects are not
 * followed (a 3xx is a failed delivery); the body sent is exactly `body`.
 */
import { lookup as dnsLookup } from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { refusalReason } from './address-guard'

export interface WebhookRequest {
  url: string
  body: string
  headers: Record<string, string>
  timeoutMs: number
}

export type WebhookResult =
  | { kind: 'acknowledged'; status: number }
  | { kind: 'rejected'; status: number }
  | { kind: 'refused'; reason: string }
  | { kind: 'error'; reason: string }

export interface WebhookTransport {
  send(req: WebhookRequest): Promise<WebhookResult>
  close(): void
}

class RefusedAddress extends Error {}

/**
 * Why delivery would refuse `rawUrl` from the URL alone, before any lookup: not a URL,
 * not http or https, or a literal address in a refused range (address-guard.ts) while
 * private targets are not allowed. A name is judged at send time, on each address it
 * resolves to (guardedLookup below). The same check runs when an endpoint is created.
 */
export function urlRefusal(rawUrl: string, opts: { allowPrivateTargets: boolean }): string | undefined {
  let url: URL
  try {
    url = new URL(rawUrl)
  } catch {
    return 'not a URL'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${url.protocol} is not http or https`
  const host = url.hostname.replace(/^\[|\]$/g, '')
  // A literal address never goes through lookup: judge it here.
  if (isIP(host) && !opts.allowPrivateTargets) {
    const why = refusalReason(host)
    if (why) return `${host} is a ${why}`
  }
  return undefined
}

export function httpWebhookTransport(opts: { allowPrivateTargets: boolean }): WebhookTransport {
  const agentOptions = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64 }
  const httpAgent = new http.Agent(agentOptions)
  const httpsAgent = new https.Agent(agentOptions)

  const guardedLookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4)
      const list = addresses as { address: string; family: number }[]
      if (!opts.allowPrivateTargets) {
        const bad = list.find((a) => refusalReason(a.address) !== undefined)
        if (bad) return callback(new RefusedAddress(`${hostname} resolves to ${bad.address}, a ${refusalReason(bad.address)}`), '', 4)
      }
      if ((options as { all?: boolean }).all) return (callback as (e: null, a: typeof list) => void)(null, list)
      callback(null, list[0]!.address, list[0]!.family)
    })
  }

  return {
    send(req) {
      const refused = urlRefusal(req.url, opts)
      if (refused !== undefined) return Promise.resolve({ kind: 'refused', reason: refused })
      const url = new URL(req.url)
      const host = url.hostname.replace(/^\[|\]$/g, '')
      const secure = url.protocol === 'https:'
      return new Promise<WebhookResult>((resolve) => {
        let settled = false
        const done = (r: WebhookResult) => {
          if (settled) return
          settled = true
          clearTimeout(deadline)
          resolve(r)
        }
        const request = (secure ? https : http).request(
          {
            protocol: url.protocol,
            hostname: host,
            port: url.port || (secure ? 443 : 80),
            path: `${url.pathname}${url.search}`,
            method: 'POST',
            headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
            agent: secure ? httpsAgent : httpAgent,
            lookup: guardedLookup,
            servername: isIP(host) ? undefined : host,
          },
          (res) => {
            const status = res.statusCode ?? 0
            res.resume() // the body is ignored, but must be drained to reuse the connection
            res.on('end', () => done(status >= 200 && status < 300 ? { kind: 'acknowledged', status } : { kind: 'rejected', status }))
            res.on('error', (e) => done({ kind: 'error', reason: e.message }))
          },
        )
        const deadline = setTimeout(() => {
          request.destroy(new Error(`no answer within ${req.timeoutMs} ms`))
        }, req.timeoutMs)
        request.on('error', (e) => done(e instanceof RefusedAddress ? { kind: 'refused', reason: e.message } : { kind: 'error', reason: e.message }))
        request.end(req.body)
      })
    },
    close() {
      httpAgent.destroy()
      httpsAgent.destroy()
    },
  }
}
