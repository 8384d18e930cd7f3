/**
 * The actor host: spawn, address and stop actors by kind and id; one mailbox per
 * actor (one step at a time); every step persisted; supervision with restart
 * from the last persisted snapshot; durable timers.
 *
 * A step:
 *  1. the XState actor takes the messages waiting in its mailbox (up to
 *     `maxMessagesPerStep`, durable ones in due order), one after another; the
 *     effects they ask for are only collected by the named actions supplied with
 *     `.provide` (actors/runtime/kinds): no I/O inside the machine step;
 *  2. ONE transaction: upsert the snapshot (`getPersistedSnapshot()`, once), append
 *     the collected events to the outbox in the order the machine emitted them, write
 *     the timer rows and what the kind's effects write (projections, records,
 *     durable messages to other actors), and claim the durable messages the step
 *     applied;
 *  3. only then the senders' promises resolve (the acknowledgement).
 * Taking many messages in one step is what lets a busy actor (a user's presence,
 * told at every call's start and end) keep up: its cost is one transaction, not one
 * per message. Whatever is out of the ordinary in such a step (a throw, a stale fire,
 * a missing or finished actor) sends its messages down the one-message path below,
 * which is the reference behaviour.
 *
 * If anything throws in a one-message step (a machine action, a guard, the
 * database), the in-memory actor is discarded and re-created from its last
 * persisted snapshot after a capped, jittered exponential backoff, and the same
 * message is retried; after `maxAttempts` the sender gets an `ActorStepFailed`. An
 * acknowledged message is therefore always in the database; an unacknowledged one
 * is the sender's to retry.
 *
 * Messages: `spawn` and `send` come from an ActorClient (request/reply); `fire` is a
 * durable timer row coming due: a machine timer, or a durable message
 * (actors/runtime/commands: a spawn, a tell, a command); `stop` terminates.
 *
 * Placement: a host given a `fence` serves one shard (actors/placement) and checks,
 * inside every step transaction, that the shard's epoch in `shard_fences` is still
 * its own, so a step of an owner whose lease ran out rolls back (ActorFenced).
 */
import { and, eq, sql } from 'drizzle-orm'
import { type Actor, type AnyMachineSnapshot, type AnyStateMachine, createActor, type EventObject, type StateValue } from 'xstate'
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import { actorSnapshots, shardFences } from '../../src/db/schema'
import { statement } from '../../src/db/statements'
import type { NewEvent } from '../../src/events/outbox'
import { cancelActorTimers, DurableScheduler, type TimerRow } from '../../src/scheduler/durable-timers'
import {
  ActorDone,
  ActorError,
  ActorExists,
  ActorFenced,
  ActorNotFound,
  ActorStepFailed,
  type ActorClient,
  type ActorState,
  type ScheduleRequest,
  type SpawnOptions,
  type StepResult,
} from './client'
import {
  deliveredEvent,
  durableMessage,
  isCommand,
  isSpawn,
  isTellOrSpawn,
  SPAWN_MESSAGE,
  type CommandMessage,
  type DurableMessage,
  type SpawnMessage,
  type TellOrSpawnMessage,
} from './commands'
import { actorKeys, type Claim, Committer, type StepWrite } from './committer'
import type { ActorKind, BatchWriter, Effects, StepContext } from './kinds'
import { DEFAULT_SHARD_COUNT, shardOf } from './shards'

export interface RestartPolicy {
  /** Attempts per message, the first included. */
  maxAttempts: number
  baseMs: number
  capMs: number
}

export const DEFAULT_RESTART: RestartPolicy = { maxAttempts: 5, baseMs: 20, capMs: 2_000 }

/** Capped exponential backoff with jitter (half to full), real milliseconds. */
export function restartDelay(policy: RestartPolicy, failures: number, random = Math.random): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, failures - 1))
  return ceiling / 2 + (ceiling / 2) * random()
}

export interface ActorHostOptions {
  db: Db
  clock: Clock
  kinds: ActorKind<AnyStateMachine>[]
  restart?: Partial<RestartPolicy>
  /** Real milliseconds between timer polls (see DurableScheduler). */
  timerPollMs?: number
  /** false: no background timer polling (tests drive `host.timers.tick()`). Default true. */
  pollTimers?: boolean
  /** Supervision and background errors: (what happened, details). */
  onEvent?: (e: HostEvent) => void
  /** Called after a step committed outbox events (wakes delivery). */
  outboxCommitted?: () => void
  /** Shards in all (tags timer rows with the target actor's shard). Default 16. */
  shardCount?: number
  /** Placement: this host serves one shard at this lease epoch; every step checks the fence. */
  fence?: { shard: number; epoch: number }
  /** Placement: timer rows a step committed (the placement delivers the due messages and wakes its poller or the owners). */
  timersWritten?: (rows: TimerRow[]) => void
  /** Most messages one actor applies in one step (default 256): a flooded actor still commits in bounded steps, beside the others. */
  maxMessagesPerStep?: number
}

export const DEFAULT_MESSAGES_PER_STEP = 256
/** Tries of a durable spawn whose row other writers keep replacing (see spawnFromFire). */
const SPAWN_ATTEMPTS = 5

/** A durable message row of an actor by name, as it is now. */
const CURRENT_MESSAGE = statement<{ id: string; token: string; due_at: string | Date; event: unknown }>(
  `select id, token, due_at, event from durable_timers where actor_kind = $1 and actor_id = $2 and name = $3`,
)

/**
 * The persisted snapshots of many actors in one read: the actors a poll's batch of
 * fires wakes are rehydrated together (see loadRow) instead of one query each.
 */
