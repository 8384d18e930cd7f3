/**
 * The baseline for the `api` bench: a bare Bun.serve that does, per request, the same
 * database work as the real `GET /v1/users` and `POST /v1/users` routes, with the
 * same `postgres` client and pool size, and answers the same JSON shape. No
 * framework, no validation library, no logger: what is left is the floor the
 * gateway's own overhead is measured against.
 *
 *   PORT=... HOST=127.0.0.1 DATABASE_URL=postgres://... bun test/bench/baseline.ts
 *
 * Per request, like the real routes:
 *   - the API key lookup (api_keys join platforms by key hash), cached 5 s like the gateway does
 *   - the account by id (all columns), checked against the key's platform and mode
 *   GET:  the users keyset page (account_id = $1 order by created_at desc, id desc limit 11)
 *         and an HMAC-signed next-page cursor as the real list envelope builds it
 *   POST: one transaction: insert user returning unless the account has the email (one statement), insert audit row
 * Only the first page of the list is served (a `page` cursor is refused): the bench
 * reads the first page only.
 *
 * For profiling only (the bench does not set them): BASELINE_PREPARE=0 runs the queries
 * unprepared, as drizzle does by default; BASELINE_AUDIT=0 leaves out the audit insert.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { ulid } from 'ulid'
import { DEFAULT_DATABASE_POOL_SIZE } from '../../src/config'

const port = Number(process.env.PORT ?? 0)
const host = process.env.HOST || '127.0.0.1'
const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl) {
  console.error('baseline: DATABASE_URL is required')
  process.exit(2)
}
const prepare = process.env.BASELINE_PREPARE !== '0'
const audit = process.env.BASELINE_AUDIT !== '0'
// The service's pool size (DATABASE_POOL_SIZE), so that the comparison is of the code, not of the pool.
const max = Number(process.env.DATABASE_POOL_SIZE || DEFAULT_DATABASE_POOL_SIZE)
const sql = postgres(databaseUrl, { max, onnotice: () => {}, connect_timeout: 10, prepare })

const baseUrl = `http://localhost:${port}`
const cursorKey = randomBytes(32).toString('hex')
const CURSOR_TTL_MS = 24 * 60 * 60 * 1000

// ---- responses -------------------------------------------------------------

const json = (status: number, body: unknown, requestId: string) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'x-request-id': requestId } })
const error = (status: number, message: string, code: string, requestId: string) => json(status, { error: message, code }, requestId)
const newId = (prefix: string) => `${prefix}_${ulid().toLowerCase()}`

interface UserRow {
  id: string
  account_id: string
  name: string | null
  email: string
  created_at: Date
  updated_at: Date
}

const userView = (r: UserRow) => ({
  id: r.id,
  object: 'user' as const,
  account: r.account_id,
  name: r.name,
  email: r.email,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
})

// ---- auth ------------------------------------------------------------------

interface KeyIdentity {
  key_id: string
  platform_id: string
  mode: 'test' | 'live'
  live_enabled: boolean
}

const KEY_CACHE_MS = 5_000
const keyCache = new Map<string, { at: number; identity: KeyIdentity | undefined }>()

async function lookupKey(key: string): Promise<KeyIdentity | undefined> {
  const now = performance.now()
  const hit = keyCache.get(key)
  if (hit && now - hit.at < KEY_CACHE_MS) return hit.identity
  const hash = createHash('sha256').update(key).digest('hex')
  const [row] = await sql<KeyIdentity[]>`
    select "api_keys"."id" as key_id, "api_keys"."platform_id", "api_keys"."mode", "platforms"."live_enabled"
    from "api_keys" inner join "platforms" on "platforms"."id" = "api_keys"."platform_id"
    where ("api_keys"."key_hash" = ${hash} and "api_keys"."revoked_at" is null)`
  keyCache.set(key, { at: now, identity: row })
  return row
}

interface AccountRow {
  id: string
  platform_id: string
  mode: string
  [column: string]: unknown
}

/** The caller's key identity and account, or the error response. */
async function authenticate(req: Request, requestId: string): Promise<{ key: KeyIdentity; account: AccountRow } | Response> {
  const match = req.headers.get('authorization')?.match(/^Bearer\s+(\S+)\s*$/i)
  if (!match) return error(401, 'Missing credentials: send Authorization: Bearer <key or token>.', 'unauthorized', requestId)
  const key = await lookupKey(match[1]!)
  if (!key) return error(401, 'Invalid API key.', 'unauthorized', requestId)
  const accountId = req.headers.get('service-account')
  if (!accountId) return error(400, 'This operation needs the Service-Account header.', 'account_header_required', requestId)
  const [account] = await sql<AccountRow[]>`
    select "id", "platform_id", "mode", "email", "name", "phone", "primary_contact_name", "config", "default_outbound_did",
      "hold_music_clip", "main_location", "default_button_template", "provisioning_base_url", "billing_address", "created_at", "updated_at"
    from "accounts" where "accounts"."id" = ${accountId}`
  if (!account || account.platform_id !== key.platform_id) return error(403, 'No access to this account.', 'account_forbidden', requestId)
  if (account.mode !== key.mode) return error(403, 'A sandbox key works on sandbox accounts only.', 'account_mode_mismatch', requestId)
  return { key, account }
}

