/**
 * Unit and property tests of the pagination mechanism: the cursor codec (signed,
 * expiring, bound to its list) and keyset pages (newest first, every row once,
 * back exactly one page), over the real database (PGlite, or DATABASE_URL).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import fc from 'fast-check'
import { manualClock } from './clock'
import { openDatabase, type Database } from './db/client'
import { auditLogs } from './db/schema'
import { ApiError } from './errors'
import { createCursorCodec, CURSOR_TTL_MS, keysetPage, type CursorPosition, type Page } from './pagination'

const position: CursorPosition = { direction: 'next', createdAt: Date.parse('2026-01-01T00:00:00Z'), id: 'usr_01' }

function refused(f: () => unknown, why?: string) {
  try {
    f()
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError)
    expect((e as ApiError).status).toBe(400)
    expect((e as ApiError).code).toBe('invalid_pagination')
    if (why) expect((e as ApiError).message).toContain(why)
    return
  }
  throw new Error('expected invalid_pagination')
}

describe('cursor codec', () => {
  test('round trip: what was encoded for a list decodes for the same list', () => {
    const codec = createCursorCodec('secret', manualClock())
    for (const direction of ['next', 'previous'] as const) {
      const pos = { ...position, direction }
      expect(codec.decode(codec.encode(pos, 'acct|/v1/users|[]'), 'acct|/v1/users|[]')).toEqual(pos)
    }
  })

  test('a cursor is URL-safe text with no structure a client could rely on', () => {
    const cursor = createCursorCodec('secret', manualClock()).encode(position, 's')
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    expect(encodeURIComponent(cursor)).toBe(cursor)
  })

  test('another scope (account, path or filters) is refused', () => {
    const codec = createCursorCodec('secret', manualClock())
    const cursor = codec.encode(position, 'acct_a|/v1/users|[]')
    refused(() => codec.decode(cursor, 'acct_b|/v1/users|[]'), 'not valid for this list')
    refused(() => codec.decode(cursor, 'acct_a|/v1/extensions|[]'))
    refused(() => codec.decode(cursor, 'acct_a|/v1/users|[["search","x"]]'))
  })

  test('expires after 24 hours, not before', () => {
    const clock = manualClock()
    const codec = createCursorCodec('secret', clock)
    const cursor = codec.encode(position, 's')
    clock.advance(CURSOR_TTL_MS)
    expect(codec.decode(cursor, 's')).toEqual(position)
    clock.advance(1)
    refused(() => codec.decode(cursor, 's'), 'expired')
  })

  test('a cursor signed with another secret (another deployment) is refused', () => {
    const cursor = createCursorCodec('one', manualClock()).encode(position, 's')
    refused(() => createCursorCodec('two', manualClock()).decode(cursor, 's'))
  })

  test('a forged payload with a copied signature is refused', () => {
    const codec = createCursorCodec('secret', manualClock())
    const [data, sig] = codec.encode(position, 's').split('.') as [string, string]
    const payload = JSON.parse(Buffer.from(data, 'base64url').toString())
    for (const change of [{ i: 'usr_other' }, { t: 0 }, { x: Number.MAX_SAFE_INTEGER }, { d: 'p' }]) {
      const forged = Buffer.from(JSON.stringify({ ...payload, ...change })).toString('base64url')
      refused(() => codec.decode(`${forged}.${sig}`, 's'))
    }
  })

  test('property: any text that was not issued is refused with invalid_pagination, never another error', () => {
    const codec = createCursorCodec('secret', manualClock())
    const issued = codec.encode(position, 's')
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 3000 }),
          fc.string({ unit: 'binary', maxLength: 100 }),
          fc.tuple(fc.string(), fc.string()).map(([x, y]) => `${x}.${y}`),
          // One character of a real cursor changed.
          fc.tuple(fc.nat(issued.length - 1), fc.constantFrom(...'ABCxyz019-_.')).map(([i, c]) => issued.slice(0, i) + c + issued.slice(i + 1)),
        ),
        (text) => {
          // The last base64 character of the signature carries unused bits: a change there
          // that decodes to the same signature is the same cursor.
          const [data, sig, ...rest] = text.split('.')
          const same =
            rest.length === 0 && data === issued.split('.')[0] && Buffer.from(sig ?? '', 'base64url').equals(Buffer.from(issued.split('.')[1]!, 'base64url'))
          fc.pre(!same)
          refused(() => codec.decode(text, 's'))
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('keyset pages over the database', () => {
  let database: Database
  const owners: string[] = []

  beforeAll(async () => {
    database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
    await database.migrate()
  })
  afterAll(async () => {
    for (const owner of owners) await database.db.delete(auditLogs).where(eq(auditLogs.accountId, owner))
    await database.close()
  })

  type Row = typeof auditLogs.$inferSelect

  /** Rows under a fresh owner; timestamps from a small set so that ties are common. */
  async function seed(stamps: number[]) {
    const owner = `acct_pagetest_${owners.length}_${Math.random().toString(36).slice(2)}`
    owners.push(owner)
    const base = Date.parse('2026-02-01T00:00:00Z')
    const rows = stamps.map((s, i) => ({
      id: `audit_${String(i).padStart(4, '0')}_${Math.random().toString(36).slice(2, 6)}`,
      platformId: 'plat_test',
      accountId: owner,
      actor: 'key_test',
      credential: 'secret_key' as const,
      event: 'probe',
      outcome: 'success' as const,
      statusCode: 200,
      requestId: `req_${i}`,
      createdAt: new Date(base + s * 1000),
    }))
    if (rows.length > 0) await database.db.insert(auditLogs).values(rows)
    const newestFirst = [...rows].sort((x, y) => y.createdAt.getTime() - x.createdAt.getTime() || (y.id < x.id ? -1 : y.id > x.id ? 1 : 0)).map((r) => r.id)
    return { owner, where: eq(auditLogs.accountId, owner), newestFirst }
  }

  const page = (where: ReturnType<typeof eq>, limit: number, position?: CursorPosition) => keysetPage<Row>(database.db, auditLogs, where, { limit, position })
  const ids = (p: Page<Row>) => p.rows.map((r) => r.id)

  test('property: walking next visits every row once, newest first; previous returns exactly the page before', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 25 }), fc.integer({ min: 1, max: 7 }), async (stamps, limit) => {
        const { where, newestFirst } = await seed(stamps)
        const pages: Page<Row>[] = [await page(where, limit)]
        expect(pages[0]!.previous).toBeUndefined()
        while (pages.at(-1)!.next) pages.push(await page(where, limit, pages.at(-1)!.next))
        expect(pages.flatMap(ids)).toEqual(newestFirst)
        expect(pages.length).toBe(Math.max(1, Math.ceil(newestFirst.length / limit)))
        for (const p of pages) expect(p.rows.length).toBeLessThanOrEqual(limit)
        for (let i = 1; i < pages.length; i++) {
          const back = await page(where, limit, pages[i]!.previous)
          expect(ids(back)).toEqual(ids(pages[i - 1]!))
          if (i === 1) expect(back.previous).toBeUndefined()
          expect(back.next).toBeDefined()
        }
      }),
      { numRuns: 40 },
    )
  })

  test('newer rows inserted while paging do not shift the pages already promised', async () => {
    const { owner, where, newestFirst } = await seed([1, 2, 3, 4, 5, 6, 7])
    const first = await page(where, 3)
    await seed([9, 9, 9]) // another owner's rows are not this list's
    await database.db.insert(auditLogs).values({
      id: 'audit_zzzz_newest',
      platformId: 'plat_test',
      accountId: owner,
      actor: 'key_test',
      credential: 'secret_key',
      event: 'probe',
      outcome: 'success',
      statusCode: 200,
      requestId: 'req_new',
      createdAt: new Date('2027-01-01T00:00:00Z'),
    })
    const second = await page(where, 3, first.next)
    expect(ids(second)).toEqual(newestFirst.slice(3, 6))
    // Going back now shows that something newer exists before page 1.
    const back = await page(where, 3, second.previous)
    expect(ids(back)).toEqual(newestFirst.slice(0, 3))
    expect(back.previous).toBeDefined()
  })
})
