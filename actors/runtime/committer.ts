/**
 * Group commit of actor steps. Steps that are ready at the same time (the poll's
 * batch of due fires, messages arriving together) are written in ONE transaction,
 * with one multi-row statement per kind of write (claims of the fires that caused
 * them, snapshots, outbox events, timer cancellations and upserts) plus each step's
 * own writes (projections): one round of statements and one WAL flush for many
 * steps instead of one transaction each.
 *
 * Each step stays atomic with its events: the batch commits or nothing of it does.
 * A step may carry many messages of its actor (actors/runtime/host: stepTogether);
 * a step one of whose fires turned out stale (cancelled, replaced, or taken by
 * another delivery) is left out of the batch, none of its fires taken, as it would
 * have rolled back alone. When the batch fails, every step in it is written again
 * alone, in its own transaction, so one failing step fails only itself and the
 * others commit. The acknowledgement rule is unchanged: a step's promise resolves
 * only after its transaction committed.
 *
 * Statements carry their rows as one JSON parameter (jsonb_to_recordset): the text
 * is the same whatever the batch size, so PostgreSQL keeps each one prepared.
 */
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import { pgArray, settleInOrder, statement } from '../../src/db/statements'
import { insertEvents, type NewEvent, prepareEvents, type StoredEvent } from '../../src/events/outbox'
import { MESSAGE_NAME_PREFIX, scheduleTimers, type TimerRow, timerKey } from '../../src/scheduler/durable-timers'

const SNAPSHOT_RECORD = '(kind text, id text, machine_version text, snapshot jsonb, status text, shard integer, updated_at timestamptz)'
/**
 * Takes the fires of the batch's steps, all of a step's or none: a step some of whose
 * required fires are no longer current (cancelled, replaced, taken) writes nothing, so
 * its other fires must stay for whoever runs them next. An optional fire (one the step
 * only takes, as a durable spawn of an actor that exists) is taken if current and
 * otherwise does not hold the step back. The rows are locked before the check so that
 * no concurrent claim slips between the check and the delete.
 */
const CLAIM_FIRES = statement<{ id: string }>(
  `with x as (select step, id, token, required from jsonb_to_recordset($1::jsonb) as r(step int, id text, token text, required boolean)),
    current as (select x.step, t.id from durable_timers t join x on t.id = x.id and t.token = x.token
      where t.id = any($2::text[]) for update of t),
    whole as (select x.step from x left join current c on c.step = x.step and c.id = x.id
      group by x.step having bool_and(c.id is not null or not x.required))
    delete from durable_timers t using current c join whole w on w.step = c.step where t.id = c.id returning t.id`,
)
const INSERT_NEW_SNAPSHOTS = statement<{ kind: string; id: string }>(
  `insert into actor_snapshots (kind, id, machine_version, snapshot, status, shard, updated_at)
    select kind, id, machine_version, snapshot, status, shard, updated_at from jsonb_to_recordset($1::jsonb) as x${SNAPSHOT_RECORD}
    on conflict (kind, id) do nothing returning kind, id`,
)
const UPSERT_SNAPSHOTS = statement(
  `insert into actor_snapshots (kind, id, machine_version, snapshot, status, shard, updated_at)
    select kind, id, machine_version, snapshot, status, shard, updated_at from jsonb_to_recordset($1::jsonb) as x${SNAPSHOT_RECORD}
    on conflict (kind, id) do update set machine_version = excluded.machine_version, snapshot = excluded.snapshot,
      status = excluded.status, shard = excluded.shard, updated_at = excluded.updated_at`,
)
/**
 * An ended actor's own timers; the durable messages waiting for it ($2: their name prefix) stay.
 * The kinds and ids are named as arrays too ($3, $4) so that PostgreSQL reaches the rows through
 * the (actor_kind, actor_id, name) index: jsonb_to_recordset is estimated at 100 rows and, with
 * the ids alone, a table full of dead timer rows was scanned whole (auto_explain: 430 pages,
 * 4 ms, in most group commits of the calls bench).
 */
export const CANCEL_OWN_TIMERS = statement(
  `delete from durable_timers t using jsonb_to_recordset($1::jsonb) as x(kind text, id text)
    where t.actor_kind = x.kind and t.actor_id = x.id and t.name not like $2
      and t.actor_kind = any($3::text[]) and t.actor_id = any($4::text[])`,
)
export const CANCEL_TIMERS = statement(
  `delete from durable_timers t using jsonb_to_recordset($1::jsonb) as x(kind text, id text, name text)
    where t.actor_kind = x.kind and t.actor_id = x.id and t.name = x.name
      and t.actor_kind = any($2::text[]) and t.actor_id = any($3::text[])`,
)
/** A timer row a step writes: one of its own, or a durable message to another actor. */
export interface TimerWrite {
  actorKind: string
  actorId: string
  name: string
  dueAt: Date
  event: Record<string, unknown>
  shard: number
}

