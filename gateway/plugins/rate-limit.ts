/**
 * Per-credential token buckets: `perSecond` sustained, `burst` at once. A refused
 * request gets 429 with Retry-After in whole seconds. Buckets live in this gateway
 * process; with several gateways each enforces its own share.
 */
import { ApiError } from '../../src/errors'

export function createRateLimiter(opts: { perSecond: number; burst: number; now?: () => number }) {
  const now = opts.now ?? (() => performance.now())
  const buckets = new Map<string, { tokens: number; at: number }>()
  const MAX_BUCKETS = 100_000

  return function take(credential: string): void {
    if (opts.perSecond === 0) return
    const t = now()
    let b = buckets.get(credential)
    if (!b) {
      if (buckets.size >= MAX_BUCKETS) buckets.clear()
      b = { tokens: opts.burst, at: t }
      buckets.set(credential, b)
    }
    b.tokens = Math.min(opts.burst, b.tokens + ((t - b.at) / 1000) * opts.perSecond)
    b.at = t
    if (b.tokens >= 1) {
      b.tokens -= 1
      return
    }
    const wait = Math.max(1, Math.ceil((1 - b.tokens) / opts.perSecond))
    throw new ApiError(429, 'Too many requests for this credential.', 'rate_limited', undefined, { 'Retry-After': String(wait) })
  }
}
