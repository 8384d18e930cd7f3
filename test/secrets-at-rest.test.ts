/**
 * Issue 13, "Secrets": the server's signing keys, webhook endpoint and voice-app
 * secrets and replayable (Idempotency-Key) responses are sealed under a master key
 * that is not in the database. Reading the database reveals none of them; the master
 * key rotates (VOICE_MASTER_KEY_PREVIOUS); a wrong key stops the start with a message
 * that names keys by id only.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { MasterKey, parseMasterKey } from '../src/auth/key-encryption'
import { KEY_FILE_NAME } from '../src/auth/master-key'
import { SEALED_SETTINGS } from '../src/auth/sealed-columns'
import { queryRows } from '../src/db/client'
import { freshDataDir } from './support/data-dir'
import { scratchPostgres } from './support/scratch-postgres'
import { ADMIN_TOKEN, sampleAccount, startTestService, TEST_MASTER_KEY, type TestService } from './support/service'
import { startServiceProcess, type ServiceProcess } from './support/service-process'

const SLOW = 120_000

/** What a platform makes that carries a secret: an endpoint, a voice app, and a session minted with an Idempotency-Key. */
async function makeSecrets(call: TestService['call'], key: string, account: string) {
  const endpoint = await call('POST', '/v1/webhook_endpoints', { key, body: { url: 'https://hooks.example.com/voice' } })
  const app = await call('POST', '/v1/voice-apps', { key, account, body: { name: 'CRM', kind: 'webhook', url: 'https://crm.example.com/calls' } })
  const idempotencyKey = `secrets-at-rest-${crypto.randomUUID()}`
  const session = await call('POST', '/v1/account_sessions', {
    key,
    headers: { 'idempotency-key': idempotencyKey },
    body: { account, components: { call_logs: { enabled: true } } },
  })
  expect([endpoint.status, app.status, session.status]).toEqual([200, 200, 200])
  return {
    endpointId: endpoint.body.id as string,
    webhookSecret: endpoint.body.secret as string,
    voiceAppSecret: app.body.secret as string,
    clientSecret: session.body.client_secret as string,
    idempotencyKey,
    account,
  }
}

const t = await startTestService()

describe('nothing secret is stored in plain text', () => {
  test('every table, read raw, holds neither the webhook secret, the voice-app secret nor the session secret; the server keys are sealed', async () => {
    const a = await t.account()
    const made = await makeSecrets(t.call, a.key, a.id)
    expect(made.webhookSecret).toMatch(/^whsec_/)
    expect(made.voiceAppSecret).toMatch(/^vsec_/)
    const db = t.service.database.db
    const tables = await queryRows<{ name: string }>(
      db,
      sql`select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`,
    )
    expect(tables.length).toBeGreaterThan(10)
    // One pass per table for all the secrets: on the PostgreSQL run's persistent database the tables only grow.
    const secrets = [made.webhookSecret, made.voiceAppSecret, made.clientSecret, made.clientSecret.split('.')[2]!]
    for (const { name } of tables) {
      const text = sql`t::text`
      const anyOf = sql.join(
        secrets.map((secret) => sql`${text} like ${`%${secret}%`}`),
        sql` or `,
      )
      const hits = await queryRows<{ n: number }>(db, sql`select count(*)::int as n from ${sql.identifier(name)} t where ${anyOf}`)
      expect({ table: name, hits: hits[0]!.n }).toEqual({ table: name, hits: 0 })
    }
    const keyId = parseMasterKey(TEST_MASTER_KEY)!.id
    const stored = await queryRows<{ key: string; value: string }>(db, sql`select key, value from settings where key in ${[...SEALED_SETTINGS]}`)
    expect(stored.length).toBeGreaterThanOrEqual(3)
    for (const row of stored) expect(row.value.startsWith(`sealed.v1.${keyId}.`)).toBe(true)
    const [idem] = await queryRows<{ body: string }>(db, sql`select response_body as body from idempotency_keys where key = ${made.idempotencyKey}`)
    expect(idem!.body.startsWith(`sealed.v1.${keyId}.`)).toBe(true)
  }, 60_000)

  test('what is sealed still works: the replay answers the same session, which is accepted', async () => {
    const a = await t.account()
    const made = await makeSecrets(t.call, a.key, a.id)
    const replay = await t.call('POST', '/v1/account_sessions', {
      key: a.key,
      headers: { 'idempotency-key': made.idempotencyKey },
      body: { account: a.id, components: { call_logs: { enabled: true } } },
    })
    expect(replay.status).toBe(200)
    expect(replay.body.client_secret).toBe(made.clientSecret)
    expect((await t.call('GET', '/v1/calls', { key: made.clientSecret })).status).toBe(200)
  })
})