/** A fire a step takes. */
export interface Claim {
  timerId: string
  token: string
  /** The step applied nothing of it (a durable spawn of an actor that exists): taken if still current, never a reason to drop the step. */
  optional?: boolean
}

/** Everything one step writes. */
export interface StepWrite {
  kind: string
  id: string
  /** The actor's new snapshot; absent when the step only takes a fire (a message dropped, with its answer). */
  snapshot?: { machineVersion: string; persisted: unknown; status: 'active' | 'done'; shard: number; fresh: boolean; updatedAt: Date }
  /** The durable timer rows whose fires caused the step (its messages), taken in the same transaction. */
  claims: Claim[]
  events: NewEvent[]
  /** The actor's own timers cancelled by name (their rows go). */
  cancels: string[]
  /** The actor finished: all its own timers go (durable messages to it stay: they are answered as orphans). */
  cancelOwnTimers: boolean
  /** Timer rows written: the actor's own (scheduled), and durable messages to other actors. */
  timers: TimerWrite[]
  /**
   * Items for the kinds' batch writers: each writer is called once per transaction with
   * the items of all its steps, the writers in `rank` order (their place in the kind's
   * `batchWriters`).
   */
  batched: { writer: (tx: Db, items: unknown[]) => Promise<unknown>; rank: number; item: unknown }[]
  /** The kind's own writes (projections, records), in the step's order, after everything above. */
  writes: ((tx: Db) => Promise<unknown>)[]
}

export type StepOutcome =
  | { committed: true; events: StoredEvent[]; timers: TimerRow[] }
  /**
   * Nothing of the step was written: a fire it applied was no longer current
   * (stale), or the actor it creates exists already (exists).
   */
  | { committed: false; reason: 'stale' | 'exists' }

interface Pending {
  write: StepWrite
  resolve: (o: StepOutcome) => void
  reject: (e: unknown) => void
}

export interface CommitterOptions {
  db: Db
  clock: Clock
  /** Runs first in every transaction: throws to roll the batch back (placement's fence). */
  check?: (tx: Db) => Promise<void>
  /** Most steps per transaction. */
  maxBatch?: number
}

const json = (rows: unknown[]) => JSON.stringify(rows)
/** The kinds and the ids of some actors, as two array parameters (see CANCEL_OWN_TIMERS). */
export const actorKeys = (actors: { kind: string; id: string }[]) => [pgArray([...new Set(actors.map((a) => a.kind))]), pgArray(actors.map((a) => a.id))]

export class Committer {
  private queue: Pending[] = []
  private flushing = false
  private readonly maxBatch: number
  /** Transactions committed and steps written, for tests and metrics. */
  readonly stats = { transactions: 0, steps: 0, retriedAlone: 0 }

  constructor(private readonly opts: CommitterOptions) {
    this.maxBatch = opts.maxBatch ?? 256
  }

