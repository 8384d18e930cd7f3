/**
 * The real service as a separate process (`bun src/main.ts`), and the HTTP calls a
 * bench needs to set up its data: a platform through the operator API, a sandbox
 * account, users.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, spawnLogged, stopChild, waitForHttp, type Child } from './processes'

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

export interface Server {
  name: string
  baseUrl: string
  child: Child
  stop(): Promise<void>
}

/** Starts a bun script as a server on a free loopback port and waits for readyPath to answer 200. */
export async function startServer(opts: {
  name: string
  script: string
  env: Record<string, string>
  logDir: string
  readyPath: string
  timeoutMs?: number
  /** Extra bun flags before the script, e.g. --cpu-prof. */
  bunArgs?: string[]
}): Promise<Server> {
  const port = await freePort()
  const child = spawnLogged(opts.name, [process.execPath, ...(opts.bunArgs ?? []), opts.script], {
    cwd: ROOT,
    logFile: join(opts.logDir, `${opts.name}.log`),
    // SIP on a free port too: benches may run beside a service that holds 5060.
    env: { ...process.env, SIP_PORT: '0', ...opts.env, PORT: String(port), HOST: '127.0.0.1' },
  })
  const baseUrl = `http://127.0.0.1:${port}`
  await waitForHttp(baseUrl + opts.readyPath, child, opts.timeoutMs ?? 30_000)
  return { name: opts.name, baseUrl, child, stop: () => stopChild(child) }
}

export interface RealService extends Server {
  adminToken: string
}

export async function startRealService(opts: { databaseUrl: string; logDir: string; env?: Record<string, string>; bunArgs?: string[] }): Promise<RealService> {
  const adminToken = `bench-admin-${randomBytes(12).toString('hex')}`
  const server = await startServer({
    name: 'service',
    script: join(ROOT, 'src/main.ts'),
    logDir: opts.logDir,
    readyPath: '/readyz',
    bunArgs: opts.bunArgs,
    env: {
      DATABASE_URL: opts.databaseUrl,
      VOICE_ADMIN_TOKEN: adminToken,
      RATE_LIMIT_PER_SECOND: '0',
      LOG_LEVEL: 'warn',
      ...opts.env,
    },
  })
  return { ...server, adminToken }
}

export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  o: { token?: string; account?: string; body?: unknown } = {},
): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = {}
  if (o.token) headers.authorization = `Bearer ${o.token}`
  if (o.account) headers['service-account'] = o.account
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(baseUrl + path, {
    method,
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
    signal: AbortSignal.timeout(10_000),
  })
  const text = await res.text()
  let body: unknown = text
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {}
  return { status: res.status, body: body as T }
}

const expectOk = <T>(what: string, r: { status: number; body: T }): T => {
  if (r.status !== 200) throw new Error(`${what} failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

export const sampleAccount = () => ({
  email: 'owner@example.com',
  primary_contact_name: 'Ada Owner',
  name: 'Bench Dental',
  address: { address_number: '100', street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
  pricing: { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 },
})

export interface Tenant {
  platformId: string
  key: string
  accountId: string
}

/** A new platform (operator API) with one sandbox account and `users` users. */
export async function createTenant(svc: RealService, users: number): Promise<Tenant> {
  const platform = expectOk<{ id: string; test_key: string }>(
    'POST /admin/platforms',
    await call(svc.baseUrl, 'POST', '/admin/platforms', { token: svc.adminToken, body: { name: 'Bench platform' } }),
  )
  const account = expectOk<{ id: string }>(
    'POST /v1/accounts',
    await call(svc.baseUrl, 'POST', '/v1/accounts', { token: platform.test_key, body: sampleAccount() }),
  )
  const tenant = { platformId: platform.id, key: platform.test_key, accountId: account.id }
  for (let i = 0; i < users; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, users - i) }, (_, j) =>
        call(svc.baseUrl, 'POST', '/v1/users', {
          token: tenant.key,
          account: tenant.accountId,
          body: { name: `Seed User ${i + j}`, email: `seed-${i + j}@example.com` },
        }).then((r) => expectOk('POST /v1/users (seed)', r)),
      ),
    )
  }
  return tenant
}
