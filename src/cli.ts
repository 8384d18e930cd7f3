/**
 * Operator CLI over the same operations as the /admin API, straight against the
 * configured database (DATA_DIR or DATABASE_URL):
 *
 *   npm run cli -- platform create --name "Acme" [--live-enabled]
 *   npm run cli -- platform update <platform_id> [--name "New"] [--live-enabled true|false]
 */
import { systemClock } from './clock'
import { ConfigError, loadConfig } from './config'
import { openDatabase } from './db/client'
import { ApiError } from './errors'
import { createPlatform, updatePlatform } from './services/platform/platforms'

const USAGE = `usage:
  cli platform create --name <name> [--live-enabled]
  cli platform update <platform_id> [--name <name>] [--live-enabled true|false]`

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name)
  if (i === -1) return undefined
  const v = args[i + 1]
  if (v === undefined || v.startsWith('--')) throw new UsageError(`${name} needs a value`)
  return v
}

class UsageError extends Error {}

function liveFlag(args: string[], allowBare: boolean): boolean | undefined {
  const i = args.indexOf('--live-enabled')
  if (i === -1) return undefined
  const v = args[i + 1]
  if (v === 'true' || v === '1') return true
  if (v === 'false' || v === '0') return false
  if (allowBare) return true
  throw new UsageError('--live-enabled needs true or false')
}

export async function runCli(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const [noun, verb, ...rest] = argv
  try {
    if (noun !== 'platform' || (verb !== 'create' && verb !== 'update')) throw new UsageError('unknown command')
    const config = loadConfig(env)
    // Beside a running service, the CLI uses that service's embedded server.
    const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, embedded: config.embeddedDatabase, attach: true })
    try {
      await database.migrate()
      const clock = systemClock()
      let out: unknown
      if (verb === 'create') {
        const name = option(rest, '--name')
        if (!name || name.length > 200) throw new UsageError('--name is required (1 to 200 characters)')
        out = await createPlatform(database.db, clock, { name, live_enabled: liveFlag(rest, true) ?? false })
      } else {
        const id = rest[0]
        if (!id || id.startsWith('--')) throw new UsageError('platform update needs the platform id')
        const name = option(rest, '--name')
        if (name !== undefined && (name.length === 0 || name.length > 200)) throw new UsageError('--name must be 1 to 200 characters')
        out = await updatePlatform(database.db, clock, id, { name, live_enabled: liveFlag(rest, false) })
      }
      process.stdout.write(`${JSON.stringify(out, null, 2)}\n`)
      return 0
    } finally {
      await database.close()
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`${e.message}\n${USAGE}\n`)
      return 2
    }
    if (e instanceof ConfigError || e instanceof ApiError) {
      process.stderr.write(`${e.message}\n`)
      return 1
    }
    throw e
  }
}

if (import.meta.main) process.exit(await runCli(process.argv.slice(2)))
