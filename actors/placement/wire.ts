/**
 * Placement over NATS, the shared part (issue 4): shard of an actor id, the subject
 * an actor listens on, and the request and reply bodies, with typed error replies
 * that map back to the ActorError subclasses of the runtime.
 *
 * Subject: `voice.<kind>.<shard>.<id>`. Kinds and ids are single subject tokens
 * (letters, digits, `_` and `-`); the shard is a stable hash of the id.
 */
import type { TimerRow } from '../../src/scheduler/durable-timers'
import { DEFAULT_SHARD_COUNT, shardOf } from '../runtime/shards'
import { ActorDone, ActorError, ActorExists, ActorNotFound, ActorStepFailed, type ScheduleRequest, type StepResult } from '../runtime/client'

export const SUBJECT_PREFIX = 'voice'
/** Workers serving actor subjects share this queue group (at most one owns a shard; the group is belt and braces). */
export const WORKER_QUEUE = 'voice-actor-workers'

export { DEFAULT_SHARD_COUNT, shardOf }

const TOKEN = /^[A-Za-z0-9_-]+$/

export function actorSubject(kind: string, id: string, shardCount = DEFAULT_SHARD_COUNT, prefix = SUBJECT_PREFIX): string {
  if (!TOKEN.test(kind)) throw new TypeError(`actor kind ${JSON.stringify(kind)} is not a subject token`)
  if (!TOKEN.test(id)) throw new TypeError(`actor id ${JSON.stringify(id)} is not a subject token`)
  return `${prefix}.${kind}.${shardOf(id, shardCount)}.${id}`
}

/** Where the owner of a shard listens for nudges: timers were committed for its actors. */
export function wakeSubject(shard: number, prefix = SUBJECT_PREFIX): string {
  return `${prefix}.wake.${shard}`
}

/** Every actor of a kind on one shard. */
export function shardSubject(kind: string, shard: number, prefix = SUBJECT_PREFIX): string {
  return `${prefix}.${kind}.${shard}.*`
}

/** Parses `<prefix>.<kind>.<shard>.<id>` (the prefix may have several tokens: `voice.<cluster>`). */
export function parseSubject(subject: string, prefix = SUBJECT_PREFIX): { kind: string; shard: number; id: string } | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined
  const parts = subject.slice(prefix.length + 1).split('.')
  if (parts.length !== 3) return undefined
  const shard = Number(parts[1])
  if (!Number.isInteger(shard)) return undefined
  return { kind: parts[0]!, shard, id: parts[2]! }
}

export type ActorRequest =
  | { op: 'spawn'; input: unknown; timers?: ScheduleRequest[] }
  | { op: 'send'; message: { type: string } & Record<string, unknown> }
  | { op: 'stop' }
  | { op: 'inspect' }
  | { op: 'wake'; rows?: TimerRow[] }

/**
 * `not_owner`: the worker that got the request does not (or no longer) hold the
 * shard's lease; nothing was applied, the client retries. `internal`: an error that
 * is not an ActorError (should not happen: the host wraps step failures).
 */
export type WireErrorCode = ActorError['code'] | 'not_owner' | 'internal'

export interface WireError {
  code: WireErrorCode
  message: string
  kind: string
  id: string
  attempts?: number
}

export type ActorReply = { ok: true; result: StepResult | InspectResult | null } | { ok: false; error: WireError }

export type InspectResult = { machineVersion: string; status: 'active' | 'done'; snapshot: unknown }

export function errorReply(err: unknown, kind: string, id: string): ActorReply {
  if (err instanceof ActorError)
    return {
      ok: false,
      error: { code: err.code, message: err.message, kind, id, attempts: err instanceof ActorStepFailed ? err.attempts : undefined },
    }
  return { ok: false, error: { code: 'internal', message: String((err as Error)?.message ?? err), kind, id } }
}

/** The reply's error as the same ActorError subclass the host threw. */
export function toActorError(e: WireError): ActorError {
  switch (e.code) {
    case 'actor_not_found':
      return new ActorNotFound(e.kind, e.id)
    case 'actor_exists':
      return new ActorExists(e.kind, e.id)
    case 'actor_done':
      return new ActorDone(e.kind, e.id)
    case 'actor_step_failed': {
      const err = new ActorStepFailed(e.kind, e.id, e.attempts ?? 0, new Error(e.message))
      err.message = e.message
      return err
    }
    case 'internal':
      return new ActorStepFailed(e.kind, e.id, 0, new Error(e.message))
    case 'not_owner':
      return new ShardUnavailable(e.kind, e.id, e.message)
    default:
      return new ActorError(e.code, e.message)
  }
}

/**
 * No worker served the actor's shard within the client's retries (shard moving, no
 * worker up). Nothing was applied. Carries code `host_closed` because the runtime's
 * code union has no placement code (a one-line hook in runtime.ts could add one).
 */
export class ShardUnavailable extends ActorError {
  readonly retryable = true
  constructor(kind: string, id: string, detail: string) {
    super('host_closed', `no worker serves ${kind} actor ${id}: ${detail}`)
  }
}

/**
 * The owner did not reply in time. The outcome is unknown (the step may have
 * committed): the sender decides whether its message is safe to repeat.
 */
export class ActorReplyTimeout extends ActorError {
  readonly retryable = false
  constructor(kind: string, id: string, timeoutMs: number) {
    super('host_closed', `${kind} actor ${id} did not reply within ${timeoutMs} ms; the outcome is unknown`)
  }
}
