/**
 * One attempt of one delivery: read its endpoint (or use the row read moments ago,
 * see ENDPOINT_FRESH_MS), send the signed POST through the WebhookTransport within
 * the parallelism cap (MAX_PARALLEL), and hand the result to the outcome recorder
 * (a success to the health part's group commit, a failure to the retry part), which
 * also writes the attempt's row in the attempt log (attempt-log.ts) with its duration.
 * The attempt holds its slot, and counts as in flight, until its result is recorded.
 */
import { eq } from 'drizzle-orm'
import { openSecret } from '../../auth/master-key'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { webhookDeliveries, webhookEndpoints } from '../../db/schema'
import { deliveryHeaders } from '../signing'
import type { WebhookResult, WebhookTransport } from '../webhook-transport'
import type { Delivered } from './health'
import type { DeliveryRow, EndpointRow, Job } from './types'
import { isVoiceAppTarget, loadVoiceAppTargets, targetSecretContext } from './voice-app-targets'

/** Most attempts out at once (across all lanes and retries). */
export const MAX_PARALLEL = 128
/**
 * A first attempt uses its endpoint's row as read at most this long ago (real ms), by a
 * dispatch or an attempt, instead of reading it again: under load every dispatch reads
 * the rows anyway. So a change to an endpoint (disabled, deleted, new URL or secret)
 * reaches first attempts dispatched before it at most this late.
 */
export const ENDPOINT_FRESH_MS = 100

/**
 * Endpoint rows by id, with when they were read (real ms, `performance.now()` unless a
 * test passes its own `now`). Filled by dispatch (every row it reads) and by attempts.
 */
export class EndpointCache {
  private readonly rows = new Map<string, { row: EndpointRow; readAt: number }>()

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** The row if it was read less than ENDPOINT_FRESH_MS ago. */
  fresh(id: string): EndpointRow | undefined {
    const cached = this.rows.get(id)
    return cached && this.now() - cached.readAt < ENDPOINT_FRESH_MS ? cached.row : undefined
  }

  set(row: EndpointRow) {
    this.rows.set(row.id, { row, readAt: this.now() })
  }

  delete(id: string) {
    this.rows.delete(id)
  }

  /**
   * A dispatch read the enabled endpoints of `platformIds`: these rows are now the
   * freshest. A cached endpoint of these platforms that is missing was disabled or
   * deleted: forget it; so are rows no longer fresh, whatever their platform.
   */
  replacePlatforms(platformIds: Iterable<string>, enabled: readonly EndpointRow[]) {
    const readAt = this.now()
    const seen = new Set(enabled.map((ep) => ep.id))
    const ofBatch = new Set(platformIds)
    for (const [id, c] of this.rows) if (readAt - c.readAt >= ENDPOINT_FRESH_MS || (ofBatch.has(c.row.platformId) && !seen.has(id))) this.rows.delete(id)
    for (const ep of enabled) this.rows.set(ep.id, { row: ep, readAt })
  }

  get size() {
    return this.rows.size
  }
}

/** A counting semaphore: at most `limit` holders; waiters are let in first come, first served. */
export class Slots {
  private held = 0
  private readonly waiters: (() => void)[] = []

  constructor(readonly limit: number = MAX_PARALLEL) {}

  async acquire() {
    if (this.held < this.limit) {
      this.held++
      return
    }
    await new Promise<void>((r) => this.waiters.push(r))
    this.held++
  }

  release() {
    this.held--
    this.waiters.shift()?.()
  }

  get inUse() {
    return this.held
  }

  get queued() {
    return this.waiters.length
  }
}

/** Where an attempt's result goes; the attempt stays in flight until the returned promise settles. */
export interface AttemptOutcome {
  /** The receiver acknowledged: record the delivery (resolves once committed). */
  delivered(entry: Delivered): Promise<void>
  /** Anything else: retry later, or the delivery is dead. */
  failed(
    delivery: DeliveryRow,
    endpoint: EndpointRow,
    result: Exclude<WebhookResult, { kind: 'acknowledged' }>,
    sentAt: Date,
    durationMs: number,
  ): Promise<void>
}

