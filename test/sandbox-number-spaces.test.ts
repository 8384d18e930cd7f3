/**
 * Issue 13, "Strictness": sandbox numbers were one pool shared by every platform, so
 * a 409 told one platform which numbers another held, and one platform could use up
 * the range for all. Each platform now has a sandbox space of its own
 * (src/services/numbers/number-space.ts); within a platform a number is still live
 * on one account at a time, and port orders in flight meet only their own space.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { manualClock } from '../src/clock'
import { openDatabase, queryRows } from '../src/db/client'
import { accounts, phoneNumbers } from '../src/db/schema'
import { ensureBootstrapPlatform } from '../src/services/platform/platforms'
import { addBusinessDays, easternDate } from '../src/services/porting/business-days'
import { startTestService } from './support/service'

const t = await startTestService()

async function accountOf(key?: string) {
  const a = await t.account(key ? { key } : {})
  const c = { key: a.key, account: a.id }
  t.beforeStop(() => t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key }))
  return c
}
type Ctx = Awaited<ReturnType<typeof accountOf>>
const order = (c: Ctx, numbers: string[]) => t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: numbers } })
const offered = async (c: Ctx, quantity: number) =>
  (await t.call('GET', `/v1/available-phone-numbers?quantity=${quantity}`, c)).body.data.map((o: { phone_number: string }) => o.phone_number) as string[]

describe('a sandbox of its own per platform', () => {
  test('two platforms order the same sandbox numbers; neither sees the other’s in a search or a 409', async () => {
    const one = await accountOf((await t.platform()).test_key)
    const two = await accountOf((await t.platform()).test_key)
    const numbers = await offered(one, 3)
    expect((await order(one, numbers)).status).toBe(200)
    // The other platform is offered the very same numbers, and orders them.
    expect(await offered(two, 3)).toEqual(numbers)
    const theirs = await order(two, numbers)
    expect(theirs.status).toBe(200)
    expect(theirs.body.status).toBe('complete')
    // Each platform's account holds its own rows.
    for (const c of [one, two]) {
      const held = (await t.call('GET', '/v1/phone-numbers?limit=100', c)).body.data.map((n: { number: string }) => n.number)
      expect(held.sort()).toEqual([...numbers].sort())
    }
  })

  test('within a platform a number is still live on one account: 409 in_service_elsewhere', async () => {
    const p = await t.platform()
    const one = await accountOf(p.test_key)
    const two = await accountOf(p.test_key)
    const [x] = await offered(one, 1)
    expect((await order(one, [x!])).status).toBe(200)
    expect(await offered(two, 1)).not.toContain(x)
    const r = await order(two, [x!])
    expect({ status: r.status, code: r.body.code, details: r.body.details }).toEqual({
      status: 409,
      code: 'phone_numbers_already_claimed',
      details: { already_on_account: [], in_service_elsewhere: [x] },
    })
  })

  test('a number in another platform’s sandbox port order is free to port here; in this platform’s, it is refused', async () => {
    const p = await t.platform()
    const one = await accountOf(p.test_key)
    const sibling = await accountOf(p.test_key)
    const other = await accountOf((await t.platform()).test_key)
    // A fresh exchange (no other run holds it) and a landline line, portable in the sandbox.
    const d = () => Math.floor(Math.random() * 10)
    const n = `+1${2 + Math.floor(Math.random() * 8)}${d()}${d()}${2 + Math.floor(Math.random() * 8)}${d()}${d()}1003`
    const body = {
      phone_numbers: [n],
      subscriber: {
        btn: '+12125550123',
        business_name: 'Acme Dental',
        approver_name: 'Ada Owner',
        address: { house_number: '100', street_name: 'Main St', city: 'Springfield', state: 'IL', zip: '62701' },
      },
      requested_foc_date: addBusinessDays(easternDate(new Date()), 8),
    }
    expect((await t.call('POST', '/v1/port-orders', { ...one, body })).status).toBe(200)
    expect((await t.call('POST', '/v1/port-orders', { ...other, body })).status).toBe(200)
    const same = await t.call('POST', '/v1/port-orders', { ...sibling, body })
    expect(same.status).toBe(400)
    expect(same.body.details['phone_numbers[0]']).toContain('another port order')
  })
})

describe('migration 0020', () => {
  test('places the rows written before it: live numbers in the live space, sandbox ones in their platform’s', async () => {
    const text = readFileSync(join(import.meta.dir, '../src/db/migrations/0020_sandbox_number_spaces.sql'), 'utf8')
    const backfill = text.split('--> statement-breakpoint').find((statement) => statement.includes('UPDATE'))
    expect(backfill).toBeDefined()
    const database = await openDatabase({ dataDir: 'memory://' })
    try {
      await database.migrate()
      const db = database.db
      const clock = manualClock('2026-05-04T09:00:00.000Z')
      const { platformId } = await ensureBootstrapPlatform(db, clock, { liveEnabled: true })
      const now = clock.now()
      const account = (id: string, mode: 'test' | 'live') => ({ id, platformId, mode, config: {} as never, createdAt: now, updatedAt: now })
      await db.insert(accounts).values([account('acct_sandbox', 'test'), account('acct_live', 'live')])
      const number = (id: string, accountId: string, mode: 'test' | 'live', n: string) => ({
        id,
        accountId,
        mode,
        number: n,
        space: 'placeholder',
        status: 'active' as const,
        createdAt: now,
        updatedAt: now,
      })
      await db.insert(phoneNumbers).values([number('pn_s', 'acct_sandbox', 'test', '+15005550000'), number('pn_l', 'acct_live', 'live', '+12125550000')])
      // As the rows stood before the migration: no space.
      await db.execute(sql.raw('ALTER TABLE "phone_numbers" ALTER COLUMN "space" DROP NOT NULL'))
      await db.execute(sql.raw('UPDATE "phone_numbers" SET "space" = NULL'))
      await db.execute(sql.raw(backfill!))
      const rows = await queryRows<{ id: string; space: string }>(db, sql`select id, space from phone_numbers order by id`)
      expect(rows).toEqual([
        { id: 'pn_l', space: 'live' },
        { id: 'pn_s', space: platformId },
      ])
    } finally {
      await database.close()
    }
  }, 60_000)
})
