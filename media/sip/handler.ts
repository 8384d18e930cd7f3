/**
 * The contract between the SIP server (transports, parsing, transactions) and what
 * answers requests (registrar, later the B2BUA). A handler sees one parsed request
 * that is not a retransmission and returns the final response to send; the server
 * builds it (Via, From, To with a tag, Call-ID and CSeq copied from the request),
 * keeps it in the server transaction for retransmissions, and sends it back the way
 * the request came (RFC 3261 §18.2.2, rport when asked).
 */
import type { IncomingRequestMessage } from 'sip.js/lib/core/messages/incoming-request-message.js'

export type SipTransport = 'udp' | 'tcp'

/** Where a request came from: the socket's view, not the Via header's claim. */
export interface SipSource {
  transport: SipTransport
  address: string
  port: number
}

/** A final (or provisional) response a handler wants sent. */
export interface SipResponseSpec {
  status: number
  /** Reason phrase; the standard one for the status when omitted. */
  reason?: string
  /** Extra headers in order (e.g. WWW-Authenticate, Contact, Expires, Date). */
  headers?: ReadonlyArray<readonly [name: string, value: string]>
  body?: string
  /** Content-Type of `body`. */
  contentType?: string
}

export type SipRequest = IncomingRequestMessage

/**
 * What a handler may do before its final answer (an INVITE's handler runs while the
 * callee rings): send provisional responses, learn the To tag the final response will
 * carry (the dialog's local tag), and learn that the caller gave up.
 */
export interface SipRequestContext {
  /** The To tag of every response to this request (provisional and final): the UAS's dialog tag. */
  readonly toTag: string
  /** Sends a 1xx (180 Ringing, 183 with early media). Ignored once the final response went. */
  provisional(spec: SipResponseSpec): void
  /**
   * Aborted when a CANCEL matched this INVITE (RFC 3261 §9.2): the server has already
   * answered the CANCEL with 200 and the INVITE with 487; the handler only cleans up.
   */
  readonly cancelled: AbortSignal
}

export type SipRequestHandler = (request: SipRequest, source: SipSource, context?: SipRequestContext) => SipResponseSpec | Promise<SipResponseSpec>
