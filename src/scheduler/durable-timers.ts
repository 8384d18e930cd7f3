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
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { statement } from '../db/statements'
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

type RawTimer = { id: string; actor_kind: string; actor_id: string; name: string; token: string; due_at: string | Date; event: unknown }

const timerOf = (r: RawTimer): TimerRow => ({
  id: r.id,
  actorKind: r.actor_kind,
  actorId: r.actor_id,
  name: r.name,
  token: r.token,
  dueAt: new Date(r.due_at),
  event: (typeof r.event === 'string' ? JSON.parse(r.event) : r.event) as Record<string, unknown>,
})

// Every durable message a request or a step writes (a command, a tell, a spawn) goes
// through SCHEDULE, and every fire through CLAIM: fixed text, prepared per connection
// on PostgreSQL, instead of drizzle building them anew each time.
const SCHEDULE = statement<{ id: string }>(
  `insert into durable_timers (id, actor_kind, actor_id, name, token, due_at, event, shard, created_at)
    values ($1, $2, $3, $4, $5, $6::timestamptz, $7::jsonb, $8, $9::timestamptz)
    on conflict (actor_kind, actor_id, name) do update set token = excluded.token, due_at = excluded.due_at, event = excluded.event, shard = excluded.shard
    returning id`,
)
const INSERT_MANY = statement(
  `insert into durable_timers (id, actor_kind, actor_id, name, token, due_at, event, shard, created_at)
    select id, actor_kind, actor_id, name, token, due_at, event, shard, created_at from jsonb_to_recordset($1::jsonb)
      as x(id text, actor_kind text, actor_id text, name text, token text, due_at timestamptz, event jsonb, shard integer, created_at timestamptz)`,
)
const SCHEDULE_MANY = statement<{ id: string; actor_kind: string; actor_id: string; name: string }>(
  `insert into durable_timers (id, actor_kind, actor_id, name, token, due_at, event, shard, created_at)
    select id, actor_kind, actor_id, name, token, due_at, event, shard, created_at from jsonb_to_recordset($1::jsonb)
      as x(id text, actor_kind text, actor_id text, name text, token text, due_at timestamptz, event jsonb, shard integer, created_at timestamptz)
    on conflict (actor_kind, actor_id, name) do update set token = excluded.token, due_at = excluded.due_at, event = excluded.event, shard = excluded.shard
    returning id, actor_kind, actor_id, name`,
)
const CANCEL = statement<{ id: string }>(`delete from durable_timers where actor_kind = $1 and actor_id = $2 and name = $3 returning id`)
const CANCEL_OWN = statement(`delete from durable_timers where actor_kind = $1 and actor_id = $2 and name not like $3`)
const CLAIM = statement<{ id: string }>(`delete from durable_timers where id = $1 and token = $2 returning id`)
const DUE_OF = statement<RawTimer>(
  `select id, actor_kind, actor_id, name, token, due_at, event from durable_timers
    where actor_kind = $1 and actor_id = $2 and due_at <= $3::timestamptz order by due_at, id`,
)

/**
 * Schedules (or replaces) the actor's timer of this name. Returns the row with its new
 * token; a replaced row keeps its id, and its due time and event are the request's.
 */
export async function scheduleTimer(tx: Db, clock: Clock, req: TimerRequest): Promise<TimerRow> {
  const token = randomUUID()
  const [row] = await SCHEDULE.rows(tx, [
    newId('timer'),
    req.actorKind,
    req.actorId,
    req.name,
    token,
    req.dueAt.toISOString(),
    JSON.stringify(req.event),
    req.shard ?? 0,
    clock.now().toISOString(),
  ])
  return { id: row!.id, actorKind: req.actorKind, actorId: req.actorId, name: req.name, token, dueAt: req.dueAt, event: req.event }
}

/** One live timer per (actor kind, actor id, name): the key that names it. */
export const timerKey = (kind: string, id: string, name: string) => `${kind}\u0000${id}\u0000${name}`

/** A new row as the multi-row statements read it (jsonb_to_recordset): a fresh id and token. */
const newTimerRecord = (r: TimerRequest, createdAt: string) => ({
  id: newId('timer'),
  actor_kind: r.actorKind,
  actor_id: r.actorId,
  name: r.name,
  token: randomUUID(),
  due_at: r.dueAt.toISOString(),
  event: r.event,
  shard: r.shard ?? 0,
  created_at: createdAt,
})

