/**
 * Shard leases in a JetStream key-value bucket (issue 4, placement).
 *
 * Each key `shard.<n>` holds `{ owner, epoch, expiresAt }`. A worker takes a shard
 * with a compare-and-set: `create` when the key is new, `update(revision)` when the
 * lease it read is expired or released, writing epoch + 1 (the fencing epoch). It
 * renews its leases with `update(revision)` every `renewMs`; a renewal that finds
 * another revision means the shard was taken and is lost at once. Workers announce
 * themselves with heartbeats under `worker.<id>` in the same bucket; each tries to
 * own ceil(shards / live workers) and releases the surplus (owner '', same epoch).
 *
 * Locally a lease counts as held only until `expiresAt - marginMs` of the last
 * successful write, so a worker that cannot renew (partitioned, paused) stops
 * serving before anyone else may take the shard. Expiry compares wall clocks
 * across workers: keep them in sync (NTP) and the margin above the expected skew.
 */
import { JSONCodec, type KV, type KvEntry, type NatsConnection } from 'nats'
import { DEFAULT_SHARD_COUNT } from './wire'

export const DEFAULT_LEASE_BUCKET = 'voice_placement'
/**
 * Keys nobody rewrote for this long vanish (clusters that are gone). A held lease
 * is rewritten every renewMs, so it never gets near this; an epoch restarting at 1
 * after a vanished key is harmless because the database fence (shard_fences) keeps
 * its own monotonic epoch.
 */
const KEY_TTL_MS = 24 * 3600_000

export interface Lease {
  owner: string
  epoch: number
  /** Epoch milliseconds (wall clock of the writer). */
  expiresAt: number
}

export type LeaseEvent =
  | { type: 'gained'; shard: number; epoch: number }
  | { type: 'lost'; shard: number; epoch: number; reason: 'taken' | 'expired' | 'released' | 'stopped' }
  | { type: 'error'; error: unknown }

export interface ShardLeasesOptions {
  nc: NatsConnection
  /** Subject token: letters, digits, `_`, `-`. */
  workerId: string
  bucket?: string
  /** Namespace of the keys within the bucket (one cluster of workers per namespace). */
  namespace?: string
  shardCount?: number
  /** How long a write holds the lease. Default 10 s. */
  leaseMs?: number
  /** Time between renewals (and rebalancing). Default leaseMs / 4. */
  renewMs?: number
  /** A lease counts as held locally until expiresAt - marginMs. Default leaseMs / 5. */
  marginMs?: number
  now?: () => number
  /** Called for every gain and loss (before the lease is released, on a voluntary loss). Must not throw. */
  onEvent?: (e: LeaseEvent) => void
}

const jc = JSONCodec<Lease | { expiresAt: number }>()

interface Held {
  epoch: number
  revision: number
  expiresAt: number
}

export class ShardLeases {
  readonly workerId: string
  readonly shardCount: number
  private readonly leaseMs: number
  private readonly renewMs: number
  private readonly marginMs: number
  private readonly now: () => number
  private readonly bucket: string
  private readonly ns: string
  private kv?: KV
  private readonly held = new Map<number, Held>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private running = false
  private ticking: Promise<void> | undefined
  private readonly listeners = new Set<(e: LeaseEvent) => void>()

  constructor(private readonly opts: ShardLeasesOptions) {
    if (!/^[A-Za-z0-9_-]+$/.test(opts.workerId)) throw new TypeError(`worker id ${JSON.stringify(opts.workerId)} is not a key token`)
    this.workerId = opts.workerId
    this.shardCount = opts.shardCount ?? DEFAULT_SHARD_COUNT
    this.leaseMs = opts.leaseMs ?? 10_000
    this.renewMs = opts.renewMs ?? Math.max(10, Math.floor(this.leaseMs / 4))
    this.marginMs = opts.marginMs ?? Math.floor(this.leaseMs / 5)
    this.now = opts.now ?? Date.now
    this.bucket = opts.bucket ?? DEFAULT_LEASE_BUCKET
    if (opts.namespace !== undefined && !/^[A-Za-z0-9_-]+$/.test(opts.namespace))
      throw new TypeError(`namespace ${JSON.stringify(opts.namespace)} is not a key token`)
    this.ns = opts.namespace ? `${opts.namespace}.` : ''
    if (opts.onEvent) this.listeners.add(opts.onEvent)
  }

