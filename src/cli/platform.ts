/**
 * Operator commands straight against the configured database (DATA_DIR or
 * DATABASE_URL), the same operations as POST /admin/platforms:
 *
 *   cli platform create --name "Acme" [--live-enabled]
 *   cli platform update <platform_id> [--name "New"] [--live-enabled true|false]
 */
import { systemClock } from '../clock'
import { ConfigError, loadConfig } from '../config'
import { openDatabase } from '../db/client'
import { ApiError } from '../errors'
import { createPlatform, updatePlatform } from '../services/platform/platforms'
import { UsageError } from './args'
import type { Command, CommandContext } from './command'

const CREATE_USAGE = 'cli platform create --name <name> [--live-enabled]'
const UPDATE_USAGE = 'cli platform update <platform_id> [--name <name>] [--live-enabled true|false]'
const DATABASE_NOTE = [
  'Works straight against the configured database (DATA_DIR or DATABASE_URL, as the service reads them):',
  "beside a running service it uses that service's embedded PostgreSQL server; with the service stopped it",
  'runs the server itself for the time of the command. Prints the platform as JSON.',
].join('\n')

function option(args: string[], name: string, usage: string): string | undefined {
  const i = args.indexOf(name)
  if (i === -1) return undefined
  const v = args[i + 1]
  if (v === undefined || v.startsWith('--')) throw new UsageError(`${name} needs a value`, usage)
  return v
}

function liveFlag(args: string[], allowBare: boolean, usage: string): boolean | undefined {
  const i = args.indexOf('--live-enabled')
  if (i === -1) return undefined
  const v = args[i + 1]
  if (v === 'true' || v === '1') return true
  if (v === 'false' || v === '0') return false
  if (allowBare) return true
  throw new UsageError('--live-enabled needs true or false', usage)
}

/** Refuses options these commands do not know (values of known ones are skipped). */
function checkOptions(args: string[], usage: string) {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (!a.startsWith('--')) continue
    if (a !== '--name' && a !== '--live-enabled') throw new UsageError(`unknown option ${a}`, usage)
    if (a === '--name' || ['true', 'false', '1', '0'].includes(args[i + 1] ?? '')) i++
  }
}

async function withDatabase<T>(ctx: CommandContext, fn: (db: Awaited<ReturnType<typeof openDatabase>>['db']) => Promise<T>): Promise<number> {
  try {
    const config = loadConfig(ctx.env)
    // Beside a running service, the CLI uses that service's embedded server.
    const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, embedded: config.embeddedDatabase, attach: true })
    try {
      await database.migrate()
      ctx.out(`${JSON.stringify(await fn(database.db), null, 2)}\n`)
      return 0
    } finally {
      await database.close()
    }
  } catch (e) {
    if (e instanceof ConfigError || e instanceof ApiError) {
      ctx.err(`${e.message}\n`)
      return 1
    }
    throw e
  }
}

export const platformCreateCommand: Command = {
  name: 'platform create',
  summary: 'create a platform (operator; straight against the database)',
  usage: CREATE_USAGE,
  description: `Creates a platform and prints it with its two secret keys, shown this once.\n${DATABASE_NOTE}`,
  options: [
    { name: 'name', kind: 'string', value: '<name>', description: 'the platform name, 1 to 200 characters (required)' },
    { name: 'live-enabled', kind: 'flag', description: 'allow live mode (live accounts) from the start' },
  ],
  examples: ['npm run cli -- platform create --name "Acme Software"'],
  ownParsing: true,
  async run(_a, ctx, rest = []) {
    checkOptions(rest, CREATE_USAGE)
    const name = option(rest, '--name', CREATE_USAGE)
    if (!name || name.length > 200) throw new UsageError('--name is required (1 to 200 characters)', CREATE_USAGE)
    const live = liveFlag(rest, true, CREATE_USAGE) ?? false
    return withDatabase(ctx, (db) => createPlatform(db, systemClock(), { name, live_enabled: live }))
  },
}

export const platformUpdateCommand: Command = {
  name: 'platform update',
  summary: 'rename a platform or switch its live mode (operator; straight against the database)',
  usage: UPDATE_USAGE,
  description: `Updates a platform's name and/or live mode and prints {id, name, live_enabled}.\n${DATABASE_NOTE}`,
  options: [
    { name: 'name', kind: 'string', value: '<name>', description: 'the new name, 1 to 200 characters' },
    { name: 'live-enabled', kind: 'string', value: 'true|false', description: 'allow or stop live mode' },
  ],
  examples: ['npm run cli -- platform update plat_… --live-enabled true'],
  ownParsing: true,
  async run(_a, ctx, rest = []) {
    const id = rest[0]
    if (!id || id.startsWith('--')) throw new UsageError('platform update needs the platform id', UPDATE_USAGE)
    checkOptions(rest.slice(1), UPDATE_USAGE)
    const name = option(rest, '--name', UPDATE_USAGE)
    if (name !== undefined && (name.length === 0 || name.length > 200)) throw new UsageError('--name must be 1 to 200 characters', UPDATE_USAGE)
    const live = liveFlag(rest, false, UPDATE_USAGE)
    return withDatabase(ctx, (db) => updatePlatform(db, systemClock(), id, { name, live_enabled: live }))
  },
}