/**
 * scheduleTimer for several timers in one statement (one round trip, one commit when
 * alone): the rows in the order of the requests. Two requests for the same timer
 * (actor and name) in one call are refused by the database; send those apart.
 */
export async function scheduleTimers(tx: Db, clock: Clock, reqs: TimerRequest[]): Promise<TimerRow[]> {
  if (reqs.length === 0) return []
  const createdAt = clock.now().toISOString()
  const rows = reqs.map((r) => newTimerRecord(r, createdAt))
  // A replaced row keeps its id: read it back from what the statement returned.
  const ids = new Map((await SCHEDULE_MANY.rows(tx, [JSON.stringify(rows)])).map((r) => [timerKey(r.actor_kind, r.actor_id, r.name), r.id]))
  return reqs.map((r, i) => ({
    id: ids.get(timerKey(r.actorKind, r.actorId, r.name)) ?? rows[i]!.id,
    actorKind: r.actorKind,
    actorId: r.actorId,
    name: r.name,
    token: rows[i]!.token,
    dueAt: r.dueAt,
    event: r.event,
  }))
}

/** Timers of an actor that has none yet (a fresh actor): one insert for all, one row per name (the last wins). */
export async function insertTimers(tx: Db, clock: Clock, reqs: TimerRequest[]): Promise<void> {
  const byName = new Map<string, TimerRequest>()
  for (const r of reqs) byName.set(timerKey(r.actorKind, r.actorId, r.name), r)
  if (byName.size === 0) return
  const createdAt = clock.now().toISOString()
  const rows = [...byName.values()].map((r) => newTimerRecord(r, createdAt))
  await INSERT_MANY.rows(tx, [JSON.stringify(rows)])
}

/** Cancels the actor's timer of this name (if any): a fire already in flight is then dropped. */
export async function cancelTimer(tx: Db, actorKind: string, actorId: string, name: string): Promise<boolean> {
  return (await CANCEL.rows(tx, [actorKind, actorId, name])).length > 0
}

/**
 * Names starting with `$` are durable messages from others (a command, a tell, a
 * spawn: actors/runtime/commands), not the actor's own timers: the actor cannot
 * cancel them, and they outlive its end, so that a message reaching a finished actor
 * is still taken and, for a command, still answered.
 */
export const MESSAGE_NAME_PREFIX = '$'

/** Cancels the actor's own timers (it reached a final state or was stopped); messages to it stay. */
export async function cancelActorTimers(tx: Db, actorKind: string, actorId: string): Promise<void> {
  await CANCEL_OWN.rows(tx, [actorKind, actorId, `${MESSAGE_NAME_PREFIX}%`])
}

/** Takes the fire inside the step's transaction: true when it was still current (the row is gone now). */
export async function claimTimer(tx: Db, id: string, token: string): Promise<boolean> {
  return (await CLAIM.rows(tx, [id, token])).length > 0
}

const DUE_POLL = statement<Omit<RawTimer, 'id'> & { id: string | null }>(
  `(select id, actor_kind, actor_id, name, token, due_at, event from durable_timers
      where due_at <= $1::timestamptz
        and id not in (select jsonb_array_elements_text($2::jsonb))
        and ($3::jsonb is null or shard in (select jsonb_array_elements_text($3::jsonb)::int))
      order by due_at, id limit $4)
    union all
    (select null, null, null, null, null, min(due_at), null from durable_timers
      where due_at > $1::timestamptz
        and ($3::jsonb is null or shard in (select jsonb_array_elements_text($3::jsonb)::int)))`,
)

/**
 * What a poll reads, in one statement: the due timers (at most `limit`, oldest first,
 * only those of `shards` when given, none of `exclude`) and when the next one comes
 * due. A fixed statement with its lists as JSON parameters: the same text every poll (kept
 * prepared), and no row of a timer not due is read or parsed.
 */
