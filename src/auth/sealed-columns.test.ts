/**
 * The start-up sweep on a database written before secrets were sealed, on PGlite or
 * (with DATABASE_URL) a scratch PostgreSQL database of its own: the sweep rewrites
 * rows, which must not happen to the database `test` the other files share.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { scratchPostgres, type ScratchDatabase } from '../../test/support/scratch-postgres'
import { ConfigError } from '../config'
import { openDatabase, type Database } from '../db/client'
import { idempotencyKeys, settings, webhookEndpoints } from '../db/schema'
import { createKeyRing, MasterKey, sealedKeyId } from './key-encryption'
import { sealedContext, sweepSealedValues } from './sealed-columns'

let scratch: ScratchDatabase
let database: Database
beforeAll(async () => {
  scratch = await scratchPostgres('sealing')
  database = await openDatabase({ databaseUrl: scratch.url, dataDir: 'memory://' })
  await database.migrate()
})
afterAll(async () => {
  await database.close()
  await scratch.dispose()
})

const [a, b, c] = [MasterKey.generate(), MasterKey.generate(), MasterKey.generate()]
const plain = { cursor: 'plain-cursor-key-0123456789abcdefghij', secret: 'whsec_plain_0123456789abcdef', body: '{"client_secret":"eyJ.plain.jwt"}' }
const now = new Date('2026-01-01T00:00:00Z')

async function stored() {
  const db = database.db
  const [cursor] = await db.select().from(settings).where(eq(settings.key, 'cursor_key'))
  const [cluster] = await db.select().from(settings).where(eq(settings.key, 'cluster_id'))
  const [endpoint] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, 'we_sealing'))
  const [idem] = await db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, 'k1'))
  return { cursor: cursor!.value, cluster: cluster!.value, secret: endpoint!.secret, body: idem!.responseBody! }
}

describe('the start-up sweep', () => {
  beforeAll(async () => {
    const db = database.db
    await db.insert(settings).values([
      { key: 'cursor_key', value: plain.cursor },
      { key: 'cluster_id', value: 'c0ffee' },
    ])
    await db.insert(webhookEndpoints).values({
      id: 'we_sealing',
      platformId: 'plat_x',
      mode: 'test',
      url: 'https://hooks.example.com',
      secret: plain.secret,
      enabledEvents: ['*'],
      status: 'enabled',
      createdAt: now,
      updatedAt: now,
    })
    await db.insert(idempotencyKeys).values({
      scope: 'platform:plat_x:test',
      key: 'k1',
      requestHash: 'h',
      state: 'done',
      lockedAt: now,
      statusCode: 200,
      responseBody: plain.body,
      createdAt: now,
    })
  })

  test('plain values written before sealing are sealed on the first start, by processes starting at once, and only once', async () => {
    const ring = createKeyRing(a)
    const results = await Promise.all([0, 1, 2].map(() => sweepSealedValues(database.db, ring, 'test')))
    expect(results.reduce((n, r) => n + r.sealed, 0)).toBeGreaterThanOrEqual(3)
    const s = await stored()
    expect(s.cluster).toBe('c0ffee') // an id, not a secret: left as it is
    expect(ring.open(s.cursor, sealedContext.setting('cursor_key'))).toBe(plain.cursor)
    expect(ring.open(s.secret, sealedContext.webhookSecret('we_sealing'))).toBe(plain.secret)
    expect(ring.open(s.body, sealedContext.idempotentResponse('platform:plat_x:test', 'k1'))).toBe(plain.body)
    expect(await sweepSealedValues(database.db, ring, 'test')).toEqual({ sealed: 0, resealed: 0 })
    expect(await stored()).toEqual(s)
  })

  test('a key the database was not sealed with is refused before anything is written, naming keys by id only', async () => {
    const before = await stored()
    const refusal = await sweepSealedValues(database.db, createKeyRing(c), 'VOICE_MASTER_KEY').catch((e) => e)
    expect(refusal).toBeInstanceOf(ConfigError)
    expect(refusal.message).toContain(`sealed under master key ${a.id}, but this process has master key ${c.id} (VOICE_MASTER_KEY)`)
    for (const key of [a, c]) expect(refusal.message).not.toContain(key.toKeyFileText())
    expect(await stored()).toEqual(before)
  })

  test('rotation: with the old key as the previous one, every value moves to the new key and opens to the same text', async () => {
    const rotating = createKeyRing(b, a)
    expect((await sweepSealedValues(database.db, rotating, 'test')).resealed).toBeGreaterThanOrEqual(3)
    const s = await stored()
    for (const value of [s.cursor, s.secret, s.body]) expect(sealedKeyId(value)).toBe(b.id)
    const after = createKeyRing(b)
    expect(after.open(s.cursor, sealedContext.setting('cursor_key'))).toBe(plain.cursor)
    expect(after.open(s.secret, sealedContext.webhookSecret('we_sealing'))).toBe(plain.secret)
    expect(await sweepSealedValues(database.db, after, 'test')).toEqual({ sealed: 0, resealed: 0 })
  })
})
