/**
 * Composes a running service from a Config: database (migrated), secrets,
 * bootstrap platform, and the roles of this process. main.ts and the tests both
 * start the service through here.
 */
import { createHmac } from 'node:crypto'
import { loadKeyRing } from './auth/secrets-at-rest'
import { systemClock, type Clock } from './clock'
import { type Config, portUnavailable } from './config'
import { openDatabase, type Database } from './db/client'
import { lockDataDir } from './db/data-dir-lock'
import { createLogger, type Logger } from './logger'
import { createCursorCodec } from './pagination'
import { offlineGeocoder } from './services/accounts/geocoding'
import { purgeExpiredIdempotencyKeys } from './services/platform/idempotency'
import { ensureBootstrapPlatform } from './services/platform/platforms'
import { loadClusterId, loadSecrets } from './services/platform/secrets'
import { sessionTokens } from './services/platform/sessions'
import { inProcessBus, type Bus } from './bus/bus'
import { natsBus } from './bus/nats-bus'
import { createDeliveryEngine, type DeliveryEngine } from './events/delivery'
import { createEventStreams, OUTBOX_WAKE_SUBJECT, type EventStreams } from './events/stream'
import { recordedMailbox, smtpMail, type MailTransport } from './events/mail'
import { httpWebhookTransport } from './events/webhook-transport'
import { createApp, type App } from '../gateway/app'
import { MAX_BODY_BYTES } from '../gateway/plugins/request-context'
import { spendChannelOver } from '../gateway/plugins/rate-limit'
import { embeddedWorkers, placedWorkers, type ActorWorkers } from '../actors/workers'
import { durableActorMessages } from '../actors/runtime/commands'
import { buildRoutingConfig, validateChange } from '../machines/routing'
import { provisioningDirectory } from '../media/provisioning/directory'
import { provisioningHandler } from '../media/provisioning/http'
import { checkSyncPublisher } from '../media/registrar/check-sync-notify'
import { clickToCallPublisher, queueCallerPublisher, sipCallEndedPublisher } from '../media/b2bua/bus-notices'
import { type MediaRole, startMediaRole } from '../media/media-role'
import type { SipServer } from '../media/sip/server'
import { sipCallActors } from '../actors/calls/sip-calls'
import { callRouter } from '../actors/calls/call-router'
import { sipQueueCallers } from '../actors/queues/sip-queue'
import { deviceTellWriter } from '../actors/devices/registrar-messages'
import { registeredDevicesFromBindings } from './services/devices/registrations'
import type { TimerRow } from './scheduler/durable-timers'
import { startDataLifecycle } from './services/data-lifecycle/sweeper'
import { startMediaWatchdog } from './services/calls/media-watchdog'
import { simulatedRecordingWav, type PauseInterval } from '../media/simulated-audio'
import { WAV_CONTENT_TYPE } from '../media/wav'
import { toTelephonyAudio } from '../media/audio-convert'
import { createStorage } from './storage/create-storage'
import type { RegisteredDevices } from './services/calls/registered-devices'
import { loadDownloadSigningKey } from './storage/download-urls'
import { loadWebPushKey } from './services/webrtc/push-subscriptions'

export interface Service {
  app: App
  database: Database
  config: Config
  clock: Clock
  log: Logger
  bootstrap: { platformId: string; generated: { test?: string; live?: string } }
  bus: Bus
  /** The webhook delivery engine, when this process has the delivery role. */
  delivery?: DeliveryEngine
  /** The open server-sent event streams of this process (GET /v1/events). */
  eventStreams: EventStreams
  /** Actors: where they run (this process, or workers over NATS) and how this process reaches them. */
  actors?: ActorWorkers
  /** The SIP server, when this process has the media role (its bound ports: SIP_PORT=0 picks free ones). */
  sip?: SipServer
  /** The media role, when this process runs it (SIP, the B2BUA, RTP). */
  media?: MediaRole
  /** Serves HTTP on config.port (0 picks a free port); returns the bound port. */
  listen(): number
  stop(): Promise<void>
}

export interface ServiceOptions {
  clock?: Clock
  log?: Logger
  /** Which devices of a user are registered (click-to-call); default: the registrar's bindings (registeredDevicesFromBindings). */
  registeredDevices?: RegisteredDevices
}

export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  const log = opts.log ?? createLogger(config.logLevel)
  const clock = opts.clock ?? systemClock(config.clockSpeed)
  // The embedded data folder belongs to this process: a second one fails here, naming the holder.
  const dataDirLock = config.databaseUrl ? undefined : await lockDataDir(config.dataDir)
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    embedded: config.embeddedDatabase,
    poolSize: config.databasePoolSize,
    log: (msg) => log.info(msg),
  }).catch((e) => {
    dataDirLock?.release()
    throw e
  })
  try {
    return await startOnDatabase(config, opts, { log, clock, database, dataDirLock })
  } catch (e) {
    // A part that could not start (SIP_PORT taken, a wrong master key, a failed
    // migration): the database is closed, the embedded server with it, and DATA_DIR
    // given up, so that no process outlives the failed start.
    await database.close().catch(() => {})
    dataDirLock?.release()
    throw e
  }
}

