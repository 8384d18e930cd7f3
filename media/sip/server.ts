/**
 * The SIP server of the media role: transports → parser → server transactions →
 * one handler call per new request, whose response goes back through the
 * transaction (so retransmissions are answered without asking the handler again).
 */
import type { IncomingRequestMessage } from 'sip.js/lib/core/messages/incoming-request-message.js'
import type { Clock } from '../../src/clock'
import type { Logger } from '../../src/logger'
import { type ClientOutcome, ClientTransactions, type OutgoingRequest } from './client'
import { type InviteHandle, type InviteHooks, InviteClientTransactions } from './invite-client'
import type { SipRequestContext, SipRequestHandler, SipResponseSpec, SipSource } from './handler'
import { parseSipMessage, type RequestBasis, validateRequest } from './message'
import { buildResponse, newTag, responseDestination } from './response'
import { type ServerTransaction, ServerTransactions, TRANSACTION_TIMEOUT, transactionKey } from './transactions'
import { SipTimers } from './timers'
import { type InboundMessage, openSipTransports } from './transport'

export interface SipServerOptions {
  host: string
  /** 0: an ephemeral port (read it back from `udpPort` / `tcpPort`). */
  port: number
  clock: Clock
  handler: SipRequestHandler
  logger?: Logger
  /**
   * Open server transactions at most. When full, the oldest answered one is
   * forgotten; when all are still being handled, new requests get a stateless 503.
   * Default 50,000.
   */
  maxTransactions?: number
  /** Address put in the Via of requests the server sends (SIP_HOST); default `host`. */
  advertisedHost?: string
  /** Open TCP connections at most. Default 1,024. */
  maxConnections?: number
  /** TCP connections' idle and first-message timeouts (transport.ts: SipTransportOptions). */
  tcpIdleTimeoutS?: number
  tcpFirstMessageTimeoutS?: number
  /** How long (clock ms) an INVITE handler may take before the caller gets 408. Default 180 s (RFC 3261 Timer C's floor). */
  inviteHandlerDeadlineMs?: number
  /** False: everything from this source is dropped unread, unanswered (an address found guessing passwords). */
  admit?: (source: SipSource) => boolean
  /** An ACK that is not a retransmission: of a 2xx this server sent (`transaction` set), or matching nothing. */
  onAck?: (request: IncomingRequestMessage, source: SipSource, transaction: ServerTransaction | undefined) => void
}

export interface SipServer {
  readonly udpPort: number
  readonly tcpPort: number
  /** Server transactions not yet terminated (each holds its last response for retransmissions). */
  readonly openTransactions: number
  /** Protocol timers not yet fired. */
  readonly pendingTimers: number
  /** Client transactions waiting for (or absorbing retransmissions of) a final response. */
  readonly openClientTransactions: number
  /**
   * Sends a non-INVITE request (NOTIFY to a registered contact, an OPTIONS probe) to
   * `target`: over UDP, or down the TCP connection that peer opened. Resolves with
   * the final response, `timeout` (Timer F) or `unreachable`. Throws InvalidRequest
   * (client.ts) for a request that would be malformed.
   */
  sendRequest(target: SipSource, request: OutgoingRequest): Promise<ClientOutcome>
  /** Sends an INVITE (a new call leg, or a re-INVITE in a dialog); the outcome settles on its final response. */
  sendInvite(target: SipSource, request: OutgoingRequest, hooks?: InviteHooks): InviteHandle
  /** Sends bytes outside any transaction (the ACK of a 2xx); false when there is no way to the target. */
  sendRaw(bytes: Uint8Array, target: SipSource): boolean
  /** Our address and port as a Via sent-by (and a Contact host) for a transport. */
  sentBy(transport: 'udp' | 'tcp'): string
  /** Fires the protocol timers due by the clock now (for a manual clock; a running clock fires them by itself). */
  tick(): number
  stop(): Promise<void>
}

/** Why a request was refused, for the person reading the phone's log (RFC 3261 §20.43, code 399: miscellaneous). */
const warning = (reason: string): readonly [string, string] => ['Warning', `399 sip-server "${reason.replace(/["\\]/g, '')}"`]

/**
 * SIP extensions a request may require of this server (RFC 3261 §8.2.2.3, `Require`).
 * None: a phone asking for reliable provisionals (100rel), session timers, outbound
 * or a dialog to replace in an INVITE (RFC 3891; Replaces is taken in a REFER's
 * Refer-To only) is refused 420 with the tags listed in `Unsupported`, and tries
 * again without them or gives up, rather than counting on what we would not do.
 */
export const SUPPORTED_OPTION_TAGS: ReadonlySet<string> = new Set()

