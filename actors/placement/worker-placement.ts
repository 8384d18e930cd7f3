/**
 * The worker side of placement (issue 4). For every shard this worker holds a lease
 * on, it runs one ActorHost (created on gain, closed on loss: its mailboxes drain
 * and its live actors are dropped, so a shard that comes back later rehydrates
 * from the database instead of trusting stale memory) and serves
 * `voice.<kind>.<shard>.*` for it.
 *
 * Fencing, twice: the lease's epoch is checked before every message
 * (`leases.holds`), and a message arriving after the loss gets a `not_owner` reply,
 * which the client retries against the new owner; and `hostFor` (see src/server.ts)
 * raises the shard's database fence before the shard is served, so a step of an old
 * owner whose lease ran out mid-step rolls back (ActorFenced, also answered
 * `not_owner`) instead of committing beside the new owner's.
 *
 * Durable timers: one poller per worker; a due timer is delivered to the host of
 * its actor's shard when this worker holds it and left for the owner otherwise.
 * Timer rows a step of this worker committed (`timersWritten`) do not wait for a
 * poll: the due messages for shards held here are delivered at once, the owners of
 * the other shards are nudged over NATS (`<prefix>.wake.<shard>`), and the poller
 * is woken for the later ones.
 * Hosts from `hostFor` must not be started (the placement never calls start()),
 * so that they do not poll every timer themselves.
 */
import { JSONCodec, type Msg, type NatsConnection, type Subscription } from 'nats'
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import { DurableScheduler, type TimerRow } from '../../src/scheduler/durable-timers'
import { ActorError } from '../runtime/client'
import type { ActorHost } from '../runtime/host'
import type { LeaseEvent, ShardLeases } from './leases'
import { errorReply, parseSubject, shardOf, shardSubject, SUBJECT_PREFIX, WORKER_QUEUE, wakeSubject, type ActorReply, type ActorRequest } from './wire'

export type PlacementEvent =
  | { type: 'serving'; shard: number; epoch: number }
  | { type: 'stopped_serving'; shard: number; epoch: number }
  | { type: 'handler_failed'; subject: string; error: unknown }
  | { type: 'timer_failed'; timerId: string; error: unknown }

export interface WorkerPlacementOptions {
  nc: NatsConnection
  leases: ShardLeases
  /** Actor kinds this worker serves. */
  kinds: string[]
  /** A fresh, unstarted host for a shard gained at this lease epoch (may be async: it raises the fence). */
  hostFor: (shard: number, epoch: number) => ActorHost | Promise<ActorHost>
  prefix?: string
  /** Durable timers of the owned shards; omit to poll none. */
  timers?: { db: Db; clock: Clock; pollIntervalMs?: number }
  onEvent?: (e: PlacementEvent) => void
}

interface Served {
  epoch: number
  /** Set once hostFor resolved; the shard's subjects are served from then on. */
  host?: ActorHost
  subs: Subscription[]
  ready: Promise<void>
}

const jc = JSONCodec<unknown>()

export class WorkerPlacement {
  private readonly served = new Map<number, Served>()
  /** Hosts of lost shards still draining, by shard: a regain waits for them. */
  private readonly closing = new Map<number, Promise<void>>()
  private readonly prefix: string
  private unlisten?: () => void
  private scheduler?: DurableScheduler

  constructor(private readonly opts: WorkerPlacementOptions) {
    this.prefix = opts.prefix ?? SUBJECT_PREFIX
  }

  /** Listens to lease events (start the leases after this, or shards already held are served now). */
  start(): this {
    this.unlisten = this.opts.leases.on((e) => this.onLease(e))
    for (const shard of this.opts.leases.ownedShards()) this.gain(shard, this.opts.leases.epochOf(shard)!)
    const t = this.opts.timers
    if (t) {
      this.scheduler = new DurableScheduler({
        db: t.db,
        clock: t.clock,
        pollIntervalMs: t.pollIntervalMs,
        batch: 500,
        shards: () => [...this.served].filter(([shard, s]) => s.host && this.opts.leases.holds(shard, s.epoch)).map(([shard]) => shard),
        deliver: async (timer) => {
          const shard = shardOf(timer.actorId, this.opts.leases.shardCount)
          const s = this.served.get(shard)
          // Not ours (or not ours any more): the owner's poller delivers it.
          if (!s?.host || !this.opts.leases.holds(shard, s.epoch)) return
          await s.host.fire(timer)
        },
        onError: (error, timer) => this.opts.onEvent?.({ type: 'timer_failed', timerId: timer?.id ?? '', error }),
      })
      this.scheduler.start()
    }
    return this
  }

  /** Timer rows a host of this worker committed: see the header. */
  timersWritten(rows: TimerRow[]): void {
    const scheduler = this.scheduler
    if (!scheduler) return
    const now = this.opts.timers!.clock.now().getTime()
    const due: TimerRow[] = []
    const elsewhere = new Set<number>()
    let later = Number.POSITIVE_INFINITY
    for (const r of rows) {
      const shard = shardOf(r.actorId, this.opts.leases.shardCount)
      const s = this.served.get(shard)
      const held = !!s?.host && this.opts.leases.holds(shard, s.epoch)
      if (!held) elsewhere.add(shard)
      else if (r.dueAt.getTime() <= now) due.push(r)
      else later = Math.min(later, r.dueAt.getTime())
    }
    if (due.length > 0) void scheduler.deliverNow(due)
    if (later < Number.POSITIVE_INFINITY) scheduler.wake(new Date(later))
    for (const shard of elsewhere) this.opts.nc.publish(wakeSubject(shard, this.prefix))
  }

  /** Live actors in the hosts of the shards served now (metrics, benchmarks). */
  liveActors(): number {
    let n = 0
    for (const s of this.served.values()) n += s.host?.liveCount() ?? 0
    return n
  }

