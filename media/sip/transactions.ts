/**
 * Server transactions (RFC 3261 §17.2): they absorb retransmitted requests by
 * resending the last response, retransmit final responses to INVITE over UDP until
 * the ACK comes, and forget a request once no retransmission of it can arrive.
 * Every timer runs on the injected clock (SipTimers).
 */
import type { IncomingRequestMessage } from 'sip.js/lib/core/messages/incoming-request-message.js'
import type { RequestBasis } from './message'
import type { SipTimers, TimerHandle } from './timers'

/** RFC 3261 §17.1.1.1: round-trip estimate, retransmission cap, longest time a message lives in the network. */
export const T1 = 500
export const T2 = 4_000
export const T4 = 5_000
/** Timers F, H, J and the 2xx retransmission window: 64*T1. */
export const TRANSACTION_TIMEOUT = 64 * T1

const MAGIC_COOKIE = 'z9hG4bK'

export type TransactionState = 'trying' | 'proceeding' | 'completed' | 'accepted' | 'confirmed' | 'terminated'

/** How a request relates to the transactions already open. */
export type Received =
  /** A new request: hand it to the TU and answer through `transaction`. */
  | { kind: 'new'; transaction: ServerTransaction }
  /** A retransmission, answered (or ignored) by its transaction. */
  | { kind: 'retransmission' }
  /** The ACK of a 2xx this layer sent (a new transaction by RFC 3261, matched here by dialog). */
  | { kind: 'ack-2xx'; transaction: ServerTransaction }
  /** An ACK that matches nothing (late, or for a dialog another component holds). */
  | { kind: 'stray-ack' }
  /** The table is full of requests still being handled: answer 503 without state. */
  | { kind: 'overloaded' }

/** The RFC 3261 §17.2.3 key: branch with the magic cookie, sent-by and method (ACK counts as INVITE); the §17.2.3 fallback for RFC 2543 clients. */
export function transactionKey(request: IncomingRequestMessage, basis: RequestBasis): string {
  const method = request.method === 'ACK' ? 'INVITE' : request.method
  const via = basis.topVia
  const sentBy = `${via?.host ?? ''}:${via?.port ?? ''}`
  if (via?.branch?.startsWith(MAGIC_COOKIE)) return `${via.branch}|${sentBy}|${method}`
  return `2543|${request.callId}|${request.cseq}|${request.fromTag ?? ''}|${sentBy}|${method}`
}

/** The key of the dialog-forming 2xx an ACK acknowledges (§13.3.1.4: matched by dialog and CSeq, not by branch). */
const ackKey = (callId: string, cseq: number, fromTag: string | undefined, toTag: string | undefined) => `${callId}|${cseq}|${fromTag ?? ''}|${toTag ?? ''}`

export interface ServerTransactionsOptions {
  timers: SipTimers
  /** Open transactions at most (default 50,000: about 1,500 non-INVITE requests a second over UDP, each kept 64*T1). */
  maxTransactions?: number
  /** Told when a transaction ends without the ACK its final INVITE response asked for (Timer H, or the 2xx window). */
  onAckTimeout?: (transaction: ServerTransaction) => void
}

export class ServerTransactions {
  private readonly table = new Map<string, ServerTransaction>()
  private readonly awaitingAck = new Map<string, ServerTransaction>()
  readonly maxTransactions: number

  constructor(private readonly options: ServerTransactionsOptions) {
    this.maxTransactions = options.maxTransactions ?? 50_000
  }

  get size(): number {
    return this.table.size
  }

  /**
   * Matches a request to its transaction. `send` is the way back to its sender,
   * kept by a new transaction for its responses and retransmissions.
   */
  receive(request: IncomingRequestMessage, basis: RequestBasis, reliable: boolean, send: (bytes: Uint8Array) => void): Received {
    const key = transactionKey(request, basis)
    const existing = this.table.get(key)
    if (request.method === 'ACK') {
      if (existing) {
        // An ACK of a 2xx that reuses the INVITE's branch (RFC 2543 habits) still acknowledges it.
        const ofAccepted = existing.state === 'accepted'
        existing.ack()
        return ofAccepted ? { kind: 'ack-2xx', transaction: existing } : { kind: 'retransmission' }
      }
      const accepted = this.awaitingAck.get(ackKey(request.callId, request.cseq, request.fromTag, request.toTag))
      if (accepted) {
        accepted.ack()
        return { kind: 'ack-2xx', transaction: accepted }
      }
      return { kind: 'stray-ack' }
    }
    if (existing) {
      existing.retransmitted()
      return { kind: 'retransmission' }
    }
    if (this.table.size >= this.maxTransactions && !this.evictOldestAnswered()) return { kind: 'overloaded' }
    const transaction = new ServerTransaction(key, request, reliable, send, this.options.timers, {
      terminated: (t) => {
        this.table.delete(t.key)
        if (t.ackKey) this.awaitingAck.delete(t.ackKey)
      },
      accepted: (t) => {
        if (t.ackKey) this.awaitingAck.set(t.ackKey, t)
      },
      ackTimeout: (t) => this.options.onAckTimeout?.(t),
    })
    this.table.set(key, transaction)
    return { kind: 'new', transaction }
  }

