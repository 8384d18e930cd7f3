/**
 * Where actors run, for src/server.ts (every actor kind: calls and, as they arrive,
 * port orders, devices, queues...):
 *  - embedded (no NATS_URL): one ActorHost in this process, polling every durable timer;
 *  - placed (NATS_URL): this worker holds shard leases in JetStream KV and serves the
 *    actors of its shards, one ActorHost per shard, each fenced at the shard's database
 *    epoch; gateways reach actors through NatsActorClient, whichever worker runs them.
 * Both run the same kinds (`actorKinds`): today the call actor, the simulator's
 * follow-up actor, the presence actor (one per user), the device actor and the queue
 * actor (one per call queue). A new actor-backed resource adds its kind there.
 */
import { hostname } from 'node:os'
import { connect, type NatsConnection } from 'nats'
import type { Clock } from '../src/clock'
import type { Db } from '../src/db/client'
import type { Logger } from '../src/logger'
import { createCallKind, type SipCallEndedNotice } from './calls/call-actor'
import { createSimKind, type SimKindOptions } from './calls/follow-up-actor'
import { planConsultation, planFollowUps, planTransferLeg } from './calls/simulation'
import { planSipFollowUps } from './calls/sip-calls'
import type { NotifyCheckSync } from './devices/check-sync'
import { createDeviceKind } from './devices/device-actor'
import { createPresenceKind } from './presence/presence-actor'
import { createQueueKind, type QueueKindOptions } from './queues/queue-actor'
import { createPortOrderKind } from './port-orders/port-order-actor'
import { createHardwareOrderKind } from './hardware-orders/hardware-order-actor'
import { sandboxReviewer } from '../src/services/hardware/reviewer'
import { createFaxKind } from './faxes/fax-actor'
import { sandboxFaxCarrier } from '../src/services/faxes/carrier'
import { sandboxCarrier } from '../src/services/porting/carrier'
import { ShardLeases } from './placement/leases'
import { NatsActorClient } from './placement/nats-client'
import { SUBJECT_PREFIX } from './placement/wire'
import { WorkerPlacement } from './placement/worker-placement'
import type { ActorClient } from './runtime/client'
import { ActorHost, raiseShardFence, type HostEvent } from './runtime/host'
import type { ActorKind } from './runtime/kinds'

export interface WorkerDeps {
  db: Db
  clock: Clock
  log: Logger
  storage?: SimKindOptions['storage']
  /** The simulated audio of recordings and voicemails (media/, supplied by the composition root). */
  audio?: SimKindOptions['audio']
  /** Tells delivery that a step committed events. */
  outboxCommitted: () => void
  /** Hands a check-sync on a registered phone to the media role (media/registrar/check-sync-notify: a bus publish). */
  notifyCheckSync?: NotifyCheckSync
  /** Tells the media role that a SIP call ended (media/b2bua/bus-notices: a bus publish). */
  onSipCallEnded?: (notice: SipCallEndedNotice) => void
  /** Tells the media role to ring a queue's agents for a real caller, or that the caller times out (media/b2bua/bus-notices: a bus publish). */
  onQueueCaller?: QueueKindOptions['onQueueCaller']
}

/** The actor kinds a worker runs; `worker` names it in their log lines (placed: its shard-lease id). */
export function actorKinds(deps: WorkerDeps, worker = `${hostname()}:${process.pid}`): ActorKind[] {
  const call = createCallKind({
    db: deps.db,
    clock: deps.clock,
    log: deps.log.child({ worker }),
    onSpawnCall: planTransferLeg,
    onWarmTransfer: planConsultation,
    onEnded: (end, c) => (c.input.sip ? planSipFollowUps(end, c) : planFollowUps(end, c)),
    onSipCallEnded: deps.onSipCallEnded,
  })
  const sim = createSimKind({ clock: deps.clock, storage: deps.storage, audio: deps.audio })
  const device = createDeviceKind({ clock: deps.clock, notifyCheckSync: deps.notifyCheckSync })
  const presence = createPresenceKind({ clock: deps.clock })
  const queue = createQueueKind({ clock: deps.clock, onQueueCaller: deps.onQueueCaller })
  const portOrder = createPortOrderKind({ clock: deps.clock, carrier: sandboxCarrier() })
  const hardwareOrder = createHardwareOrderKind({ clock: deps.clock, reviewer: sandboxReviewer() })
  const fax = createFaxKind({ carrier: sandboxFaxCarrier() })
  return [call.kind, sim.kind, presence.kind, device.kind, queue.kind, portOrder.kind, hardwareOrder.kind, fax.kind] as never
}