export const READ_SNAPSHOTS = statement<{ kind: string; id: string; machine_version: string; snapshot: unknown; status: 'active' | 'done' }>(
  `select s.kind, s.id, s.machine_version, s.snapshot, s.status from actor_snapshots s
    join jsonb_to_recordset($1::jsonb) as x(kind text, id text) on s.kind = x.kind and s.id = x.id
    where s.kind = any($2::text[]) and s.id = any($3::text[])`,
)

/** What rehydration needs of an actor's snapshot row. */
interface SnapshotRow {
  machineVersion: string
  snapshot: unknown
  status: 'active' | 'done'
}

interface SnapshotLoad {
  kind: string
  id: string
  waiters: { resolve: (row: SnapshotRow | undefined) => void; reject: (e: unknown) => void }[]
}

export type HostEvent =
  | { type: 'restart'; kind: string; id: string; attempt: number; delayMs: number; error: unknown }
  | { type: 'gave_up'; kind: string; id: string; attempts: number; error: unknown }
  | { type: 'timer_dropped'; kind: string; id: string; timerId: string }
  | { type: 'timer_delivery_failed'; timerId: string; error: unknown }
  /** A step of several messages threw: they are run again one per step, so that only the one at fault fails. */
  | { type: 'batch_split'; kind: string; id: string; messages: number; error: unknown }

type Message =
  | { type: 'spawn'; input: unknown; timers?: ScheduleRequest[] }
  | { type: 'send'; event: EventObject }
  | { type: 'fire'; timer: TimerRow }
  | { type: 'stop' }

type Collected =
  | { type: 'event'; event: NewEvent }
  | { type: 'schedule'; req: ScheduleRequest }
  | { type: 'cancel'; name: string }
  | { type: 'write'; fn: (tx: Db) => Promise<unknown> }
  | { type: 'message'; kind: string; id: string; message: DurableMessage }
  | { type: 'batch'; writer: BatchWriter; rank: number; item: unknown }

/** What a step commits besides the snapshot and what its actions collected. */
interface Commit {
  /** The actor was created by this step: its snapshot row is inserted, its timers are all new. */
  fresh?: { timers: ScheduleRequest[] }
  /** The durable timer rows whose fires the step took: in the step's transaction. */
  claims?: Claim[]
}

/** A message waiting in a mailbox, with its sender's promise. */
interface Letter {
  msg: Message
  resolve: (r: StepResult | undefined) => void
  reject: (e: unknown) => void
}

const timerOf = (l: Letter) => (l.msg as Extract<Message, { type: 'fire' }>).timer
const dueMs = (t: TimerRow) => new Date(t.dueAt).getTime()
/** When a requested timer comes due (ms): its absolute time, or its delay from `nowMs`. */
const requestedDueMs = (req: ScheduleRequest, nowMs: number) => (req.at !== undefined ? new Date(req.at).getTime() : nowMs + (req.delayMs ?? 0))
/** Durable messages in the order they came due, then by id (time-ordered: the order they were written), as the poll reads them. */
const byDue = (a: Letter, b: Letter) => {
  const [x, y] = [timerOf(a), timerOf(b)]
  return dueMs(x) - dueMs(y) || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0)
}

interface Entry {
  kind: ActorKind
  id: string
  /** The live XState actor; undefined until (re)hydrated, and after a failed step. */
  actor?: Actor<AnyStateMachine>
  machineVersion?: string
  /** The error the running actor reported in this step. */
  error?: { e: unknown }
  /** Messages not yet taken by a step. */
  mailbox: Letter[]
  /** The loop running the mailbox, while there is mail; the entry leaves the registry when it ends and no actor is live. */
  draining?: Promise<void>
  /** The actor finished (final state or stopped): later messages are refused without a database read. */
  done: boolean
  collected: Collected[]
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * One per process (per shard, with placement): the registry of live actors (keyed
 * by kind and id), their mailboxes and supervision, and the poller of their
 * durable timers.
 */
export class ActorHost implements ActorClient {
  private readonly registry = new Map<string, Entry>()
  private readonly kinds = new Map<string, ActorKind>()
  private readonly policy: RestartPolicy
  readonly timers: DurableScheduler
  private closed = false
  /** Each machine provided once with the host's collectors (per-actor copies cost ~20 KB each). */
  private readonly providedMachines = new Map<AnyStateMachine, AnyStateMachine>()
  private readonly kindEffects = new Map<ActorKind, Effects>()
  /** The actor whose step is running: XState runs actions synchronously inside send/start. */
  private current: Entry | undefined
  /** Writes steps that are ready together in one transaction. */
  private readonly committer: Committer
  private readonly maxMessagesPerStep: number
  private readonly together = { manyMessageSteps: 0, messagesInThem: 0 }
  /** Snapshot reads asked for in this turn of the event loop, by actor key: read together at its end. */
  private loads: Map<string, SnapshotLoad> | undefined
  /** Snapshot reads, and the statements that did them. */
  private readonly reads = { rows: 0, statements: 0 }

  constructor(private readonly opts: ActorHostOptions) {
    for (const k of opts.kinds) this.kinds.set(k.kind, k)
    this.policy = { ...DEFAULT_RESTART, ...opts.restart }
    this.maxMessagesPerStep = Math.max(1, opts.maxMessagesPerStep ?? DEFAULT_MESSAGES_PER_STEP)
    this.timers = new DurableScheduler({
      db: opts.db,
      clock: opts.clock,
      pollIntervalMs: opts.timerPollMs,
      deliver: (t) => this.fire(t),
      onError: (error, t) => this.opts.onEvent?.({ type: 'timer_delivery_failed', timerId: t?.id ?? '', error }),
    })
    this.committer = new Committer({ db: opts.db, clock: opts.clock, check: opts.fence ? (tx) => this.checkFence(tx) : undefined })
  }

