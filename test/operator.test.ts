/**
 * The operator interface of ARCHITECTURE.md, end to end: each test here starts the
 * real server process (`bun src/main.ts`) or the CLI (`bun src/cli.ts`) with
 * the environment an operator would give it, and talks HTTP to it on 127.0.0.1.
 *
 * Data: a PGlite folder of its own (or memory://); when DATABASE_URL is set, a
 * fresh database created on that PostgreSQL server for this file and dropped after.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openDatabase } from '../src/db/client'
import { LOCK_FILE } from '../src/db/data-dir-lock'
import { SERVICE_SETTINGS } from './support/service-process'
import { freshDataDir } from './support/data-dir'
import postgres from 'postgres'
import { callApi, sampleAccount } from './support/service'
import { collectOutput, freePort } from './support/scratch-postgres'

const ROOT = join(import.meta.dir, '..')
const ADMIN = 'operator-test-admin-token-0123456789'
const START_TIMEOUT_MS = 45_000
const SLOW = 60_000

function baseEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !SERVICE_SETTINGS.includes(k)) env[k] = v
  // NATS is only configuration for now; pass it through so the distributed run covers it.
  if (process.env.NATS_URL) env.NATS_URL = process.env.NATS_URL
  return { ...env, HOST: '127.0.0.1', SIP_PORT: '0', LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '0', ...extra }
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')
const randomKey = (mode: 'test' | 'live') => `sk_${mode}_${randomBytes(18).toString('base64url')}`

// ---------------------------------------------------------------- processes

interface Running {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  url: string
  out: { text: string }
  err: { text: string }
}

const running = new Set<Running>()

async function startServer(env: Record<string, string>, args: string[] = []): Promise<Running> {
  const port = await freePort()
  const proc = Bun.spawn([process.execPath, 'src/main.ts', ...args], {
    cwd: ROOT,
    env: baseEnv({ ...env, PORT: String(port) }),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const r: Running = { proc, url: `http://127.0.0.1:${port}`, out: { text: '' }, err: { text: '' } }
  running.add(r)
  collectOutput(proc.stdout, r.out)
  collectOutput(proc.stderr, r.err)
  // Bounded wait for readiness (database migrated, roles up).
  const deadline = Date.now() + START_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode} before it was ready:\n${r.err.text}\n${r.out.text}`)
    const res = await fetch(`${r.url}/readyz`).catch(() => undefined)
    if (res?.status === 200) return r
    await Bun.sleep(100)
  }
  throw new Error(`server not ready within ${START_TIMEOUT_MS} ms:\n${r.err.text}\n${r.out.text}`)
}

async function stopServer(r: Running) {
  if (r.proc.exitCode === null && r.proc.signalCode === null) {
    r.proc.kill('SIGTERM')
    const killed = await Promise.race([r.proc.exited.then(() => true), Bun.sleep(10_000).then(() => false)])
    if (!killed) r.proc.kill('SIGKILL')
  }
  await r.proc.exited
  running.delete(r)
}

/** Runs a command to its end (killed after `limitMs`: a server that should have refused to start). */
async function run(args: string[], env: Record<string, string>, limitMs = 30_000) {
  const proc = Bun.spawn([process.execPath, ...args], { cwd: ROOT, env: baseEnv(env), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const limit = setTimeout(() => proc.kill('SIGKILL'), limitMs)
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    return { code, stdout, stderr }
  } finally {
    clearTimeout(limit)
  }
}

function call(r: Running, method: string, path: string, o: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  return callApi(r.url, method, path, o)
}

const admin = { authorization: `Bearer ${ADMIN}` }

// ---------------------------------------------------------------- data stores

interface Store {
  /** Settings that point a process at this store. */
  env: Record<string, string>
  /** Every api_keys row, read straight from the database (no server may hold an embedded store open). */
  keyRows(): Promise<Record<string, unknown>[]>
  dispose(): Promise<void>
}

const PG_URL = process.env.DATABASE_URL

async function freshStore(memory = false): Promise<Store> {
  if (PG_URL) {
    const name = `voice_operator_${Date.now()}_${randomBytes(3).toString('hex')}`
    const server = postgres(PG_URL, { max: 1, onnotice: () => {} })
    await server.unsafe(`create database "${name}"`)
    const url = new URL(PG_URL)
    url.pathname = `/${name}`
    return {
      env: { DATABASE_URL: url.toString(), DATA_DIR: 'memory://' },
      async keyRows() {
        const db = postgres(url.toString(), { max: 1, onnotice: () => {} })
        try {
          return [...(await db`select * from api_keys`)]
        } finally {
          await db.end()
        }
      },
      async dispose() {
        await server.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {})
        await server.end()
      },
    }
  }
  if (memory) return { env: { DATA_DIR: 'memory://' }, keyRows: async () => [], dispose: async () => {} }
  const { dataDir, dispose } = freshDataDir('operator')
  return {
    env: { DATA_DIR: dataDir },
    async keyRows() {
      // The server is stopped: opening the folder runs its embedded PostgreSQL server for the time of the read.
      const database = await openDatabase({ dataDir })
      try {
        return (await database.db.execute(sql`select * from api_keys`)) as unknown as Record<string, unknown>[]
      } finally {
        await database.close()
      }
    },
    dispose,
  }
}

