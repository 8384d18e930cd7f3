/**
 * Durable messages to actors, written inside the caller's own transaction.
 *
 * A message to an actor that must not be lost is a durable timer row due now,
 * addressed to the actor (kind, id, shard). Whoever owns the actor's shard fires it
 * and claims the row inside the step the message causes, so the message is applied
 * exactly once: not lost by a crash after the caller's commit, not repeated by a
 * second delivery. The same rows carry what actors send each other (`tell`,
 * `spawnActor`) and what a gateway sends an actor with a request:
 *
 *   sendCommand(tx, ...)  a command, committed with the request's audit and
 *                         idempotency records (so a 202 is never a lost command);
 *   spawnInTx(tx, ...)    a new actor, likewise (so a 200 is never an actor that
 *                         never starts).
 *
 * Whether an actor takes a command is its machine's to say (snapshot.can): a
 * gateway asks `readActorState` and the kind's admission rule before writing the
 * command, and the actor asks the same rule again when the command arrives (the
 * state may have moved in between); see ActorKind.commands.
 */
import { randomUUID } from 'node:crypto'
import { and, eq } from 'drizzle-orm'
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate'
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import type { ActorMessages } from '../../src/services/deps'
import { actorSnapshots } from '../../src/db/schema'
import { writeBatcher } from '../../src/db/write-batcher'
import { DEFERRED_PREFIX } from '../../src/scheduler/deferred-messages'
import { scheduleTimer, scheduleTimers, type TimerRow } from '../../src/scheduler/durable-timers'
import { ActorError, type ActorState, type ScheduleRequest, type SpawnOptions } from './client'
import { shardOf } from './shards'

/** The event type of a durable spawn: the target actor is created by its own first step. */
export const SPAWN_MESSAGE = '$spawn'
/** The event type of a command: the kind's `commands` rule admits it and reports the outcome. */
export const COMMAND_MESSAGE = '$command'
/** The event type of a tell that creates its actor when there is none (durableMessage.tellOrSpawn). */
export const TELL_OR_SPAWN_MESSAGE = '$tell_or_spawn'

/** What every command carries; a kind adds its own fields. */
export interface CommandMessage extends EventObject {
  type: typeof COMMAND_MESSAGE
  /** Unique per command: names its timer row, and the outcome events report it. */
  command_id: string
  /** When the command was accepted (ISO 8601, simulated time): the machine events it causes carry it. */
  at: string
}

export interface SpawnMessage extends EventObject {
  type: typeof SPAWN_MESSAGE
  input: unknown
  timers: ScheduleRequest[]
}

/**
 * A tell to an actor that may not exist yet: an existing actor takes `event`; a missing
 * one is created from `input`, which must already hold what `event` changes (the event
 * is not applied again). One row, where a spawn and a tell were two: every answered call
 * spawned its user's presence actor, which nearly always existed, and that `$spawn` row,
 * one per actor, was replaced by each call in a burst (`npm run bench -- calls`).
 */
export interface TellOrSpawnMessage extends EventObject {
  type: typeof TELL_OR_SPAWN_MESSAGE
  event: EventObject & Record<string, unknown>
  input: unknown
}

/** A durable message as a named timer event (one live timer per name per actor). */
export interface DurableMessage {
  name: string
  event: EventObject & Record<string, unknown>
}

export const durableMessage = {
  spawn: (input: unknown, opts: SpawnOptions = {}): DurableMessage => ({
    name: SPAWN_MESSAGE,
    event: { type: SPAWN_MESSAGE, input, timers: opts.timers ?? [] } satisfies SpawnMessage,
  }),
  /** A plain event for the target's machine; each tell is its own row. */
  tell: (event: EventObject & Record<string, unknown>): DurableMessage => ({ name: `$tell:${randomUUID()}`, event }),
  /** A tell that creates its target from `input` when there is none (TellOrSpawnMessage); its own row, as a tell. */
  tellOrSpawn: (event: EventObject & Record<string, unknown>, input: unknown): DurableMessage => ({
    name: `$tell:${randomUUID()}`,
    event: { type: TELL_OR_SPAWN_MESSAGE, event, input } satisfies TellOrSpawnMessage,
  }),
  /** A tell that may wait until its deadline or its release (src/scheduler/deferred-messages); its row's due time is the deadline. */
  deferredTell: (event: EventObject & Record<string, unknown>): DurableMessage => ({ name: `${DEFERRED_PREFIX}${randomUUID()}`, event }),
  command: (m: CommandMessage): DurableMessage => ({ name: `${COMMAND_MESSAGE}:${m.command_id}`, event: m as CommandMessage & Record<string, unknown> }),
}

