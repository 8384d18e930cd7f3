/**
 * The actor runtime, embedded mode: spawn, address and stop actors by kind and id;
 * one mailbox per actor (one message at a time); every step persisted; supervision
 * with restart from the last persisted snapshot; durable timers.
 *
 * A step:
 *  1. the XState actor takes the message; the effects it asks for are only
 *     collected by the named actions supplied with `.provide` (`emit`, `schedule`,
 *     `cancelTimer`, plus whatever the kind adds): no I/O inside the machine step;
 *  2. ONE transaction: upsert the snapshot (`getPersistedSnapshot()`), append the
 *     collected events to the outbox, write the timer rows (and claim the fire that
 *     caused the step, if any);
 *  3. only then the sender's promise resolves (the acknowledgement).
 * If anything throws (a machine action, a guard, the database), the in-memory actor
 * is discarded and re-created from its last persisted snapshot after a capped,
 * jittered exponential backoff, and the same message is retried; after
 * `maxAttempts` the sender gets an `ActorStepFailed`. An acknowledged message is
 * therefore always in the database; an unacknowledged one is the sender's to retry.
 *
 * Every effect runs inside that same transaction: `write` (a projection or record
 * change), `tell` and `spawnActor` (a message to, or the creation of, another
 * actor: a durable timer row due now, which the target's owner fires and claims in
 * the target's own step). Nothing happens after the commit but the outbox wake-up.
 *
 * Placement: `ActorClient` is what gateways use. Here it is the in-process
 * `ActorHost`; actors/placement routes `voice.<kind>.<shard>.<id>` over NATS to the
 * host of the worker holding the shard. A host given a `fence` checks, inside every
 * step transaction, that the shard's epoch in `shard_fences` is still its own, so a
 * step of an owner whose lease ran out rolls back (ActorFenced).
 */
import { and, eq, sql } from 'drizzle-orm'
import {
  createActor,
  type Actor,
  type AnyStateMachine,
  type EventFromLogic,
  type EventObject,
  type InputFrom,
  type SnapshotFrom,
  type StateValue,
} from 'xstate'
import type { Clock } from '../src/clock'
import type { Db } from '../src/db/client'
import { actorSnapshots, shardFences } from '../src/db/schema'
import { appendEvents, type NewEvent, type StoredEvent } from '../src/events/outbox'
import { DEFAULT_SHARD_COUNT, shardOf } from './shards'
import {
  cancelActorTimers,
  cancelTimer,
  claimTimer,
  insertTimers,
  DurableScheduler,
  scheduleTimer,
  type TimerRow,
} from '../src/scheduler/durable-timers'

// ---------------------------------------------------------------- errors

/** Errors that cross to the sender (and, later, over the wire as typed replies). */
export class ActorError extends Error {
  constructor(
    readonly code:
      | 'actor_not_found'
      | 'actor_exists'
      | 'actor_done'
      | 'actor_step_failed'
      | 'unknown_kind'
      | 'unknown_machine_version'
      | 'host_closed'
      | 'fenced',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'ActorError'
  }
}
export class ActorNotFound extends ActorError {
  constructor(kind: string, id: string) {
    super('actor_not_found', `no ${kind} actor ${id}`)
  }
}
export class ActorExists extends ActorError {
  constructor(kind: string, id: string) {
    super('actor_exists', `${kind} actor ${id} already exists`)
  }
}
/** The actor reached a final state (or was stopped) and takes no more messages. */
export class ActorDone extends ActorError {
  constructor(kind: string, id: string) {
    super('actor_done', `${kind} actor ${id} has finished`)
  }
}
/** Every attempt of the step failed; the message was not applied (nothing was written). */
export class ActorStepFailed extends ActorError {
  constructor(kind: string, id: string, readonly attempts: number, cause: unknown) {
    super('actor_step_failed', `${kind} actor ${id}: step failed after ${attempts} attempts: ${String((cause as Error)?.message ?? cause)}`, { cause })
  }
}

/** The shard moved to another owner (a higher epoch): the step rolled back, nothing was applied. */
export class ActorFenced extends ActorError {
  constructor(kind: string, id: string, shard: number, epoch: number, current: number) {
    super('fenced', `${kind} actor ${id}: shard ${shard} is fenced at epoch ${current}, this host runs epoch ${epoch}`)
  }
}