  /** Writes the step (with whatever else is ready); resolves once committed. */
  submit(write: StepWrite): Promise<StepOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ write, resolve, reject })
      if (!this.flushing) {
        this.flushing = true
        // Steps started by the same poll or the same burst of messages reach here
        // within the same turn of the event loop: gather them before writing.
        setImmediate(() => void this.flush())
      }
    })
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch)
        await this.commitBatch(batch)
      }
    } finally {
      this.flushing = false
      if (this.queue.length > 0) {
        this.flushing = true
        setImmediate(() => void this.flush())
      }
    }
  }

  private async commitBatch(batch: Pending[]): Promise<void> {
    let outcomes: StepOutcome[]
    try {
      outcomes = await this.opts.db.transaction((tx) =>
        this.writeAll(
          tx,
          batch.map((p) => p.write),
        ),
      )
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err)
      // One step's failure must not take the others down: each is written again alone.
      for (const p of batch) {
        this.stats.retriedAlone++
        await this.commitBatch([p])
      }
      return
    }
    this.stats.transactions++
    this.stats.steps += batch.length
    for (const [i, p] of batch.entries()) p.resolve(outcomes[i]!)
  }

  /** The statements of a batch, in one transaction. */
  private async writeAll(tx: Db, writes: StepWrite[]): Promise<StepOutcome[]> {
    await this.opts.check?.(tx)
    const outcomes: (StepOutcome | undefined)[] = new Array(writes.length)

    // 1. Claims: a step one of whose fires is gone (stale) writes nothing.
    const claims = writes.flatMap((w, step) => w.claims.map((c) => ({ step, id: c.timerId, token: c.token, required: !c.optional })))
    const claimed = new Set<string>()
    if (claims.length > 0) {
      const rows = await CLAIM_FIRES.rows(tx, [json(claims), pgArray(claims.map((c) => c.id))])
      for (const r of rows) claimed.add(r.id)
    }
    const live: number[] = []
    writes.forEach((w, i) => {
      if (w.claims.some((c) => !c.optional && !claimed.has(c.timerId))) outcomes[i] = { committed: false, reason: 'stale' }
      else live.push(i)
    })
    const snapshotRow = (w: StepWrite) => ({
      kind: w.kind,
      id: w.id,
      machine_version: w.snapshot!.machineVersion,
      snapshot: w.snapshot!.persisted,
      status: w.snapshot!.status,
      shard: w.snapshot!.shard,
      updated_at: w.snapshot!.updatedAt.toISOString(),
    })
    // 2. New actors first: one whose id is taken already writes nothing more (its claim, for a durable spawn, is taken: dropped).
    const fresh = live.filter((i) => writes[i]!.snapshot?.fresh)
    if (fresh.length > 0) {
      const inserted = await INSERT_NEW_SNAPSHOTS.rows(tx, [json(fresh.map((i) => snapshotRow(writes[i]!)))])
      const created = new Set(inserted.map((r) => `${r.kind}\u0000${r.id}`))
      for (const i of fresh) if (!created.has(`${writes[i]!.kind}\u0000${writes[i]!.id}`)) outcomes[i] = { committed: false, reason: 'exists' }
    }
    const written = live.filter((i) => outcomes[i] === undefined)
    const liveWrites = written.map((i) => writes[i]!)

    // 3-6 go to the database together, in one round trip: none needs another's answer,
    // and PostgreSQL runs a transaction's statements in the order they were sent (the
    // cancellations before the timer upsert, the kinds' writes after everything else).
    const sent: Promise<unknown>[] = []
    // 3. Snapshots of existing actors: one upsert.
    const existing = liveWrites.filter((w) => w.snapshot && !w.snapshot.fresh).map(snapshotRow)
    if (existing.length > 0) sent.push(UPSERT_SNAPSHOTS.rows(tx, [json(existing)]))

    // 4. Outbox events, in step order and each step's own order.
    const prepared = liveWrites.map((w) => prepareEvents(this.opts.clock, w.events))
    const stored = insertEvents(tx, prepared.flat())
    sent.push(stored)

    // 5. Timers: cancellations first (an actor's cancel then schedule of one name leaves it scheduled), then one upsert.
    const ended = liveWrites.filter((w) => w.cancelOwnTimers).map((w) => ({ kind: w.kind, id: w.id }))
    if (ended.length > 0) sent.push(CANCEL_OWN_TIMERS.rows(tx, [json(ended), `${MESSAGE_NAME_PREFIX}%`, ...actorKeys(ended)]))
    const cancels = liveWrites.flatMap((w) => w.cancels.map((name) => ({ kind: w.kind, id: w.id, name })))
    if (cancels.length > 0) sent.push(CANCEL_TIMERS.rows(tx, [json(cancels), ...actorKeys(cancels)]))
    // One row per (actor, name): the last write of a name wins, as successive schedules would.
    const byKey = new Map<string, TimerWrite>()
    for (const w of liveWrites) for (const t of w.timers) byKey.set(timerKey(t.actorKind, t.actorId, t.name), t)
    const upserted = scheduleTimers(tx, this.opts.clock, [...byKey.values()])
    sent.push(upserted)

    // 6. The kinds' batched writes, each writer once with the items of all its steps (in step order); then their own writes, step by step.
    const batches = new Map<StepWrite['batched'][number]['writer'], { rank: number; items: unknown[] }>()
    for (const w of liveWrites)
      for (const b of w.batched) {
        const batch = batches.get(b.writer)
        if (batch) batch.items.push(b.item)
        else batches.set(b.writer, { rank: b.rank, items: [b.item] })
      }
    // In the order each kind declares its writers, not the order the batch's steps first used them: a
    // step that inserts a row and updates it (a call's log, from call.incoming to call.end in one spawn
    // step) must not have its update run first because an earlier step of the batch only updated.
    const ordered = [...batches].sort(([, a], [, b]) => a.rank - b.rank)
    sent.push(
      (async () => {
        for (const [writer, { items }] of ordered) await writer(tx, items)
        for (const w of liveWrites) for (const write of w.writes) await write(tx)
      })(),
    )
    // Every statement settled before the transaction ends, failed or not: none may run after its rollback.
    await settleInOrder(sent)

    const storedById = new Map((await stored).map((e) => [e.id, e]))
    // A replaced row keeps its id; its token and due time are the new ones.
    const timerRows = new Map((await upserted).map((r) => [timerKey(r.actorKind, r.actorId, r.name), r]))

    written.forEach((i, k) => {
      const w = writes[i]!
      outcomes[i] = {
        committed: true,
        events: prepared[k]!.map((e) => storedById.get(e.id)!),
        timers: w.timers.map((t) => timerRows.get(timerKey(t.actorKind, t.actorId, t.name))!),
      }
    })
    return outcomes as StepOutcome[]
  }
}
