/**
 * The container's command (the Dockerfile's CMD, compose's `command`) starts the
 * service so that `docker stop` stops it in order: the SIGTERM sent to the
 * container's first process reaches the service itself, which drains, stops its
 * embedded PostgreSQL server and gives DATA_DIR up. Through `npm start` it did not:
 * npm passes the signal to the shell it runs scripts in, which dies without passing
 * it on, so npm exited, the service kept running, and the end of the container would
 * have killed it mid-work.
 *
 * The command runs here as the image runs it, from the repository (the image's
 * WORKDIR holds the repository), on a fresh DATA_DIR with the embedded default.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { LOCK_FILE } from '../src/db/data-dir-lock'
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

const dirs: DataDir[] = []
const leftRunning: number[] = []
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
afterAll(async () => {
  // A service the signal did not reach (the failure this file is about): gone before its folder's server is stopped.
  for (const pid of leftRunning) {
    if (alive(pid)) process.kill(pid, 'SIGKILL')
    for (let i = 0; i < 100 && alive(pid); i++) await Bun.sleep(50)
  }
  for (const d of dirs) await d.dispose().catch(() => {})
}, SLOW)

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
      const d = freshDataDir('container-stop')
      dirs.push(d)
      // The image's paths are the repository's here.
      const command = imageCommand!.map((part) => (part.startsWith(`${workdir}/`) ? join(ROOT, part.slice(workdir!.length + 1)) : part))
      const service = await startServiceProcess({ DATA_DIR: d.dataDir, VOICE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'info' }, [], 90_000, command)
      expect(existsSync(join(d.dataDir, 'postgres', 'postmaster.pid'))).toBe(true)
      const holder = Number(readFileSync(join(d.dataDir, LOCK_FILE), 'utf8').split('\n')[0])
      if (holder !== service.proc.pid) leftRunning.push(holder)

      service.proc.kill('SIGTERM')
      const timer = setTimeout(() => service.proc.kill('SIGKILL'), 60_000)
      const code = await service.proc.exited
      clearTimeout(timer)

      expect(code).toBe(0)
      expect(service.log.text).toContain('"signal":"SIGTERM"')
      // The service is gone, and took its server with it.
      expect(existsSync(join(d.dataDir, LOCK_FILE))).toBe(false)
      expect(existsSync(join(d.dataDir, 'postgres', 'postmaster.pid'))).toBe(false)
    },
    SLOW,
  )
})