// ---------------------------------------------------------------- kinds

/** What a machine's `schedule` action asks for: a durable timer, by name, replacing a live one of that name. */
export interface ScheduleRequest {
  name: string
  /** Delay in simulated milliseconds from the injected clock's now... */
  delayMs?: number
  /** ...or an absolute due time. */
  at?: string | Date
  /** Delivered to the machine when the timer fires. */
  event: EventObject & Record<string, unknown>
}

/** The effect collectors handed to a kind's action implementations. Nothing here does I/O. */
export interface Effects {
  emit(event: NewEvent | NewEvent[]): void
  schedule(req: ScheduleRequest): void
  cancelTimer(name: string): void
  /** Runs inside the step's transaction, after the snapshot and events: a projection or record change. */
  write(fn: (tx: Db) => Promise<unknown>): void
  /** A durable message to another actor: delivered (once) after this step committed; dropped if the actor does not exist. */
  tell(kind: string, id: string, event: EventObject & Record<string, unknown>): void
  /** Creates another actor durably after this step committed (nothing happens if the id is taken). */
  spawnActor(kind: string, id: string, input: unknown, opts?: SpawnOptions): void
}

export interface StepContext {
  kind: string
  id: string
}

export interface ActorKind<TMachine extends AnyStateMachine = AnyStateMachine> {
  kind: string
  /** Every registered version; new actors start on the first. Each machine's id carries its version (`call.v1`). */
  machines: readonly [TMachine, ...AnyStateMachine[]]
  /**
   * Maps what the machine's `emit` action receives to outbox events (the kind knows
   * the account and mode, usually from the context). Default: params are a NewEvent.
   */
  toEvents?: (emitted: unknown, ctx: StepContext & { context: unknown }) => NewEvent | NewEvent[] | null | undefined
  /** More action implementations (or overrides), built on the collectors. */
  actions?: (fx: Effects, ctx: StepContext) => Record<string, (args: { context: unknown; event: EventObject }, params: never) => void>
  /**
   * Messages that are not machine events (commands): return true when handled. Runs in
   * the step like a machine event: it may send the machine events and use the effects,
   * all committed (or not) together.
   */
  handle?: (message: EventObject, actor: { send(event: EventObject): void; snapshot(): SnapshotFrom<AnyStateMachine> }, fx: Effects) => boolean
  /** Events to commit when a durable message (a timer row) for a finished or missing actor of this kind is dropped. */
  orphan?: (message: EventObject) => NewEvent[] | undefined
}

export function defineActorKind<TMachine extends AnyStateMachine>(k: ActorKind<TMachine>): ActorKind<TMachine> {
  return k
}

// ---------------------------------------------------------------- client

export interface StepResult {
  kind: string
  id: string
  /** Machine state after the step. */
  value: StateValue
  context: unknown
  status: 'active' | 'done'
  /** Events the step committed to the outbox. */
  events: StoredEvent[]
}

export interface SpawnOptions {
  /** Durable timers written with the actor's first snapshot (a script of events at given times). */
  timers?: ScheduleRequest[]
}

/** Addresses actors by kind and id: the in-process ActorHost, or NatsActorClient over placement. */
export interface ActorClient {
  /** Creates the actor; rejects with ActorExists when the id is taken. */
  spawn(kind: string, id: string, input: unknown, opts?: SpawnOptions): Promise<StepResult>
  /** Resolves once the step the message caused committed. */
  send<E extends EventObject>(kind: string, id: string, message: E): Promise<StepResult>
  /** Terminates the actor: status done, timers cancelled, disposed. */
  stop(kind: string, id: string): Promise<void>
  /** The persisted state, without waking the actor. */
  inspect(kind: string, id: string): Promise<{ machineVersion: string; status: 'active' | 'done'; snapshot: unknown } | undefined>
}

/** A typed view of one kind: input and messages checked against the machine. */
export function kindClient<TMachine extends AnyStateMachine>(client: ActorClient, k: ActorKind<TMachine>) {
  return {
    spawn: (id: string, input: InputFrom<TMachine>) => client.spawn(k.kind, id, input),
    send: (id: string, message: EventFromLogic<TMachine>) => client.send(k.kind, id, message),
    stop: (id: string) => client.stop(k.kind, id),
    inspect: (id: string) => client.inspect(k.kind, id),
  }
}

