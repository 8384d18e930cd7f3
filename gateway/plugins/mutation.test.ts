/**
 * mutate() against its promise when the work hands it writes still on their way
 * (`alongside`): they go to the database with the audit record and the idempotency
 * record, and they belong to the mutation exactly as awaited writes do. A failing one
 * fails the mutation, keeps nothing of its work and is audited as a failure; the
 * answer of a successful one is only given once it is committed.
 *
 * On PGlite and on the embedded PostgreSQL server (postgres.js, where the statements
 * share a round trip).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import { freshDataDir } from '../../test/support/data-dir'
import { createKeyRing, MasterKey } from '../../src/auth/key-encryption'
import { holdKeyRing, keyRingInUse } from '../../src/auth/master-key'
import { manualClock } from '../../src/clock'
import { type Database, openDatabase } from '../../src/db/client'
import { auditLogs, platforms, settings } from '../../src/db/schema'
import { createLogger } from '../../src/logger'
import type { GatewayDeps } from '../context'
import { createMutator, type RequestFacts } from './mutation'

const STORES = [
  { name: 'PGlite', open: async () => ({ database: await openDatabase({ dataDir: 'memory://', embedded: 'pglite' }), dispose: async () => {} }) },
  {
    name: 'the embedded PostgreSQL server',
    open: async () => {
      const folder = freshDataDir('mutation-alongside')
      return { database: await openDatabase({ dataDir: folder.dataDir }), dispose: () => folder.dispose() }
    },
  },
]

// Idempotency records are sealed under the process's master key (startService loads it; here, a fresh one).
let releaseKeyRing = () => {}
beforeAll(() => {
  try {
    keyRingInUse()
  } catch {
    releaseKeyRing = holdKeyRing(createKeyRing(MasterKey.generate()))
  }
})
afterAll(() => releaseKeyRing())

for (const store of STORES) {
  describe(`mutate with writes alongside, on ${store.name}`, () => {
    let database: Database
    let dispose: () => Promise<void>
    let platformId: string
    let mutator: ReturnType<typeof createMutator>
    let n = 0
    const clock = manualClock()

    beforeAll(async () => {
      const opened = await store.open()
      database = opened.database
      dispose = opened.dispose
      await database.migrate()
      platformId = 'plat_alongside'
      await database.db.insert(platforms).values({ id: platformId, name: 'Alongside', createdAt: clock.now(), updatedAt: clock.now() })
      const deps = { db: database.db, database, clock, log: createLogger('silent'), outboxCommitted: () => {} }
      mutator = createMutator(deps as unknown as GatewayDeps)
    }, 60_000)
    afterAll(async () => {
      await database?.close()
      await dispose?.()
    })

    const facts = (idempotencyKey?: string): RequestFacts => ({
      requestId: `req_alongside_${++n}`,
      ip: null,
      method: 'POST',
      path: '/v1/things',
      operationId: 'createThing',
      principal: { kind: 'secret_key', actor: 'key_test', platformId, mode: 'test', liveEnabled: false },
      accountId: null,
      idempotencyKey,
      body: { n },
    })
    const auditOf = (requestId: string) =>
      database.db
        .select({ outcome: auditLogs.outcome })
        .from(auditLogs)
        .where(eq(auditLogs.requestId, requestId))
        .then((rows) => rows.map((r) => r.outcome))
    const keys = (...k: string[]) =>
      database.db
        .select({ key: settings.key })
        .from(settings)
        .where(inArray(settings.key, k))
        .then((rows) => rows.map((r) => r.key).sort())

    test('a write alongside is committed with the answer, and audited as the mutation', async () => {
      const f = facts('idem-ok')
      const response = await mutator.mutate(f, async (tx, { alongside }) => {
        await tx.insert(settings).values({ key: `${f.requestId}/awaited`, value: 'x' })
        alongside(
          tx
            .insert(settings)
            .values({ key: `${f.requestId}/alongside`, value: 'x' })
            .execute(),
        )
        return { resource: 'thing_1', body: { ok: true } }
      })
      expect(response.status).toBe(200)
      expect(await keys(`${f.requestId}/awaited`, `${f.requestId}/alongside`)).toEqual([`${f.requestId}/alongside`, `${f.requestId}/awaited`])
      expect(await auditOf(f.requestId)).toEqual(['success'])
      // The replayable answer went with them.
      const again = await mutator.mutate({ ...f, requestId: `${f.requestId}_retry` }, async () => {
        throw new Error('a replay must not run the work')
      })
      expect(again.headers.get('idempotent-replayed')).toBe('true')
    })

    test('a write alongside that fails fails the mutation: nothing of its work is kept, the failure is audited', async () => {
      const taken = `alongside/taken/${store.name}`
      await database.db.insert(settings).values({ key: taken, value: 'x' }).onConflictDoNothing()
      const f = facts('idem-fail')
      const outcome = await mutator
        .mutate(f, async (tx, { alongside }) => {
          await tx.insert(settings).values({ key: `${f.requestId}/awaited`, value: 'x' })
          alongside(tx.insert(settings).values({ key: taken, value: 'again' }).execute())
          return { resource: 'thing_2', body: { ok: true } }
        })
        .then(
          () => 'answered',
          (e: unknown) => `${(e as Error).message} ${((e as Error).cause as Error | undefined)?.message ?? ''}`,
        )
      expect(outcome).toMatch(/duplicate key|unique/i)
      expect(await keys(`${f.requestId}/awaited`)).toEqual([])
      expect(await auditOf(f.requestId)).toEqual(['failure'])
      const [row] = await database.db.select().from(settings).where(eq(settings.key, taken))
      expect(row?.value).toBe('x')
    })
  })
}