async function startOnDatabase(
  config: Config,
  opts: ServiceOptions,
  { log, clock, database, dataDirLock }: { log: Logger; clock: Clock; database: Database; dataDirLock?: { release(): void } },
): Promise<Service> {
  let ready = false
  await database.migrate()
  // The service's own server: the whole pool is this process's (an operator's server may be shared by many).
  if (database.embedded) await database.warm()
  // Secrets at rest (src/auth/): a wrong master key stops the start before anything is read or written.
  const keys = await loadKeyRing(config, database.db, log)
  const secrets = await loadSecrets(database.db, keys.ring)
  const bootstrap = await ensureBootstrapPlatform(database.db, clock, {
    testKey: config.testKey,
    liveKey: config.liveKey,
    liveEnabled: config.liveEnabled,
  })
  // The processes sharing this database are one cluster: its id namespaces everything of theirs on NATS.
  const clusterId = config.natsUrl ? await loadClusterId(database.db) : undefined
  const bus = config.natsUrl ? await natsBus(config.natsUrl, log, { cluster: clusterId! }) : inProcessBus()
  const mail: MailTransport = config.smtpUrl ? smtpMail(config.smtpUrl, config.mailFrom) : recordedMailbox(database.db, clock)
  const OUTBOX_WAKE = OUTBOX_WAKE_SUBJECT
  let delivery: DeliveryEngine | undefined
  let releaseLeadership: (() => Promise<void>) | undefined
  const stopLeadership = new AbortController()
  if (config.roles.includes('delivery')) {
    const engine = createDeliveryEngine({
      db: database.db,
      clock,
      config,
      log,
      mail,
      transport: httpWebhookTransport({ allowPrivateTargets: config.webhookAllowPrivateTargets }),
      // With several delivery processes one delivers and the others stand by, so
      // that per-account order holds; a standby takes over when the lock frees.
      leadership: async () => {
        const lease = await database.leadership('webhook-delivery', stopLeadership.signal)
        releaseLeadership = lease.release
        return lease.lost ? { lost: lease.lost, release: lease.release } : undefined
      },
    })
    bus.subscribe(OUTBOX_WAKE, () => engine.wake())
    delivery = engine
  }
  const eventStreams = createEventStreams({
    db: database.db,
    clock,
    bus,
    log,
    heartbeatMs: config.eventStreamHeartbeatS * 1000,
    pollMs: config.eventStreamPollS * 1000,
  })
  // Recording and voicemail audio, and the key that signs their download URLs.
  const storage = createStorage(config)
  const downloadKey = await loadDownloadSigningKey(database.db, keys.ring)
  const webPush = await loadWebPushKey(database.db, keys.ring)
  // Actors. Embedded: the worker role runs them all in this process. With NATS:
  // workers share them out by shard lease, and every gateway reaches them over NATS.
  let actors: ActorWorkers | undefined
  const actorDeps = {
    db: database.db,
    clock,
    log,
    storage,
    audio: (seed: string, durationMs: number, pauses?: PauseInterval[]) => ({
      bytes: simulatedRecordingWav({ seed, durationMs, pauses }),
      contentType: WAV_CONTENT_TYPE,
    }),
    outboxCommitted: () => bus.publish(OUTBOX_WAKE, ''),
    notifyCheckSync: checkSyncPublisher(bus),
    onSipCallEnded: sipCallEndedPublisher(bus),
    onQueueCaller: queueCallerPublisher(bus),
  }
  const worker = config.roles.includes('worker')
  if (config.natsUrl && (worker || config.roles.includes('gateway'))) {
    actors = await placedWorkers(actorDeps, {
      natsUrl: config.natsUrl,
      clusterId: clusterId!,
      worker,
      leaseMs: config.shardLeaseMs,
    })
  } else if (worker) actors = embeddedWorkers(actorDeps)
  const actorMessages = durableActorMessages(clock)
  const writeDeviceTells = deviceTellWriter(clock)
  // The media role: SIP on SIP_HOST:SIP_PORT, RTP on RTP_PORT_MIN..MAX. Phones register
  // their lines here (the device actors hold the bindings, presence follows them) and
  // call each other through the B2BUA (a call actor per call, on any worker).
  const actorClient = actors?.client
  const actorWake = actorClient ? (kind: string, id: string, rows: TimerRow[]) => actorClient.wake(kind, id, rows) : undefined
  const media = config.roles.includes('media')
    ? await startMediaRole({
        db: database.db,
        clock,
        bus,
        log,
        sipHost: config.sipHost,
        sipPort: config.sipPort,
        rtpPortMin: config.rtpPortMin,
        rtpPortMax: config.rtpPortMax,
        secret: secrets.sessionKey,
        writeTells: writeDeviceTells,
        recordings: storage,
        route: callRouter(database.db),
        trunkSources: config.sipTrunkSources,
        trunkOutbound: config.sipTrunkOutbound,
        callActors: sipCallActors({ db: database.db, clock, wake: actorWake }),
        queues: sipQueueCallers({ db: database.db, clock, wake: actorWake }),
      })
    : undefined
  const sip = media?.sip
  // Phones are told to register on the port SIP is bound to (SIP_PORT=0 picks one).
  const provisioning = phoneProvisioning({
    db: database.db,
    config: { ...config, sipPort: sip?.udpPort ?? config.sipPort },
    clock,
    writeTells: writeDeviceTells,
    nonceKey: secrets.sessionKey,
    log,
  })
  const app = createApp({
    actorMessages,
    provisioning: provisioning.fetch,
    db: database.db,
    database,
    clock,
    config,
    log,
    geocoder: offlineGeocoder(),
    // The compiler checks here that the services' routing rows fit the engine's input.
    routingCheck: (before, after) => validateChange(buildRoutingConfig(before), buildRoutingConfig(after)),
    tokens: sessionTokens(secrets.sessionKey, clock),
    cursors: createCursorCodec(secrets.cursorKey, clock),
    outboxCommitted: () => bus.publish(OUTBOX_WAKE, ''),
    mail,
    delivery,
    eventStreams,
    actors: actors?.client,
    registeredDevices: opts.registeredDevices ?? registeredDevicesFromBindings(database.db, clock),
    placeClickToCall: clickToCallPublisher(bus),
    storage,
    audio: toTelephonyAudio,
    downloadKey,
    webPushKey: webPush.publicKey,
    // Several gateways share one NATS: each platform's rate is enforced across all of them.
    rateLimitShare: config.natsUrl ? spendChannelOver(bus) : undefined,
    readiness: async () => {
      if (!ready) return false
      await database.ping()
      return true
    },
  })
  const purge = setInterval(() => {
    purgeExpiredIdempotencyKeys(database.db, clock).catch((err) => log.warn({ err }, 'idempotency purge failed'))
  }, 3600_000)
  purge.unref?.()
  // Owed blob deletions are swept where blobs are written (worker); the outbox is purged where it is delivered from (delivery).
  const lifecycle = startDataLifecycle({
    db: database.db,
    clock,
    log,
    storage: config.roles.includes('worker') ? storage : undefined,
    events: config.roles.includes('delivery'),
  })
  // SIP calls whose media process stopped beating are ended `failed` by the workers (any of them: the tell is named).
  const watchdog = worker
    ? startMediaWatchdog({ db: database.db, clock, actorMessages, log, wake: actorClient ? (kind, id) => actorClient.wake(kind, id) : undefined })
    : undefined
  await delivery?.start()
  await actors?.ready()
  ready = true

  let listening = false
  return {
    app,
    database,
    config,
    clock,
    log,
    bootstrap,
    bus,
    delivery,
    eventStreams,
    actors,
    sip,
    media,
    listen() {
      // The gateway refuses bodies over MAX_BODY_BYTES with a JSON 413; this hard limit only stops runaway streams.
      try {
        app.listen({ port: config.port, hostname: config.host, maxRequestBodySize: 4 * MAX_BODY_BYTES })
      } catch (e) {
        throw portUnavailable({ port: 'PORT', host: 'HOST' }, config.host, config.port, e) ?? e
      }
      listening = true
      const port = app.server!.port!
      if (config.baseUrlFollowsPort) config.baseUrl = `http://localhost:${port}`
      return port
    },
    async stop() {
      clearInterval(purge)
      await lifecycle.stop()
      watchdog?.stop()
      // Open event streams end first, so that stopping the server has no response left to wait for.
      await eventStreams.close()
      await media?.stop()
      if (listening) await app.stop(true)
      provisioning.stop()
      stopLeadership.abort()
      await actors?.stop()
      await delivery?.stop()
      await releaseLeadership?.()
      await bus.close()
      await database.close()
      dataDirLock?.release()
      keys.release()
    },
  }
}

