/**
 * The gateway side of placement (issue 4): an ActorClient that sends every actor
 * message as a NATS request to `voice.<kind>.<shard>.<id>`, where only the worker
 * holding the shard's lease listens. Typed error replies come back as the same
 * ActorError subclasses the host threw.
 *
 * Retries (capped, jittered backoff) when nobody answers the subject (503 no
 * responders: the shard is moving or no worker is up) or the worker says it no
 * longer owns the shard: in both cases nothing was applied. A timeout is not
 * retried: the step may have committed, so the caller gets ActorReplyTimeout.
 */
import { ErrorCode, JSONCodec, type NatsConnection, type NatsError } from 'nats'
import type { EventObject } from 'xstate'
import type { TimerRow } from '../../src/scheduler/durable-timers'
import type { ActorClient, SpawnOptions, StepResult } from '../runtime/client'
import {
  actorSubject,
  ActorReplyTimeout,
  DEFAULT_SHARD_COUNT,
  SUBJECT_PREFIX,
  ShardUnavailable,
  toActorError,
  type ActorReply,
  type ActorRequest,
  type InspectResult,
} from './wire'

export interface NatsActorClientOptions {
  nc: NatsConnection
  shardCount?: number
  prefix?: string
  /** Per request. Default 10 s. */
  timeoutMs?: number
  /** Retries on no responder / not owner: attempts (first included) and backoff. Default 8 over ~5 s. */
  retry?: { attempts?: number; baseMs?: number; capMs?: number }
}

const jc = JSONCodec<unknown>()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export class NatsActorClient implements ActorClient {
  private readonly shardCount: number
  private readonly prefix: string
  private readonly timeoutMs: number
  private readonly attempts: number
  private readonly baseMs: number
  private readonly capMs: number

  constructor(private readonly opts: NatsActorClientOptions) {
    this.shardCount = opts.shardCount ?? DEFAULT_SHARD_COUNT
    this.prefix = opts.prefix ?? SUBJECT_PREFIX
    this.timeoutMs = opts.timeoutMs ?? 10_000
    this.attempts = opts.retry?.attempts ?? 8
    this.baseMs = opts.retry?.baseMs ?? 50
    this.capMs = opts.retry?.capMs ?? 1_500
  }

  spawn(kind: string, id: string, input: unknown, opts: SpawnOptions = {}): Promise<StepResult> {
    return this.call(kind, id, { op: 'spawn', input, timers: opts.timers }) as Promise<StepResult>
  }

  send<E extends EventObject>(kind: string, id: string, message: E): Promise<StepResult> {
    return this.call(kind, id, { op: 'send', message: message as never }) as Promise<StepResult>
  }

  async stop(kind: string, id: string): Promise<void> {
    await this.call(kind, id, { op: 'stop' })
  }

  async inspect(kind: string, id: string): Promise<InspectResult | undefined> {
    return ((await this.call(kind, id, { op: 'inspect' })) as InspectResult | null) ?? undefined
  }

  /** One short try: a wake-up only spares the owner's next poll, so it must never hold its sender up. */
  async wake(kind: string, id: string, rows?: TimerRow[]): Promise<void> {
    await this.call(kind, id, { op: 'wake', rows }, { attempts: 1, timeoutMs: 2_000 })
  }

  private async call(
    kind: string,
    id: string,
    req: ActorRequest,
    limits = { attempts: this.attempts, timeoutMs: this.timeoutMs },
  ): Promise<StepResult | InspectResult | null> {
    const subject = actorSubject(kind, id, this.shardCount, this.prefix)
    let last = 'no attempt'
    for (let attempt = 1; attempt <= limits.attempts; attempt++) {
      if (attempt > 1) {
        const ceiling = Math.min(this.capMs, this.baseMs * 2 ** (attempt - 2))
        await sleep(ceiling / 2 + (ceiling / 2) * Math.random())
      }
      let reply: ActorReply
      try {
        const msg = await this.opts.nc.request(subject, jc.encode(req), { timeout: limits.timeoutMs })
        reply = jc.decode(msg.data) as ActorReply
      } catch (err) {
        const code = (err as NatsError)?.code
        if (code === ErrorCode.NoResponders) {
          last = 'no responder'
          continue
        }
        if (code === ErrorCode.Timeout) throw new ActorReplyTimeout(kind, id, limits.timeoutMs)
        throw err
      }
      if (reply.ok) return reply.result
      if (reply.error.code === 'not_owner') {
        last = reply.error.message
        continue
      }
      throw toActorError(reply.error)
    }
    throw new ShardUnavailable(kind, id, `${last} after ${limits.attempts} attempts`)
  }
}
