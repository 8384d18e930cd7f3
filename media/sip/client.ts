/**
 * Requests the server sends itself (a NOTIFY to a registered contact, an OPTIONS
 * probe): non-INVITE client transactions (RFC 3261 §17.1.2) with Timers E, F and K
 * on the injected clock. INVITE client transactions belong to the B2BUA, later.
 */
import type { IncomingResponseMessage } from 'sip.js/lib/core/messages/incoming-response-message.js'
import type { SipSource } from './handler'
import { newTag } from './response'
import type { SipTimers, TimerHandle } from './timers'
import { T1, T2, T4, TRANSACTION_TIMEOUT } from './transactions'

export interface OutgoingRequest {
  method: string
  /** Request-URI. */
  uri: string
  /** From, To, Call-ID and CSeq are required (the caller owns the dialog); Via, Max-Forwards and Content-Length are added. */
  headers: ReadonlyArray<readonly [name: string, value: string]>
  body?: string
  contentType?: string
}

export type ClientOutcome =
  | { kind: 'response'; status: number; response: IncomingResponseMessage }
  /** Timer F: no final response within 64*T1. */
  | { kind: 'timeout' }
  /** The request could not be sent (no open connection to a TCP target). */
  | { kind: 'unreachable' }

export class InvalidRequest extends Error {}

const REQUIRED = ['from', 'to', 'call-id', 'cseq']
const ADDED = new Set(['via', 'max-forwards', 'content-length', 'content-type'])
const TOKEN = /^[A-Za-z0-9.!%*_+`'~-]+$/

/** The request's bytes with its own Via on top; throws InvalidRequest when the caller's parts would make a broken message. */
export function buildRequest(request: OutgoingRequest, via: string): Uint8Array {
  if (request.method === 'INVITE' || request.method === 'ACK') throw new InvalidRequest(`cannot send ${request.method} here`)
  return serializeRequest(request, via)
}

/** Any request's bytes (INVITE and ACK included: media/sip/invite-client.ts), checked as buildRequest checks. */
export function serializeRequest(request: OutgoingRequest, via: string): Uint8Array {
  if (!TOKEN.test(request.method)) throw new InvalidRequest(`cannot send ${request.method} here`)
  if (/[\s\0]/.test(request.uri) || request.uri === '') throw new InvalidRequest('bad Request-URI')
  const names = request.headers.map(([n]) => n.toLowerCase())
  for (const required of REQUIRED) if (!names.includes(required)) throw new InvalidRequest(`missing ${required} header`)
  for (const [name, value] of request.headers) {
    if (!TOKEN.test(name)) throw new InvalidRequest(`header name "${name}" is not a token`)
    if (ADDED.has(name.toLowerCase())) throw new InvalidRequest(`header ${name} is written by the client transaction`)
    if (/[\r\n\0]/.test(value)) throw new InvalidRequest(`header ${name} contains a line break`)
  }
  const cseq = request.headers.find(([n]) => n.toLowerCase() === 'cseq')![1]
  if (!new RegExp(`^\\d{1,10}\\s+${request.method}$`).test(cseq.trim())) throw new InvalidRequest('CSeq must carry the request method')
  const body = Buffer.from(request.body ?? '', 'utf8')
  const lines = [`${request.method} ${request.uri} SIP/2.0`, `Via: ${via}`, 'Max-Forwards: 70', ...request.headers.map(([n, v]) => `${n}: ${v}`)]
  if (body.length > 0) lines.push(`Content-Type: ${request.contentType ?? 'text/plain'}`)
  lines.push(`Content-Length: ${body.length}`)
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body])
}

/** A branch with RFC 3261's magic cookie and 128 random bits. */
export const newBranch = () => `z9hG4bK${newTag()}${newTag()}`

/** Our Via for a request to `target`. */
export const viaOf = (sentBy: string, target: SipSource, branch: string) => `SIP/2.0/${target.transport.toUpperCase()} ${sentBy};branch=${branch};rport`

interface Pending {
  /** A final response arrived. */
  deliver(outcome: ClientOutcome): void
  /** A provisional one arrived: retransmit at T2 from now on (§17.1.2.2, Proceeding). */
  proceed(): void
  /** The server stops: answer timeout and forget. */
  abort(): void
}

export interface ClientTransactionsOptions {
  timers: SipTimers
  /** sent-by of our Via: the address and port peers answer to. */
  sentBy: (transport: 'udp' | 'tcp') => string
  /** Sends bytes to a target; false when it cannot (no TCP connection). */
  send: (bytes: Uint8Array, target: SipSource) => boolean
  maxTransactions?: number
}

export class ClientTransactions {
  private readonly pending = new Map<string, Pending>()
  private readonly max: number

  constructor(private readonly options: ClientTransactionsOptions) {
    this.max = options.maxTransactions ?? 10_000
  }

  get size(): number {
    return this.pending.size
  }

  /**
   * Sends a non-INVITE request and resolves with its final response, a timeout (Timer F), or unreachable.
   * `branch`: a CANCEL reuses its INVITE's (RFC 3261 §9.1); every other request gets a new one.
   */
  send(target: SipSource, request: OutgoingRequest, branch = newBranch()): Promise<ClientOutcome> {
    if (this.pending.size >= this.max) return Promise.resolve({ kind: 'unreachable' })
    const via = viaOf(this.options.sentBy(target.transport), target, branch)
    const bytes = buildRequest(request, via)
    const key = `${branch}|${request.method}`
    return new Promise<ClientOutcome>((resolve) => {
      if (!this.options.send(bytes, target)) {
        resolve({ kind: 'unreachable' })
        return
      }
      const timers: TimerHandle[] = []
      let done = false
      let proceeding = false
      const finish = (outcome: ClientOutcome) => {
        if (done) return
        done = true
        for (const t of timers) t.cancel()
        resolve(outcome)
      }
      this.pending.set(key, {
        deliver: (outcome) => {
          if (done) return
          finish(outcome)
          // Timer K: absorb retransmitted final responses for T4 over UDP.
          if (target.transport === 'udp') this.options.timers.after(T4, () => this.pending.delete(key))
          else this.pending.delete(key)
        },
        proceed: () => {
          proceeding = true
        },
        abort: () => finish({ kind: 'timeout' }),
      })
      if (target.transport === 'udp') {
        // Timer E: retransmit at T1, doubling up to T2 (at T2 once a provisional response came).
        const retransmit = (interval: number) => {
          timers.push(
            this.options.timers.after(interval, () => {
              if (done) return
              this.options.send(bytes, target)
              retransmit(proceeding ? T2 : Math.min(2 * interval, T2))
            }),
          )
        }
        retransmit(T1)
      }
      // Timer F.
      timers.push(
        this.options.timers.after(TRANSACTION_TIMEOUT, () => {
          this.pending.delete(key)
          finish({ kind: 'timeout' })
        }),
      )
    })
  }

  /** A response came in: true when it belonged to one of our transactions (§17.1.3: top Via branch and CSeq method). */
  receive(response: IncomingResponseMessage): boolean {
    if (!response.viaBranch || !response.method) return false
    const entry = this.pending.get(`${response.viaBranch}|${response.method}`)
    if (!entry) return false
    const status = response.statusCode ?? 0
    if (status >= 200) entry.deliver({ kind: 'response', status, response })
    else entry.proceed()
    return true
  }

  clear(): void {
    for (const entry of this.pending.values()) entry.abort()
    this.pending.clear()
  }
}