/**
 * Phones' configuration files (media/provisioning) on the database: the handler
 * authenticates a phone with its own credentials and its fetches become messages to
 * its device actor. Nonces are signed with a key derived from the session key, so
 * every process of the deployment accepts the others' challenges.
 */
function phoneProvisioning(o: {
  db: Database['db']
  config: Config
  clock: Clock
  writeTells: ReturnType<typeof deviceTellWriter>
  nonceKey: Uint8Array
  log: Logger
}): { fetch: (request: Request, clientAddress: string | null) => Promise<Response>; stop: () => void } {
  const addresses = new WeakMap<Request, string | null>()
  const directory = provisioningDirectory({
    db: o.db,
    clock: o.clock,
    config: o.config,
    writeTells: o.writeTells,
    onError: (err) => o.log.warn({ err }, 'releasing deferred provisioning messages failed; they come due at their deadline'),
  })
  const handle = provisioningHandler({
    ...directory,
    clock: o.clock,
    nonceKey: createHmac('sha256', o.nonceKey).update('provisioning digest nonces').digest(),
    clientAddress: (request) => addresses.get(request) ?? null,
    onError: (err, during) => o.log.error({ err, during }, 'provisioning failed'),
  })
  return {
    fetch: (request, clientAddress) => {
      addresses.set(request, clientAddress)
      return handle(request)
    },
    stop: () => directory.stop(),
  }
}
