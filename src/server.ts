/**
 * Composes a running service from a Config: database (migrated), secrets,
 * bootstrap platform, and the roles of this process. main.ts and the tests both
 * start the service through here.
 */
import { createHmac } from 'node:crypto'
import { systemClock, type Clock } from './clock'
import type { Config } from './config'
import { openDatabase, type Database } from './db/client'
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
import { embeddedWorkers, placedWorkers, type ActorWorkers } from '../actors/workers'
import { durableActorMessages } from '../actors/runtime/commands'
import { provisioningDirectory } from '../media/provisioning/directory'
import { provisioningHandler } from '../media/provisioning/http'
import { simulatedRecordingWav, type PauseInterval } from '../media/simulated-audio'
import { WAV_CONTENT_TYPE } from '../media/wav'
import { toTelephonyAudio } from '../media/audio-convert'
import { createStorage } from './storage/create-storage'
import type { RegisteredDevices } from './services/calls/registered-devices'
import { loadDownloadSigningKey } from './storage/download-urls'

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
  /** Serves HTTP on config.port (0 picks a free port); returns the bound port. */
  listen(): number
  stop(): Promise<void>
}

export interface ServiceOptions {
  clock?: Clock
  log?: Logger
  /** Which devices of a user are registered (click-to-call); default: none until the registrar exists. */
  registeredDevices?: RegisteredDevices
}

export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  const log = opts.log ?? createLogger(config.logLevel)
  const clock = opts.clock ?? systemClock(config.clockSpeed)
  let ready = false
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    embedded: config.embeddedDatabase,
    log: (msg) => log.info(msg),
  })
  await database.migrate()
  const secrets = await loadSecrets(database.db)
  const bootstrap = await ensureBootstrapPlatform(database.db, clock, {
    testKey: config.testKey,
    liveKey: config.liveKey,
    liveEnabled: config.liveEnabled,
  })
  const bus = config.natsUrl ? await natsBus(config.natsUrl, log) : inProcessBus()
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
  const downloadKey = await loadDownloadSigningKey(database.db)
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
  }
  const worker = config.roles.includes('worker')
  if (config.natsUrl && (worker || config.roles.includes('gateway'))) {
    actors = await placedWorkers(actorDeps, {
      natsUrl: config.natsUrl,
      clusterId: await loadClusterId(database.db),
      worker,
      leaseMs: config.shardLeaseMs,
    })
  } else if (worker) actors = embeddedWorkers(actorDeps)
  const actorMessages = durableActorMessages(clock)
  const provisioning = phoneProvisioning({ db: database.db, config, clock, actorMessages, nonceKey: secrets.sessionKey, log })
  const app = createApp({
    actorMessages,
    provisioning,
    db: database.db,
    database,
    clock,
    config,
    log,
    geocoder: offlineGeocoder(),
    tokens: sessionTokens(secrets.sessionKey, clock),
    cursors: createCursorCodec(secrets.cursorKey, clock),
    outboxCommitted: () => bus.publish(OUTBOX_WAKE, ''),
    mail,
    delivery,
    eventStreams,
    actors: actors?.client,
    registeredDevices: opts.registeredDevices,
    storage,
    audio: toTelephonyAudio,
    downloadKey,
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
    listen() {
      // The gateway refuses bodies over MAX_BODY_BYTES with a JSON 413; this hard limit only stops runaway streams.
      app.listen({ port: config.port, hostname: config.host, maxRequestBodySize: 4 * MAX_BODY_BYTES })
      listening = true
      const port = app.server!.port!
      if (config.baseUrlFollowsPort) config.baseUrl = `http://localhost:${port}`
      return port
    },
    async stop() {
      clearInterval(purge)
      // Open event streams end first, so that stopping the server has no response left to wait for.
      await eventStreams.close()
      if (listening) await app.stop(true)
      stopLeadership.abort()
      await actors?.stop()
      await delivery?.stop()
      await releaseLeadership?.()
      await bus.close()
      await database.close()
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
  actorMessages: ReturnType<typeof durableActorMessages>
  nonceKey: Uint8Array
  log: Logger
}): (request: Request, clientAddress: string | null) => Promise<Response> {
  const addresses = new WeakMap<Request, string | null>()
  const handle = provisioningHandler({
    ...provisioningDirectory({ db: o.db, config: o.config, actorMessages: o.actorMessages }),
    clock: o.clock,
    nonceKey: createHmac('sha256', o.nonceKey).update('provisioning digest nonces').digest(),
    clientAddress: (request) => addresses.get(request) ?? null,
    onError: (err, during) => o.log.error({ err, during }, 'provisioning failed'),
  })
  return (request, clientAddress) => {
    addresses.set(request, clientAddress)
    return handle(request)
  }
}