const hostEvents = (log: Logger) => (e: HostEvent) => {
  if (e.type !== 'restart' && e.type !== 'timer_dropped') log.warn({ event: e }, 'actor host')
}

/** What server.ts holds: the client gateways use, and the worker's lifecycle. */
export interface ActorWorkers {
  /** How this process reaches actors (undefined: it can reach none). */
  client?: ActorClient
  /** Live actors in this process (metrics, benchmarks). */
  liveCount(): number
  /** Resolves once this process serves what it should (placement: its shards). */
  ready(): Promise<void>
  stop(): Promise<void>
}

export function embeddedWorkers(deps: WorkerDeps): ActorWorkers {
  const host = new ActorHost({
    db: deps.db,
    clock: deps.clock,
    kinds: actorKinds(deps),
    outboxCommitted: deps.outboxCommitted,
    onEvent: hostEvents(deps.log),
  }).start()
  return { client: host, liveCount: () => host.liveCount(), ready: async () => {}, stop: () => host.close() }
}

export interface PlacedOptions {
  natsUrl: string
  /** Namespaces leases and subjects: processes sharing a database share it. */
  clusterId: string
  /** This process runs actors (worker role). */
  worker: boolean
  leaseMs: number
}

export async function placedWorkers(deps: WorkerDeps, o: PlacedOptions): Promise<ActorWorkers> {
  const nc: NatsConnection = await connect({ servers: o.natsUrl, name: 'voice-actors' })
  const prefix = `${SUBJECT_PREFIX}.${o.clusterId}`
  const client = new NatsActorClient({ nc, prefix })
  if (!o.worker) return { client, liveCount: () => 0, ready: async () => {}, stop: () => nc.drain() }

  const workerId = `w_${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`
  const kinds = actorKinds(deps, workerId)
  const leases = new ShardLeases({
    nc,
    workerId,
    namespace: o.clusterId,
    leaseMs: o.leaseMs,
    onEvent: (e) => {
      if (e.type === 'error') deps.log.warn({ err: e.error }, 'shard leases')
      else deps.log.info({ event: e, workerId }, 'shard lease')
    },
  })
  const placement = new WorkerPlacement({
    nc,
    leases,
    prefix,
    kinds: kinds.map((k) => k.kind),
    // The fence goes up before the shard is served: from then on a step of the previous owner rolls back.
    hostFor: async (shard) => {
      const epoch = await raiseShardFence(deps.db, shard)
      return new ActorHost({
        db: deps.db,
        clock: deps.clock,
        kinds,
        outboxCommitted: deps.outboxCommitted,
        onEvent: hostEvents(deps.log),
        fence: { shard, epoch },
        pollTimers: false,
        // The placement's poller serves every shard of this worker (a host must not poll them all).
        timersWritten: (rows) => placement.timersWritten(rows),
      })
    },
    timers: { db: deps.db, clock: deps.clock },
    onEvent: (e) => {
      if (e.type === 'handler_failed' || e.type === 'timer_failed') deps.log.warn({ event: e }, 'actor placement')
    },
  }).start()
  await leases.start()
  return {
    client,
    liveCount: () => placement.liveActors(),
    ready: () => placement.ready(),
    async stop() {
      await placement.stop()
      await leases.stop({ release: true })
      await nc.drain()
    },
  }
}