  /**
   * Makes room by forgetting the oldest transaction that has its final answer and
   * only waits out retransmissions (Completed, Confirmed): at worst a late copy of
   * that request reaches the handler again. Transactions still being handled, or
   * whose 2xx waits for its ACK, are kept. Looks at the oldest few only (the table
   * iterates in creation order), so a table full of handled requests costs O(1).
   */
  private evictOldestAnswered(): boolean {
    let looked = 0
    for (const t of this.table.values()) {
      if (t.state === 'completed' || t.state === 'confirmed') {
        t.terminate()
        return true
      }
      if (++looked >= 64) break
    }
    return false
  }

  /** Ends every transaction and its timers (server shutdown). */
  clear(): void {
    for (const t of [...this.table.values()]) t.terminate()
  }
}

interface Hooks {
  terminated(t: ServerTransaction): void
  accepted(t: ServerTransaction): void
  ackTimeout(t: ServerTransaction): void
}

export class ServerTransaction {
  state: TransactionState
  readonly method: string
  readonly callId: string
  /** Set once a 2xx to INVITE was sent: the key its ACK comes with. */
  ackKey: string | undefined
  private lastResponse: Uint8Array | undefined
  private retransmitTimer: TimerHandle | undefined
  private endTimer: TimerHandle | undefined

  /** What the ACK of a 2xx is matched by; the request itself is not kept (a completed transaction holds only its response). */
  private readonly dialog: { cseq: number; fromTag: string | undefined; toTag: string | undefined }

  constructor(
    readonly key: string,
    request: IncomingRequestMessage,
    readonly reliable: boolean,
    private readonly send: (bytes: Uint8Array) => void,
    private readonly timers: SipTimers,
    private readonly hooks: Hooks,
  ) {
    this.method = request.method
    this.callId = request.callId
    this.dialog = { cseq: request.cseq, fromTag: request.fromTag, toTag: request.toTag }
    this.state = request.method === 'INVITE' ? 'proceeding' : 'trying'
  }

  get isInvite(): boolean {
    return this.method === 'INVITE'
  }

  get finished(): boolean {
    return this.state !== 'trying' && this.state !== 'proceeding'
  }

  /**
   * Sends a response (the TU's, or the 100 Trying) and moves the state machine:
   * §17.2.1 for INVITE (Timers G, H, I), §17.2.2 for the rest (Timer J).
   * `toTag` is the tag the response put in To, so the ACK of a 2xx can be matched.
   * A response after the final one is dropped.
   */
  respond(status: number, bytes: Uint8Array, toTag?: string): void {
    if (this.finished) return
    this.lastResponse = bytes
    this.send(bytes)
    if (status < 200) {
      if (this.state === 'trying') this.state = 'proceeding'
      return
    }
    if (!this.isInvite) {
      this.state = 'completed'
      this.endAfter(this.reliable ? 0 : TRANSACTION_TIMEOUT)
      return
    }
    if (status < 300) {
      // RFC 6026 "Accepted": the 2xx is retransmitted end to end, whatever the transport, until its ACK (§13.3.1.4).
      this.state = 'accepted'
      this.ackKey = ackKey(this.callId, this.dialog.cseq, this.dialog.fromTag, this.dialog.toTag ?? toTag)
      this.hooks.accepted(this)
      this.retransmit(T1)
      this.endTimer = this.timers.after(TRANSACTION_TIMEOUT, () => {
        this.hooks.ackTimeout(this)
        this.terminate()
      })
      return
    }
    this.state = 'completed'
    if (!this.reliable) this.retransmit(T1) // Timer G
    this.endTimer = this.timers.after(TRANSACTION_TIMEOUT, () => {
      // Timer H: the ACK never came.
      this.hooks.ackTimeout(this)
      this.terminate()
    })
  }

  /** A retransmission of the request: resend the last response (none yet in Trying: nothing to say). */
  retransmitted(): void {
    if (this.lastResponse && this.state !== 'confirmed' && this.state !== 'terminated') this.send(this.lastResponse)
  }

  /** The ACK came: stop retransmitting; absorb its own retransmissions for T4 over UDP (Timer I). */
  ack(): void {
    if (this.state === 'accepted') {
      this.terminate()
      return
    }
    if (this.state !== 'completed') return
    this.state = 'confirmed'
    this.retransmitTimer?.cancel()
    this.endTimer?.cancel()
    this.endAfter(this.reliable ? 0 : T4)
  }

  terminate(): void {
    if (this.state === 'terminated') return
    this.state = 'terminated'
    this.retransmitTimer?.cancel()
    this.endTimer?.cancel()
    this.hooks.terminated(this)
  }

  private retransmit(interval: number): void {
    this.retransmitTimer = this.timers.after(interval, () => {
      if ((this.state !== 'completed' && this.state !== 'accepted') || !this.lastResponse) return
      this.send(this.lastResponse)
      this.retransmit(Math.min(2 * interval, T2))
    })
  }

  private endAfter(ms: number): void {
    this.endTimer?.cancel()
    if (ms === 0) this.terminate()
    else this.endTimer = this.timers.after(ms, () => this.terminate())
  }
}
