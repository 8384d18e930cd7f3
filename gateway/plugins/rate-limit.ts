/**
 * Token buckets: `perSecond` sustained, `burst` at once. Buckets live in each gateway
 * process; with several gateways (distributed mode) the credential buckets are shared:
 * each gateway tells the others over the bus what every credential spent, and spends
 * it from its own buckets too, so a platform gets its rate once, not once per gateway.
 *
 * Two uses: requests per credential (a refused request gets 429 with Retry-After in
 * whole seconds), and failed authentications per client address, so that keys,
 * operator tokens and download links cannot be guessed at the speed of the network.
 */
import type { Bus } from '../../src/bus/bus'
import { ApiError } from '../../src/errors'

interface BucketOptions {
  perSecond: number
  burst: number
  now?: () => number
}

const MAX_BUCKETS = 100_000

/** `take(key)` spends one token: undefined when it could, else the seconds until one is back. */
function tokenBuckets(opts: BucketOptions) {
  const now = opts.now ?? (() => performance.now())
  const buckets = new Map<string, { tokens: number; at: number }>()
  const refill = (key: string) => {
    const t = now()
    let b = buckets.get(key)
    if (!b) {
      if (buckets.size >= MAX_BUCKETS) buckets.clear()
      b = { tokens: opts.burst, at: t }
      buckets.set(key, b)
    }
    b.tokens = Math.min(opts.burst, b.tokens + ((t - b.at) / 1000) * opts.perSecond)
    b.at = t
    return b
  }
  const waitFor = (tokens: number) => Math.max(1, Math.ceil((1 - tokens) / opts.perSecond))
  return {
    take(key: string): number | undefined {
      const b = refill(key)
      if (b.tokens >= 1) {
        b.tokens -= 1
        return undefined
      }
      return waitFor(b.tokens)
    },
    /** Spends what the key spent elsewhere (another gateway), down to one burst in debt at most. */
    spendElsewhere(key: string, tokens: number): void {
      const b = refill(key)
      b.tokens = Math.max(-opts.burst, b.tokens - tokens)
    },
    /** Seconds until this key may spend again; undefined when it may now. Spends nothing. */
    exhausted(key: string): number | undefined {
      if (!buckets.has(key)) return undefined
      const b = refill(key)
      return b.tokens >= 1 ? undefined : waitFor(b.tokens)
    },
  }
}

/** How gateways tell each other what their credentials spent (the bus, on one subject). */
export interface SpendChannel {
  publish(data: string): void
  subscribe(handler: (data: string) => void): () => void
}

/** Credential ids are unique across deployments, so one subject serves every cluster on a NATS server. */
export const RATE_LIMIT_SUBJECT = 'voice.rate_limit.spent'

export const spendChannelOver = (bus: Bus): SpendChannel => ({
  publish: (data) => bus.publish(RATE_LIMIT_SUBJECT, data),
  subscribe: (handler) => bus.subscribe(RATE_LIMIT_SUBJECT, handler),
})

/**
 * How often (real ms) a gateway tells the others what was spent on it. Until then a
 * credential may overspend by what the other gateways let through in that time.
 */
export const SPEND_FLUSH_MS = 100
const MAX_KEYS_PER_MESSAGE = 5_000

export type RateLimiter = ((credential: string) => void) & { close(): void }

export function createRateLimiter(opts: BucketOptions & { share?: SpendChannel }): RateLimiter {
  const buckets = tokenBuckets(opts)
  const share = opts.share
  const self = crypto.randomUUID()
  const spent = new Map<string, number>()
  const take = (credential: string): void => {
    if (opts.perSecond === 0) return
    const wait = buckets.take(credential)
    if (wait !== undefined) throw new ApiError(429, 'Too many requests for this credential.', 'rate_limited', undefined, { 'Retry-After': String(wait) })
    if (share && spent.size < MAX_KEYS_PER_MESSAGE) spent.set(credential, (spent.get(credential) ?? 0) + 1)
  }
  if (!share || opts.perSecond === 0) return Object.assign(take, { close() {} })

  const unsubscribe = share.subscribe((data) => {
    let message: { from?: unknown; spent?: unknown }
    try {
      message = JSON.parse(data)
    } catch {
      return
    }
    if (message.from === self || typeof message.spent !== 'object' || message.spent === null) return
    for (const [key, n] of Object.entries(message.spent)) if (typeof n === 'number' && n > 0) buckets.spendElsewhere(key, n)
  })
  const flush = setInterval(() => {
    if (spent.size === 0) return
    share.publish(JSON.stringify({ from: self, spent: Object.fromEntries(spent) }))
    spent.clear()
  }, SPEND_FLUSH_MS)
  flush.unref?.()
  return Object.assign(take, {
    close() {
      clearInterval(flush)
      unsubscribe()
    },
  })
}

/** Failed authentications allowed per client address at once, and refilled per second. */
export const AUTH_FAILURE_BURST = 30
export const AUTH_FAILURES_PER_SECOND = 1

export type FailureLimiter = ReturnType<typeof createFailureLimiter>

/**
 * Failed authentications per client address. An address that used up its failures
 * is refused (429) before its next credential is even checked — refusing only the
 * failures would still let it test a guess per request and read the answer.
 */
export function createFailureLimiter(opts: Partial<BucketOptions> & { off?: boolean } = {}) {
  if (opts.off) return { check() {}, failed() {}, guard: <T>(_: string | null, authenticate: () => T | Promise<T>) => Promise.resolve(authenticate()) }
  const buckets = tokenBuckets({ perSecond: opts.perSecond ?? AUTH_FAILURES_PER_SECOND, burst: opts.burst ?? AUTH_FAILURE_BURST, now: opts.now })
  const key = (address: string | null) => address ?? 'unknown'
  return {
    /** Throws 429 while this address may not try again. */
    check(address: string | null): void {
      const wait = buckets.exhausted(key(address))
      if (wait !== undefined)
        throw new ApiError(429, 'Too many failed authentication attempts from this address.', 'rate_limited', undefined, { 'Retry-After': String(wait) })
    },
    failed(address: string | null): void {
      buckets.take(key(address))
    },
    /** Runs an authentication: refused at once when the address is over its failures, a 401 counted. */
    async guard<T>(address: string | null, authenticate: () => T | Promise<T>): Promise<T> {
      this.check(address)
      try {
        return await authenticate()
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) this.failed(address)
        throw err
      }
    },
  }
}