  servedShards(): number[] {
    return [...this.served.keys()].sort((a, b) => a - b)
  }

  /** Stops serving every shard and waits for the hosts to drain (stop the leases after, with release). */
  async stop(): Promise<void> {
    this.unlisten?.()
    await this.scheduler?.stop()
    for (const [shard, s] of [...this.served]) this.lose(shard, s.epoch)
    await Promise.all(this.closing.values())
  }

  /** Resolves once every shard held now is served (its host made, its subjects subscribed). */
  async ready(): Promise<void> {
    await Promise.all([...this.served.values()].map((s) => s.ready))
  }

  /** Resolves once the hosts of lost shards have drained. */
  async settled(): Promise<void> {
    await Promise.all(this.closing.values())
  }

  private onLease(e: LeaseEvent) {
    if (e.type === 'gained') this.gain(e.shard, e.epoch)
    else if (e.type === 'lost') this.lose(e.shard, e.epoch)
  }

  private gain(shard: number, epoch: number) {
    const old = this.served.get(shard)
    if (old && old.epoch === epoch) return
    if (old) this.lose(shard, old.epoch)
    const s: Served = { epoch, subs: [], ready: Promise.resolve() }
    this.served.set(shard, s)
    const current = () => this.served.get(shard) === s
    const subscribe = () => {
      // Another worker committed timers for this shard: look now rather than at the next poll.
      s.subs.push(this.opts.nc.subscribe(wakeSubject(shard, this.prefix), { callback: () => this.scheduler?.wake() }))
      for (const kind of this.opts.kinds)
        s.subs.push(
          this.opts.nc.subscribe(shardSubject(kind, shard, this.prefix), {
            queue: WORKER_QUEUE,
            callback: (err, msg) => {
              if (err) return this.opts.onEvent?.({ type: 'handler_failed', subject: shardSubject(kind, shard, this.prefix), error: err })
              // nats.js only catches synchronous throws: the handler catches its own rejections.
              this.handle(s, shard, msg).catch((error) => this.opts.onEvent?.({ type: 'handler_failed', subject: msg.subject, error }))
            },
          }),
        )
      this.opts.onEvent?.({ type: 'serving', shard, epoch })
    }
    // A previous host of this shard on this worker must have drained first; making the
    // host (raising the fence) is retried while the shard is still ours.
    s.ready = (async () => {
      await this.closing.get(shard)?.catch(() => {})
      for (let attempt = 1; current(); attempt++) {
        try {
          const host = await this.opts.hostFor(shard, epoch)
          if (!current()) {
            await host.close()
            return
          }
          s.host = host
          subscribe()
          return
        } catch (error) {
          this.opts.onEvent?.({ type: 'handler_failed', subject: `shard ${shard}`, error })
          await new Promise((r) => setTimeout(r, Math.min(2_000, 50 * 2 ** attempt)))
        }
      }
    })()
  }

  private lose(shard: number, epoch: number) {
    const s = this.served.get(shard)
    if (!s || s.epoch !== epoch) return
    this.served.delete(shard)
    for (const sub of s.subs) sub.unsubscribe()
    const done = s.ready
      .then(() => s.host?.close())
      .catch(() => {})
      .finally(() => {
        if (this.closing.get(shard) === done) this.closing.delete(shard)
      })
    this.closing.set(shard, done)
    this.opts.onEvent?.({ type: 'stopped_serving', shard, epoch })
  }

  private async handle(s: Served, shard: number, msg: Msg): Promise<void> {
    const addr = parseSubject(msg.subject, this.prefix)
    const kind = addr?.kind ?? ''
    const id = addr?.id ?? ''
    let reply: ActorReply
    if (!addr || addr.shard !== shard) {
      reply = { ok: false, error: { code: 'internal', message: `bad actor subject ${msg.subject}`, kind, id } }
    } else if (this.served.get(shard) !== s || !s.host || !this.opts.leases.holds(shard, s.epoch)) {
      // The fence, before the message touches the host.
      reply = { ok: false, error: { code: 'not_owner', message: `shard ${shard} is not held here at epoch ${s.epoch}`, kind, id } }
    } else {
      try {
        const req = jc.decode(msg.data) as ActorRequest
        let result: ActorReply & { ok: true }
        switch (req.op) {
          case 'spawn':
            result = { ok: true, result: await s.host!.spawn(kind, id, req.input, { timers: req.timers }) }
            break
          case 'send':
            result = { ok: true, result: await s.host!.send(kind, id, req.message) }
            break
          case 'stop':
            await s.host!.stop(kind, id)
            result = { ok: true, result: null }
            break
          case 'wake':
            // The owner's poller delivers the actor's due messages now (it knows which are in flight).
            if (req.rows)
              await this.scheduler?.deliverNow(
                req.rows.filter((r) => r.actorKind === kind && r.actorId === id).map((r) => ({ ...r, dueAt: new Date(r.dueAt) })),
              )
            else await this.scheduler?.deliverDueOf(kind, id)
            result = { ok: true, result: null }
            break
          case 'inspect':
            result = { ok: true, result: (await s.host!.inspect(kind, id)) ?? null }
            break
          default:
            throw new Error(`unknown op ${(req as { op: string }).op}`)
        }
        reply = result
      } catch (err) {
        // The host closed under us (lease lost mid-queue): nothing was applied, the client retries.
        if (err instanceof ActorError && (err.code === 'host_closed' || err.code === 'fenced'))
          reply = { ok: false, error: { code: 'not_owner', message: `shard ${shard} moved`, kind, id } }
        else reply = errorReply(err, kind, id)
      }
    }
    msg.respond(jc.encode(reply))
  }
}
