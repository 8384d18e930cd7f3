/**
 * Entry point: `npm start` (every role, embedded) or `bun src/main.ts --role gateway`.
 */
import { ConfigError, loadConfig } from './config'
import { DataDirInUse } from './db/embedded-postgres'
import { watchNpmParent } from './npm-parent'
import { startService } from './server'

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig(process.env, process.argv.slice(2))
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(`configuration error: ${e.message}`)
    process.exit(2)
  }
  throw e
}

let service: Awaited<ReturnType<typeof startService>>
try {
  service = await startService(config)
} catch (e) {
  // Another service owns DATA_DIR: a message, not a stack trace.
  if (e instanceof DataDirInUse) {
    console.error(`error: ${e.message}`)
    process.exit(1)
  }
  // Found only once the database is open (a master key that cannot open its secrets, say).
  if (e instanceof ConfigError) {
    console.error(`configuration error: ${e.message}`)
    process.exit(2)
  }
  throw e
}
let port: number
try {
  port = service.listen()
} catch (e) {
  // Nothing answers yet: stop what did start (the embedded PostgreSQL server among it) before saying why.
  await service.stop().catch(() => {})
  if (e instanceof ConfigError) {
    console.error(`configuration error: ${e.message}`)
    process.exit(2)
  }
  throw e
}
const { generated } = service.bootstrap
if (generated.test || generated.live) {
  // Printed once: only the hashes are stored, so this is the only time they can be shown.
  process.stdout.write(
    '\nBootstrap platform keys (shown once; set VOICE_TEST_KEY / VOICE_LIVE_KEY to choose your own):\n' +
      (generated.test ? `  sandbox secret key: ${generated.test}\n` : '') +
      (generated.live ? `  live secret key:    ${generated.live}\n` : '') +
      '\n',
  )
}
service.log.info({ port, database: service.database.kind, roles: config.roles, baseUrl: config.baseUrl }, 'service listening')

let stopping = false
async function stop(why: Record<string, unknown>) {
  if (stopping) return
  stopping = true
  service.log.info(why, 'stopping')
  await service.stop()
  process.exit(0)
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop({ signal }))
watchNpmParent(process.env, (parentWas, parentNow) => stop({ reason: 'npm, which started the service, is gone', parentWas, parentNow }))