const OPTION_TAG = /^[A-Za-z0-9.!%*_+`'~-]+$/

/**
 * The option tags a request requires that this server does not support (a CANCEL's
 * count for nothing: §8.2.2.3); `malformed` when a tag is not a token.
 */
export function unsupportedRequirements(request: Pick<IncomingRequestMessage, 'method' | 'getHeaders'>): string[] | 'malformed' {
  if (request.method === 'CANCEL' || request.method === 'ACK') return []
  const tags = request
    .getHeaders('require')
    .flatMap((v) => v.split(','))
    .map((t) => t.trim())
    .filter((t) => t !== '')
  if (!tags.every((t) => OPTION_TAG.test(t))) return 'malformed'
  return [...new Set(tags.filter((t) => !SUPPORTED_OPTION_TAGS.has(t.toLowerCase())))]
}

/** Requests that are never answered statelessly when refused: answering an ACK is a protocol error. */
const isAck = (basis: RequestBasis) => basis.method.toUpperCase() === 'ACK'

export async function startSipServer(options: SipServerOptions): Promise<SipServer> {
  const log = options.logger?.child({ component: 'sip' })
  const timers = new SipTimers(options.clock, (e) => log?.error({ err: e }, 'sip timer failed'))
  const transactions = new ServerTransactions({ timers, maxTransactions: options.maxTransactions })
  const inviteDeadline = options.inviteHandlerDeadlineMs ?? 180_000
  let stopped = false

  /** A response outside any transaction: to bad requests and under overload. */
  const answerStatelessly = (basis: RequestBasis, spec: SipResponseSpec, inbound: InboundMessage) => {
    const destination = responseDestination(basis, inbound.source)
    inbound.reply(buildResponse(basis, spec, inbound.source, { toTag: newTag() }), destination)
  }

  const runHandler = async (request: IncomingRequestMessage, basis: RequestBasis, source: SipSource, transaction: ServerTransaction) => {
    const toTag = newTag()
    const respond = (spec: SipResponseSpec, tag = toTag) => {
      if (stopped || transaction.finished) return
      let bytes: Uint8Array
      try {
        bytes = buildResponse(basis, spec, source, { toTag: tag })
      } catch (e) {
        log?.error({ err: e, method: request.method, status: spec.status }, 'sip handler returned an unusable response')
        bytes = buildResponse(basis, { status: 500 }, source, { toTag: tag })
        spec = { status: 500 }
      }
      transaction.respond(spec.status, bytes, tag)
    }
    if (transaction.isInvite) respond({ status: 100 })
    // Checked only now, for a request that opened a transaction: the grammar is slow, and its answer is kept for retransmissions.
    const invalid = validateRequest(request)
    if (invalid) {
      log?.debug({ reason: invalid.reason, method: request.method, from: source }, 'bad sip request')
      respond({ status: invalid.status, headers: [warning(invalid.reason)] })
      return
    }
    if (request.method === 'CANCEL') {
      cancelInvite(request, basis, respond)
      return
    }
    const unsupported = unsupportedRequirements(request)
    if (unsupported === 'malformed') {
      respond({ status: 400, headers: [warning('malformed Require')] })
      return
    }
    if (unsupported.length > 0) {
      respond({ status: 420, headers: [['Unsupported', unsupported.join(', ')]] })
      return
    }
    // A handler that never answers must not hold its transaction for ever.
    const deadline = timers.after(transaction.isInvite ? inviteDeadline : TRANSACTION_TIMEOUT, () => {
      if (transaction.isInvite) respond({ status: 408 })
      else transaction.terminate()
    })
    const cancel = new AbortController()
    if (transaction.isInvite) pendingInvites.set(transaction.key, { cancel, respond, toTag })
    const context: SipRequestContext = {
      toTag,
      cancelled: cancel.signal,
      provisional: (spec) => {
        if (spec.status >= 100 && spec.status < 200 && !transaction.finished) respond(spec)
      },
    }
    try {
      respond(await options.handler(request, source, context))
    } catch (e) {
      // The message is not logged: its body may carry credentials or SDP.
      log?.error({ err: e, method: request.method }, 'sip handler failed')
      respond({ status: 500 })
    } finally {
      // A handler that answered only provisionally keeps its deadline.
      if (transaction.finished) deadline.cancel()
      pendingInvites.delete(transaction.key)
    }
  }

  /** INVITEs whose handler has not answered yet, by transaction key: what a CANCEL can reach. */
  const pendingInvites = new Map<string, { cancel: AbortController; respond: (spec: SipResponseSpec) => void; toTag: string }>()

  /**
   * RFC 3261 §9.2: a CANCEL names its INVITE by the same branch and sent-by. The
   * CANCEL gets 200 (481 when nothing it names is pending), then the INVITE still
   * ringing gets 487 and its handler is told (it cleans up its legs).
   */
  const cancelInvite = (request: IncomingRequestMessage, basis: RequestBasis, respond: (spec: SipResponseSpec, toTag?: string) => void) => {
    const key = transactionKey(request, basis).replace(/\|CANCEL$/, '|INVITE')
    const pending = pendingInvites.get(key)
    if (!pending) {
      respond({ status: 481 })
      return
    }
    pendingInvites.delete(key)
    // The CANCEL's 200 first (with the INVITE's To tag, §9.2), then the INVITE's 487: the order phones (and sipp) expect.
    respond({ status: 200 }, pending.toTag)
    pending.respond({ status: 487 })
    pending.cancel.abort()
  }

  const advertised = options.advertisedHost ?? options.host
  // Its sentBy and send run only once the transports below are open.
  const sentBy = (transport: 'udp' | 'tcp') =>
    `${advertised.includes(':') ? `[${advertised}]` : advertised}:${transport === 'udp' ? transports.udpPort : transports.tcpPort}`
  const sendBytes = (bytes: Uint8Array, target: SipSource) => {
    if (stopped) return false
    if (target.transport === 'tcp') return transports.sendTcp(bytes, target.address, target.port)
    transports.sendUdp(bytes, target.address, target.port)
    return true
  }
  const clients = new ClientTransactions({ timers, maxTransactions: options.maxTransactions, sentBy, send: sendBytes })

  const invites = new InviteClientTransactions({
    timers,
    maxTransactions: options.maxTransactions,
    sentBy: (transport) => sentBy(transport),
    send: (bytes, target) => sendBytes(bytes, target),
    nonInvite: clients,
  })

  const onMessage = (inbound: InboundMessage) => {
    if (stopped) return
    if (options.admit && !options.admit(inbound.source)) return
    const parsed = parseSipMessage(inbound.bytes, inbound.source.transport)
    switch (parsed.kind) {
      case 'garbage':
        log?.debug({ reason: parsed.reason, from: inbound.source }, 'sip message dropped')
        return
      case 'response':
        if (!clients.receive(parsed.message) && !invites.receive(parsed.message))
          log?.debug({ status: parsed.message.statusCode, from: inbound.source }, 'stray sip response dropped')
        return
      case 'bad-request':
        log?.debug({ reason: parsed.reason, method: parsed.basis.method, from: inbound.source }, 'bad sip request')
        if (!isAck(parsed.basis)) answerStatelessly(parsed.basis, { status: parsed.status, headers: [warning(parsed.reason)] }, inbound)
        return
    }
    const { message, basis } = parsed
    const destination = responseDestination(basis, inbound.source)
    const received = transactions.receive(message, basis, inbound.source.transport === 'tcp', (bytes) => inbound.reply(bytes, destination))
    switch (received.kind) {
      case 'retransmission':
        return
      case 'overloaded':
        log?.warn({ method: message.method, open: transactions.size }, 'sip transaction table full')
        if (!isAck(basis)) answerStatelessly(basis, { status: 503, headers: [['Retry-After', '5']] }, inbound)
        return
      case 'ack-2xx':
        options.onAck?.(message, inbound.source, received.transaction)
        return
      case 'stray-ack':
        options.onAck?.(message, inbound.source, undefined)
        return
      case 'new':
        runHandler(message, basis, inbound.source, received.transaction).catch((e) => {
          // Only building or sending the answer can get here; the transaction's timers still end it.
          log?.error({ err: e, method: message.method }, 'sip request handling failed')
        })
    }
  }

  const transports = await openSipTransports(
    {
      host: options.host,
      port: options.port,
      maxConnections: options.maxConnections,
      tcpIdleTimeoutS: options.tcpIdleTimeoutS,
      tcpFirstMessageTimeoutS: options.tcpFirstMessageTimeoutS,
    },
    {
      message: (inbound) => {
        try {
          onMessage(inbound)
        } catch (e) {
          // Nothing a peer sends may take the server down.
          log?.error({ err: e, from: inbound.source }, 'sip message handling failed')
        }
      },
      socketError: (error) => log?.debug({ err: error }, 'sip socket error'),
      broken: (reason, source, head) => {
        log?.debug({ reason, from: source }, 'sip stream closed')
        if (!head) return
        const parsed = parseSipMessage(head.bytes, 'tcp')
        if (parsed.kind === 'bad-request' && !isAck(parsed.basis)) answerStatelessly(parsed.basis, { status: 400, headers: [warning(reason)] }, head)
      },
    },
  )

  return {
    udpPort: transports.udpPort,
    tcpPort: transports.tcpPort,
    get openTransactions() {
      return transactions.size
    },
    get openClientTransactions() {
      return clients.size
    },
    sendRequest: (target, request) => clients.send(target, request),
    sendInvite: (target, request, hooks) => invites.send(target, request, hooks),
    sendRaw: sendBytes,
    sentBy,
    get pendingTimers() {
      return timers.pending
    },
    tick: () => timers.tick(),
    stop: async () => {
      if (stopped) return
      stopped = true
      await transports.close()
      transactions.clear()
      clients.clear()
      invites.clear()
      timers.stop()
    },
  }
}