export interface Attempter {
  /** One attempt; `acknowledged` is called as soon as the receiver has acknowledged it, before it is recorded. */
  attempt(job: Job, acknowledged?: () => void): Promise<void>
  /** An attempt of this delivery is under way (waiting for a slot, sending or recording). */
  inFlight(deliveryId: string): boolean
  /** Resolves when no attempt is under way, or after `timeoutMs` (real ms) regardless. */
  drain(timeoutMs: number): Promise<void>
}

/** Enough for every endpoint of a large deployment; past it the cache starts over. */
const MAX_OPENED_SECRETS = 10_000

/**
 * Endpoint secrets are stored sealed (src/auth/); each is opened once. Keyed by the
 * endpoint and the sealed text, so a new secret, or one moved to a new master key, is
 * opened anew and the old entry is never used again.
 */
function signingSecrets() {
  const opened = new Map<string, string>()
  return (endpoint: EndpointRow): string => {
    const key = `${endpoint.id}\u0000${endpoint.secret}`
    let plain = opened.get(key)
    if (plain === undefined) {
      plain = openSecret(endpoint.secret, targetSecretContext(endpoint.id))
      if (opened.size >= MAX_OPENED_SECRETS) opened.clear()
      opened.set(key, plain)
    }
    return plain
  }
}

export function createAttempter(deps: {
  db: Db
  clock: Clock
  transport: WebhookTransport
  /** How long (real ms) the receiver has to answer. */
  timeoutMs: number
  endpoints: EndpointCache
  slots: Slots
  outcome: AttemptOutcome
}): Attempter {
  const { db, clock, transport, timeoutMs, endpoints, slots, outcome } = deps
  /** Deliveries with an attempt under way: a delivery is never attempted twice at once. */
  const inFlight = new Set<string>()
  const secretOf = signingSecrets()

  async function attempt(job: Job, acknowledged?: () => void) {
    const d = job.delivery
    if (inFlight.has(d.id)) return
    inFlight.add(d.id)
    await slots.acquire()
    try {
      // A first attempt uses the row read moments ago (by its dispatch, mostly); a retry reads it anew.
      let endpoint = d.attempts === 0 ? endpoints.fresh(d.endpointId) : undefined
      if (!endpoint) {
        ;[endpoint] = isVoiceAppTarget(d.endpointId)
          ? await loadVoiceAppTargets(db, [d.endpointId])
          : await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, d.endpointId))
        if (endpoint) endpoints.set(endpoint)
        else endpoints.delete(d.endpointId)
      }
      if (endpoint?.status !== 'enabled') {
        // A disabled endpoint gets nothing more, retries included; the delivery stays replayable.
        await db
          .update(webhookDeliveries)
          .set({ state: 'dead', lastError: endpoint ? 'endpoint disabled' : 'endpoint deleted', updatedAt: clock.now() })
          .where(eq(webhookDeliveries.id, d.id))
        return
      }
      const sentAt = clock.now()
      const started = performance.now()
      const result = await transport.send({
        url: endpoint.url,
        body: job.body,
        timeoutMs,
        headers: deliveryHeaders(secretOf(endpoint), d.accountId, job.body, Math.floor(clock.wallNow().getTime() / 1000)),
      })
      const durationMs = performance.now() - started
      if (result.kind === 'acknowledged') {
        acknowledged?.()
        await outcome.delivered({
          id: d.id,
          endpointId: endpoint.id,
          attempts: d.attempts + 1,
          status: result.status,
          firstAttemptAt: d.firstAttemptAt ?? sentAt,
          sentAt,
          durationMs,
          at: clock.now(),
        })
      } else {
        await outcome.failed(d, endpoint, result, sentAt, durationMs)
      }
    } finally {
      slots.release()
      inFlight.delete(d.id)
    }
  }

  return {
    attempt,
    inFlight: (id) => inFlight.has(id),
    async drain(timeoutMs) {
      const deadline = Date.now() + timeoutMs
      while (inFlight.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    },
  }
}