// ---------------------------------------------------------------- host

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
}

export type HostEvent =
  | { type: 'restart'; kind: string; id: string; attempt: number; delayMs: number; error: unknown }
  | { type: 'gave_up'; kind: string; id: string; attempts: number; error: unknown }
  | { type: 'timer_dropped'; kind: string; id: string; timerId: string }
  | { type: 'timer_delivery_failed'; timerId: string; error: unknown }

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
  | { type: 'timer'; kind: string; id: string; req: ScheduleRequest }

/** The timer event that creates an actor (SpawnOptions travel with it). */
const SPAWN_EVENT = '$spawn'
/** Thrown inside a step's transaction to roll it back when its fire turned out stale. */
const STALE_FIRE = new Error('stale timer fire')


interface Entry {
  kind: ActorKind
  id: string
  /** The live XState actor; undefined until (re)hydrated, and after a failed step. */
  actor?: Actor<AnyStateMachine>
  machineVersion?: string
  /** The error the running actor reported in this step. */
  error?: { e: unknown }
  tail: Promise<unknown>
  /** Messages queued or running; the entry leaves the registry when this is 0 and no actor is live. */
  pending: number
  /** The actor finished (final state or stopped): later messages are refused without a database read. */
  done: boolean
  collected: Collected[]
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * One per process: the registry of live actors (keyed by kind and id), their
 * mailboxes and supervision, and the timer poller for their durable timers.
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