  private shardKey(n: number) {
    return `${this.ns}shard.${n}`
  }

  private workerKey(id: string) {
    return `${this.ns}worker.${id}`
  }

  /** Subscribes to gains and losses; returns the unsubscribe. */
  on(fn: (e: LeaseEvent) => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /** Opens (or creates) the bucket and starts heartbeats, acquisition and renewal. */
  async start(): Promise<this> {
    this.kv = await openLeaseBucket(this.opts.nc, this.bucket)
    this.running = true
    await this.tick()
    this.schedule()
    return this
  }

  /** Shards held now (their local lease has not run out). */
  ownedShards(): number[] {
    const now = this.now()
    return [...this.held.entries()]
      .filter(([, h]) => now < h.expiresAt - this.marginMs)
      .map(([s]) => s)
      .sort((a, b) => a - b)
  }

  /** The fencing epoch of a shard held now, else undefined. */
  epochOf(shard: number): number | undefined {
    const h = this.held.get(shard)
    return h && this.now() < h.expiresAt - this.marginMs ? h.epoch : undefined
  }

  /** True while this worker holds the shard at this epoch: check it before handling a message. */
  holds(shard: number, epoch: number): boolean {
    return this.epochOf(shard) === epoch
  }

  /**
   * Stops renewing. `release` (graceful shutdown): hands the shards back at once
   * (loss events first, then the writes) and withdraws the heartbeat. Without it the
   * leases simply run out, as when the process dies.
   */
  async stop(opts: { release?: boolean } = {}): Promise<void> {
    this.running = false
    if (this.timer) clearTimeout(this.timer)
    await this.ticking?.catch(() => {})
    for (const [shard, h] of [...this.held]) {
      this.held.delete(shard)
      this.emit({ type: 'lost', shard, epoch: h.epoch, reason: 'stopped' })
      if (opts.release) await this.release(shard, h).catch((error) => this.emit({ type: 'error', error }))
    }
    if (opts.release) await this.kv?.delete(this.workerKey(this.workerId)).catch(() => {})
  }

  /** One round: heartbeat, expire, renew, rebalance. Exposed for tests. */
  tick(): Promise<void> {
    if (this.ticking) return this.ticking
    this.ticking = this.round()
      .catch((error) => this.emit({ type: 'error', error }))
      .finally(() => (this.ticking = undefined))
    return this.ticking
  }

  private schedule() {
    if (!this.running) return
    this.timer = setTimeout(() => {
      this.tick().finally(() => this.schedule())
    }, this.renewMs)
  }

  private emit(e: LeaseEvent) {
    for (const fn of this.listeners) {
      try {
        fn(e)
      } catch {
        // a listener's failure is its own
      }
    }
  }

  private dropExpired() {
    const now = this.now()
    for (const [shard, h] of [...this.held])
      if (now >= h.expiresAt - this.marginMs) {
        this.held.delete(shard)
        this.emit({ type: 'lost', shard, epoch: h.epoch, reason: 'expired' })
      }
  }

  private async round(): Promise<void> {
    const kv = this.kv!
    this.dropExpired()
    if (!this.running) return
    await kv.put(this.workerKey(this.workerId), jc.encode({ expiresAt: this.now() + this.leaseMs }))

    // Renew what we hold; a CAS failure means someone else wrote the key: lost.
    for (const [shard, h] of [...this.held]) {
      if (!this.running) return
      const expiresAt = this.now() + this.leaseMs
      try {
        const revision = await kv.update(this.shardKey(shard), jc.encode({ owner: this.workerId, epoch: h.epoch, expiresAt }), h.revision)
        // Still ours unless a concurrent stop() dropped it.
        if (this.held.get(shard) === h) this.held.set(shard, { epoch: h.epoch, revision, expiresAt })
      } catch (error) {
        if (!isWrongRevision(error)) throw error
        if (this.held.get(shard) === h) {
          this.held.delete(shard)
          this.emit({ type: 'lost', shard, epoch: h.epoch, reason: 'taken' })
        }
      }
    }
    this.dropExpired()

    // Balance: ceil(shards / live workers).
    const workers = await this.liveWorkers(kv)
    const target = Math.ceil(this.shardCount / Math.max(1, workers))
    const mine = [...this.held.keys()].sort((a, b) => b - a)
    for (const shard of mine.slice(0, Math.max(0, mine.length - target))) {
      const h = this.held.get(shard)!
      this.held.delete(shard)
      this.emit({ type: 'lost', shard, epoch: h.epoch, reason: 'released' })
      await this.release(shard, h).catch((error) => this.emit({ type: 'error', error }))
    }
    if (this.held.size >= target) return

    // Acquire free, released or expired shards, starting at an offset so that workers spread out.
    const start = hashOffset(this.workerId, this.shardCount)
    for (let i = 0; i < this.shardCount && this.held.size < target && this.running; i++) {
      const shard = (start + i) % this.shardCount
      if (this.held.has(shard)) continue
      await this.tryAcquire(kv, shard)
    }
  }

  private async tryAcquire(kv: KV, shard: number): Promise<void> {
    const entry = await kv.get(this.shardKey(shard))
    const expiresAt = this.now() + this.leaseMs
    try {
      let epoch: number
      let revision: number
      if (entry?.operation !== 'PUT') {
        epoch = 1
        revision = await kv.create(this.shardKey(shard), jc.encode({ owner: this.workerId, epoch, expiresAt }))
      } else {
        const lease = readLease(entry)
        const free = !lease || lease.owner === '' || lease.expiresAt <= this.now() || lease.owner === this.workerId
        if (!free) return
        epoch = (lease?.epoch ?? 0) + 1
        revision = await kv.update(this.shardKey(shard), jc.encode({ owner: this.workerId, epoch, expiresAt }), entry.revision)
      }
      if (!this.running) return
      this.held.set(shard, { epoch, revision, expiresAt })
      this.emit({ type: 'gained', shard, epoch })
    } catch (error) {
      if (!isWrongRevision(error)) throw error
      // another worker won the race
    }
  }

  private async release(shard: number, h: Held): Promise<void> {
    await this.kv!.update(this.shardKey(shard), jc.encode({ owner: '', epoch: h.epoch, expiresAt: 0 }), h.revision).catch((error) => {
      if (!isWrongRevision(error)) throw error
    })
  }

  private async liveWorkers(kv: KV): Promise<number> {
    const now = this.now()
    let n = 0
    const keys = await kv.keys(`${this.ns}worker.*`)
    const names: string[] = []
    for await (const k of keys) names.push(k)
    for (const k of names) {
      const e = await kv.get(k)
      if (e?.operation !== 'PUT') continue
      const v = e.json<{ expiresAt: number }>()
      if (k === this.workerKey(this.workerId) || v.expiresAt > now) n++
    }
    return Math.max(1, n)
  }

  /** The current lease records, for tests and operators. */
  async snapshot(): Promise<Map<number, Lease | undefined>> {
    const out = new Map<number, Lease | undefined>()
    for (let s = 0; s < this.shardCount; s++) {
      const e = await this.kv!.get(this.shardKey(s))
      out.set(s, e && e.operation === 'PUT' ? readLease(e) : undefined)
    }
    return out
  }
}

/**
 * Opens the bucket, creating it when missing. Workers starting together race to
 * create it; the loser gets "subjects overlap" or "name in use" and opens it again.
 */
export async function openLeaseBucket(nc: NatsConnection, bucket = DEFAULT_LEASE_BUCKET): Promise<KV> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await nc.jetstream().views.kv(bucket, { history: 1, ttl: KEY_TTL_MS })
    } catch (e) {
      const code = (e as { api_error?: { err_code?: number } })?.api_error?.err_code
      if (attempt >= 5 || (code !== 10065 && code !== 10058)) throw e
      await new Promise((r) => setTimeout(r, 20 * attempt))
    }
  }
}

function readLease(e: KvEntry): Lease | undefined {
  try {
    return e.json<Lease>()
  } catch {
    return undefined
  }
}

function hashOffset(id: string, n: number): number {
  let h = 0
  for (const c of id) h = (Math.imul(h, 31) + c.charCodeAt(0)) | 0
  return (h >>> 0) % n
}

/** A CAS that lost: JetStream answers "wrong last sequence" (10071) or the key exists. */
function isWrongRevision(e: unknown): boolean {
  const msg = String((e as Error)?.message ?? e)
  const code = (e as { api_error?: { err_code?: number } })?.api_error?.err_code
  return code === 10071 || /wrong last sequence|key exists/i.test(msg)
}