/** A database that outlives its processes: a scratch PostgreSQL database, or an embedded one on a data folder. */
async function durableStore() {
  const data = freshDataDir('secrets')
  const pg = await scratchPostgres('secrets')
  return {
    env: { DATA_DIR: data.dataDir, ...pg.env },
    dataDir: data.dataDir,
    async dispose() {
      await pg.dispose()
      await data.dispose()
    },
  }
}

describe('the master key: made once, rotated, and a wrong one refused', () => {
  let store: Awaited<ReturnType<typeof durableStore>>
  const running: ServiceProcess[] = []
  const start = async (settings: Record<string, string>) => {
    const p = await startServiceProcess({ ...store.env, VOICE_ADMIN_TOKEN: ADMIN_TOKEN, ...settings })
    running.push(p)
    return p
  }
  beforeAll(async () => {
    store = await durableStore()
  })
  afterAll(async () => {
    for (const p of running) await p.kill()
    await store.dispose()
  }, SLOW)

  test(
    'without VOICE_MASTER_KEY the key is made in DATA_DIR/master.key (0600); moving to VOICE_MASTER_KEY with the old one as VOICE_MASTER_KEY_PREVIOUS keeps everything readable; afterwards the old key alone is refused',
    async () => {
      // 1. No key given: the key file is made, and secrets are sealed under it.
      const first = await start({ VOICE_MASTER_KEY: '' })
      const keyFile = join(store.dataDir, KEY_FILE_NAME)
      expect(statSync(keyFile).mode & 0o777).toBe(0o600)
      const fileKey = readFileSync(keyFile, 'utf8').trim()
      const platform = await first.call('POST', '/admin/platforms', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { name: 'Secrets' } })
      const key = platform.body.test_key as string
      const account = await first.call('POST', '/v1/accounts', { key, body: sampleAccount() })
      const made = await makeSecrets(first.call, key, account.body.id)
      await first.kill()

      // 2. Rotation: a new key, the file's key as the previous one.
      const newKey = MasterKey.generate().toKeyFileText()
      const rotating = await start({ VOICE_MASTER_KEY: newKey, VOICE_MASTER_KEY_PREVIOUS: fileKey })
      const replay = await rotating.call('POST', '/v1/account_sessions', {
        key,
        headers: { 'idempotency-key': made.idempotencyKey },
        body: { account: made.account, components: { call_logs: { enabled: true } } },
      })
      expect(replay.body.client_secret).toBe(made.clientSecret)
      expect((await rotating.call('GET', '/v1/calls', { key: made.clientSecret })).status).toBe(200)
      expect(rotating.log.text).not.toContain(newKey)
      expect(rotating.log.text).not.toContain(fileKey)
      await rotating.kill()

      // 3. Every value moved to the new key: the old key alone is refused, clearly, without key material.
      let refusal = ''
      await start({ VOICE_MASTER_KEY: fileKey }).catch((e: Error) => {
        refusal = e.message
      })
      const newId = parseMasterKey(newKey)!.id
      expect(refusal).toContain(`sealed under master key ${newId}`)
      expect(refusal).toContain(`this process has master key ${parseMasterKey(fileKey)!.id}`)
      expect(refusal).not.toContain(fileKey)
      expect(refusal).not.toContain(newKey)

      // 4. The new key alone reads everything, the previous one is no longer needed.
      const after = await start({ VOICE_MASTER_KEY: newKey })
      expect((await after.call('GET', '/v1/calls', { key: made.clientSecret })).status).toBe(200)
      const replayAgain = await after.call('POST', '/v1/account_sessions', {
        key,
        headers: { 'idempotency-key': made.idempotencyKey },
        body: { account: made.account, components: { call_logs: { enabled: true } } },
      })
      expect(replayAgain.body.client_secret).toBe(made.clientSecret)
      expect((await after.call('GET', `/v1/webhook_endpoints/${made.endpointId}`, { key })).status).toBe(200)
    },
    SLOW,
  )
})