export async function duePoll(db: Db, now: Date, limit = 100, exclude: string[] = [], shards?: number[]): Promise<{ due: TimerRow[]; nextDue?: Date }> {
  const rows = await DUE_POLL.rows(db, [now.toISOString(), JSON.stringify(exclude), shards ? JSON.stringify(shards) : null, limit])
  const due: TimerRow[] = []
  let nextDue: Date | undefined
  for (const r of rows) {
    if (r.id === null) {
      if (r.due_at !== null) nextDue = new Date(r.due_at)
      continue
    }
    due.push(timerOf(r as RawTimer))
  }
  return { due, nextDue }
}

/** The due timers of one actor (a wake-up right after a commit wrote its durable messages). */
export async function dueTimersOf(db: Db, now: Date, actorKind: string, actorId: string): Promise<TimerRow[]> {
  return (await DUE_OF.rows(db, [actorKind, actorId, now.toISOString()])).map(timerOf)
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
  /**
   * Real milliseconds between polls when no timer is known to come due sooner: how late
   * a row written by another process, without waking this one, is found. Default 50.
   */
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
 *
 * It does not poll blindly: each poll also reads when the next timer comes due and
 * the next poll is planned for then (at most `pollIntervalMs` later), and whoever
 * writes a timer in this process says so (`wake`), so a timer due now is not left
 * waiting for a poll.
 */
/** How many delivered fires a scheduler remembers at least, to drop late copies of them. */
const RECENTLY_DELIVERED = 10_000

/**
 * Timer id → token of the fires delivered lately, in two generations: when the newer
 * one is full, the older is dropped whole. Dropping the oldest entry of one Map at a
 * time (keys().next()) walks the tombstones of those deleted before it: 4.8 µs per
 * delivery in Bun, 3 % of the service's CPU in `npm run bench -- calls`.
 */
export class RecentTokens {
  private current = new Map<string, string>()
  private previous = new Map<string, string>()
  constructor(private readonly generation: number) {}
  get(id: string): string | undefined {
    return this.current.get(id) ?? this.previous.get(id)
  }
  set(id: string, token: string): void {
    if (this.current.size >= this.generation) {
      this.previous = this.current
      this.current = new Map()
    }
    this.current.set(id, token)
  }
}

export class DurableScheduler {
  /** Fires being delivered, by timer id: a second delivery of the same fire (same token) waits for it instead. */
  private readonly inFlight = new Map<string, { token: string; done: Promise<void> }>()
  /**
   * Fires delivered here lately (timer id → token): a copy of one read before its
   * delivery ended (a wake's query racing the poll) is stale, and is not delivered
   * again. Bounded: an older copy only costs a stale step, which its claim drops.
   */
  private readonly delivered = new RecentTokens(RECENTLY_DELIVERED)
  /**
   * The row as last rewritten (a new token) while an older fire of it was in flight,
   * by timer id: delivered as soon as that delivery ends, so the rewrite does not wait
   * for a poll, which skips rows in flight and takes the oldest due first.
   */
  private readonly next = new Map<string, { timer: TimerRow; done: Promise<void>; settle: () => void }>()
  /** Real-time (Date.now()) earliest retry of a fire whose delivery failed, with its attempt count. */
  private readonly failed = new Map<string, { attempts: number; retryAt: number }>()
  private handle: ReturnType<typeof setTimeout> | undefined
  /** performance.now() of the planned poll (Infinity: none planned). */
  private plannedAt = Number.POSITIVE_INFINITY
  private running = false
  private polling: Promise<number> | undefined
  private readonly interval: number
  private readonly batch: number

  constructor(private readonly opts: DurableSchedulerOptions) {
    this.interval = opts.pollIntervalMs ?? 50
    this.batch = opts.batch ?? 100
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.plan(0)
  }

  /** Stops polling and waits for the fires in flight. */
  async stop(): Promise<void> {
    this.running = false
    if (this.handle) clearTimeout(this.handle)
    this.handle = undefined
    await this.polling?.catch(() => {})
  }

  /** A timer was written that comes due at `at` (default: now): poll by then. */
  wake(at?: Date): void {
    if (!this.running) return
    const ms = at === undefined ? 0 : this.opts.clock.realDelayMs(at.getTime() - this.opts.clock.now().getTime())
    this.plan(Math.max(0, Math.min(ms, this.interval)))
  }

  /** Plans the next poll in `delayMs`, unless one is planned sooner already. */
  private plan(delayMs: number): void {
    const at = performance.now() + delayMs
    if (this.handle !== undefined && this.plannedAt <= at) return
    if (this.handle !== undefined) clearTimeout(this.handle)
    this.plannedAt = at
    this.handle = setTimeout(() => {
      this.handle = undefined
      this.plannedAt = Number.POSITIVE_INFINITY
      this.poll()
        .then((next) => this.running && this.plan(next))
        .catch((e) => {
          this.opts.onError?.(e)
          if (this.running) this.plan(this.interval)
        })
    }, delayMs)
  }

  /**
   * One poll: delivers every due timer not already in flight and waits for those
   * deliveries. Returns how many fires were delivered. Tests call this directly.
   */
  async tick(): Promise<number> {
    await this.poll()
    return this.lastDelivered
  }

  private lastDelivered = 0

  /**
   * Delivers one actor's due timers now, without waiting for the next poll (a
   * sender's wake-up after it committed durable messages for the actor). Resolves
   * once each was handled, here or by a delivery already under way; a failure is
   * retried by the poll, as any other.
   */
  async deliverDueOf(actorKind: string, actorId: string): Promise<number> {
    const timers = await dueTimersOf(this.opts.db, this.opts.clock.now(), actorKind, actorId)
    await Promise.all(timers.map((t) => this.deliverOne(t)))
    return timers.length
  }

  /** Delivers rows known to be due (written by this process just now), with the same in-flight bookkeeping as a poll. */
  async deliverNow(rows: TimerRow[]): Promise<void> {
    await Promise.all(rows.map((t) => this.deliverOne(t)))
  }

  /** Polls once (after any poll under way) and answers the real milliseconds to wait before the next. */
  private poll(): Promise<number> {
    const p = (this.polling ?? Promise.resolve(0)).catch(() => 0).then(() => this.pollOnce())
    this.polling = p
    return p
  }

  private async pollOnce(): Promise<number> {
    this.lastDelivered = 0
    const realNow = Date.now()
    const skip = [...this.inFlight.keys()]
    for (const [id, f] of this.failed) if (f.retryAt > realNow) skip.push(id)
    const shards = this.opts.shards?.()
    if (shards && shards.length === 0) return this.interval
    const now = this.opts.clock.now()
    const { due, nextDue } = await duePoll(this.opts.db, now, this.batch, skip, shards)
    await Promise.all(due.map((t) => this.deliverOne(t)))
    this.lastDelivered = due.length
    if (due.length === this.batch) return 0
    if (!nextDue) return this.interval
    return Math.max(0, Math.min(this.interval, this.opts.clock.realDelayMs(nextDue.getTime() - this.opts.clock.now().getTime())))
  }

  /**
   * Delivers a fire, or waits for the delivery of it already under way. A fire of the
   * same row with another token (the row was rewritten) goes right after the delivery
   * under way; of several such, the last given wins.
   */
  private deliverOne(t: TimerRow): Promise<void> {
    if (this.delivered.get(t.id) === t.token) return Promise.resolve()
    const running = this.inFlight.get(t.id)
    if (!running) return this.launch(t)
    if (running.token === t.token) return running.done
    const queued = this.next.get(t.id)
    if (queued) {
      queued.timer = t
      return queued.done
    }
    let settle!: () => void
    const done = new Promise<void>((r) => (settle = r))
    this.next.set(t.id, { timer: t, done, settle })
    return done
  }

  private launch(t: TimerRow): Promise<void> {
    const done = this.opts
      .deliver(t)
      .then(
        () => {
          this.failed.delete(t.id)
          this.delivered.set(t.id, t.token)
        },
        (e) => {
          const attempts = (this.failed.get(t.id)?.attempts ?? 0) + 1
          const delay = Math.min(30_000, 50 * 2 ** attempts) * (0.5 + Math.random() / 2)
          this.failed.set(t.id, { attempts, retryAt: Date.now() + delay })
          this.opts.onError?.(e, t)
        },
      )
      .finally(() => {
        this.inFlight.delete(t.id)
        const queued = this.next.get(t.id)
        if (!queued) return
        this.next.delete(t.id)
        // After a failure the row waits out its backoff, and the poll reads it as it is by then.
        if (this.failed.has(t.id)) return queued.settle()
        this.deliverOne(queued.timer).then(queued.settle)
      })
    this.inFlight.set(t.id, { token: t.token, done })
    return done
  }
}
