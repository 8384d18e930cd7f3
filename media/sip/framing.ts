/**
 * Cuts a TCP byte stream into SIP messages (RFC 3261 §18.3: the header section
 * ends at the empty line, the body is Content-Length bytes) and recognises the
 * RFC 5626 §3.5.1 keep-alive: a CRLF CRLF "ping" between messages, answered with
 * a CRLF "pong".
 */
import { MAX_MESSAGE_BYTES } from './message'

export type FrameEvent =
  | { kind: 'message'; bytes: Uint8Array }
  | { kind: 'ping' }
  /** The stream cannot be framed any more: the connection is to be closed (after answering `bytes`, a message cut at its headers, when given). */
  | { kind: 'broken'; reason: string; bytes?: Uint8Array }

const CRLF_CRLF = Buffer.from('\r\n\r\n')
/** Content-Length or its compact form l, at the start of a header line. */
const CONTENT_LENGTH = /\r\n(?:content-length|l)[ \t]*:[ \t]*([^\r\n]*)/gi

export class SipStreamFramer {
  private buffer: Buffer = Buffer.alloc(0)
  private broken = false

  constructor(private readonly maxMessageBytes = MAX_MESSAGE_BYTES) {}

  /** Feeds received bytes; answers the complete messages (and pings) they finish, in order. */
  push(chunk: Uint8Array): FrameEvent[] {
    if (this.broken) return []
    this.buffer = this.buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buffer, chunk])
    const events: FrameEvent[] = []
    // Bounded by the bytes held: each turn consumes at least two of them or stops.
    while (this.buffer.length > 0) {
      if (this.buffer[0] === 13 || this.buffer[0] === 10) {
        if (this.buffer.length < 4 && CRLF_CRLF.subarray(0, this.buffer.length).equals(this.buffer)) break
        if (this.buffer.subarray(0, 4).equals(CRLF_CRLF)) {
          events.push({ kind: 'ping' })
          this.buffer = this.buffer.subarray(4)
          continue
        }
        // A lone CRLF (RFC 5626 pong, or padding before a message) is skipped.
        if (this.buffer[0] === 13 && this.buffer[1] === 10) {
          this.buffer = this.buffer.subarray(2)
          continue
        }
        if (this.buffer.length === 1) break
        return this.fail(events, 'stray line break')
      }
      const headerEnd = this.buffer.indexOf(CRLF_CRLF)
      if (headerEnd < 0) {
        if (this.buffer.length > this.maxMessageBytes) return this.fail(events, 'header section too long')
        break
      }
      const bodyStart = headerEnd + 4
      const length = contentLength(this.buffer.subarray(0, headerEnd).toString('latin1'))
      if (typeof length === 'string') return this.fail(events, length, Buffer.from(this.buffer.subarray(0, bodyStart)))
      if (bodyStart + length > this.maxMessageBytes) return this.fail(events, 'message too large')
      if (this.buffer.length < bodyStart + length) break
      events.push({ kind: 'message', bytes: Buffer.from(this.buffer.subarray(0, bodyStart + length)) })
      this.buffer = this.buffer.subarray(bodyStart + length)
    }
    if (this.buffer.length === 0) this.buffer = Buffer.alloc(0)
    return events
  }

  /** Bytes held waiting for the rest of a message. */
  get buffered(): number {
    return this.buffer.length
  }

  private fail(events: FrameEvent[], reason: string, bytes?: Uint8Array): FrameEvent[] {
    this.broken = true
    this.buffer = Buffer.alloc(0)
    events.push(bytes ? { kind: 'broken', reason, bytes } : { kind: 'broken', reason })
    return events
  }
}

/** The body length a header section declares, or why the stream cannot be framed. */
function contentLength(head: string): number | string {
  const values = [...`\r\n${head.split('\r\n').slice(1).join('\r\n')}`.matchAll(CONTENT_LENGTH)].map((m) => m[1]!.trim())
  if (values.length === 0) return 'Content-Length is required over TCP'
  if (values.some((v) => v !== values[0]) || !/^\d{1,9}$/.test(values[0]!)) return 'invalid Content-Length'
  return Number(values[0])
}