const stores: Store[] = []
async function store(memory = false) {
  const s = await freshStore(memory)
  stores.push(s)
  return s
}

afterAll(async () => {
  for (const r of [...running]) await stopServer(r).catch(() => r.proc.kill('SIGKILL'))
  for (const s of stores) await s.dispose().catch(() => {})
}, SLOW)

// ---------------------------------------------------------------- tests

describe('generated bootstrap keys, the operator API and the CLI, across a restart', () => {
  let data: Store
  let server: Running
  const keys = { test: '', live: '' }
  let adminPlatform: { id: string; test_key: string; live_key: string }

  beforeAll(async () => {
    data = await store()
    server = await startServer({ ...data.env, VOICE_ADMIN_TOKEN: ADMIN })
  }, SLOW)

  test('GET /healthz and GET /readyz answer 200 once the server is up and migrated', async () => {
    const h = await call(server, 'GET', '/healthz')
    expect(h.status).toBe(200)
    expect(h.body.status).toBe('ok')
    const r = await call(server, 'GET', '/readyz')
    expect(r.status).toBe(200)
    expect(r.body.status).toBe('ready')
  })

  test('with VOICE_TEST_KEY and VOICE_LIVE_KEY unset, both keys are generated and printed once on stdout, and they work', async () => {
    const test = server.out.text.match(/sandbox secret key:\s+(sk_test_\S+)/)
    const live = server.out.text.match(/live secret key:\s+(sk_live_\S+)/)
    expect(test).not.toBeNull()
    expect(live).not.toBeNull()
    keys.test = test![1]!
    keys.live = live![1]!
    expect(server.out.text.split(keys.test)).toHaveLength(2) // exactly once
    expect(server.err.text).not.toContain(keys.test)
    for (const key of [keys.test, keys.live]) {
      const r = await call(server, 'GET', '/v1/accounts', { key })
      expect(r.status).toBe(200)
      expect(r.body.object).toBe('list')
    }
    expect((await call(server, 'GET', '/v1/accounts', { key: randomKey('test') })).status).toBe(401)
  })

  test('without VOICE_LIVE_ENABLED the live key cannot create a live account (403); the sandbox key creates sandbox accounts', async () => {
    const live = await call(server, 'POST', '/v1/accounts', { key: keys.live, body: sampleAccount() })
    expect(live.status).toBe(403)
    expect(live.body.code).toBe('live_mode_disabled')
    const sandbox = await call(server, 'POST', '/v1/accounts', { key: keys.test, body: sampleAccount() })
    expect(sandbox.status).toBe(200)
    expect(sandbox.body.livemode).toBe(false)
  })

  test('/admin with a missing or wrong bearer token is 401', async () => {
    const none = await call(server, 'POST', '/admin/platforms', { body: { name: 'X' } })
    expect(none.status).toBe(401)
    expect(typeof none.body.error).toBe('string')
    const wrong = await call(server, 'POST', '/admin/platforms', { headers: { authorization: `Bearer ${ADMIN}x` }, body: { name: 'X' } })
    expect(wrong.status).toBe(401)
    const platformKey = await call(server, 'POST', '/admin/platforms', { key: keys.test, body: { name: 'X' } })
    expect(platformKey.status).toBe(401)
    // The token is checked before the body: a bad body without it is 401, and says nothing of the schema.
    for (const body of [{}, { name: 'X', extra: 1 }, { name: '' }]) {
      const bad = await call(server, 'POST', '/admin/platforms', { body })
      expect(bad.status).toBe(401)
      expect(JSON.stringify(bad.body)).not.toContain('details')
    }
    expect((await call(server, 'GET', '/admin/dead-letters?limit=0')).status).toBe(401)
  })

  test('POST /admin/platforms answers {id, name, test_key, live_key, live_enabled}, and those keys work', async () => {
    const r = await call(server, 'POST', '/admin/platforms', { headers: admin, body: { name: 'Acme Software' } })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(['id', 'live_enabled', 'live_key', 'name', 'test_key'])
    expect(r.body.name).toBe('Acme Software')
    expect(r.body.live_enabled).toBe(false)
    expect(r.body.test_key).toMatch(/^sk_test_/)
    expect(r.body.live_key).toMatch(/^sk_live_/)
    adminPlatform = r.body
    const list = await call(server, 'GET', '/v1/accounts', { key: r.body.test_key })
    expect(list.status).toBe(200)
    expect(list.body.data).toEqual([]) // a platform of its own: the bootstrap platform's account is not visible
    const created = await call(server, 'POST', '/v1/accounts', { key: r.body.test_key, body: sampleAccount() })
    expect(created.status).toBe(200)
    expect((await call(server, 'GET', '/v1/accounts', { key: r.body.live_key })).status).toBe(200)

    const enabled = await call(server, 'POST', '/admin/platforms', { headers: admin, body: { name: 'Live Co', live_enabled: true } })
    expect(enabled.status).toBe(200)
    expect(enabled.body.live_enabled).toBe(true)
    const live = await call(server, 'POST', '/v1/accounts', { key: enabled.body.live_key, body: sampleAccount() })
    expect(live.status).toBe(200)
    expect(live.body.livemode).toBe(true)

    const bad = await call(server, 'POST', '/admin/platforms', { headers: admin, body: { name: '' } })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('validation_error')
  })

  test('POST /admin/platforms/{id} updates name and live_enabled', async () => {
    const before = await call(server, 'POST', '/v1/accounts', { key: adminPlatform.live_key, body: sampleAccount() })
    expect(before.status).toBe(403)
    const r = await call(server, 'POST', `/admin/platforms/${adminPlatform.id}`, { headers: admin, body: { name: 'Acme Renamed', live_enabled: true } })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ id: adminPlatform.id, name: 'Acme Renamed', live_enabled: true })
    const after = await call(server, 'POST', '/v1/accounts', { key: adminPlatform.live_key, body: sampleAccount() })
    expect(after.status).toBe(200)
    expect(after.body.livemode).toBe(true)

    const nameOnly = await call(server, 'POST', `/admin/platforms/${adminPlatform.id}`, { headers: admin, body: { name: 'Acme Again' } })
    expect(nameOnly.body).toEqual({ id: adminPlatform.id, name: 'Acme Again', live_enabled: true })
    const off = await call(server, 'POST', `/admin/platforms/${adminPlatform.id}`, { headers: admin, body: { live_enabled: false } })
    expect(off.body).toEqual({ id: adminPlatform.id, name: 'Acme Again', live_enabled: false })
    const refused = await call(server, 'POST', '/v1/accounts', { key: adminPlatform.live_key, body: sampleAccount() })
    expect(refused.status).toBe(403)

    const missing = await call(server, 'POST', '/admin/platforms/plat_missing', { headers: admin, body: { name: 'Nobody' } })
    expect(missing.status).toBe(404)
    const unknownField = await call(server, 'POST', `/admin/platforms/${adminPlatform.id}`, { headers: admin, body: { nam: 'typo' } })
    expect(unknownField.status).toBe(400)
  })

  test(
    'the CLI creates a platform on the stopped server’s data; keys are stored only as hashes; after a restart nothing is printed and every key works',
    async () => {
      await stopServer(server)

      const cli = await run(['src/cli.ts', 'platform', 'create', '--name', 'CLI Platform'], data.env)
      expect(cli.stderr).not.toContain('Error')
      expect(cli.code).toBe(0)
      const made = JSON.parse(cli.stdout)
      expect(Object.keys(made).sort()).toEqual(['id', 'live_enabled', 'live_key', 'name', 'test_key'])
      expect(made.name).toBe('CLI Platform')
      expect(made.live_enabled).toBe(false)
      expect(made.test_key).toMatch(/^sk_test_/)
      expect(made.live_key).toMatch(/^sk_live_/)

      const updated = await run(['src/cli.ts', 'platform', 'update', made.id, '--live-enabled', 'true'], data.env)
      expect(updated.code).toBe(0)
      expect(JSON.parse(updated.stdout)).toEqual({ id: made.id, name: 'CLI Platform', live_enabled: true })

      const usage = await run(['src/cli.ts', 'platform', 'create'], data.env)
      expect(usage.code).not.toBe(0)
      expect(usage.stderr).toContain('--name')

      // Secret keys at rest: hashes only.
      const plaintext = [keys.test, keys.live, adminPlatform.test_key, adminPlatform.live_key, made.test_key, made.live_key]
      const rows = await data.keyRows()
      expect(rows.length).toBeGreaterThanOrEqual(plaintext.length)
      const dump = JSON.stringify(rows)
      for (const key of plaintext) {
        expect(dump).not.toContain(key)
        expect(dump).not.toContain(key.slice('sk_test_'.length))
        expect(rows.some((row) => row.key_hash === sha256(key))).toBe(true)
      }

      server = await startServer({ ...data.env, VOICE_ADMIN_TOKEN: ADMIN })
      expect(server.out.text).not.toContain('sk_test_')
      expect(server.out.text).not.toContain('sk_live_')
      expect(server.out.text).not.toMatch(/secret key/i)
      for (const key of plaintext) {
        const r = await call(server, 'GET', '/v1/accounts', { key })
        expect(r.status).toBe(200)
      }
      const sandboxAccounts = await call(server, 'GET', '/v1/accounts', { key: keys.test })
      expect(sandboxAccounts.body.data).toHaveLength(1) // made before the restart, still there
      const live = await call(server, 'POST', '/v1/accounts', { key: made.live_key, body: sampleAccount() })
      expect(live.status).toBe(200)
      expect(live.body.livemode).toBe(true)
    },
    SLOW,
  )
})

