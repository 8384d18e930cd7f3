/**
 * Starts the real service for a test file: HTTP on a free loopback port, data in
 * PGlite (memory) or, when DATABASE_URL is set, in that PostgreSQL server; with
 * NATS_URL set, events and call actors go over NATS (placement by shard lease).
 * Tests isolate themselves by working under platforms of their own.
 */
import { afterAll } from 'bun:test'
import { loadConfig } from '../../src/config'
import { conformanceOf } from './openapi-conformance'
import { startService, type Service, type ServiceOptions } from '../../src/server'

export const ADMIN_TOKEN = 'test-admin-token-0123456789'
/**
 * The master key of every test service on DATABASE_URL: the database `test` is shared
 * by every test file and process, which must all open what the others sealed.
 */
export const TEST_MASTER_KEY = '7e570123456789abcdef0123456789abcdef0123456789abcdef0123456789ab'

export interface CallOptions {
  key?: string
  account?: string
  body?: unknown
  rawBody?: string
  headers?: Record<string, string>
}

export interface Reply<T = any> {
  status: number
  body: T
  headers: Headers
}

export interface TestService {
  service: Service
  baseUrl: string
  call<T = any>(method: string, path: string, opts?: CallOptions): Promise<Reply<T>>
  /** A new platform through the operator API, with its two keys. */
  platform(opts?: { live_enabled?: boolean }): Promise<{ id: string; test_key: string; live_key: string }>
  /** A new sandbox (or live) account on a new platform. */
  account(opts?: { key?: string; body?: Record<string, unknown> }): Promise<{ id: string; key: string; account: any }>
  /** Runs `fn` when the file is done, while the service still answers (clean-up through the API). */
  beforeStop(fn: () => Promise<unknown>): void
  stop(): Promise<void>
}

export const sampleAccount = (extra: Record<string, unknown> = {}) => ({
  email: 'owner@example.com',
  primary_contact_name: 'Ada Owner',
  name: 'Acme Dental',
  address: { address_number: '100', street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
  pricing: { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 },
  ...extra,
})

/** One HTTP request to a running service (in process or spawned), JSON in and out. */
export async function callApi<T = any>(baseUrl: string, method: string, path: string, o: CallOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...o.headers }
  if (o.key) headers.authorization = `Bearer ${o.key}`
  if (o.account) headers['service-account'] = o.account
  let body: string | undefined = o.rawBody
  if (o.body !== undefined) {
    body = JSON.stringify(o.body)
    headers['content-type'] ??= 'application/json'
  }
  const url = path.startsWith('http') ? path : baseUrl + path
  const res = await fetch(url, { method, headers, body })
  const text = await res.text()
  // Every answer a test sees must be one the served OpenAPI document describes.
  const problems =
    (await conformanceOf(new URL(url).origin))?.check({ method, url, status: res.status, contentType: res.headers.get('content-type'), text }) ?? []
  if (problems.length > 0) throw new Error(`the answer does not conform to the OpenAPI document:\n${problems.join('\n')}`)
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {}
  return { status: res.status, body: parsed as T, headers: res.headers }
}

export async function startTestService(env: Record<string, string> = {}, opts: ServiceOptions & { args?: string[] } = {}): Promise<TestService> {
  const config = loadConfig(
    {
      DATA_DIR: 'memory://',
      PORT: '0',
      HOST: '127.0.0.1',
      VOICE_ADMIN_TOKEN: ADMIN_TOKEN,
      RATE_LIMIT_PER_SECOND: '0',
      LOG_LEVEL: 'silent',
      VOICE_MASTER_KEY: TEST_MASTER_KEY,
      // The media role answers SIP: on a free port, as HTTP.
      SIP_PORT: '0',
      ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
      // A run may shrink the pool to one connection to find a transaction waiting on its own pool.
      ...(process.env.DATABASE_POOL_SIZE ? { DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE } : {}),
      // With NATS the bus and the actor placement go over it (workers hold shard leases).
      ...(process.env.NATS_URL ? { NATS_URL: process.env.NATS_URL } : {}),
      ...env,
    },
    opts.args,
  )
  const service = await startService(config, opts)
  const port = service.listen()
  const baseUrl = `http://127.0.0.1:${port}`

  const call = <T>(method: string, path: string, o: CallOptions = {}) => callApi<T>(baseUrl, method, path, o)
  const cleanups: (() => Promise<unknown>)[] = []
  let stopped: Promise<void> | undefined

  const t: TestService = {
    service,
    baseUrl,
    call,
    async platform(p = {}) {
      const r = await call<any>('POST', '/admin/platforms', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { name: 'Test platform', ...p } })
      if (r.status !== 200) throw new Error(`platform create failed: ${r.status} ${JSON.stringify(r.body)}`)
      return r.body
    },
    async account(a = {}) {
      const key = a.key ?? (await t.platform()).test_key
      const r = await call<any>('POST', '/v1/accounts', { key, body: sampleAccount(a.body) })
      if (r.status !== 200) throw new Error(`account create failed: ${r.status} ${JSON.stringify(r.body)}`)
      return { id: r.body.id, key, account: r.body }
    },
    beforeStop: (fn) => void cleanups.push(fn),
    // Once: a test may stop its service early, and afterAll stops it again.
    stop() {
      stopped ??= (async () => {
        for (const fn of cleanups.splice(0)) await fn().catch(() => {})
        await service.stop()
      })()
      return stopped
    },
  }
  afterAll(() => t.stop())
  return t
}
