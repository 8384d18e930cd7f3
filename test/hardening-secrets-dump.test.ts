/**
 * Issue 13, "Must show": an attacker holding a dump of the database finds no usable
 * signing key, webhook secret or session secret. The test reads every text and JSON
 * value of every table directly, as a dump would, and tries each one (and each token
 * in it) as the key of every signature the service makes: a session JWT, a download
 * URL, a page cursor and a webhook delivery. None may verify. Looking for the secrets'
 * text alone (test/secrets-at-rest.test.ts) would miss a key stored in another form.
 */
import { describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { keyRingInUse, openSecret } from '../src/auth/master-key'
import { sealedContext } from '../src/auth/sealed-columns'
import { queryRows } from '../src/db/client'
import { pcmWav } from './fixtures/pcm-wav'
import { upload } from './fixtures/upload'
import { startTestService, TEST_MASTER_KEY } from './support/service'
import { startWebhookReceiver } from './support/webhook-receiver'

const t = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const rx = await startWebhookReceiver()

/** On a shared PostgreSQL test database the tables only grow: a bounded read per column still covers this file's rows and every server key. */
const VALUES_PER_COLUMN = 50_000

const b64url = (b: Buffer) => b.toString('base64url')
const hmac = (key: string | Uint8Array, data: string) => createHmac('sha256', key).update(data).digest()

/** What a key found in the dump would let its holder forge, given one genuine sample of each. */
interface Samples {
  jwt: string
  downloadToken: string
  cursor: string
  webhook: { t: string; v1: string; body: string }
}

function forges(candidate: string, s: Samples): string[] {
  const found: string[] = []
  const [h, p, sig] = s.jwt.split('.') as [string, string, string]
  if (b64url(hmac(new TextEncoder().encode(candidate), `${h}.${p}`)) === sig) found.push('session JWT key')
  const [body, mac] = s.downloadToken.split('.') as [string, string]
  if (b64url(hmac(candidate, `voice.download.v1.${body}`)) === mac) found.push('download URL key')
  const [data, cmac] = s.cursor.split('.') as [string, string]
  if (b64url(hmac(candidate, data).subarray(0, 16)) === cmac) found.push('cursor key')
  if (hmac(candidate, `${s.webhook.t}.${s.webhook.body}`).toString('hex') === s.webhook.v1) found.push('webhook secret')
  return found
}

/** Every string of a JSON value, and the tokens of each string (a key may sit inside a longer text). */
function candidatesOf(value: unknown, out: Set<string>) {
  if (typeof value === 'string') {
    out.add(value)
    for (const token of value.split(/[^A-Za-z0-9_\-+/=]+/)) if (token.length >= 16) out.add(token)
  } else if (Array.isArray(value)) for (const v of value) candidatesOf(v, out)
  else if (value && typeof value === 'object') for (const v of Object.values(value)) candidatesOf(v, out)
}

/** What a dump holds: every text-like value of every table of the service's database. */
async function dumpCandidates(): Promise<Set<string>> {
  const db = t.service.database.db
  const columns = await queryRows<{ table: string; column: string; type: string }>(
    db,
    sql`select c.table_name as "table", c.column_name as "column", c.data_type as type
        from information_schema.columns c join information_schema.tables t on t.table_name = c.table_name and t.table_schema = c.table_schema
        where c.table_schema = 'public' and t.table_type = 'BASE TABLE'
          and c.data_type in ('text', 'character varying', 'jsonb', 'json', 'character')`,
  )
  expect(columns.length).toBeGreaterThan(50)
  const out = new Set<string>()
  for (const { table, column, type } of columns) {
    const rows = await queryRows<{ v: unknown }>(
      db,
      sql`select ${sql.identifier(column)} as v from ${sql.identifier(table)} where ${sql.identifier(column)} is not null limit ${VALUES_PER_COLUMN}`,
    )
    for (const { v } of rows) candidatesOf(type.startsWith('json') && typeof v === 'string' ? JSON.parse(v) : v, out)
  }
  return out
}

describe('a dump of the database holds no usable secret', () => {
  test('no stored value (or token in one) signs a session, a download URL, a cursor or a webhook; no secret and no master key appear', async () => {
    const p = await t.platform()
    const a = await t.account({ key: p.test_key })
    const c = { key: p.test_key, account: a.id }

    // One genuine sample of each signature, and the secrets the platform was shown once.
    const endpoint = await t.call('POST', '/v1/webhook_endpoints', { ...c, body: { url: rx.url } })
    expect(endpoint.status).toBe(200)
    const session = await t.call('POST', '/v1/account_sessions', {
      key: p.test_key,
      headers: { 'idempotency-key': `dump-${crypto.randomUUID()}` },
      body: { account: a.id, components: { call_logs: { enabled: true } } },
    })
    expect(session.status).toBe(200)
    const userRow = await t.call('POST', '/v1/users', { ...c, body: { email: 'dump@example.com', name: 'Dump Test' } })
    const userSession = await t.call('POST', '/v1/user_sessions', { key: p.test_key, body: { user: userRow.body.id } })
    expect(userSession.status).toBe(200)
    await t.call('POST', '/v1/users', { ...c, body: { email: 'dump2@example.com', name: 'Second' } })
    const page = await t.call('GET', '/v1/users?limit=1', c)
    const cursor = new URL(page.body.next_page_url, t.baseUrl).searchParams.get('page')!
    const clip = await upload(t, '/v1/audio_clips', c, {
      form: { name: 'Dump', file: { bytes: pcmWav({ sampleRate: 8000, channels: 1, bits: 16, seconds: 1 }), name: 'd.wav', type: 'audio/wav' } },
    })
    expect(clip.status).toBe(200)
    const fired = await t.call('POST', '/v1/test_helpers/events', { ...c, body: { event: 'user.created' } })
    expect(fired.status).toBe(200)
    const [hit] = await rx.waitFor(1, { timeoutMs: 30_000 })
    const signature = Object.fromEntries(hit!.headers['x-service-signature']!.split(',').map((kv) => kv.split('=') as [string, string]))
    const samples: Samples = {
      jwt: session.body.client_secret,
      downloadToken: String(clip.body.url).slice(String(clip.body.url).lastIndexOf('/') + 1),
      cursor,
      webhook: { t: signature.t!, v1: signature.v1!, body: hit!.rawBody },
    }

    // The detector works: the real keys, opened with the master key the attacker lacks, do forge each sample.
    const db = t.service.database.db
    const ring = keyRingInUse()
    const serverKey = async (name: 'session_jwt_key' | 'download_url_key' | 'cursor_key') => {
      const [row] = await queryRows<{ value: string }>(db, sql`select value from settings where key = ${name}`)
      return openSecret(row!.value, sealedContext.setting(name))
    }
    expect(forges(await serverKey('session_jwt_key'), samples)).toEqual(['session JWT key'])
    expect(forges(await serverKey('download_url_key'), samples)).toEqual(['download URL key'])
    expect(forges(await serverKey('cursor_key'), samples)).toEqual(['cursor key'])
    expect(forges(endpoint.body.secret, samples)).toEqual(['webhook secret'])

    const dump = await dumpCandidates()
    expect(dump.size).toBeGreaterThan(100)
    const usable = [...dump].flatMap((value) => forges(value, samples).map((what) => ({ what, value: value.slice(0, 40) })))
    expect(usable).toEqual([])

    // Nor the secrets themselves, nor the master key, in any form a dump shows.
    const shown = [endpoint.body.secret, session.body.client_secret, userSession.body.client_secret, TEST_MASTER_KEY, ring.current.toKeyFileText()]
    const leaks = [...dump].filter((value) => shown.some((secret) => value.includes(secret) || value.includes(secret.split('.').at(-1)!)))
    expect(leaks.map((v) => v.slice(0, 40))).toEqual([])
  }, 90_000)
})