describe('keys and live mode from the environment, /admin off', () => {
  let server: Running
  const testKey = randomKey('test')
  const liveKey = randomKey('live')

  beforeAll(async () => {
    const data = await store(true)
    server = await startServer({ ...data.env, VOICE_TEST_KEY: testKey, VOICE_LIVE_KEY: liveKey, VOICE_LIVE_ENABLED: '1' })
  }, SLOW)

  test('VOICE_TEST_KEY and VOICE_LIVE_KEY are exactly the keys that work, and no key is printed', async () => {
    for (const key of [testKey, liveKey]) {
      const r = await call(server, 'GET', '/v1/accounts', { key })
      expect(r.status).toBe(200)
    }
    expect(server.out.text).not.toContain('sk_test_')
    expect(server.out.text).not.toContain('sk_live_')
    expect(server.err.text).not.toContain('sk_test_')
    expect(server.err.text).not.toContain('sk_live_')
    expect((await call(server, 'GET', '/v1/accounts', { key: `${testKey}x` })).status).toBe(401)
  })

  test('VOICE_LIVE_ENABLED=1 lets the live key create a live account', async () => {
    const r = await call(server, 'POST', '/v1/accounts', { key: liveKey, body: sampleAccount() })
    expect(r.status).toBe(200)
    expect(r.body.livemode).toBe(true)
    const sandbox = await call(server, 'POST', '/v1/accounts', { key: testKey, body: sampleAccount() })
    expect(sandbox.body.livemode).toBe(false)
  })

  test('without VOICE_ADMIN_TOKEN, /admin does not exist (404), whatever the token', async () => {
    for (const headers of [{}, admin]) {
      const r = await call(server, 'POST', '/admin/platforms', { headers, body: { name: 'X' } })
      expect(r.status).toBe(404)
      expect(typeof r.body.error).toBe('string')
    }
    expect((await call(server, 'POST', '/admin/platforms/plat_x', { headers: admin, body: { name: 'X' } })).status).toBe(404)
    // Off means off: a bad body is not validated either.
    expect((await call(server, 'POST', '/admin/platforms', { headers: admin, body: { nope: true } })).status).toBe(404)
  })
})

