/**
 * Composes a running service from a Config: database (migrated), secrets,
 * bootstrap platform, and the roles of this process. main.ts and the tests both
 * start the service through here.
 */
import { systemClock, type Clock } from './clock'
import type { Config } from './config'
import { openDatabase, type Database } from './db/client'
import { createLogger, type Logger } from './logger'
import { createCursorCodec } from './pagination'
import { offlineGeocoder } from './services/geocoding'
import { purgeExpiredIdempotencyKeys } from './services/idempotency'
import { ensureBootstrapPlatform } from './services/platforms'
import { loadSecrets } from './services/secrets'
import { sessionTokens } from './services/sessions'
import { createApp, type App } from '../gateway/app'
import { MAX_BODY_BYTES } from '../gateway/plugins/request-context'

export interface Service {
  app: App
  database: Database
  config: Config
  clock: Clock
  log: Logger
  bootstrap: { platformId: string; generated: { test?: string; live?: string } }
  /** Serves HTTP on config.port (0 picks a free port); returns the bound port. */
  listen(): number
  stop(): Promise<void>
}

export async function startService(config: Config, opts: { clock?: Clock; log?: Logger } = {}): Promise<Service> {
  const log = opts.log ?? createLogger(config.logLevel)
  const clock = opts.clock ?? systemClock(config.clockSpeed)
  let ready = false
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  await database.migrate()
  const secrets = await loadSecrets(database.db)
  const bootstrap = await ensureBootstrapPlatform(database.db, clock, {
    testKey: config.testKey,
    liveKey: config.liveKey,
    liveEnabled: config.liveEnabled,
  })
  const app = createApp({
    db: database.db,
    database,
    clock,
    config,
    log,
    geocoder: offlineGeocoder(),
    tokens: sessionTokens(secrets.sessionKey, clock),
    cursors: createCursorCodec(secrets.cursorKey, clock),
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
  ready = true

  let listening = false
  return {
    app,
    database,
    config,
    clock,
    log,
    bootstrap,
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
      if (listening) await app.stop(true)
      await database.close()
    },
  }
}
