/**
 * DATA_DIR belongs to the process that opened it (src/db/data-dir-lock.ts): a second
 * service on the same folder exits at once, non-zero, with a message naming the folder
 * and the holder's pid, and the first keeps serving with nothing lost. The lock dies
 * with its process: after a SIGKILL of the holder the next start takes it over.
 *
 * Real processes (`bun src/main.ts`) on a fresh DATA_DIR, with the embedded PostgreSQL
 * server and with PGlite (EMBEDDED_DATABASE=pglite, where a second process would have
 * written to a copy of the data). Unit checks of the lock run in this process.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DataDirInUse, LOCK_FILE, lockDataDir } from '../src/db/data-dir-lock'
import { freshDataDir, type DataDir } from './support/data-dir'
import { collectOutput, freePort } from './support/scratch-postgres'
import { ADMIN_TOKEN, sampleAccount } from './support/service'
import { SERVICE_SETTINGS, startServiceProcess, type ServiceProcess } from './support/service-process'

const SLOW = 120_000
const ROOT = join(import.meta.dir, '..')

const dirs: DataDir[] = []
const procs: ServiceProcess[] = []
afterAll(async () => {
  for (const p of procs) await p.kill().catch(() => {})
  for (const d of dirs) await d.dispose().catch(() => {})
}, SLOW)

function dataDir(label: string) {
  const d = freshDataDir(label)
  dirs.push(d)
  return d.dataDir
}

async function start(settings: Record<string, string>) {
  const p = await startServiceProcess({ VOICE_ADMIN_TOKEN: ADMIN_TOKEN, ...settings }, [], 90_000)
  procs.push(p)
  return p
}

/** `bun src/main.ts` run to its end (it is expected to fail at once); its exit code and output. */
async function runToExit(settings: Record<string, string>, timeoutMs = 60_000) {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !SERVICE_SETTINGS.includes(k)) env[k] = v
  Object.assign(env, { HOST: '127.0.0.1', SIP_PORT: '0', LOG_LEVEL: 'warn', VOICE_ADMIN_TOKEN: ADMIN_TOKEN, ...settings, PORT: String(await freePort()) })
  const started = Date.now()
  const proc = Bun.spawn([process.execPath, 'src/main.ts'], { cwd: ROOT, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const out = { text: '' }
  const err = { text: '' }
  collectOutput(proc.stdout, out)
  collectOutput(proc.stderr, err)
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  const code = await proc.exited
  clearTimeout(timer)
  await Bun.sleep(50) // the last of the output
  return { code, stdout: out.text, stderr: err.text, ms: Date.now() - started }
}

/** Writes through the service: a platform and an account in it; returns the platform's key. */
async function write(p: ServiceProcess, name: string) {
  const platform = await p.call('POST', '/admin/platforms', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { name } })
  expect(platform.status).toBe(200)
  const key = platform.body.test_key as string
  const account = await p.call('POST', '/v1/accounts', { key, body: sampleAccount({ name }) })
  expect(account.status).toBe(200)
  return key
}

async function accountNames(p: ServiceProcess, key: string) {
  const r = await p.call('GET', '/v1/accounts', { key })
  expect(r.status).toBe(200)
  return (r.body.data as { name: string }[]).map((a) => a.name)
}

for (const engine of ['postgres', 'pglite'] as const) {
  describe(`two processes on one DATA_DIR (embedded ${engine})`, () => {
    test(
      'the second exits at once naming the folder and the holder’s pid; the first keeps serving, nothing lost; after a SIGKILL of the holder a new start takes the folder over',
      async () => {
        const dir = dataDir(`lock-${engine}`)
        const settings = { DATA_DIR: dir, EMBEDDED_DATABASE: engine }
        const first = await start(settings)
        const before = await write(first, 'Before')
        expect(readFileSync(join(dir, LOCK_FILE), 'utf8').split('\n')[0]).toBe(String(first.proc.pid))

        const second = await runToExit(settings)
        expect(second.code).not.toBe(0)
        expect(second.stderr).toContain(dir)
        expect(second.stderr).toContain(`pid ${first.proc.pid}`)
        expect(second.stderr).toContain('in use')
        expect(second.stdout).not.toContain('secret key') // it never got as far as the bootstrap
        // The lock is still the first's.
        expect(readFileSync(join(dir, LOCK_FILE), 'utf8').split('\n')[0]).toBe(String(first.proc.pid))

        // The first still serves, reads what it wrote, and writes more.
        expect(await accountNames(first, before)).toEqual(['Before'])
        const after = await write(first, 'After')
        expect(await accountNames(first, after)).toEqual(['After'])

        // The holder dies without a word: its lock is stale, and the next start takes it over.
        await first.kill()
        expect(existsSync(join(dir, LOCK_FILE))).toBe(true)
        const third = await start(settings)
        expect(readFileSync(join(dir, LOCK_FILE), 'utf8').split('\n')[0]).toBe(String(third.proc.pid))
        expect(await accountNames(third, before)).toEqual(['Before'])
        expect(await accountNames(third, after)).toEqual(['After'])
        // A clean stop gives the folder up.
        third.proc.kill('SIGTERM')
        expect(await third.proc.exited).toBe(0)
        expect(existsSync(join(dir, LOCK_FILE))).toBe(false)
      },
      SLOW,
    )
  })
}