export const isCommand = (e: EventObject): e is CommandMessage => e.type === COMMAND_MESSAGE
export const isSpawn = (e: EventObject): e is SpawnMessage => e.type === SPAWN_MESSAGE
export const isTellOrSpawn = (e: EventObject): e is TellOrSpawnMessage => e.type === TELL_OR_SPAWN_MESSAGE
/** What a durable message gives an actor that exists: a tell-or-spawn's event, any other message itself. */
export const deliveredEvent = (e: EventObject): EventObject => (isTellOrSpawn(e) ? e.event : e)

function write(tx: Db, clock: Clock, kind: string, id: string, m: DurableMessage): Promise<TimerRow> {
  return scheduleTimer(tx, clock, { actorKind: kind, actorId: id, name: m.name, dueAt: clock.now(), event: m.event, shard: shardOf(id) })
}

/**
 * Writes a command for the actor in the caller's transaction. The row it answers can
 * be handed to `ActorClient.wake` after the commit, so that the owner runs it at once.
 */
export function sendCommand(tx: Db, clock: Clock, kind: string, id: string, command: CommandMessage): Promise<TimerRow> {
  return write(tx, clock, kind, id, durableMessage.command(command))
}

/** Writes the creation of an actor in the caller's transaction (an id that turns out taken keeps its actor); see sendCommand. */
export function spawnInTx(tx: Db, clock: Clock, kind: string, id: string, input: unknown, opts?: SpawnOptions): Promise<TimerRow> {
  return write(tx, clock, kind, id, durableMessage.spawn(input, opts))
}

/** Writes a plain event for the actor (its own row; in the caller's transaction, or alone); see sendCommand. */
export function tellActor(tx: Db, clock: Clock, kind: string, id: string, event: EventObject & Record<string, unknown>): Promise<TimerRow> {
  return write(tx, clock, kind, id, durableMessage.tell(event))
}

/**
 * Durable messages written outside any transaction of the caller's (the media role
 * reporting what phones did: a call's start, its ring, its answer...), in groups:
 * those sent in the same turn of the event loop share one statement and one commit
 * (src/db/write-batcher.ts). Each promise resolves once its message is committed,
 * with the row to hand to `ActorClient.wake`.
 */
export function durableMessageSender(db: Db, clock: Clock): (kind: string, id: string, m: DurableMessage) => Promise<TimerRow> {
  const send = writeBatcher((items: { kind: string; id: string; m: DurableMessage }[]) =>
    scheduleTimers(
      db,
      clock,
      items.map(({ kind, id, m }) => ({ actorKind: kind, actorId: id, name: m.name, dueAt: clock.now(), event: m.event, shard: shardOf(id) })),
    ),
  )
  return (kind, id, m) => send({ kind, id, m })
}

/** Durable spawns and tells for services (src/services/deps: ActorMessages), on the same rows as the above. */
export function durableActorMessages(clock: Clock): ActorMessages {
  return {
    spawn: async (tx, kind, id, input) => void (await spawnInTx(tx, clock, kind, id, input)),
    tell: async (tx, kind, id, event, name) => {
      const message = durableMessage.tell(event)
      await write(tx, clock, kind, id, name ? { ...message, name } : message)
    },
  }
}

/** The actor's persisted state (its last committed step), or undefined when it does not exist. */
export async function readActorState(db: Db, kind: string, id: string): Promise<ActorState | undefined> {
  const [row] = await db
    .select({ machineVersion: actorSnapshots.machineVersion, status: actorSnapshots.status, snapshot: actorSnapshots.snapshot })
    .from(actorSnapshots)
    .where(and(eq(actorSnapshots.kind, kind), eq(actorSnapshots.id, id)))
  return row
}

/**
 * The machine snapshot of a persisted state, on the machine version the actor runs
 * (so that `snapshot.can(event)` answers as the actor will). No actor is started.
 */
export function restoreSnapshot(machines: readonly AnyStateMachine[], state: ActorState): AnyMachineSnapshot {
  const machine = machines.find((m) => m.id === state.machineVersion)
  if (!machine) throw new ActorError('unknown_machine_version', `no registered machine ${state.machineVersion}`)
  return machine.resolveState(state.snapshot as Parameters<typeof machine.resolveState>[0])
}