  /** Starts polling durable timers (timers of every actor resume from their rows; actors wake lazily). */
  start(): this {
    if (this.opts.pollTimers !== false) this.timers.start()
    return this
  }

  /** Stops the poller, lets every mailbox drain, and drops the live actors (their state is in the database). */
  async close(): Promise<void> {
    this.closed = true
    await this.timers.stop()
    await Promise.all([...this.registry.values()].map((e) => e.draining))
    for (const e of this.registry.values()) e.actor?.stop()
    this.registry.clear()
  }

  /**
   * Group commit: transactions written, steps in them, steps written again alone after
   * a batch failed; and the steps that applied several messages, with those messages.
   */
  commitStats(): Readonly<{ transactions: number; steps: number; retriedAlone: number; manyMessageSteps: number; messagesInThem: number }> {
    return { ...this.committer.stats, ...this.together }
  }

  /** Snapshot rows read to rehydrate actors, and the statements that read them (several rows each when a poll woke several actors). */
  snapshotReads(): Readonly<{ rows: number; statements: number }> {
    return { ...this.reads }
  }

  /** Live (in-memory) actors, for tests and metrics. */
  liveCount(): number {
    let n = 0
    for (const e of this.registry.values()) if (e.actor) n++
    return n
  }

  spawn(kind: string, id: string, input: unknown, opts: SpawnOptions = {}): Promise<StepResult> {
    return this.enqueue(kind, id, { type: 'spawn', input, timers: opts.timers }) as Promise<StepResult>
  }

  send<E extends EventObject>(kind: string, id: string, message: E): Promise<StepResult> {
    return this.enqueue(kind, id, { type: 'send', event: message }) as Promise<StepResult>
  }

  async stop(kind: string, id: string): Promise<void> {
    await this.enqueue(kind, id, { type: 'stop' })
  }

  async inspect(kind: string, id: string): Promise<ActorState | undefined> {
    const [row] = await this.opts.db
      .select({ machineVersion: actorSnapshots.machineVersion, status: actorSnapshots.status, snapshot: actorSnapshots.snapshot })
      .from(actorSnapshots)
      .where(and(eq(actorSnapshots.kind, kind), eq(actorSnapshots.id, id)))
    return row
  }

  /** The actor's due durable messages, delivered now through the poller (which knows what is already in flight). */
  async wake(kind: string, id: string, rows?: TimerRow[]): Promise<void> {
    if (!this.kinds.has(kind)) throw new ActorError('unknown_kind', `no actor kind ${kind}`)
    if (rows) await this.timers.deliverNow(rows.filter((r) => r.actorKind === kind && r.actorId === id))
    else await this.timers.deliverDueOf(kind, id)
  }

  /** Delivers a timer fire to its actor; a stale fire (cancelled, replaced, already taken) is dropped. */
  async fire(t: TimerRow): Promise<void> {
    if (!this.kinds.has(t.actorKind)) throw new ActorError('unknown_kind', `no actor kind ${t.actorKind}`)
    await this.enqueue(t.actorKind, t.actorId, { type: 'fire', timer: t })
  }

  // ------------------------------------------------------------ mailbox

  private enqueue(kindName: string, id: string, msg: Message): Promise<StepResult | undefined> {
    if (this.closed) return Promise.reject(new ActorError('host_closed', 'the actor host is closed'))
    const kind = this.kinds.get(kindName)
    if (!kind) return Promise.reject(new ActorError('unknown_kind', `no actor kind ${kindName}`))
    const key = `${kindName}\u0000${id}`
    let entry = this.registry.get(key)
    if (!entry) {
      entry = { kind, id, mailbox: [], done: false, collected: [] }
      this.registry.set(key, entry)
    }
    const e = entry
    return new Promise((resolve, reject) => {
      e.mailbox.push({ msg, resolve, reject })
      e.draining ??= this.drain(e, key)
    })
  }

  /** Runs the actor's mail, one step at a time, until the mailbox is empty. */
  private async drain(e: Entry, key: string): Promise<void> {
    // Messages arriving in the same turn (a poll's due fires, the tells one commit wrote) wait for each other and share a step.
    await null
    try {
      while (e.mailbox.length > 0) {
        const letters = this.takeLetters(e)
        if (letters.length === 1) await this.runAlone(e, letters[0]!)
        else await this.runTogether(e, letters)
      }
    } finally {
      e.draining = undefined
      // dispose: an entry without a live actor and without mail leaves the registry
      if (e.mailbox.length === 0 && !e.actor && this.registry.get(key) === e) this.registry.delete(key)
    }
  }

  /**
   * The messages of the next step: the first waiting and, when it is a durable
   * message (a fire), the fires right behind it, up to the bound, in due order.
   * Requests (spawn, send, stop) go one per step: their senders are answered with
   * the state right after their own message.
   */
  private takeLetters(e: Entry): Letter[] {
    if (e.mailbox[0]!.msg.type !== 'fire') return e.mailbox.splice(0, 1)
    let n = 1
    while (n < e.mailbox.length && n < this.maxMessagesPerStep && e.mailbox[n]!.msg.type === 'fire') n++
    return e.mailbox.splice(0, n).sort(byDue)
  }

  private async runAlone(e: Entry, l: Letter): Promise<void> {
    await this.supervise(e, l.msg).then(l.resolve, l.reject)
  }

