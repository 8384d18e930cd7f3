/**
 * INVITE client transactions (RFC 3261 §17.1.1 with RFC 6026's Accepted state):
 * what the B2BUA rings a phone with. Timer A retransmits over UDP until a response
 * comes, Timer B gives up after 64*T1; a provisional response goes to the caller's
 * hook; a final non-2xx is acknowledged here (the ACK belongs to the transaction); a
 * 2xx is handed up, and its retransmissions too, because its ACK belongs to the
 * dialog (§13.2.2.4) and is sent by the B2BUA. CANCEL (§9.1) reuses the INVITE's
 * branch and is sent only once the callee answered provisionally.
 */
import type { IncomingResponseMessage } from 'sip.js/lib/core/messages/incoming-response-message.js'
import { type ClientTransactions, newBranch, type OutgoingRequest, serializeRequest, viaOf } from './client'
import type { SipSource } from './handler'
import type { SipTimers, TimerHandle } from './timers'
import { T1, TRANSACTION_TIMEOUT } from './transactions'

export type InviteOutcome =
  /** A 2xx: the dialog is confirmed once the caller sends its ACK (`ackFor`). */
  | { kind: 'answered'; response: IncomingResponseMessage }
  /** A final non-2xx, already acknowledged. */
  | { kind: 'rejected'; status: number; response: IncomingResponseMessage }
  /** Timer B: no final response within 64*T1 (nothing at all, or only provisional ones and then silence). */
  | { kind: 'timeout' }
  /** Could not be sent (no TCP connection to the target, or too many transactions). */
  | { kind: 'unreachable' }

export interface InviteHooks {
  /** A 1xx other than 100 (180, 183): the callee rings. */
  onProvisional?(response: IncomingResponseMessage): void
  /** The 2xx came again: its ACK was lost, send it again. */
  onRetransmitted2xx?(response: IncomingResponseMessage): void
}

export interface InviteHandle {
  readonly branch: string
  readonly outcome: Promise<InviteOutcome>
  /** Cancels the INVITE: at once if the callee answered provisionally, else as soon as it does (§9.1). Idempotent. */
  cancel(): void
}

export interface InviteClientOptions {
  timers: SipTimers
  sentBy: (transport: 'udp' | 'tcp') => string
  send: (bytes: Uint8Array, target: SipSource) => boolean
  /** The non-INVITE transactions, for the CANCEL. */
  nonInvite: ClientTransactions
  maxTransactions?: number
}

interface Pending {
  receive(response: IncomingResponseMessage): void
  abort(): void
}

const header = (request: OutgoingRequest, name: string) => request.headers.find(([n]) => n.toLowerCase() === name)?.[1]

export class InviteClientTransactions {
  private readonly pending = new Map<string, Pending>()
  private readonly max: number

  constructor(private readonly options: InviteClientOptions) {
    this.max = options.maxTransactions ?? 10_000
  }

  get size(): number {
    return this.pending.size
  }