describe('bad configuration stops the process with a readable message', () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['PORT=abc', { PORT: 'abc' }, /PORT must be an integer.*"abc"/],
    ['a VOICE_TEST_KEY without the sk_test_ prefix', { VOICE_TEST_KEY: 'not-a-key-0123456789abcdef' }, /VOICE_TEST_KEY must start with sk_test_/],
    ['DATABASE_URL that is not postgres', { DATABASE_URL: 'mysql://user:secret@127.0.0.1/db' }, /DATABASE_URL must use postgres:/],
    ['VOICE_LIVE_ENABLED=yes', { VOICE_LIVE_ENABLED: 'yes' }, /VOICE_LIVE_ENABLED must be 1 or 0/],
    ['a short VOICE_ADMIN_TOKEN', { VOICE_ADMIN_TOKEN: 'short' }, /VOICE_ADMIN_TOKEN must be at least 16 characters/],
    ['SIP_HOST that is not an address', { SIP_HOST: 'pbx.example.com' }, /SIP_HOST must be an IPv4 or IPv6 address/],
  ]
  for (const [name, env, message] of cases) {
    test(name, async () => {
      const r = await run(['src/main.ts'], { DATA_DIR: 'memory://', PORT: '0', ...env }, 15_000)
      expect(r.code).not.toBe(0)
      expect(r.stderr).toMatch(/^configuration error: /m)
      expect(r.stderr).toMatch(message)
      expect(r.stderr).not.toMatch(/^\s+at /m) // a message, not a stack trace
      expect(r.stderr).not.toContain(':secret@') // a URL's password is not echoed
    })
  }

  // Another program holds the port: the start stops with the setting to change, and
  // leaves nothing running behind it (before, a stack trace, and the embedded
  // PostgreSQL server it had started kept running).
  for (const setting of ['PORT', 'SIP_PORT'] as const) {
    test(
      `${setting} taken by another program`,
      async () => {
        const port = await freePort()
        const holder =
          setting === 'PORT' ? Bun.listen({ hostname: '127.0.0.1', port, socket: { data() {} } }) : await Bun.udpSocket({ hostname: '127.0.0.1', port })
        const release = () => ('stop' in holder ? holder.stop(true) : holder.close())
        const d = freshDataDir('port-taken')
        try {
          const ports: Record<string, string> = setting === 'PORT' ? { PORT: String(port) } : { PORT: String(await freePort()), SIP_PORT: String(port) }
          const r = await run(['src/main.ts'], { DATA_DIR: d.dataDir, ...ports }, 60_000)
          expect(r.code).toBe(2)
          expect(r.stderr).toContain(`configuration error: ${setting} ${port} on 127.0.0.1 is in use by another program`)
          expect(r.stderr).not.toMatch(/^\s+at /m)
          // Its embedded server stopped with it, and DATA_DIR is free again.
          expect(existsSync(join(d.dataDir, 'postgres', 'postmaster.pid'))).toBe(false)
          expect(existsSync(join(d.dataDir, LOCK_FILE))).toBe(false)
        } finally {
          release()
          await d.dispose()
        }
      },
      SLOW,
    )
  }

  test('--role with an unknown role', async () => {
    const r = await run(['src/main.ts', '--role', 'janitor'], { DATA_DIR: 'memory://', PORT: '0' }, 15_000)
    expect(r.code).not.toBe(0)
    expect(r.stderr).toMatch(/--role must be one of gateway, worker, delivery, media or all, got "janitor"/)
  })
})
