/**
 * A PostgreSQL server that takes TLS, on a loopback port, for tests of how the
 * service connects with `sslmode=require` (what managed PostgreSQL services ask
 * for). Built from the embedded PostgreSQL binaries (src/db/embedded-postgres: the
 * same binaries, the same server user when the tests run as root) and a throwaway
 * self-signed certificate made by `openssl`.
 */
import { spawn, spawnSync } from 'node:child_process'
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { binaries, EmbeddedPostgresUnavailable, runTool, serverUser } from '../../src/db/embedded-postgres'
import { until } from './polling'
import { freePort } from './scratch-postgres'

export interface TlsPostgres {
  /** A DATABASE_URL that requires TLS. */
  url: string
  stop(): Promise<void>
}

/** Why a TLS server cannot be started here, or undefined when it can. */
export async function tlsPostgresUnavailable(): Promise<string | undefined> {
  if (!Bun.which('openssl')) return 'openssl is not installed'
  try {
    await binaries()
    return undefined
  } catch (e) {
    if (e instanceof EmbeddedPostgresUnavailable) return e.message
    throw e
  }
}

/** Whether the server answers a query yet: it takes TCP connections while it is still starting up, and refuses queries then. */
async function answers(url: string): Promise<boolean> {
  const client = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 })
  try {
    await client`select 1`
    return true
  } catch {
    return false
  } finally {
    await client.end({ timeout: 1 })
  }
}

export async function startTlsPostgres(): Promise<TlsPostgres> {
  const bin = await binaries()
  const user = await serverUser()
  const root = mkdtempSync(join(tmpdir(), 'voice-tls-postgres-'))
  const data = join(root, 'data')
  const run = join(root, 'run')
  for (const dir of [data, run]) mkdirSync(dir)
  const key = join(root, 'server.key')
  const cert = join(root, 'server.crt')
  const made = spawnSync('openssl', ['req', '-new', '-x509', '-days', '1', '-nodes', '-subj', '/CN=localhost', '-keyout', key, '-out', cert])
  if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`)
  if (user) for (const path of [root, data, run, key, cert]) chownSync(path, user.uid, user.gid)
  await runTool(bin.initdb, ['-D', data, '--auth=trust', '--username=voice', '--encoding=UTF8', '--locale=C'], user)
  const port = await freePort()
  const server = spawn(
    bin.postgres,
    ['-D', data, '-p', String(port), '-k', run, '-c', 'listen_addresses=127.0.0.1', '-c', 'ssl=on', '-c', `ssl_cert_file=${cert}`, '-c', `ssl_key_file=${key}`],
    { ...user, stdio: 'ignore', env: { ...process.env, LC_ALL: 'C' } },
  )
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()))
  const url = `postgres://voice@127.0.0.1:${port}/postgres?sslmode=require`
  await until('the TLS PostgreSQL server answers', () => answers(url), 20_000)
  return {
    url,
    async stop() {
      server.kill('SIGINT')
      await exited
      rmSync(root, { recursive: true, force: true })
    },
  }
}
