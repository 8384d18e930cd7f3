/**
 * Durable timers: delays that must survive a restart (XState `after` timers are
 * not restored from a persisted snapshot, statelyai/xstate#5331).
 *
 * A timer is a row (actor, name, due time, token, event). An actor holds at most
 * one live timer per name: scheduling the same name again replaces the row's
 * token, due time and event; cancelling deletes the row. A fire carries the id and
 * token it read; the receiver claims it with `claimTimer` inside the transaction of
 * the step the fire causes, so a fire of a cancelled or replaced timer (or a second
 * delivery of the same fire) finds nothing and is dropped.
 *
 * Time is the injected clock's: a timer is due when `dueAt <= clock.now()`. The
 * poller wakes every few milliseconds of real time.
 */
import { randomUUID } from 'node:crypto'
import { and, asc, eq, inArray, lte, notInArray } from 'drizzle-orm'
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { durableTimers } from '../db/schema'
import { newId } from '../ids'

export interface TimerRequest {
  actorKind: string
  actorId: string
  /** One live timer per name within an actor. */
  name: string
  dueAt: Date
  /** Sent to the actor when the timer fires. */
  event: Record<string, unknown>
  /** The actor's shard (placement): the poller of the shard's owner delivers the fire. Default 0. */
  shard?: number
}

export interface TimerRow {
  id: string
  actorKind: string
  actorId: string
  name: string
  token: string
  dueAt: Date
  event: Record<string, unknown>
}

const columns = {
  id: durableTimers.id,
  actorKind: durableTimers.actorKind,
  actorId: durableTimers.actorId,
  name: durableTimers.name,
  token: durableTimers.token,
  dueAt: durableTimers.dueAt,
  event: durableTimers.event,
}

/** Schedules (or replaces) the actor's timer of this name. Returns the row with its new token. */
export async function scheduleTimer(tx: Db, clock: Clock, req: TimerRequest): Promise<TimerRow> {
  const token = randomUUID()
  const [updated] = await tx
    .update(durableTimers)
    .set({ token, dueAt: req.dueAt, event: req.event, shard: req.shard ?? 0 })
    .where(and(eq(durableTimers.actorKind, req.actorKind), eq(durableTimers.actorId, req.actorId), eq(durableTimers.name, req.name)))
    .returning(columns)
  if (updated) return updated as TimerRow
  const [row] = await tx
    .insert(durableTimers)
    .values({ id: newId('timer'), ...req, shard: req.shard ?? 0, token, createdAt: clock.now() })
    .returning(columns)
  return row as TimerRow
}

/** Timers of an actor that has none yet (a fresh actor): one insert for all, one row per name (the last wins). */
export async function insertTimers(tx: Db, clock: Clock, reqs: TimerRequest[]): Promise<void> {
  const byName = new Map<string, TimerRequest>()
  for (const r of reqs) byName.set(`${r.actorKind}\u0000${r.actorId}\u0000${r.name}`, r)
  if (byName.size === 0) return
  const createdAt = clock.now()
  await tx.insert(durableTimers).values([...byName.values()].map((r) => ({ id: newId('timer'), ...r, shard: r.shard ?? 0, token: randomUUID(), createdAt })))
}

/** Cancels the actor's timer of this name (if any): a fire already in flight is then dropped. */
export async function cancelTimer(tx: Db, actorKind: string, actorId: string, name: string): Promise<boolean> {
  const rows = await tx
    .delete(durableTimers)
    .where(and(eq(durableTimers.actorKind, actorKind), eq(durableTimers.actorId, actorId), eq(durableTimers.name, name)))
    .returning({ id: durableTimers.id })
  return rows.length > 0
}

/** Cancels every timer of the actor (it reached a final state or was stopped). */
export async function cancelActorTimers(tx: Db, actorKind: string, actorId: string): Promise<void> {
  await tx.delete(durableTimers).where(and(eq(durableTimers.actorKind, actorKind), eq(durableTimers.actorId, actorId)))
}

/** Takes the fire inside the step's transaction: true when it was still current (the row is gone now). */
export async function claimTimer(tx: Db, id: string, token: string): Promise<boolean> {
  const rows = await tx
    .delete(durableTimers)
    .where(and(eq(durableTimers.id, id), eq(durableTimers.token, token)))
    .returning({ id: durableTimers.id })
  return rows.length > 0
}

