/**
 * How the service is stopped from outside, as operators and their tools do it: a
 * SIGTERM to the process they started. It must reach the service, which then stops
 * in order (drains, stops its embedded PostgreSQL server, gives DATA_DIR up). npm
 * passes a SIGTERM to the shell it runs scripts in, which dies without passing it on.
 *
 * - The container's command (the Dockerfile's CMD, compose's `command`) runs the
 *   service without npm. Through `npm start`, `docker stop` left the service running
 *   until the end of the container killed it mid-work. Run here as the image runs it,
 *   from the repository (the image's WORKDIR holds the repository).
 * - `npm start` itself: the service notices that npm's shell is gone
 *   (src/npm-parent.ts) and stops. Before, `kill %1` on a background `npm start`
 *   exited npm and left the service holding its port and DATA_DIR.
 *
 * Each run is on a fresh DATA_DIR with the embedded default.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { LOCK_FILE } from '../src/db/data-dir-lock'
import { processAlive } from '../src/db/embedded-postgres'
import { type DataDir, freshDataDir } from './support/data-dir'
import { ADMIN_TOKEN } from './support/service'
import { startServiceProcess } from './support/service-process'

const ROOT = join(import.meta.dir, '..')
const SLOW = 120_000

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
const compose = readFileSync(join(ROOT, 'compose.yaml'), 'utf8')
const workdir = /^WORKDIR\s+(\S+)\s*$/m.exec(dockerfile)?.[1]
/** The image's command, in exec form (a shell form would put a shell in between again). */
const imageCommand = JSON.parse(/^CMD\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1] ?? 'null') as string[] | null
/** compose's command for the service (the one that runs src/main.ts, not NATS's). */
const composeCommand = [...compose.matchAll(/^\s+command:\s+(\[.*\])\s*$/gm)].map((m) => JSON.parse(m[1]!) as string[]).find((c) => c.includes('src/main.ts'))
const npm = Bun.which('npm')

const dirs: DataDir[] = []
const services: number[] = []
afterAll(async () => {
  // A service the signal did not reach (the failure this file is about): gone before its folder's server is stopped.
  for (const pid of services) {
    if (processAlive(pid)) process.kill(pid, 'SIGKILL')
    for (let i = 0; i < 100 && processAlive(pid); i++) await Bun.sleep(50)
  }
  for (const d of dirs) await d.dispose().catch(() => {})
}, SLOW)

/**
 * Starts `command` on a fresh DATA_DIR, sends SIGTERM to the process it started, and
 * answers once the service has given DATA_DIR up (or after 30 s): that process's exit
 * code, the output, and whether the service and its server are still there.
 */
async function startAndTerminate(command: string[]) {
  const d = freshDataDir('stopping')
  dirs.push(d)
  const started = await startServiceProcess({ DATA_DIR: d.dataDir, VOICE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'info' }, [], 90_000, command)
  const lock = join(d.dataDir, LOCK_FILE)
  const postmaster = join(d.dataDir, 'postgres', 'postmaster.pid')
  expect(existsSync(postmaster)).toBe(true)
  services.push(Number(readFileSync(lock, 'utf8').split('\n')[0]))

  started.proc.kill('SIGTERM')
  const timer = setTimeout(() => started.proc.kill('SIGKILL'), 60_000)
  const code = await started.proc.exited
  clearTimeout(timer)
  for (let i = 0; i < 300 && existsSync(lock); i++) await Bun.sleep(100)
  return { code, log: started.log.text, serviceLeft: existsSync(lock), serverLeft: existsSync(postmaster) }
}

describe('the container command', () => {
  test('the image runs the service in exec form, and compose runs the same command', () => {
    expect(workdir).toBeDefined()
    expect(imageCommand).not.toBeNull()
    expect(imageCommand).toContain('src/main.ts')
    expect(composeCommand).toEqual(imageCommand!)
  })

  test(
    'SIGTERM to the process it starts (what docker stop sends) stops the service in order: exit 0, its PostgreSQL server stopped, DATA_DIR given up',
    async () => {
      // The image's paths are the repository's here.
      const command = imageCommand!.map((part) => (part.startsWith(`${workdir}/`) ? join(ROOT, part.slice(workdir!.length + 1)) : part))
      const r = await startAndTerminate(command)
      expect(r.code).toBe(0)
      expect(r.log).toContain('"signal":"SIGTERM"')
      expect(r.serviceLeft).toBe(false)
      expect(r.serverLeft).toBe(false)
    },
    SLOW,
  )
})

describe('npm start', () => {
  test.skipIf(!npm)(
    'SIGTERM to npm stops the service too: it sees that npm is gone and stops in order, its PostgreSQL server with it',
    async () => {
      const r = await startAndTerminate([npm!, 'start', '--silent'])
      expect(r.log).toContain('npm, which started the service, is gone')
      expect(r.serviceLeft).toBe(false)
      expect(r.serverLeft).toBe(false)
    },
    SLOW,
  )
})