  /**
   * Several messages in one step. When that step cannot be taken as a whole (a
   * message or a write throws, a fire turned out stale, the actor is missing or
   * finished), its messages run one per step instead, each with the supervision of
   * a single message: a poison message fails alone, the others go through.
   */
  private async runTogether(e: Entry, letters: Letter[]): Promise<void> {
    let notTaken: Letter[] | undefined
    try {
      notTaken = await this.stepTogether(e, letters)
    } catch (err) {
      this.discard(e)
      if (err instanceof ActorFenced) {
        // The shard has another owner: none of them may run here (each alone would be fenced too).
        for (const l of letters) l.reject(err)
        return
      }
      this.opts.onEvent?.({ type: 'batch_split', kind: e.kind.kind, id: e.id, messages: letters.length, error: err })
    }
    if (notTaken) {
      e.mailbox.unshift(...notTaken)
      return
    }
    for (const l of letters) await this.runAlone(e, l)
  }

  /** Runs one message with restarts: a failed attempt discards the live actor and retries from the persisted snapshot. */
  private async supervise(e: Entry, msg: Message): Promise<StepResult | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        if (e.done) return await this.afterDone(e, msg)
        return await this.step(e, msg)
      } catch (err) {
        if (err instanceof ActorError) {
          if (err instanceof ActorDone) this.dispose(e)
          // the live actor took the message that did not commit
          if (err instanceof ActorFenced) this.discard(e)
          throw err
        }
        this.discard(e)
        if (attempt >= this.policy.maxAttempts) {
          this.opts.onEvent?.({ type: 'gave_up', kind: e.kind.kind, id: e.id, attempts: attempt, error: err })
          throw new ActorStepFailed(e.kind.kind, e.id, attempt, err)
        }
        const delayMs = restartDelay(this.policy, attempt)
        this.opts.onEvent?.({ type: 'restart', kind: e.kind.kind, id: e.id, attempt, delayMs, error: err })
        await sleep(delayMs)
      }
    }
  }

  /** A message queued behind the final step. */
  private async afterDone(e: Entry, msg: Message): Promise<undefined> {
    if (msg.type === 'fire' || msg.type === 'stop') return undefined
    if (msg.type === 'spawn') throw new ActorExists(e.kind.kind, e.id)
    throw new ActorDone(e.kind.kind, e.id)
  }

  private discard(e: Entry) {
    e.actor?.stop()
    e.actor = undefined
    e.error = undefined
    e.collected = []
  }

  /** After a final state: the live actor goes; the entry leaves the registry once its mailbox is empty. */
  private dispose(e: Entry) {
    this.discard(e)
    e.done = true
  }

  // ------------------------------------------------------------ effects

  /** The effect collectors of a kind: they write into the step that is running. */
  private fxFor(kind: ActorKind): Effects {
    const cached = this.kindEffects.get(kind)
    if (cached) return cached
    const entry = () => {
      if (!this.current) throw new Error(`${kind.kind}: an action ran outside a step`)
      return this.current
    }
    const writerRanks = new Map(Object.keys(kind.batchWriters ?? {}).map((name, i) => [name, i]))
    const push = (c: Collected) => entry().collected.push(c)
    const fx: Effects = {
      emit: (ev) => {
        for (const event of Array.isArray(ev) ? ev : [ev]) push({ type: 'event', event })
      },
      schedule: (req) => push({ type: 'schedule', req }),
      cancelTimer: (name) => push({ type: 'cancel', name }),
      write: (fn) => push({ type: 'write', fn }),
      tell: (k, id, event, opts) =>
        push({
          type: 'message',
          kind: k,
          id,
          message: opts?.orSpawn !== undefined ? durableMessage.tellOrSpawn(event, opts.orSpawn) : durableMessage.tell(event),
        }),
      spawnActor: (k, id, input, opts) => push({ type: 'message', kind: k, id, message: durableMessage.spawn(input, opts) }),
      batch: (name, item) => {
        const writer = kind.batchWriters?.[name]
        if (!writer) throw new Error(`${kind.kind} has no batch writer ${name}`)
        push({ type: 'batch', writer, rank: writerRanks.get(name)!, item })
      },
    }
    this.kindEffects.set(kind, fx)
    return fx
  }

  private provided(kind: ActorKind, machine: AnyStateMachine): AnyStateMachine {
    const cached = this.providedMachines.get(machine)
    if (cached) return cached
    const fx = this.fxFor(kind)
    const entry = () => {
      if (!this.current) throw new Error(`${kind.kind}: an action ran outside a step`)
      return this.current
    }
    const ctx: StepContext = {
      kind: kind.kind,
      get id() {
        return entry().id
      },
    }
    const toEvents = kind.toEvents
    const base = {
      emit: ({ context }: { context: unknown }, params: unknown) => {
        const out = toEvents ? toEvents(params, { kind: kind.kind, id: entry().id, context }) : (params as NewEvent)
        if (out) fx.emit(out)
      },
      schedule: (_: unknown, params: ScheduleRequest) => fx.schedule(params),
      cancelTimer: (_: unknown, params: { name: string } | string) => fx.cancelTimer(typeof params === 'string' ? params : params.name),
    }
    const provided = machine.provide({ actions: { ...base, ...kind.actions?.(fx, ctx) } } as never)
    this.providedMachines.set(machine, provided)
    return provided
  }

  /** Runs `fn` (start or send) with the entry as the step whose effects are collected. */
  private within<T>(e: Entry, fn: () => T): T {
    this.current = e
    try {
      return fn()
    } finally {
      this.current = undefined
    }
  }

  private throwIfFailed(e: Entry) {
    if (e.error) throw e.error.e
    const snap = e.actor?.getSnapshot() as AnyMachineSnapshot | undefined
    if (snap?.status === 'error') throw snap.error
  }

  // ------------------------------------------------------------ the live actor

  private startActor(e: Entry, machine: AnyStateMachine, opts: { input?: unknown; snapshot?: unknown }) {
    const actor = createActor(this.provided(e.kind, machine), opts as never) as Actor<AnyStateMachine>
    actor.subscribe({ error: (err) => (e.error = { e: err }) })
    e.actor = actor
    e.machineVersion = machine.id
    e.collected = []
    this.within(e, () => actor.start())
    this.throwIfFailed(e)
  }

  /** Re-creates the live actor from its persisted snapshot (lazy rehydration, and restart after a failure). */
  private async hydrate(e: Entry): Promise<void> {
    if (e.actor) return
    const row = await this.loadRow(e)
    if (!row) throw new ActorNotFound(e.kind.kind, e.id)
    if (row.status === 'done') throw new ActorDone(e.kind.kind, e.id)
    const machine = e.kind.machines.find((m) => m.id === row.machineVersion)
    if (!machine) throw new ActorError('unknown_machine_version', `${e.kind.kind} actor ${e.id} runs ${row.machineVersion}, which is not registered`)
    this.startActor(e, machine, { snapshot: row.snapshot })
    // Restoring does not re-run entry actions; nothing collected belongs to a step.
    e.collected = []
  }

  /**
   * The actor's persisted snapshot row. Reads asked for in the same turn are one
   * statement: a poll hands its due fires over at once, and each actor not live
   * asks for its snapshot on the way into its step, before any of them awaits.
   */
  private loadRow(e: Entry): Promise<SnapshotRow | undefined> {
    if (!this.loads) {
      this.loads = new Map()
      queueMicrotask(() => void this.readLoads())
    }
    const key = `${e.kind.kind}\u0000${e.id}`
    let load = this.loads.get(key)
    if (!load) {
      load = { kind: e.kind.kind, id: e.id, waiters: [] }
      this.loads.set(key, load)
    }
    const waiters = load.waiters
    return new Promise((resolve, reject) => waiters.push({ resolve, reject }))
  }

  private async readLoads(): Promise<void> {
    const loads = this.loads!
    this.loads = undefined
    try {
      const wanted = [...loads.values()]
      const rows = await READ_SNAPSHOTS.rows(this.opts.db, [JSON.stringify(wanted.map(({ kind, id }) => ({ kind, id }))), ...actorKeys(wanted)])
      this.reads.statements++
      this.reads.rows += loads.size
      for (const r of rows) {
        const load = loads.get(`${r.kind}\u0000${r.id}`)
        if (!load) continue
        loads.delete(`${r.kind}\u0000${r.id}`)
        const row: SnapshotRow = {
          machineVersion: r.machine_version,
          snapshot: typeof r.snapshot === 'string' ? JSON.parse(r.snapshot) : r.snapshot,
          status: r.status,
        }
        for (const w of load.waiters) w.resolve(row)
      }
      for (const load of loads.values()) for (const w of load.waiters) w.resolve(undefined)
    } catch (err) {
      for (const load of loads.values()) for (const w of load.waiters) w.reject(err)
    }
  }

  /** A message to the live actor, adding what it causes to the step's collection: a command goes through its kind's rules, anything else to the machine. */
  private deliver(e: Entry, message: EventObject) {
    const actor = e.actor!
    this.within(e, () => {
      if (!isCommand(message)) return actor.send(message)
      const rules = this.commandRules(e.kind)
      const admission = rules.admit(message, actor.getSnapshot() as AnyMachineSnapshot)
      if ('event' in admission) actor.send(admission.event)
      // The outcome commits with the machine events it reports, in this step.
      this.fxFor(e.kind).emit(rules.outcome(message, admission))
    })
    this.throwIfFailed(e)
  }

  private commandRules(kind: ActorKind) {
    if (!kind.commands) throw new Error(`${kind.kind} actors take no commands`)
    return kind.commands
  }

  // ------------------------------------------------------------ steps, one per message kind

  private step(e: Entry, msg: Message): Promise<StepResult | undefined> {
    switch (msg.type) {
      case 'spawn':
        return this.spawnStep(e, msg.input, msg.timers ?? [])
      case 'send':
        return this.sendStep(e, msg.event)
      case 'fire':
        return this.fireStep(e, msg.timer)
      case 'stop':
        return this.stopStep(e)
    }
  }

  /**
   * Starts a new actor and applies, in its first step, the spawn's timers that are due
   * already (in due order): each would otherwise be written, polled, claimed and run
   * as a step of its own a moment later, as a simulated call's first ring was (a
   * timer row written and deleted, and a step, per call: `npm run bench -- calls`).
   * Answers the timers still to schedule. A due message the machine fails on leaves
   * the actor as it started, with every timer scheduled: that message then fails
   * alone, as a fire, and cannot take the actor's creation with it.
   */
  private startWithDue(e: Entry, input: unknown, timers: ScheduleRequest[]): ScheduleRequest[] {
    this.startActor(e, e.kind.machines[0], { input })
    const now = this.opts.clock.now().getTime()
    const due = timers.filter((t) => requestedDueMs(t, now) <= now)
    if (due.length === 0) return timers
    try {
      // sort is stable: timers due at the same moment keep the order they were given in.
      for (const t of due.sort((a, b) => requestedDueMs(a, now) - requestedDueMs(b, now))) this.deliver(e, t.event)
    } catch {
      this.discard(e)
      this.startActor(e, e.kind.machines[0], { input })
      return timers
    }
    return timers.filter((t) => requestedDueMs(t, now) > now)
  }

  /** A new actor: its first snapshot is inserted only if the id is free (else nothing of the step is written). */
  private async spawnStep(e: Entry, input: unknown, timers: ScheduleRequest[]): Promise<StepResult | undefined> {
    if (e.actor) throw new ActorExists(e.kind.kind, e.id)
    const later = this.startWithDue(e, input, timers)
    const result = await this.commit(e, { fresh: { timers: later } })
    if (!result) throw new ActorExists(e.kind.kind, e.id)
    return result
  }

  private async sendStep(e: Entry, event: EventObject): Promise<StepResult | undefined> {
    await this.hydrate(e)
    e.collected = []
    this.deliver(e, event)
    return this.commit(e, {})
  }

  /**
   * A durable timer row came due. It is used as the poller read it; the claim in the
   * step's transaction finds out whether it is still current (not cancelled,
   * replaced or taken meanwhile).
   */
  private async fireStep(e: Entry, timer: TimerRow): Promise<StepResult | undefined> {
    const claim: Claim = { timerId: timer.id, token: timer.token }
    const event = timer.event as EventObject
    if (isSpawn(event)) {
      // A durable spawn (another actor's step, or a request): applied once; an existing actor keeps its state (the fire is only taken).
      if (e.actor) return this.drop(e, claim)
      return this.spawnFromFire(e, timer)
    }
    try {
      await this.hydrate(e)
    } catch (err) {
      if (err instanceof ActorNotFound && isTellOrSpawn(event)) return this.spawnFromTell(e, timer, event)
      // A durable message for a finished or missing actor: taken and dropped; a command is still answered.
      if (!(err instanceof ActorDone || err instanceof ActorNotFound)) throw err
      if (err instanceof ActorDone) this.dispose(e)
      return this.drop(e, claim, isCommand(event) ? this.orphanOutcome(e.kind, event) : [])
    }
    e.collected = []
    this.deliver(e, deliveredEvent(event))
    return this.commit(e, { claims: [claim] })
  }

  /**
   * A tell-or-spawn to an actor that does not exist: the actor is created from the
   * message's input (which holds the event's change already) by the step that takes
   * the message. Should the actor turn out to exist after all, it takes the event.
   */
  private async spawnFromTell(e: Entry, fired: TimerRow, m: TellOrSpawnMessage): Promise<StepResult | undefined> {
    const claim: Claim = { timerId: fired.id, token: fired.token }
    this.startActor(e, e.kind.machines[0], { input: m.input })
    const result = await this.commitOrWhyNot(e, { fresh: { timers: [] }, claims: [claim] })
    if (!('notCommitted' in result)) return result
    if (result.notCommitted === 'stale') return undefined
    try {
      await this.hydrate(e)
    } catch (err) {
      if (!(err instanceof ActorDone)) throw err
      this.dispose(e)
      return this.drop(e, claim)
    }
    e.collected = []
    this.deliver(e, m.event)
    return this.commit(e, { claims: [claim] })
  }

  /**
   * Many durable messages, one step: each applied to the machine in turn, their
   * effects collected in order, the snapshot written once, every message claimed in
   * the same transaction. Answers the letters it did not take (behind a final state,
   * or behind a spawn run alone), which go back to the head of the mailbox; undefined
   * when the messages are better taken one per step (nothing was written).
   */
  private async stepTogether(e: Entry, letters: Letter[]): Promise<Letter[] | undefined> {
    const fires = letters.map(timerOf)
    if (e.done) return (await this.dropTogether(e, letters)) ? [] : undefined
    if (!e.actor) {
      try {
        await this.hydrate(e)
      } catch (err) {
        if (err instanceof ActorDone) {
          this.dispose(e)
          return (await this.dropTogether(e, letters)) ? [] : undefined
        }
        if (!(err instanceof ActorNotFound)) {
          // Not readable now: the one-message path retries each message with its supervision.
          if (err instanceof ActorError) return undefined
          throw err
        }
        const spawn = fires.findIndex((t) => isSpawn(t.event as EventObject) || isTellOrSpawn(t.event as EventObject))
        // A durable spawn (or a tell that spawns) ahead of messages to the actor it creates: that one alone (its step inserts the actor), then the others together.
        if (spawn === 0) {
          await this.runAlone(e, letters[0]!)
          return letters.slice(1)
        }
        // The messages ahead of any spawn reach an actor that does not exist: taken and dropped, as one alone would be.
        const orphans = spawn === -1 ? letters : letters.slice(0, spawn)
        return (await this.dropTogether(e, orphans)) ? letters.slice(orphans.length) : undefined
      }
    }
    const actor = e.actor!
    e.collected = []
    const claims: Claim[] = []
    const dropped: string[] = []
    let applied = 0
    // The actor's own timers an earlier message of this step scheduled again or cancelled: a fire of theirs read before is stale.
    const rewritten = new Set<string>()
    let scanned = 0
    let next = 0
    for (; next < fires.length; next++) {
      // A final state takes no more: the rest go through the mailbox again (and are dropped there, as after any final step).
      if ((actor.getSnapshot() as AnyMachineSnapshot).status === 'done') break
      const t = fires[next]!
      const event = t.event as EventObject
      if (rewritten.has(t.name) || claims.some((c) => c.timerId === t.id)) dropped.push(t.id)
      else if (isSpawn(event)) {
        // The actor exists: a durable spawn of it is only taken.
        claims.push({ timerId: t.id, token: t.token, optional: true })
        dropped.push(t.id)
      } else {
        claims.push({ timerId: t.id, token: t.token })
        this.deliver(e, deliveredEvent(event))
        applied++
        for (; scanned < e.collected.length; scanned++) {
          const c = e.collected[scanned]!
          if (c.type === 'schedule') rewritten.add(c.req.name)
          else if (c.type === 'cancel') rewritten.add(c.name)
        }
      }
    }
    if (claims.length > 0) {
      const write = this.stepWrite(e, { claims })
      // Only spawns of this actor were taken: nothing of it changed.
      if (applied === 0) write.snapshot = undefined
      e.collected = []
      const outcome = await this.committer.submit(write)
      if (!outcome.committed) {
        // A fire it applied was stale: nothing was written; one per step, that one is dropped and the others applied.
        this.discard(e)
        return undefined
      }
      if (applied > 1) {
        this.together.manyMessageSteps++
        this.together.messagesInThem += applied
      }
      if (write.snapshot?.status === 'done') this.dispose(e)
      if (outcome.events.length > 0) this.opts.outboxCommitted?.()
      this.timersWritten(outcome.timers)
    }
    for (const timerId of dropped) this.opts.onEvent?.({ type: 'timer_dropped', kind: e.kind.kind, id: e.id, timerId })
    for (const l of letters.slice(0, next)) l.resolve(undefined)
    return letters.slice(next)
  }

  /**
   * A durable spawn of an actor that does not exist yet. Its writers replace one row
   * per actor (each with a new token): when many write it in a burst (every call of
   * a user spawns the user's presence), the fire read before is stale by the time
   * its step commits, while the actor is still to be created. So a stale spawn
   * tries the row as it is now, a few times, instead of leaving the actor uncreated
   * (and every message to it dropped) until the burst ends.
   */
  private async spawnFromFire(e: Entry, fired: TimerRow): Promise<undefined> {
    let timer: TimerRow | undefined = fired
    for (let attempt = 0; timer && attempt < SPAWN_ATTEMPTS; attempt++) {
      const event = timer.event as unknown as SpawnMessage
      const later = this.startWithDue(e, event.input, event.timers ?? [])
      const result = await this.commitOrWhyNot(e, { fresh: { timers: later }, claims: [{ timerId: timer.id, token: timer.token }] })
      if (!('notCommitted' in result) || result.notCommitted === 'exists') return undefined
      timer = await this.currentSpawn(e)
    }
    return undefined
  }

  private async currentSpawn(e: Entry): Promise<TimerRow | undefined> {
    const [row] = await CURRENT_MESSAGE.rows(this.opts.db, [e.kind.kind, e.id, SPAWN_MESSAGE])
    if (!row) return undefined
    const event = (typeof row.event === 'string' ? JSON.parse(row.event) : row.event) as Record<string, unknown>
    return { id: row.id, actorKind: e.kind.kind, actorId: e.id, name: SPAWN_MESSAGE, token: row.token, dueAt: new Date(row.due_at), event }
  }

  /**
   * Messages for an actor that does not exist or has finished: all taken in one
   * step, a command still answered by its kind's orphan outcome (as fireStep does
   * for one). false: one of them was stale, nothing was written.
   */
  private async dropTogether(e: Entry, letters: Letter[]): Promise<boolean> {
    // A fire delivered twice is taken (and answered) once.
    const fires = [...new Map(letters.map((l) => [timerOf(l).id, timerOf(l)])).values()]
    const events = fires.flatMap((t) => {
      const event = t.event as EventObject
      return isCommand(event) ? this.orphanOutcome(e.kind, event) : []
    })
    const claims = fires.map((t) => ({ timerId: t.id, token: t.token }))
    if (!(await this.takeOnly(e, claims, events))) return false
    for (const t of fires) this.opts.onEvent?.({ type: 'timer_dropped', kind: e.kind.kind, id: e.id, timerId: t.id })
    for (const l of letters) l.resolve(undefined)
    return true
  }

  private orphanOutcome(kind: ActorKind, command: CommandMessage): NewEvent[] {
    const rules = this.commandRules(kind)
    return rules.outcome(command, rules.admit(command, undefined))
  }

  private async stopStep(e: Entry): Promise<undefined> {
    const row = await this.loadRow(e)
    if (!row) throw new ActorNotFound(e.kind.kind, e.id)
    if (row.status !== 'done') {
      await this.opts.db.transaction(async (tx) => {
        await this.checkFence(tx, e)
        await tx
          .update(actorSnapshots)
          .set({ status: 'done', updatedAt: this.opts.clock.now() })
          .where(and(eq(actorSnapshots.kind, e.kind.kind), eq(actorSnapshots.id, e.id)))
        await cancelActorTimers(tx, e.kind.kind, e.id)
      })
    }
    this.dispose(e)
    return undefined
  }

  /** Takes a fire that has nothing to act on (fenced too: a host that lost the shard must not take a fire the new owner would apply). */
  private async drop(e: Entry, claim: Claim, events: NewEvent[] = []): Promise<undefined> {
    await this.takeOnly(e, [claim], events)
    this.opts.onEvent?.({ type: 'timer_dropped', kind: e.kind.kind, id: e.id, timerId: claim.timerId })
    return undefined
  }

  /** Takes fires without a step of the actor (with their answers, if any); false when one was no longer current and nothing was written. */
  private async takeOnly(e: Entry, claims: Claim[], events: NewEvent[]): Promise<boolean> {
    const outcome = await this.committer.submit({
      kind: e.kind.kind,
      id: e.id,
      claims,
      events,
      cancels: [],
      cancelOwnTimers: false,
      timers: [],
      batched: [],
      writes: [],
    })
    // A fire already taken commits nothing (its events were committed by whoever took it).
    if (outcome.committed && outcome.events.length > 0) this.opts.outboxCommitted?.()
    return outcome.committed
  }

  private shardOf(id: string): number {
    return shardOf(id, this.opts.shardCount ?? DEFAULT_SHARD_COUNT)
  }

  /** What the step writes (snapshot, events, timers, effects), from what its actions collected. */
  private stepWrite(e: Entry, c: Commit): StepWrite {
    const kindName = e.kind.kind
    const actor = e.actor!
    const status: 'active' | 'done' = (actor.getSnapshot() as AnyMachineSnapshot).status === 'done' ? 'done' : 'active'
    const now = this.opts.clock.now()
    const dueAt = (req: ScheduleRequest) => new Date(requestedDueMs(req, now.getTime()))
    const shard = this.shardOf(e.id)
    const own = (req: ScheduleRequest) => ({ actorKind: kindName, actorId: e.id, name: req.name, dueAt: dueAt(req), event: req.event, shard })
    // The actor's own timers, by name, as the step leaves them: scheduled (the last request) or cancelled.
    const intents = new Map<string, ScheduleRequest | null>()
    for (const x of e.collected)
      if (x.type === 'schedule') intents.set(x.req.name, x.req)
      else if (x.type === 'cancel') intents.set(x.name, null)
    const timers = status === 'done' ? [] : [...(c.fresh?.timers ?? []), ...[...intents.values()].filter((r): r is ScheduleRequest => r !== null)].map(own)
    for (const x of e.collected) {
      if (x.type === 'message')
        timers.push({ actorKind: x.kind, actorId: x.id, name: x.message.name, dueAt: now, event: x.message.event, shard: this.shardOf(x.id) })
    }
    return {
      kind: kindName,
      id: e.id,
      snapshot: { machineVersion: e.machineVersion!, persisted: actor.getPersistedSnapshot(), status, shard, fresh: !!c.fresh, updatedAt: now },
      claims: c.claims ?? [],
      events: e.collected.flatMap((x) => (x.type === 'event' ? [x.event] : [])),
      // A fresh actor has no timers to cancel; a finished one loses them all.
      cancels: c.fresh || status === 'done' ? [] : [...intents].filter(([, r]) => r === null).map(([name]) => name),
      cancelOwnTimers: status === 'done' && !c.fresh,
      timers,
      batched: e.collected.flatMap((x) => (x.type === 'batch' ? [{ writer: x.writer, rank: x.rank, item: x.item }] : [])),
      writes: e.collected.flatMap((x) => (x.type === 'write' ? [x.fn] : [])),
    }
  }

  /** The step's write, committed with whatever other steps are ready (actors/runtime/committer). */
  private async commit(e: Entry, c: Commit): Promise<StepResult | undefined> {
    const result = await this.commitOrWhyNot(e, c)
    return 'notCommitted' in result ? undefined : result
  }

  private async commitOrWhyNot(e: Entry, c: Commit): Promise<StepResult | { notCommitted: 'stale' | 'exists' }> {
    const write = this.stepWrite(e, c)
    e.collected = []
    const snap = e.actor!.getSnapshot() as AnyMachineSnapshot
    const outcome = await this.committer.submit(write)
    if (!outcome.committed) {
      // The live actor took an event that did not commit (a stale fire, or an id taken): it is rebuilt from its snapshot on the next message.
      this.discard(e)
      for (const claim of c.claims ?? []) this.opts.onEvent?.({ type: 'timer_dropped', kind: write.kind, id: e.id, timerId: claim.timerId })
      return { notCommitted: outcome.reason }
    }
    const status = write.snapshot!.status
    const result: StepResult = { kind: write.kind, id: e.id, value: snap.value as StateValue, context: snap.context, status, events: outcome.events }
    if (status === 'done') this.dispose(e)
    if (outcome.events.length > 0) this.opts.outboxCommitted?.()
    this.timersWritten(outcome.timers)
    return result
  }

  /**
   * Timers a step committed: the durable messages due now go to their actors at once
   * (through the poller's delivery, which knows what is in flight), and the poller
   * looks again by the time the others come due; with placement, the placement does
   * both for the shards it holds and wakes the owners of the others.
   */
  private timersWritten(rows: TimerRow[]) {
    if (rows.length === 0) return
    if (this.opts.timersWritten) return this.opts.timersWritten(rows)
    if (this.opts.pollTimers === false) return
    const now = this.opts.clock.now().getTime()
    const due = rows.filter((r) => r.dueAt.getTime() <= now)
    if (due.length > 0) void this.timers.deliverNow(due)
    const later = rows.filter((r) => r.dueAt.getTime() > now)
    if (later.length > 0) this.timers.wake(new Date(Math.min(...later.map((r) => r.dueAt.getTime()))))
  }

  /** Placement: rolls the step (the batch) back when the shard's fence moved past this host's epoch. */
  private async checkFence(tx: Db, e?: Entry): Promise<void> {
    const fence = this.opts.fence
    if (!fence) return
    const [row] = await tx.select({ epoch: shardFences.epoch }).from(shardFences).where(eq(shardFences.shard, fence.shard)).for('share')
    if (!row || row.epoch !== fence.epoch) throw new ActorFenced(e?.kind.kind ?? 'any', e?.id ?? 'any', fence.shard, fence.epoch, row?.epoch ?? 0)
  }
}

/**
 * Takes a shard's database fence for a new owner: the epoch goes one up (the row lock
 * waits for any step of the previous owner still in its transaction) and is returned;
 * the new owner's host runs with it, and every older host's steps on the shard roll back.
 */
export async function raiseShardFence(db: Db, shard: number): Promise<number> {
  const [row] = await db
    .insert(shardFences)
    .values({ shard, epoch: 1 })
    .onConflictDoUpdate({ target: shardFences.shard, set: { epoch: sql`${shardFences.epoch} + 1` } })
    .returning({ epoch: shardFences.epoch })
  return row!.epoch
}
