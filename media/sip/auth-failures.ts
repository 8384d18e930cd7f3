/**
 * Password guessing over SIP. A service on the internet is found by SIP scanners
 * within hours; they try common extensions and passwords by the thousand, and a
 * guessed line is toll fraud. Digest answers that fail (a wrong password, a user
 * that does not exist) are counted per source address:
 *  - a line guessed at from one address (LIMITS.perLine wrong answers within the
 *    window) is refused from that address for the block time, even with the right
 *    password: a guess can no longer be told from a miss. Other addresses, the line's
 *    own phone among them, are not affected;
 *  - an address that fails for many different users (LIMITS.perSource) is a scanner:
 *    everything it sends is dropped unanswered for the block time.
 * An office behind one NAT address with a misconfigured phone loses that phone's
 * line from there, not the office. Attempts refused because of a block are not
 * counted again, so a phone retrying a wrong password forever does not lengthen or
 * widen its block. Carrier trunks (which never authenticate) are exempt.
 *
 * In memory, per process; the media processes tell each other every answer they
 * judge (shared-auth-failures.ts), so all of them count a scanner's guesses, to
 * whichever process they go. Bounded: past MAX_TRACKED records the oldest are
 * forgotten.
 */

export interface AuthFailureLimits {
  /** Wrong answers for one user from one address before that user is refused from there. */
  perLine: number
  /** Distinct users failed for from one address before the address is dropped. */
  perSource: number
  /** Failures count within this long of an address's (a line's) first failure. */
  windowMs: number
  /** How long a block lasts. */
  blockMs: number
}

export const DEFAULT_AUTH_FAILURE_LIMITS: AuthFailureLimits = { perLine: 5, perSource: 10, windowMs: 10 * 60_000, blockMs: 15 * 60_000 }

const MAX_TRACKED = 100_000

interface Tally {
  since: number
  count: number
  blockedUntil: number
}

export interface AuthFailures {
  /** A digest answer for `username` from `address` was wrong (or named no line). */
  failed(address: string, username: string): void
  /** A digest answer was right: the line's count from that address starts again. True when there was one to clear. */
  succeeded(address: string, username: string): boolean
  /** `username` is refused from `address` (answer 403 without checking). */
  lineBlocked(address: string, username: string): boolean
  /** Everything from `address` is dropped. */
  sourceBlocked(address: string): boolean
  /** Records held (lines and sources). */
  readonly size: number
}

export interface AuthFailureOptions {
  /** Real time in ms (the guessing is real, whatever the simulated clock's speed). */
  now: () => number
  limits?: Partial<AuthFailureLimits>
  /** Addresses never blocked (carrier trunks). */
  exempt?: ReadonlySet<string>
  /** Told once when a line or an address becomes blocked. */
  onBlock?: (what: { address: string; username?: string; untilMs: number }) => void
}

export function createAuthFailures(o: AuthFailureOptions): AuthFailures {
  const limits = { ...DEFAULT_AUTH_FAILURE_LIMITS, ...o.limits }
  const lines = new Map<string, Tally>()
  /** Per address: the record, and the users it failed for within its window. */
  const sources = new Map<string, Tally & { users: Set<string> }>()
  const lineKey = (address: string, username: string) => `${address}\u0000${username}`

  const bound = (map: Map<string, unknown>) => {
    if (map.size <= MAX_TRACKED) return
    for (const key of map.keys()) {
      map.delete(key)
      if (map.size <= MAX_TRACKED) return
    }
  }
  /** The record still counting (or blocking) at `now`; one whose window or block is over is forgotten (counting starts again). */
  const live = <R extends Tally>(map: Map<string, R>, key: string, now: number): R | undefined => {
    const r = map.get(key)
    if (!r) return undefined
    const over = r.blockedUntil > 0 ? now >= r.blockedUntil : now - r.since > limits.windowMs
    if (!over) return r
    map.delete(key)
    return undefined
  }

  return {
    get size() {
      return lines.size + sources.size
    },
    failed(address, username) {
      if (o.exempt?.has(address)) return
      const now = o.now()
      const lk = lineKey(address, username)
      let line = live(lines, lk, now)
      if (line && line.blockedUntil > 0) return
      if (!line) {
        line = { since: now, count: 0, blockedUntil: 0 }
        lines.set(lk, line)
        bound(lines)
      }
      line.count++
      if (line.count >= limits.perLine) {
        line.blockedUntil = now + limits.blockMs
        o.onBlock?.({ address, username, untilMs: line.blockedUntil })
      }
      let source = live(sources, address, now)
      if (source && source.blockedUntil > 0) return
      if (!source) {
        source = { since: now, count: 0, blockedUntil: 0, users: new Set() }
        sources.set(address, source)
        bound(sources)
      }
      if (source.users.has(username)) return
      source.users.add(username)
      source.count = source.users.size
      if (source.count >= limits.perSource) {
        source.blockedUntil = now + limits.blockMs
        source.users.clear()
        o.onBlock?.({ address, untilMs: source.blockedUntil })
      }
    },
    succeeded(address, username) {
      const lk = lineKey(address, username)
      const line = live(lines, lk, o.now())
      if (!line || line.blockedUntil > 0) return false
      lines.delete(lk)
      return true
    },
    lineBlocked(address, username) {
      const now = o.now()
      return (live(lines, lineKey(address, username), now)?.blockedUntil ?? 0) > 0
    },
    sourceBlocked(address) {
      if (sources.size === 0) return false
      const now = o.now()
      return (live(sources, address, now)?.blockedUntil ?? 0) > 0
    },
  }
}
