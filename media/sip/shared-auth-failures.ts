/**
 * Password guessing counted across media processes. Each process keeps its own
 * tallies (auth-failures.ts), and without this a scanner spread over N media
 * processes (several SIP addresses behind one DNS name, or a load balancer) would
 * get N times the guesses before any block. Every digest answer a process judges
 * is told to the others on the bus, and each counts it as its own, so all of them
 * block the same line or address after the same guesses.
 *
 * The bus is live only: a process started later, or a notice lost, only counts
 * fewer guesses (as before), never blocks anyone who was not guessed at. Notices
 * stop with the guessing: a blocked address is dropped before any digest is
 * judged, so a scanner's flood is not relayed.
 */
import { randomUUID } from 'node:crypto'
import type { Bus } from '../../src/bus/bus'
import type { AuthFailures } from './auth-failures'

export const SIP_AUTH_ANSWER_SUBJECT = 'voice.media.sip_auth_answer'

/** One judged digest answer, as the bus carries it. */
interface AuthAnswerNotice {
  /** The process that judged it: it does not count its own notice twice. */
  node: string
  ok: boolean
  address: string
  username: string
}

export function sharedAuthFailures(local: AuthFailures, bus: Pick<Bus, 'publish' | 'subscribe'>, node: string = randomUUID()): AuthFailures & { stop(): void } {
  const tell = (ok: boolean, address: string, username: string) =>
    bus.publish(SIP_AUTH_ANSWER_SUBJECT, JSON.stringify({ node, ok, address, username } satisfies AuthAnswerNotice))
  const stop = bus.subscribe(SIP_AUTH_ANSWER_SUBJECT, (data) => {
    let n: Partial<AuthAnswerNotice>
    try {
      n = JSON.parse(data) as Partial<AuthAnswerNotice>
    } catch {
      return // not a notice of this version
    }
    if (n.node === node || typeof n.address !== 'string' || typeof n.username !== 'string') return
    if (n.ok === true) local.succeeded(n.address, n.username)
    else if (n.ok === false) local.failed(n.address, n.username)
  })
  return {
    get size() {
      return local.size
    },
    failed(address, username) {
      local.failed(address, username)
      tell(false, address, username)
    },
    succeeded(address, username) {
      // Most right answers clear nothing (no guess before them): those are not told, or every REGISTER would be.
      const cleared = local.succeeded(address, username)
      if (cleared) tell(true, address, username)
      return cleared
    },
    lineBlocked: (address, username) => local.lineBlocked(address, username),
    sourceBlocked: (address) => local.sourceBlocked(address),
    stop,
  }
}
