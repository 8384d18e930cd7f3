/**
 * An actor kind: a pure machine (machines/) bound to effects. The machine asks for
 * effects by naming actions; the kind supplies them, built on the collectors below,
 * which only record what the step wants (no I/O inside a machine step). The host
 * writes everything the step collected in the step's one transaction.
 */
import type { AnyMachineSnapshot, AnyStateMachine, EventFromLogic, EventObject, InputFrom } from 'xstate'
import type { Db } from '../../src/db/client'
import type { NewEvent } from '../../src/events/outbox'
import type { ActorClient, ScheduleRequest, SpawnOptions } from './client'
import type { CommandMessage } from './commands'

/** The effect collectors handed to a kind's action implementations. Nothing here does I/O. */
export interface Effects {
  emit(event: NewEvent | NewEvent[]): void
  schedule(req: ScheduleRequest): void
  cancelTimer(name: string): void
  /** Runs inside the step's transaction, after the snapshot and events: a projection or record change. */
  write(fn: (tx: Db) => Promise<unknown>): void
  /**
   * A durable message to another actor: delivered (once) after this step committed;
   * dropped if the actor does not exist, unless `orSpawn` is given: then the actor is
   * created from that input, which must already hold what the event changes (one
   * message where a spawnActor and a tell would be two).
   */
  tell(kind: string, id: string, event: EventObject & Record<string, unknown>, opts?: { orSpawn: unknown }): void
  /** Creates another actor durably after this step committed (nothing happens if the id is taken). */
  spawnActor(kind: string, id: string, input: unknown, opts?: SpawnOptions): void
  /**
   * Like `write`, for writes the kind batches: the item goes to the kind's
   * `batchWriters[name]` with the items of every step committed in the same
   * transaction, in one call (one statement for many steps, not one per step).
   * The writers run in the order `batchWriters` declares them.
   */
  batch(name: string, item: unknown): void
}

/** Another actor a step creates (durably, in the step's transaction). */
export interface ActorSpawn {
  kind: string
  id: string
  input: unknown
  opts?: SpawnOptions
}

export interface StepContext {
  kind: string
  id: string
}

/** Whether an actor takes a command now: as this machine event, or refused for a reason the API reports. */
export type Admission = { event: EventObject } | { refused: { code: string; reason: string } }

/**
 * How a kind takes commands (durable `$command` messages, actors/runtime/commands).
 * The rule is the machine's: `admit` answers from the snapshot (snapshot.can(event)),
 * and the same function serves the gateway before it accepts a command and the
 * actor when the command arrives.
 */
export interface CommandRules<M extends CommandMessage = CommandMessage> {
  /** `snapshot` is undefined when the actor has finished or does not exist. */
  admit(command: M, snapshot: AnyMachineSnapshot | undefined): Admission
  /** The events reporting the outcome, committed in the same step as the machine events the command caused. */
  outcome(command: M, admission: Admission): NewEvent[]
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
  /** Commands this kind takes; without it a `$command` message is an error. */
  commands?: CommandRules
  /**
   * Writers of the items steps give `fx.batch(name, item)`: called once per transaction
   * with all its items, in step order; the writers themselves in the order declared here
   * (declare a writer that inserts rows before one that updates them).
   */
  batchWriters?: Record<string, BatchWriter>
}

export type BatchWriter = (tx: Db, items: unknown[]) => Promise<unknown>

export function defineActorKind<TMachine extends AnyStateMachine>(k: ActorKind<TMachine>): ActorKind<TMachine> {
  return k
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
