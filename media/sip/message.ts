/**
 * Turns the bytes of one SIP message (a UDP datagram, or one message framed out of
 * a TCP stream) into a sip.js IncomingRequestMessage or IncomingResponseMessage.
 *
 * sip.js's own parser (Parser.parseMessage) is written for a client that trusts its
 * server: it takes a string (so Content-Length, a byte count, is applied to
 * characters), parses only the first Via of a comma list (and wrongly: the
 * grammar's result object is shared between the entries), knows few compact header
 * names and checks no mandatory header. Worse for a server, every call of its
 * generated grammar costs about a millisecond whatever the input (it rebuilds its
 * tables per call), so parsing each header with it caps a core at a few hundred
 * messages a second, garbage and retransmissions included.
 *
 * So what the transport and transaction layers need (framing, start line, Via,
 * CSeq, Call-ID, tags) is read here by hand, and sip.js's grammar parses the
 * Request-URI, From, To and Contact lazily: on first read, which the server forces
 * (`validateRequest`) only for a request that opens a new transaction.
 */
import { IncomingRequestMessage } from 'sip.js/lib/core/messages/incoming-request-message.js'
import { IncomingResponseMessage } from 'sip.js/lib/core/messages/incoming-response-message.js'
import { Grammar } from 'sip.js/lib/grammar/grammar.js'
import { fastParse } from './fast-headers'
import type { SipTransport } from './handler'

/** Largest message accepted on either transport (a UDP datagram cannot be larger anyway). */
export const MAX_MESSAGE_BYTES = 65_535

/** A via-parm read by hand. */
export interface ParsedVia {
  transport: string
  host: string
  port?: number
  branch?: string
}

/**
 * What a response copies from its request (RFC 3261 §8.2.6.2), kept raw so that a
 * request too broken to parse fully can still be answered 400.
 */
export interface RequestBasis {
  method: string
  /** Every via-parm in order, one per entry even when the request listed several in one header. */
  vias: string[]
  /** The top Via parsed; undefined when it is malformed (the answer then goes to the packet's source). */
  topVia: ParsedVia | undefined
  from: string
  to: string
  callId: string
  cseq: string
  /** True when To already carries a tag (a request inside a dialog). */
  toHasTag: boolean
  /** Timestamp header, echoed in a 100 Trying (RFC 3261 §8.2.6.1). */
  timestamp: string | undefined
}

export type ParsedSipMessage =
  | { kind: 'request'; message: IncomingRequestMessage; basis: RequestBasis }
  | { kind: 'response'; message: IncomingResponseMessage }
  /** A request wrong in a way the sender should hear about: answer `status` (400, 416, 505) with `reason`. */
  | { kind: 'bad-request'; status: number; reason: string; basis: RequestBasis }
  /** Not answerable: dropped silently (a response is never answered; noise is not either). */
  | { kind: 'garbage'; reason: string }

const CRLF_CRLF = Buffer.from('\r\n\r\n')
const TOKEN = /^[A-Za-z0-9.!%*_+`'~-]+$/
const REQUEST_LINE = /^([A-Za-z0-9.!%*_+`'~-]+) (\S+) (SIP\/\d+\.\d+)$/i
const STATUS_LINE = /^SIP\/2\.0 [1-6]\d\d /

/** RFC 3261 §7.3.3 and the IANA registry: the compact header names and what they stand for. */
const COMPACT_NAMES: Record<string, string> = {
  a: 'Accept-Contact',
  b: 'Referred-By',
  c: 'Content-Type',
  d: 'Request-Disposition',
  e: 'Content-Encoding',
  f: 'From',
  i: 'Call-ID',
  j: 'Reject-Contact',
  k: 'Supported',
  l: 'Content-Length',
  m: 'Contact',
  n: 'Identity-Info',
  o: 'Event',
  r: 'Refer-To',
  s: 'Subject',
  t: 'To',
  u: 'Allow-Events',
  v: 'Via',
  x: 'Session-Expires',
  y: 'Identity',
}

const decoder = new TextDecoder('utf-8')

/** Splits a header value on the commas that separate list entries (not those inside quotes or <...>). */
export function splitHeaderList(value: string): string[] {
  const out: string[] = []
  let quoted = false
  let angle = false
  let start = 0
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]
    if (quoted) {
      if (ch === '\\') i++
      else if (ch === '"') quoted = false
    } else if (ch === '"') quoted = true
    else if (ch === '<') angle = true
    else if (ch === '>') angle = false
    else if (ch === ',' && !angle) {
      out.push(value.slice(start, i).trim())
      start = i + 1
    }
  }
  out.push(value.slice(start).trim())
  return out.filter((v) => v !== '')
}