/** Timers due at `now`, oldest first; only those of `shards` when given. */
export async function dueTimers(db: Db, now: Date, limit = 100, exclude: string[] = [], shards?: number[]): Promise<TimerRow[]> {
  const rows = await db
    .select(columns)
    .from(durableTimers)
    .where(
      and(
        lte(durableTimers.dueAt, now),
        exclude.length > 0 ? notInArray(durableTimers.id, exclude) : undefined,
        shards ? inArray(durableTimers.shard, shards) : undefined,
      ),
    )
    .orderBy(asc(durableTimers.dueAt), asc(durableTimers.id))
    .limit(limit)
  return rows as TimerRow[]
}

export interface DurableSchedulerOptions {
  db: Db
  clock: Clock
  /**
   * Delivers a due timer to its actor. Resolves once the fire was handled (applied,
   * or dropped as stale); a rejection leaves the row in place and the fire is retried
   * after a backoff.
   */
  deliver: (timer: TimerRow) => Promise<void>
  /** Real milliseconds between polls; default: a 100 ms simulated poll, 2..50 ms real. */
  pollIntervalMs?: number
  /** Most fires delivered per poll. */
  batch?: number
  /** Only the timers of these shards (the shards this worker holds); all when omitted. */
  shards?: () => number[]
  onError?: (err: unknown, timer?: TimerRow) => void
}

/**
 * Polls due timers by the injected clock and hands them to `deliver`. Holds no
 * state that matters across a restart: the rows are the schedule, so a new
 * process resumes every timer by polling.
 */
export class DurableScheduler {
  private readonly inFlight = new Set<string>()
  /** Real-time (Date.now()) earliest retry of a fire whose delivery failed, with its attempt count. */
  private readonly failed = new Map<string, { attempts: number; retryAt: number }>()
  private handle: ReturnType<typeof setTimeout> | undefined
  private running = false
  private polling: Promise<number> | undefined
  private readonly interval: number

  constructor(private readonly opts: DurableSchedulerOptions) {
    this.interval = opts.pollIntervalMs ?? Math.min(50, Math.max(2, opts.clock.realDelayMs(100)))
  }

  start(): void {
    if (this.running) return
    this.running = true
    const loop = () => {
      if (!this.running) return
      this.tick()
        .catch((e) => this.opts.onError?.(e))
        .finally(() => {
          if (this.running) this.handle = setTimeout(loop, this.interval)
        })
    }
    this.handle = setTimeout(loop, 0)
  }

  /** Stops polling and waits for the fires in flight. */
  async stop(): Promise<void> {
    this.running = false
    if (this.handle) clearTimeout(this.handle)
    await this.polling?.catch(() => {})
  }

  /**
   * One poll: delivers every due timer not already in flight and waits for those
   * deliveries. Returns how many fires were delivered. Tests call this directly.
   */
  tick(): Promise<number> {
    const p = (this.polling ?? Promise.resolve(0)).catch(() => 0).then(() => this.poll())
    this.polling = p
    return p
  }

  private async poll(): Promise<number> {
    const realNow = Date.now()
    const skip = [...this.inFlight]
    for (const [id, f] of this.failed) if (f.retryAt > realNow) skip.push(id)
    const shards = this.opts.shards?.()
    if (shards && shards.length === 0) return 0
    const timers = await dueTimers(this.opts.db, this.opts.clock.now(), this.opts.batch ?? 100, skip, shards)
    await Promise.all(
      timers.map(async (t) => {
        this.inFlight.add(t.id)
        try {
          await this.opts.deliver(t)
          this.failed.delete(t.id)
        } catch (e) {
          const attempts = (this.failed.get(t.id)?.attempts ?? 0) + 1
          const delay = Math.min(30_000, 50 * 2 ** attempts) * (0.5 + Math.random() / 2)
          this.failed.set(t.id, { attempts, retryAt: Date.now() + delay })
          this.opts.onError?.(e, t)
        } finally {
          this.inFlight.delete(t.id)
        }
      }),
    )
    return timers.length
  }
}