  constructor(private readonly opts: ActorHostOptions) {
    for (const k of opts.kinds) this.kinds.set(k.kind, k)
    this.policy = { ...DEFAULT_RESTART, ...opts.restart }
    this.timers = new DurableScheduler({
      db: opts.db,
      clock: opts.clock,
      pollIntervalMs: opts.timerPollMs,
      deliver: (t) => this.fire(t),
      onError: (error, t) => this.opts.onEvent?.({ type: 'timer_delivery_failed', timerId: t?.id ?? '', error }),
    })
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
    await Promise.all([...this.registry.values()].map((e) => e.tail.catch(() => {})))
    for (const e of this.registry.values()) e.actor?.stop()
    this.registry.clear()
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

  async inspect(kind: string, id: string) {
    const [row] = await this.opts.db
      .select({ machineVersion: actorSnapshots.machineVersion, status: actorSnapshots.status, snapshot: actorSnapshots.snapshot })
      .from(actorSnapshots)
      .where(and(eq(actorSnapshots.kind, kind), eq(actorSnapshots.id, id)))
    return row
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
      entry = { kind, id, tail: Promise.resolve(), pending: 0, done: false, collected: [] }
      this.registry.set(key, entry)
    }
    const e = entry
    e.pending++
    const run = e.tail
      .then(() => this.supervise(e, msg))
      .finally(() => {
        // dispose: an entry without a live actor and without mail leaves the registry
        if (--e.pending === 0 && !e.actor && this.registry.get(key) === e) this.registry.delete(key)
      })
    e.tail = run.catch(() => {})
    return run
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

  // ------------------------------------------------------------ step

  /** The effect collectors of a kind: they write into the step that is running. */
  private fxFor(kind: ActorKind): Effects {
    const cached = this.kindEffects.get(kind)
    if (cached) return cached
    const host = this
    const entry = () => {
      if (!host.current) throw new Error(`${kind.kind}: an action ran outside a step`)
      return host.current
    }
    const push = (c: Collected) => entry().collected.push(c)
    const fx: Effects = {
      emit: (ev) => {
        for (const event of Array.isArray(ev) ? ev : [ev]) push({ type: 'event', event })
      },
      schedule: (req) => push({ type: 'schedule', req }),
      cancelTimer: (name) => push({ type: 'cancel', name }),
      write: (fn) => push({ type: 'write', fn }),
      tell: (k, id, event) => push({ type: 'timer', kind: k, id, req: { name: `$tell:${crypto.randomUUID()}`, delayMs: 0, event } }),
      spawnActor: (k, id, input, opts) => push({ type: 'timer', kind: k, id, req: { name: SPAWN_EVENT, delayMs: 0, event: { type: SPAWN_EVENT, input, timers: opts?.timers ?? [] } } }),
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

  /** A message to the live actor: a command the kind handles, or a machine event. */
  private deliver(e: Entry, message: EventObject) {
    const actor = e.actor!
    this.within(e, () => {
      const handled = e.kind.handle?.(
        message,
        {
          send: (ev) => {
            actor.send(ev)
            this.throwIfFailed(e)
          },
          snapshot: () => actor.getSnapshot() as SnapshotFrom<AnyStateMachine>,
        },
        this.fxFor(e.kind),
      )
      if (!handled) actor.send(message)
    })
    this.throwIfFailed(e)
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

  private startActor(e: Entry, machine: AnyStateMachine, opts: { input?: unknown; snapshot?: unknown }) {
    const actor = createActor(this.provided(e.kind, machine), opts as never) as Actor<AnyStateMachine>
    actor.subscribe({ error: (err) => (e.error = { e: err }) })
    e.actor = actor
    e.machineVersion = machine.id
    this.within(e, () => actor.start())
    this.throwIfFailed(e)
  }

  private throwIfFailed(e: Entry) {
    const snap = e.actor?.getSnapshot() as SnapshotFrom<AnyStateMachine> | undefined
    if (e.error) throw e.error.e
    if (snap?.status === 'error') throw snap.error
  }

  private async loadRow(e: Entry) {
    const [row] = await this.opts.db
      .select()
      .from(actorSnapshots)
      .where(and(eq(actorSnapshots.kind, e.kind.kind), eq(actorSnapshots.id, e.id)))
    return row
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

  private shardOf(id: string): number {
    return shardOf(id, this.opts.shardCount ?? DEFAULT_SHARD_COUNT)
  }

  private async step(e: Entry, msg: Message): Promise<StepResult | undefined> {
    const { db, clock } = this.opts
    const kindName = e.kind.kind
    let claim: { timerId: string; token: string } | undefined
    let fresh = false
    let initialTimers: ScheduleRequest[] = []
    const begin = () => (e.collected = [])
    const spawnFresh = (input: unknown, timers: ScheduleRequest[] | undefined) => {
      fresh = true
      initialTimers = timers ?? []
      begin()
      this.startActor(e, e.kind.machines[0], { input })
    }
    const drop = async (m: { timerId: string; token: string }, orphanEvents: NewEvent[] = []) => {
      // Fenced too: a host that lost the shard must not take (delete) a fire the new owner would apply.
      const committed = await db.transaction(async (txRaw) => {
        const tx = txRaw as unknown as Db
        await this.checkFence(tx, e)
        // A fire already taken commits nothing (its orphan events were committed by whoever took it).
        if (!(await claimTimer(tx, m.timerId, m.token))) return 0
        return (await appendEvents(tx, clock, orphanEvents)).length
      })
      if (committed > 0) this.opts.outboxCommitted?.()
      this.opts.onEvent?.({ type: 'timer_dropped', kind: kindName, id: e.id, timerId: m.timerId })
      return undefined
    }

    if (msg.type === 'spawn') {
      if (e.actor || (await this.loadRow(e))) throw new ActorExists(kindName, e.id)
      spawnFresh(msg.input, msg.timers)
    } else if (msg.type === 'fire') {
      // The polled row is used as read; the claim in the step's transaction finds out whether it is still current.
      const timer = msg.timer
      const m = { timerId: timer.id, token: timer.token }
      if (timer.event.type === SPAWN_EVENT) {
        // A durable spawn asked for by another actor's step: applied once; an existing actor keeps its state.
        if (e.actor || (await this.loadRow(e))) return drop(m)
        const ev = timer.event as { input: unknown; timers?: ScheduleRequest[] }
        spawnFresh(ev.input, ev.timers)
      } else {
        try {
          await this.hydrate(e)
        } catch (err) {
          // An orphan timer of a finished or missing actor: take it and drop the fire.
          if (err instanceof ActorDone || err instanceof ActorNotFound) {
            if (err instanceof ActorDone) this.dispose(e)
            return drop(m, e.kind.orphan?.(timer.event as EventObject))
          }
          throw err
        }
        begin()
        this.deliver(e, timer.event as EventObject)
      }
      claim = m
    } else if (msg.type === 'stop') {
      const row = await this.loadRow(e)
      if (!row) throw new ActorNotFound(kindName, e.id)
      if (row.status !== 'done') {
        await db.transaction(async (tx) => {
          await this.checkFence(tx as unknown as Db, e)
          await tx
            .update(actorSnapshots)
            .set({ status: 'done', updatedAt: clock.now() })
            .where(and(eq(actorSnapshots.kind, kindName), eq(actorSnapshots.id, e.id)))
          await cancelActorTimers(tx as unknown as Db, kindName, e.id)
        })
      }
      this.dispose(e)
      return undefined
    } else {
      await this.hydrate(e)
      begin()
      this.deliver(e, msg.event)
    }

    const actor = e.actor!
    const snap = actor.getSnapshot() as SnapshotFrom<AnyStateMachine>
    const persisted = actor.getPersistedSnapshot()
    const status: 'active' | 'done' = snap.status === 'done' ? 'done' : 'active'
    const collected = e.collected
    begin()
    const now = clock.now()
    const dueAt = (req: ScheduleRequest) => (req.at !== undefined ? new Date(req.at) : new Date(now.getTime() + (req.delayMs ?? 0)))

    let stale = false
    const events = await db.transaction(async (txRaw) => {
      const tx = txRaw as unknown as Db
      await this.checkFence(tx, e)
      if (claim && !(await claimTimer(tx, claim.timerId, claim.token))) {
        // The fire was cancelled, replaced or taken after it was polled: nothing of this step is written.
        stale = true
        throw STALE_FIRE
      }
      const shard = this.shardOf(e.id)
      const values = { machineVersion: e.machineVersion!, snapshot: persisted, status, shard, updatedAt: now }
      if (fresh) await tx.insert(actorSnapshots).values({ kind: kindName, id: e.id, ...values })
      else
        await tx
          .insert(actorSnapshots)
          .values({ kind: kindName, id: e.id, ...values })
          .onConflictDoUpdate({ target: [actorSnapshots.kind, actorSnapshots.id], set: values })
      const stored = await appendEvents(
        tx,
        clock,
        collected.flatMap((c) => (c.type === 'event' ? [c.event] : [])),
      )
      const ownRow = (req: ScheduleRequest) => ({ actorKind: kindName, actorId: e.id, name: req.name, dueAt: dueAt(req), event: req.event, shard })
      if (status === 'done') {
        if (!fresh) await cancelActorTimers(tx, kindName, e.id)
      } else if (fresh) {
        // A fresh actor has no timers yet: its script and first schedules go in one insert.
        const rows = initialTimers.map(ownRow)
        for (const c of collected) if (c.type === 'schedule') rows.push(ownRow(c.req))
        await insertTimers(tx, clock, rows)
      }
      for (const c of collected) {
        if (c.type === 'write') await c.fn(tx)
        else if (c.type === 'timer')
          await scheduleTimer(tx, clock, { actorKind: c.kind, actorId: c.id, name: c.req.name, dueAt: dueAt(c.req), event: c.req.event, shard: this.shardOf(c.id) })
        else if (status === 'done' || fresh) continue
        else if (c.type === 'schedule') await scheduleTimer(tx, clock, ownRow(c.req))
        else if (c.type === 'cancel') await cancelTimer(tx, kindName, e.id, c.name)
      }
      return stored
    }).catch((err) => {
      if (err === STALE_FIRE && stale) return undefined
      throw err
    })
    if (!events) {
      // The live actor took an event that did not commit: it is rebuilt from its snapshot on the next message.
      this.discard(e)
      this.opts.onEvent?.({ type: 'timer_dropped', kind: kindName, id: e.id, timerId: claim!.timerId })
      return undefined
    }

    const result: StepResult = { kind: kindName, id: e.id, value: snap.value as StateValue, context: snap.context, status, events }
    if (status === 'done') this.dispose(e)
    if (events.length > 0) this.opts.outboxCommitted?.()
    return result
  }

  /** Placement: rolls the step back when the shard's fence moved past this host's epoch. */
  private async checkFence(tx: Db, e: Entry): Promise<void> {
    const fence = this.opts.fence
    if (!fence) return
    const [row] = await tx.select({ epoch: shardFences.epoch }).from(shardFences).where(eq(shardFences.shard, fence.shard)).for('share')
    if (!row || row.epoch !== fence.epoch) throw new ActorFenced(e.kind.kind, e.id, fence.shard, fence.epoch, row?.epoch ?? 0)
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