  send(target: SipSource, request: OutgoingRequest, hooks: InviteHooks = {}): InviteHandle {
    const branch = newBranch()
    const via = viaOf(this.options.sentBy(target.transport), target, branch)
    const bytes = serializeRequest({ ...request, method: 'INVITE' }, via)
    const o = this.options
    let resolveOutcome!: (outcome: InviteOutcome) => void
    const outcome = new Promise<InviteOutcome>((resolve) => {
      resolveOutcome = resolve
    })
    let final: InviteOutcome | undefined
    let provisional = false
    let cancelWanted = false
    let cancelSent = false
    const timers: TimerHandle[] = []
    const stopTimers = () => {
      for (const t of timers.splice(0)) t.cancel()
    }
    const forget = () => {
      stopTimers()
      this.pending.delete(branch)
    }
    const settle = (o: InviteOutcome) => {
      if (final) return
      final = o
      resolveOutcome(o)
    }
    const sendCancel = () => {
      if (cancelSent) return
      cancelSent = true
      // §9.1: Request-URI, Call-ID, From, To, CSeq number and Route of the INVITE; the INVITE's branch.
      const keep = ['from', 'to', 'call-id', 'route']
      const cseq = (header(request, 'cseq') ?? '1 INVITE').trim().split(/\s+/)[0]
      void o.nonInvite
        .send(
          target,
          { method: 'CANCEL', uri: request.uri, headers: [...request.headers.filter(([n]) => keep.includes(n.toLowerCase())), ['CSeq', `${cseq} CANCEL`]] },
          branch,
        )
        .catch(() => {})
    }
    const ackNon2xx = (response: IncomingResponseMessage) => {
      // §17.1.1.3: the INVITE's Request-URI, top Via, From, Call-ID and Route; the response's To (with its tag).
      const keep = ['from', 'call-id', 'route']
      const cseq = (header(request, 'cseq') ?? '1 INVITE').trim().split(/\s+/)[0]
      const ack: OutgoingRequest = {
        method: 'ACK',
        uri: request.uri,
        headers: [...request.headers.filter(([n]) => keep.includes(n.toLowerCase())), ['To', response.getHeader('to') ?? ''], ['CSeq', `${cseq} ACK`]],
      }
      o.send(serializeRequest(ack, via), target)
    }

    if (this.pending.size >= this.max || !o.send(bytes, target)) {
      settle({ kind: 'unreachable' })
      return { branch, outcome, cancel() {} }
    }

    this.pending.set(branch, {
      receive: (response) => {
        const status = response.statusCode ?? 0
        if (status < 200) {
          // Proceeding: no more retransmissions of the INVITE (§17.1.1.2).
          if (!provisional) {
            provisional = true
            retransmitTimer?.cancel()
            // §9.1: never once the final response is in (a late, reordered 1xx).
            if (cancelWanted && !final) sendCancel()
          }
          if (status > 100 && !final) hooks.onProvisional?.(response)
          return
        }
        if (status < 300) {
          if (final?.kind === 'answered') {
            hooks.onRetransmitted2xx?.(response)
            return
          }
          if (final) return
          stopTimers()
          settle({ kind: 'answered', response })
          // Accepted (RFC 6026): 2xx retransmissions still reach the dialog for 64*T1.
          timers.push(o.timers.after(TRANSACTION_TIMEOUT, forget))
          return
        }
        ackNon2xx(response)
        if (final) return
        stopTimers()
        settle({ kind: 'rejected', status, response })
        // Timer D: absorb (and acknowledge) retransmitted final responses; 0 over TCP.
        if (target.transport === 'udp') timers.push(o.timers.after(32_000, forget))
        else forget()
      },
      abort: () => {
        stopTimers()
        settle({ kind: 'timeout' })
      },
    })

    let retransmitTimer: TimerHandle | undefined
    if (target.transport === 'udp') {
      // Timer A: T1, doubling, until a response or Timer B.
      const retransmit = (interval: number) => {
        retransmitTimer = o.timers.after(interval, () => {
          if (provisional || final) return
          o.send(bytes, target)
          retransmit(2 * interval)
        })
        timers.push(retransmitTimer)
      }
      retransmit(T1)
    }
    // Timer B.
    timers.push(
      o.timers.after(TRANSACTION_TIMEOUT, () => {
        if (final) return
        forget()
        settle({ kind: 'timeout' })
      }),
    )

    return {
      branch,
      outcome,
      cancel() {
        if (final || cancelWanted) return
        cancelWanted = true
        if (provisional) sendCancel()
      },
    }
  }

  /** A response came in: true when it belongs to an INVITE sent here (top Via branch, CSeq method INVITE). */
  receive(response: IncomingResponseMessage): boolean {
    if (response.method !== 'INVITE' || !response.viaBranch) return false
    const entry = this.pending.get(response.viaBranch)
    if (!entry) return false
    entry.receive(response)
    return true
  }

  clear(): void {
    for (const entry of this.pending.values()) entry.abort()
    this.pending.clear()
  }
}

/**
 * The ACK of a 2xx (§13.2.2.4): a request of its own in the dialog (new branch),
 * to the callee's Contact, with the INVITE's CSeq number.
 */
export function ackFor2xx(
  dialog: { uri: string; from: string; to: string; callId: string; cseq: number; route?: string[] },
  sentBy: string,
  target: SipSource,
): Uint8Array {
  const headers: [string, string][] = [
    ['From', dialog.from],
    ['To', dialog.to],
    ['Call-ID', dialog.callId],
    ['CSeq', `${dialog.cseq} ACK`],
    ...(dialog.route ?? []).map((r): [string, string] => ['Route', r]),
  ]
  return serializeRequest({ method: 'ACK', uri: dialog.uri, headers }, viaOf(sentBy, target, newBranch()))
}