describe('the CLI beside a running service on PGlite', () => {
  test(
    'platform create fails at once naming the holder, instead of writing to a copy the service never sees',
    async () => {
      const dir = dataDir('lock-cli')
      const settings = { DATA_DIR: dir, EMBEDDED_DATABASE: 'pglite' }
      const server = await start(settings)
      const env: Record<string, string> = {}
      for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !SERVICE_SETTINGS.includes(k)) env[k] = v
      Object.assign(env, { LOG_LEVEL: 'warn', ...settings })
      const cli = Bun.spawn([process.execPath, 'src/cli.ts', 'platform', 'create', '--name', 'Beside'], {
        cwd: ROOT,
        env,
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const timer = setTimeout(() => cli.kill('SIGKILL'), 60_000)
      const [code, stdout, stderr] = await Promise.all([cli.exited, new Response(cli.stdout).text(), new Response(cli.stderr).text()])
      clearTimeout(timer)
      expect(code).not.toBe(0)
      expect(`${stdout}${stderr}`).toContain('in use')
      expect(`${stdout}${stderr}`).toContain(`pid ${server.proc.pid}`)
      // The service still holds the folder and serves.
      expect(readFileSync(join(dir, LOCK_FILE), 'utf8').split('\n')[0]).toBe(String(server.proc.pid))
      await write(server, 'Still here')
    },
    SLOW,
  )
})

describe('the lock itself', () => {
  test('a live holder is refused; a dead or reused pid is taken over; releases are counted within a process', async () => {
    const dir = dataDir('lock-unit')
    const file = join(dir, LOCK_FILE)
    const a = await lockDataDir(dir)
    expect(a).toBeDefined()
    // A second holder in this process (a second service in one test process) shares it.
    const b = await lockDataDir(dir)
    b!.release()
    expect(existsSync(file)).toBe(true)
    a!.release()
    expect(existsSync(file)).toBe(false)

    // Held by another live process: refused with the folder and its pid.
    const sleeper = Bun.spawn(['sleep', '30'])
    try {
      writeFileSync(file, `${sleeper.pid}\n\n`)
      const refused = await lockDataDir(dir).catch((e) => e)
      expect(refused).toBeInstanceOf(DataDirInUse)
      expect(refused.message).toContain(dir)
      expect(refused.message).toContain(`pid ${sleeper.pid}`)
      // The same pid recorded with another start time: the pid was reused, the lock is stale.
      if (existsSync(`/proc/${sleeper.pid}/stat`)) {
        writeFileSync(file, `${sleeper.pid}\n1\n`)
        const taken = await lockDataDir(dir)
        expect(readFileSync(file, 'utf8').split('\n')[0]).toBe(String(process.pid))
        taken!.release()
      }
    } finally {
      sleeper.kill()
      await sleeper.exited
    }
    // Its process is gone: stale, taken over.
    writeFileSync(file, `${sleeper.pid}\n\n`)
    const over = await lockDataDir(dir)
    expect(readFileSync(file, 'utf8').split('\n')[0]).toBe(String(process.pid))
    over!.release()
    expect(await lockDataDir('memory://')).toBeUndefined()
  })

  test('many takers of a stale lock at once: exactly one gets it', async () => {
    const dir = dataDir('lock-race')
    const file = join(dir, LOCK_FILE)
    mkdirSync(dir, { recursive: true })
    writeFileSync(file, '999999999\n\n') // no such process
    const script = `
      const { lockDataDir } = await import(${JSON.stringify(join(ROOT, 'src/db/data-dir-lock.ts'))})
      try { await lockDataDir(${JSON.stringify(dir)}); console.log('held'); await Bun.sleep(1500) } catch (e) { console.log('refused') }
    `
    const procs = Array.from({ length: 6 }, () => Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'inherit' }))
    const answers = await Promise.all(procs.map(async (p) => (await new Response(p.stdout).text()).trim()))
    expect(answers.filter((a) => a === 'held')).toHaveLength(1)
    expect(answers.filter((a) => a === 'refused')).toHaveLength(5)
  }, 30_000)
})