const VIA = /^SIP\s*\/\s*2\.0\s*\/\s*([A-Za-z0-9.!%*_+`'~-]+)\s+(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?:\s*:\s*(\d{1,5}))?\s*(;.*)?$/
const VIA_PARAM = /^([A-Za-z0-9.!%*_+`'~-]+)(?:\s*=\s*("[^"]*"|[^\s;=]+))?$/

/** Parses one via-parm (RFC 3261 §25.1: sent-protocol sent-by *(; via-params)); undefined when malformed. */
export function parseVia(viaParm: string): ParsedVia | undefined {
  const m = VIA.exec(viaParm.trim())
  if (!m) return undefined
  const port = m[3] === undefined ? undefined : Number(m[3])
  if (port !== undefined && (port < 1 || port > 65_535)) return undefined
  let branch: string | undefined
  for (const raw of (m[4] ?? '').split(';').slice(1)) {
    const param = VIA_PARAM.exec(raw.trim())
    if (!param) return undefined
    if (param[1]!.toLowerCase() === 'branch') branch = param[2]
  }
  return { transport: m[1]!.toUpperCase(), host: m[2]!, port, branch }
}

/** The tag parameter of a From or To value (outside the <...> and quoted display name). */
export function tagOf(nameAddr: string): string | undefined {
  const params = nameAddr.replace(/"(?:[^"\\]|\\.)*"|<[^>]*>/g, '')
  return /;\s*tag\s*=\s*([^\s;,]+)/i.exec(params)?.[1]
}

/** CSeq: a number below 2**31 and a method (§8.1.1.5). */
function parseCSeq(value: string): { number: number; method: string } | undefined {
  const m = /^(\d{1,10})\s+([A-Za-z0-9.!%*_+`'~-]+)$/.exec(value.trim())
  if (!m || Number(m[1]) >= 2 ** 31) return undefined
  return { number: Number(m[1]), method: m[2]! }
}

interface HeaderSection {
  startLine: string
  headers: Array<[name: string, value: string]>
  /** The first line that is not `name: value`, if any. */
  malformed: string | undefined
}

/** Splits the header section into its start line and unfolded, compact-name-expanded headers. */
function splitHeaders(head: string): HeaderSection {
  const lines = head.split('\r\n')
  const startLine = lines[0] ?? ''
  const headers: Array<[string, string]> = []
  let malformed: string | undefined
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!
    if ((line.startsWith(' ') || line.startsWith('\t')) && headers.length > 0) {
      // Line folding (RFC 3261 §7.3.1): the continuation belongs to the previous header.
      const last = headers[headers.length - 1]!
      last[1] = `${last[1]} ${line.trim()}`.trim()
      continue
    }
    const colon = line.indexOf(':')
    const rawName = colon > 0 ? line.slice(0, colon).trim() : ''
    if (!TOKEN.test(rawName)) {
      malformed ??= `malformed header line ${i + 1}`
      continue
    }
    const name = COMPACT_NAMES[rawName.toLowerCase()] ?? rawName
    headers.push([name, line.slice(colon + 1).trim()])
  }
  return { startLine, headers, malformed }
}

const first = (headers: Array<[string, string]>, name: string) => headers.find(([n]) => n.toLowerCase() === name)?.[1]

/** The raw basis of a response, or the name of the first missing header. */
function basisOf(method: string, headers: Array<[string, string]>): RequestBasis | string {
  const vias = headers.filter(([n]) => n.toLowerCase() === 'via').flatMap(([, v]) => splitHeaderList(v))
  const from = first(headers, 'from')
  const to = first(headers, 'to')
  const callId = first(headers, 'call-id')
  const cseq = first(headers, 'cseq')
  if (vias.length === 0) return 'Via'
  if (!from) return 'From'
  if (!to) return 'To'
  if (!callId) return 'Call-ID'
  if (!cseq) return 'CSeq'
  return {
    method,
    vias,
    topVia: parseVia(vias[0]!),
    from,
    to,
    callId,
    cseq,
    toHasTag: tagOf(to) !== undefined,
    timestamp: first(headers, 'timestamp'),
  }
}

/** Message framing per RFC 3261 §18.3: the body by Content-Length, in bytes. */
function bodyOf(
  bytes: Uint8Array,
  bodyStart: number,
  headers: Array<[string, string]>,
  transport: SipTransport,
): { body: Uint8Array } | { error: string; status?: number } {
  const declared = headers.filter(([n]) => n.toLowerCase() === 'content-length').map(([, v]) => v)
  const available = bytes.length - bodyStart
  if (declared.length === 0) {
    // A stream cannot be framed without it; a datagram's body is the rest of the packet.
    if (transport === 'tcp') return { error: 'Content-Length is required over TCP' }
    return { body: bytes.subarray(bodyStart) }
  }
  if (declared.some((v) => v !== declared[0]) || !/^\d{1,9}$/.test(declared[0]!)) return { error: 'invalid Content-Length' }
  const length = Number(declared[0])
  if (length > available) return { error: 'body shorter than Content-Length' }
  // Bytes beyond the declared body are discarded (§18.3).
  return { body: bytes.subarray(bodyStart, bodyStart + length) }
}

/** Defines `key` on `target` as computed on first read, then a plain (writable) property. */
function lazy<T extends object>(target: T, key: PropertyKey, compute: () => unknown): void {
  Object.defineProperty(target, key, {
    configurable: true,
    enumerable: true,
    get() {
      const value = compute()
      Object.defineProperty(target, key, { value, writable: true, configurable: true, enumerable: true })
      return value
    },
    set(value) {
      Object.defineProperty(target, key, { value, writable: true, configurable: true, enumerable: true })
    },
  })
}

/**
 * Recently parsed header values that the fast path left to sip.js's grammar, by rule
 * and value (a phone refreshing its registration sends the same headers each time).
 * Only the grammar's answers are kept: the fast path's cost about what a cache hit
 * and its copy do, and would only push the expensive ones out.
 */
const grammarCache = new Map<string, unknown>()
const GRAMMAR_CACHE_SIZE = 2_000

/**
 * A header value as sip.js's grammar parses it (rule SIP_URI, From, To, Contact or
 * Record_Route): by the fast path (fast-headers.ts) when the value has a shape it
 * knows, else by the grammar through the cache. Answers a copy the caller may change.
 */
function grammar(value: string, rule: string): unknown {
  const fast = fastParse(value, rule, true)
  if (fast !== undefined) return fast
  const key = `${rule}\n${value}`
  let parsed = grammarCache.get(key)
  if (parsed === undefined) {
    parsed = Grammar.parse(value, rule) as unknown
    if (grammarCache.size >= GRAMMAR_CACHE_SIZE) grammarCache.delete(grammarCache.keys().next().value!)
    grammarCache.set(key, parsed)
  } else {
    // Least recently used goes first: move this one to the end.
    grammarCache.delete(key)
    grammarCache.set(key, parsed)
  }
  return parsed === -1 ? undefined : copyOf(parsed)
}

/** NameAddrHeader and URI clone themselves; a Contact or Record-Route list is cloned entry by entry. */
function copyOf(parsed: unknown): unknown {
  if (Array.isArray(parsed)) return parsed.map((e: { parsed?: { clone?: () => unknown } }) => ({ ...e, parsed: e.parsed?.clone?.() ?? e.parsed }))
  const cloneable = parsed as { clone?: () => unknown } | null
  return typeof cloneable?.clone === 'function' ? cloneable.clone() : parsed
}

/** Fills a sip.js message's headers as its parser would: one entry per Via, Contact and Record-Route (parsed lazily), the rest raw. */
function fillHeaders(message: IncomingMessage, headers: Array<[string, string]>, vias: string[]): void {
  let viasWritten = false
  for (const [name, value] of headers) {
    const lower = name.toLowerCase()
    if (lower === 'via') {
      if (!viasWritten) for (const via of vias) message.addHeader('via', via)
      viasWritten = true
    } else if (lower === 'contact' || lower === 'record-route') {
      const rule = lower === 'contact' ? 'Contact' : 'Record_Route'
      for (const entry of splitHeaderList(value)) {
        message.addHeader(lower, entry)
        const list = message.headers[lower === 'contact' ? 'Contact' : 'Record-Route']!
        // Where sip.js's parser would have stored the entry's NameAddrHeader.
        lazy(list[list.length - 1]!, 'parsed', () => (grammar(entry, rule) as Array<{ parsed?: unknown }> | undefined)?.[0]?.parsed)
      }
    } else message.addHeader(lower, value)
  }
}

type IncomingMessage = IncomingRequestMessage | IncomingResponseMessage

/**
 * From or To as sip.js's NameAddrHeader. The tag is taken off before the grammar
 * (through its cache) and put back after: tags are new for every dialog and
 * registration, the rest repeats.
 */
function nameAddr(value: string, rule: 'From' | 'To'): unknown {
  const masked = value.replace(/"(?:[^"\\]|\\.)*"|<[^>]*>/g, (m) => ' '.repeat(m.length))
  const tag = /;\s*tag\s*=\s*([^\s;,]+)/i.exec(masked)
  if (!tag) return grammar(value, rule)
  const parsed = grammar(value.slice(0, tag.index) + value.slice(tag.index + tag[0].length), rule) as { setParam(k: string, v: string): void } | undefined
  parsed?.setParam('tag', value.slice(tag.index, tag.index + tag[0].length).replace(/^;\s*tag\s*=\s*/i, ''))
  return parsed
}

/** From and To as sip.js's NameAddrHeader, parsed on first read. */
function lazyNameAddrs(message: IncomingMessage, basis: { from: string; to: string }): void {
  lazy(message, 'from', () => nameAddr(basis.from, 'From'))
  lazy(message, 'to', () => nameAddr(basis.to, 'To'))
}

/** Parses one whole SIP message. Never throws. */
export function parseSipMessage(input: Uint8Array, transport: SipTransport): ParsedSipMessage {
  try {
    return parse(input, transport)
  } catch (e) {
    // Whatever a hostile input makes throw, it is noise to us.
    return { kind: 'garbage', reason: `parser failure: ${e instanceof Error ? e.message : String(e)}` }
  }
}

function parse(input: Uint8Array, transport: SipTransport): ParsedSipMessage {
  if (input.length > MAX_MESSAGE_BYTES) return { kind: 'garbage', reason: 'message too large' }
  let bytes = Buffer.from(input.buffer, input.byteOffset, input.byteLength)
  // CRLFs before the start line are keep-alives or stream padding (RFC 3261 §7.5).
  let lead = 0
  while (lead + 1 < bytes.length && bytes[lead] === 13 && bytes[lead + 1] === 10) lead += 2
  if (lead > 0) bytes = bytes.subarray(lead)
  const headerEnd = bytes.indexOf(CRLF_CRLF)
  if (headerEnd < 0) return { kind: 'garbage', reason: 'no end of headers' }
  const head = decoder.decode(bytes.subarray(0, headerEnd))
  const section = splitHeaders(head)

  if (STATUS_LINE.test(section.startLine)) return parseResponse(bytes, headerEnd, head, section, transport)
  const requestLine = REQUEST_LINE.exec(section.startLine)
  if (!requestLine) return { kind: 'garbage', reason: 'neither a request line nor a status line' }
  const method = requestLine[1]!
  const basis = basisOf(method, section.headers)
  if (typeof basis === 'string') return { kind: 'garbage', reason: `request without ${basis}` }
  const bad = (reason: string, status = 400): ParsedSipMessage => ({ kind: 'bad-request', status, reason, basis })

  if (requestLine[3]!.toUpperCase() !== 'SIP/2.0') return bad('SIP version not supported', 505)
  if (section.malformed) return bad(section.malformed)
  if (!basis.topVia) return bad('malformed Via')
  if (!/^\S+$/.test(basis.callId)) return bad('malformed Call-ID')
  const cseq = parseCSeq(basis.cseq)
  if (!cseq) return bad('malformed CSeq')
  if (cseq.method !== method) return bad('CSeq method does not match the request method')
  const framed = bodyOf(bytes, headerEnd + 4, section.headers, transport)
  if ('error' in framed) return bad(framed.error)

  const message = new IncomingRequestMessage()
  message.method = method
  fillHeaders(message, section.headers, basis.vias)
  message.callId = basis.callId
  message.cseq = cseq.number
  message.via = { host: basis.topVia.host, port: basis.topVia.port ?? 0 }
  message.viaBranch = basis.topVia.branch ?? ''
  message.fromTag = tagOf(basis.from) as string
  message.toTag = tagOf(basis.to) as string
  message.body = decoder.decode(framed.body)
  message.data = `${head}\r\n\r\n${message.body}`
  const requestUri = requestLine[2]!
  lazy(message, 'ruri', () => grammar(requestUri, 'SIP_URI'))
  lazyNameAddrs(message, basis)
  return { kind: 'request', message, basis }
}

/**
 * Parses what the server reads only of a request it is about to hand over: the
 * Request-URI, From and To (with sip.js's grammar). Answers why the request is bad,
 * with its status, or undefined when it is fine.
 */
export function validateRequest(message: IncomingRequestMessage): { status: number; reason: string } | undefined {
  if (!message.ruri) {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(message.data.slice(message.data.indexOf(' ') + 1))?.[1]
    return scheme && !/^sips?$/i.test(scheme) ? { status: 416, reason: 'unsupported URI scheme' } : { status: 400, reason: 'malformed Request-URI' }
  }
  if (!message.from) return { status: 400, reason: 'malformed From' }
  if (!message.to) return { status: 400, reason: 'malformed To' }
  return undefined
}

function parseResponse(bytes: Buffer, headerEnd: number, head: string, section: HeaderSection, transport: SipTransport): ParsedSipMessage {
  if (section.malformed) return { kind: 'garbage', reason: `response with ${section.malformed}` }
  const status = /^SIP\/2\.0 (\d{3}) (.*)$/.exec(section.startLine)
  const basis = basisOf('', section.headers)
  if (!status || typeof basis === 'string') return { kind: 'garbage', reason: 'response lacks a mandatory header' }
  const cseq = parseCSeq(basis.cseq)
  if (!cseq || !basis.topVia) return { kind: 'garbage', reason: 'response with a malformed CSeq or Via' }
  const framed = bodyOf(bytes, headerEnd + 4, section.headers, transport)
  if ('error' in framed) return { kind: 'garbage', reason: `response with ${framed.error}` }
  const message = new IncomingResponseMessage()
  message.statusCode = Number(status[1])
  message.reasonPhrase = status[2]!
  message.method = cseq.method
  fillHeaders(message, section.headers, basis.vias)
  message.callId = basis.callId
  message.cseq = cseq.number
  message.via = { host: basis.topVia.host, port: basis.topVia.port ?? 0 }
  message.viaBranch = basis.topVia.branch ?? ''
  message.fromTag = tagOf(basis.from) as string
  message.toTag = tagOf(basis.to) as string
  message.body = decoder.decode(framed.body)
  message.data = `${head}\r\n\r\n${message.body}`
  lazyNameAddrs(message, basis)
  return { kind: 'response', message }
}
