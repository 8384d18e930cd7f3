/**
 * Builds the response to a request (RFC 3261 §8.2.6.2) and says where it goes
 * (§18.2.2, RFC 3581).
 */
import { getReasonPhrase } from 'sip.js/lib/core/messages/utils.js'
import type { SipResponseSpec, SipSource } from './handler'
import { parseVia, type RequestBasis } from './message'

/** Product token in the Server header of every response. */
export const SERVER_NAME = 'business-voice'

const CLASS_REASONS = ['', 'Provisional', 'Successful', 'Redirection', 'Client Error', 'Server Error', 'Global Failure']

/** The standard reason phrase of a status code (its class's name for codes without one). */
export function reasonPhrase(status: number): string {
  return getReasonPhrase(status) || CLASS_REASONS[Math.floor(status / 100)] || 'Unknown'
}

/** A tag with 32+ random bits, as §19.3 asks for To and From tags. */
export function newTag(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8))
  return Buffer.from(bytes).toString('hex')
}

/** IPv4 peers on a dual-stack socket show up as ::ffff:a.b.c.d; SIP wants the IPv4 form. */
export function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address
}

const stripBrackets = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host)

/**
 * Adds `received` (when the sent-by differs from the packet's source, or the client
 * asked for rport) and fills an empty `rport` with the source port: the client
 * behind a NAT learns its public address and the response finds its way back.
 */
export function stampTopVia(viaParm: string, source: SipSource): { via: string; rport: boolean } {
  const [head = '', ...rawParams] = viaParm.split(';')
  const address = plainAddress(source.address)
  const params: string[] = []
  let rport = false
  for (const raw of rawParams) {
    const param = raw.trim()
    const name = param.split('=')[0]!.trim().toLowerCase()
    if (name === 'received') continue
    if (name === 'rport') {
      rport = true
      params.push(`rport=${source.port}`)
      continue
    }
    if (param !== '') params.push(param)
  }
  const sentByHost = stripBrackets(parseVia(viaParm)?.host ?? '')
  if (rport || sentByHost !== address) params.push(`received=${address}`)
  return { via: [head.trim(), ...params].join(';'), rport }
}

/** Where a response to a request goes (§18.2.2): the same connection for TCP, else the source address at rport or the sent-by port. */
export function responseDestination(basis: RequestBasis, source: SipSource): SipSource {
  if (source.transport === 'tcp') return source
  const { rport } = stampTopVia(basis.vias[0] ?? '', source)
  return { transport: 'udp', address: plainAddress(source.address), port: rport ? source.port : (basis.topVia?.port ?? 5060) }
}

/** Header names a handler may not set: the server writes them from the request and the body. */
const RESERVED = new Set(['via', 'from', 'to', 'call-id', 'cseq', 'content-length', 'content-type', 'v', 'f', 't', 'i', 'l', 'c'])

export class InvalidResponseSpec extends Error {}

function checkSpec(spec: SipResponseSpec): void {
  if (!Number.isInteger(spec.status) || spec.status < 100 || spec.status > 699) throw new InvalidResponseSpec(`status ${spec.status} is not a SIP status`)
  // A CR or LF from a handler would let it (or whoever fed it) inject headers.
  const unsafe = (s: string) => /[\r\n\0]/.test(s)
  if (spec.reason !== undefined && unsafe(spec.reason)) throw new InvalidResponseSpec('reason phrase contains a line break')
  if (spec.contentType !== undefined && unsafe(spec.contentType)) throw new InvalidResponseSpec('content type contains a line break')
  for (const [name, value] of spec.headers ?? []) {
    if (!/^[A-Za-z0-9.!%*_+`'~-]+$/.test(name)) throw new InvalidResponseSpec(`header name "${name}" is not a token`)
    if (RESERVED.has(name.toLowerCase())) throw new InvalidResponseSpec(`header ${name} is written by the server`)
    if (unsafe(value)) throw new InvalidResponseSpec(`header ${name} contains a line break`)
  }
}

export interface BuildOptions {
  /** Tag added to To when the request's To has none; required for non-100 responses then. */
  toTag: string
}

/**
 * The bytes of the response: status line, every Via in order (the top one stamped),
 * From, To (with a tag when the request had none, except on 100), Call-ID, CSeq,
 * Server, the spec's headers, Content-Type, Content-Length, body. Throws
 * InvalidResponseSpec when the spec would produce a broken or injected message.
 */
export function buildResponse(basis: RequestBasis, spec: SipResponseSpec, source: SipSource, options: BuildOptions): Uint8Array {
  checkSpec(spec)
  const body = Buffer.from(spec.body ?? '', 'utf8')
  const lines = [`SIP/2.0 ${spec.status} ${spec.reason ?? reasonPhrase(spec.status)}`]
  basis.vias.forEach((via, i) => {
    lines.push(`Via: ${i === 0 ? stampTopVia(via, source).via : via}`)
  })
  lines.push(`From: ${basis.from}`)
  lines.push(`To: ${basis.toHasTag || spec.status === 100 ? basis.to : `${basis.to};tag=${options.toTag}`}`)
  lines.push(`Call-ID: ${basis.callId}`)
  lines.push(`CSeq: ${basis.cseq}`)
  if (spec.status === 100 && basis.timestamp) lines.push(`Timestamp: ${basis.timestamp}`)
  const headers = spec.headers ?? []
  if (!headers.some(([n]) => n.toLowerCase() === 'server')) lines.push(`Server: ${SERVER_NAME}`)
  for (const [name, value] of headers) lines.push(`${name}: ${value}`)
  if (body.length > 0) lines.push(`Content-Type: ${spec.contentType ?? 'application/sdp'}`)
  lines.push(`Content-Length: ${body.length}`)
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8')
  return body.length > 0 ? Buffer.concat([head, body]) : head
}