// ---- cursors (same construction as src/pagination.ts) ----------------------

const mac = (data: string) => createHmac('sha256', cursorKey).update(data).digest().subarray(0, 16)
const scopeHash = (scope: string) => createHash('sha256').update(scope).digest('base64url').slice(0, 16)

function encodeCursor(row: UserRow, scope: string): string {
  const payload = { d: 'n', t: row.created_at.getTime(), i: row.id, s: scopeHash(scope), x: Date.now() + CURSOR_TTL_MS }
  const data = Buffer.from(JSON.stringify(payload)).toString('base64url')
  return `${data}.${mac(data).toString('base64url')}`
}

// ---- routes ----------------------------------------------------------------

async function listUsers(req: Request, url: URL, requestId: string): Promise<Response> {
  const auth = await authenticate(req, requestId)
  if (auth instanceof Response) return auth
  const rawLimit = url.searchParams.get('limit')
  const limit = rawLimit === null ? 10 : Number(rawLimit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) return error(400, 'Invalid request.', 'invalid_request', requestId)
  if (url.searchParams.has('page')) return error(400, 'The baseline serves the first page only.', 'invalid_pagination', requestId)
  const rows = await sql<UserRow[]>`
    select "id", "account_id", "name", "email", "session_epoch", "created_at", "updated_at"
    from "users" where "users"."account_id" = ${auth.account.id}
    order by "users"."created_at" desc, "users"."id" desc limit ${limit + 1}`
  const more = rows.length > limit
  const page = more ? rows.slice(0, limit) : [...rows]
  const last = page[page.length - 1]
  let next: string | null = null
  if (more && last) {
    const scope = `${auth.account.id}|${url.pathname}|[]`
    const params = new URLSearchParams()
    params.set('limit', String(limit))
    params.set('page', encodeCursor(last, scope))
    next = `${baseUrl}${url.pathname}?${params.toString()}`
  }
  return json(200, { object: 'list', url: url.pathname, next_page_url: next, previous_page_url: null, data: page.map(userView) }, requestId)
}

async function createUser(req: Request, server: Bun.Server<unknown>, requestId: string): Promise<Response> {
  const auth = await authenticate(req, requestId)
  if (auth instanceof Response) return auth
  let body: any
  try {
    body = await req.json()
  } catch {
    return error(400, 'The request body is not valid JSON.', 'invalid_json', requestId)
  }
  const ok =
    body !== null &&
    typeof body === 'object' &&
    typeof body.email === 'string' &&
    body.email.length <= 254 &&
    /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(body.email) &&
    (body.name === undefined || body.name === null || (typeof body.name === 'string' && body.name.length <= 200)) &&
    Object.keys(body).every((k) => k === 'email' || k === 'name')
  if (!ok) return error(400, 'Invalid request.', 'invalid_request', requestId)
  const ip = server.requestIP(req)?.address ?? null
  const accountId = auth.account.id
  const result = await sql.begin(async (tx) => {
    const now = new Date()
    const [row] = await tx<UserRow[]>`
      insert into "users" ("id", "account_id", "name", "email", "created_at", "updated_at")
      select ${newId('usr')}, ${accountId}, ${body.name ?? null}, ${body.email}, ${now}, ${now}
      where not exists (select 1 from "users" where "account_id" = ${accountId} and lower("email") = lower(${body.email}))
      on conflict do nothing
      returning "id", "account_id", "name", "email", "session_epoch", "created_at", "updated_at"`
    if (!row) return undefined
    if (audit)
      await tx`
      insert into "audit_logs" ("id", "platform_id", "account_id", "actor", "credential", "event", "resource", "outcome", "status_code", "ip_address", "request_id", "created_at")
      values (${newId('audit')}, ${auth.key.platform_id}, ${accountId}, ${auth.key.key_id}, 'secret_key', 'createUser', ${row.id}, 'success', 200, ${ip}, ${requestId}, ${now})`
    return row
  })
  if (!result) return error(409, 'Another user of this account has this email.', 'user_email_taken', requestId)
  return json(200, userView(result), requestId)
}

const server = Bun.serve({
  port,
  hostname: host,
  async fetch(req, server) {
    const requestId = newId('req')
    const url = new URL(req.url)
    try {
      if (url.pathname === '/healthz' || url.pathname === '/readyz') return new Response('ok')
      if (url.pathname === '/v1/users') {
        if (req.method === 'GET') return await listUsers(req, url, requestId)
        if (req.method === 'POST') return await createUser(req, server, requestId)
      }
      return error(404, 'No such route.', 'not_found', requestId)
    } catch (e) {
      console.error(e)
      return error(500, 'Internal server error.', 'internal_error', requestId)
    }
  },
})

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, async () => {
    server.stop(true)
    await sql.end({ timeout: 2 }).catch(() => {})
    process.exit(0)
  })
}
