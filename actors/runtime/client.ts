/**
 * The sender's side of the actor runtime: how anything outside an actor addresses
 * one (the in-process ActorHost, or NatsActorClient over placement), what a step
 * answers, and the errors that cross back, typed (and, over NATS, as typed replies).
 */
import type { EventObject, StateValue } from 'xstate'
import type { StoredEvent } from '../../src/events/outbox'
import type { TimerRow } from '../../src/scheduler/durable-timers'

// ---------------------------------------------------------------- errors

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
  constructor(
    kind: string,
    id: string,
    readonly attempts: number,
    cause: unknown,
  ) {
    super('actor_step_failed', `${kind} actor ${id}: step failed after ${attempts} attempts: ${String((cause as Error)?.message ?? cause)}`, { cause })
  }
}
/** The shard moved to another owner (a higher epoch): the step rolled back, nothing was applied. */
export class ActorFenced extends ActorError {
  constructor(kind: string, id: string, shard: number, epoch: number, current: number) {
    super('fenced', `${kind} actor ${id}: shard ${shard} is fenced at epoch ${current}, this host runs epoch ${epoch}`)
  }
}

// ---------------------------------------------------------------- messages and results

/** A durable timer asked for by a machine (its `schedule` action) or written with a new actor: by name, replacing a live one of that name. */
export interface ScheduleRequest {
  name: string
  /** Delay in simulated milliseconds from the injected clock's now... */
  delayMs?: number
  /** ...or an absolute due time. */
  at?: string | Date
  /** Delivered to the machine when the timer fires. */
  event: EventObject & Record<string, unknown>
}

export interface SpawnOptions {
  /** Durable timers written with the actor's first snapshot (a script of events at given times). */
  timers?: ScheduleRequest[]
}

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

/** An actor's persisted state, read without waking it. */
export interface ActorState {
  machineVersion: string
  status: 'active' | 'done'
  snapshot: unknown
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
  inspect(kind: string, id: string): Promise<ActorState | undefined>
  /**
   * Runs the actor's durable messages that are due now (written by actors/runtime/commands
   * in a committed transaction) without waiting for the owner's next timer poll; resolves
   * once they were handled. Only a shortcut: the poll delivers them anyway. `rows`: the
   * messages just committed (what sendCommand and spawnInTx answered), delivered as they
   * are; without them the owner reads the actor's due rows.
   */
  wake(kind: string, id: string, rows?: TimerRow[]): Promise<void>
}
