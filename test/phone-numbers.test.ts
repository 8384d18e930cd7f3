/**
 * Sandbox phone numbers over HTTP: searching the sandbox range, ordering (instant,
 * all or nothing, the number cap, already-claimed numbers, races), listing and
 * reading numbers and orders, account isolation, and live keys (no carrier).
 *
 * Sandbox numbers are live on one account of a platform at a time (each platform
 * has its own sandbox: test/sandbox-number-spaces.test.ts), so
 * the tests take the numbers the search offers rather than fixed ones, and delete
 * their accounts at the end (which frees the numbers for the next run).
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { manualClock } from '../src/clock'
import { phoneNumbers } from '../src/db/schema'
import { firstActiveNumber } from '../src/services/numbers/phone-numbers'
import { startTestService } from './support/service'

const clock = manualClock('2026-05-04T09:00:00.000Z')
const t = await startTestService({}, { clock })
const db = t.service.database.db

type Ctx = { key: string; account: string }
type Creds = { key: string; account?: string }
const created: Ctx[] = []

async function ctx(key?: string, config?: Record<string, unknown>): Promise<Ctx> {
  const a = await t.account({ ...(key ? { key } : {}), ...(config ? { body: { config } } : {}) })
  const c = { key: a.key, account: a.id }
  created.push(c)
  return c
}

const SANDBOX = /^\+1500555\d{4}$/
const RESERVED = ['+15005550100', '+15005550101', '+15005550102', '+15005550103', '+15005550104']

async function available(c: Creds, qs = ''): Promise<string[]> {
  const r = await t.call('GET', `/v1/available-phone-numbers${qs}`, c)
  if (r.status !== 200) throw new Error(`search failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.data.map((o: any) => o.phone_number)
}

const order = (c: Creds, phone_numbers: unknown) => t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers } })

async function orderOk(c: Ctx, numbers: string[]) {
  const r = await order(c, numbers)
  if (r.status !== 200) throw new Error(`order failed: ${r.status} ${JSON.stringify(r.body)}`)
  clock.advance(1000)
  return r.body
}

/** Numbers nobody holds, to be ordered by the test. */
const fresh = async (c: Ctx, n: number) => available(c, `?quantity=${n}`)

const heldNumbers = async (c: Ctx, qs = '?limit=100') => (await t.call('GET', `/v1/phone-numbers${qs}`, c)).body.data.map((p: any) => p.number).sort()

const setCap = (c: Ctx, max: number) => t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { config: { max_phone_numbers: max } } })

describe('phone numbers', () => {
  afterAll(async () => {
    // Deleting the accounts releases their numbers for the next run against the same database.
    for (const c of created) await t.call('DELETE', `/v1/accounts/${c.account}`, { key: c.key })
  })

  describe('search available numbers', () => {
    test('a list envelope of sandbox offers, ascending, 10 by default, the same on every call', async () => {
      const c = await ctx()
      const r = await t.call('GET', '/v1/available-phone-numbers', c)
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ object: 'list', url: '/v1/available-phone-numbers', next_page_url: null, previous_page_url: null })
      expect(r.body.data).toHaveLength(10)
      for (const o of r.body.data) {
        expect(o).toEqual({
          object: 'available_phone_number',
          phone_number: expect.stringMatching(SANDBOX),
          area_code: '500',
          npa_nxx: '500555',
          city: null,
          state: null,
          zip: null,
          country: 'US',
        })
        expect(RESERVED).not.toContain(o.phone_number)
      }
      const numbers = r.body.data.map((o: any) => o.phone_number)
      expect([...numbers].sort()).toEqual(numbers)
      expect(await available(c)).toEqual(numbers)
    })

    test('quantity 1 to 100; offers leave out numbers live on any account of the platform and the simulator destinations', async () => {
      const c = await ctx()
      expect(await available(c, '?quantity=1')).toHaveLength(1)
      const hundred = await available(c, '?quantity=100')
      expect(hundred).toHaveLength(100)
      for (const n of RESERVED) expect(hundred).not.toContain(n)
      const other = await ctx(c.key)
      await orderOk(other, hundred.slice(0, 2))
      const after = await available(c, '?quantity=100')
      expect(after).not.toContain(hundred[0])
      expect(after).not.toContain(hundred[1])
      expect(after.slice(0, 98)).toEqual(hundred.slice(2))
    })

    test('area_code 500 and npa_nxx 500555 match; other codes give an empty list; city, state and zip are echoed', async () => {
      const c = await ctx()
      const all = await available(c, '?quantity=5')
      expect(await available(c, '?quantity=5&area_code=500')).toEqual(all)
      expect(await available(c, '?quantity=5&npa_nxx=500555&area_code=500')).toEqual(all)
      expect(await available(c, '?area_code=415')).toEqual([])
      expect(await available(c, '?npa_nxx=500556')).toEqual([])
      expect(await available(c, '?npa_nxx=415555')).toEqual([])
      const r = await t.call('GET', '/v1/available-phone-numbers?quantity=2&city=Springfield&state=il&zip=62701', c)
      expect(r.status).toBe(200)
      for (const o of r.body.data) expect(o).toMatchObject({ city: 'Springfield', state: 'IL', zip: '62701' })
    })

    test('bad queries are 400 validation_error', async () => {
      const c = await ctx()
      for (const qs of [
        'quantity=0',
        'quantity=101',
        'quantity=abc',
        'quantity=1.5',
        'area_code=50',
        'area_code=abc',
        'npa_nxx=5005',
        'zip=123',
        'state=Illinois',
        'city=',
        'color=red',
        'limit=5',
      ]) {
        const r = await t.call('GET', `/v1/available-phone-numbers?${qs}`, c)
        expect([qs, r.status, r.body.code]).toEqual([qs, 400, 'validation_error'])
      }
    })
  })

  describe('order numbers', () => {
    test('sandbox numbers order instantly: the order is complete, the numbers active and listed, the order audited', async () => {
      const c = await ctx()
      const wanted = await fresh(c, 2)
      const r = await order(c, wanted)
      expect(r.status).toBe(200)
      expect(r.body).toEqual({
        id: expect.stringMatching(/^pno_/),
        object: 'phone_number_order',
        status: 'complete',
        order_type: 'order',
        phone_numbers: wanted,
        created_at: clock.now().toISOString(),
        updated_at: clock.now().toISOString(),
      })
      const list = await t.call('GET', '/v1/phone-numbers', c)
      expect(list.body.data).toHaveLength(2)
      for (const p of list.body.data) {
        expect(p).toEqual({
          id: expect.stringMatching(/^pn_/),
          object: 'phone_number',
          account: c.account,
          number: expect.stringMatching(SANDBOX),
          status: 'active',
          order: r.body.id,
          created_at: clock.now().toISOString(),
          updated_at: clock.now().toISOString(),
        })
        expect((await t.call('GET', `/v1/phone-numbers/${p.id}`, c)).body).toEqual(p)
      }
      expect(list.body.data.map((p: any) => p.number).sort()).toEqual([...wanted].sort())
      expect((await t.call('GET', `/v1/phone-number-orders/${r.body.id}`, c)).body).toEqual(r.body)
      const audit = await t.call('GET', `/v1/audit-logs?resource=${r.body.id}`, c)
      expect(audit.body.data).toHaveLength(1)
      expect(audit.body.data[0]).toMatchObject({ event: 'createPhoneNumberOrder', outcome: 'success' })
    })

    test('a number outside the sandbox range (or a simulator destination) is 400 invalid_sandbox_phone_number; nothing is ordered', async () => {
      const c = await ctx()
      const [good] = await fresh(c, 1)
      for (const bad of ['+14155550100', '+15005560000', '+150055500001', '+1500555000', RESERVED[0]!]) {
        const r = await order(c, [good, bad])
        expect([bad, r.status, r.body.code]).toEqual([bad, 400, 'invalid_sandbox_phone_number'])
        expect(r.body.details).toBeUndefined()
      }
      expect(await heldNumbers(c)).toEqual([])
      expect((await t.call('GET', '/v1/phone-number-orders', c)).body.data).toEqual([])
    })

    test('bad bodies are 400 validation_error: missing, empty, over 100, repeated, not E.164, unknown fields', async () => {
      const c = await ctx()
      const [n] = await fresh(c, 1)
      const many = Array.from({ length: 101 }, (_, i) => `+1500555${String(i).padStart(4, '0')}`)
      for (const body of [
        {},
        { phone_numbers: [] },
        { phone_numbers: many },
        { phone_numbers: [n, n] },
        { phone_numbers: ['15005550000'] },
        { phone_numbers: 'x' },
        { phone_numbers: [n], extra: 1 },
        { phone_numbers: [42] },
      ]) {
        const r = await t.call('POST', '/v1/phone-number-orders', { ...c, body })
        expect([body, r.status, r.body.code]).toEqual([body, 400, 'validation_error'])
      }
      expect(await heldNumbers(c)).toEqual([])
    })

    test('numbers already live: 409 phone_numbers_already_claimed with both arrays always present; nothing is ordered', async () => {
      const a = await ctx()
      const b = await ctx(a.key)
      const [x, y, z, w] = await fresh(a, 4)
      await orderOk(a, [x!])
      await orderOk(b, [w!])

      const own = await order(a, [y!, x!])
      expect(own.status).toBe(409)
      expect(own.body.code).toBe('phone_numbers_already_claimed')
      expect(own.body.details).toEqual({ already_on_account: [x], in_service_elsewhere: [] })

      const elsewhere = await order(b, [x!, z!])
      expect(elsewhere.status).toBe(409)
      expect(elsewhere.body.details).toEqual({ already_on_account: [], in_service_elsewhere: [x] })

      const both = await order(a, [w!, z!, x!])
      expect(both.status).toBe(409)
      expect(both.body.details).toEqual({ already_on_account: [x], in_service_elsewhere: [w] })

      expect(await heldNumbers(a)).toEqual([x])
      expect(await heldNumbers(b)).toEqual([w])
      expect(await available(a, '?quantity=100')).toContain(y!)
      expect(await available(a, '?quantity=100')).toContain(z!)
    })

    test('a released number can be ordered again, by any account', async () => {
      const a = await ctx()
      const b = await ctx()
      const [x] = await fresh(a, 1)
      await orderOk(a, [x!])
      await db
        .update(phoneNumbers)
        .set({ status: 'released' })
        .where(and(eq(phoneNumbers.accountId, a.account), eq(phoneNumbers.number, x!)))
      expect(await available(b, '?quantity=100')).toContain(x!)
      await orderOk(b, [x!])
      expect(await heldNumbers(b)).toEqual([x])
      expect(await heldNumbers(a, '?status=released')).toEqual([x])
    })
  })

  describe('the number cap (config.max_phone_numbers)', () => {
    test('defaults to 25', async () => {
      const c = await ctx()
      const n = await fresh(c, 26)
      const over = await order(c, n)
      expect(over.status).toBe(409)
      expect(over.body.code).toBe('phone_number_limit_exceeded')
      expect(over.body.error).toContain('25')
      await orderOk(c, n.slice(0, 25))
      const one = await order(c, [n[25]])
      expect(one.status).toBe(409)
      expect(one.body.code).toBe('phone_number_limit_exceeded')
    })

    test('counts every number but released ones; the message states held, cap and attempted; no details', async () => {
      const c = await ctx(undefined, { max_phone_numbers: 3 })
      const n = await fresh(c, 6)
      await orderOk(c, n.slice(0, 2))
      const over = await order(c, n.slice(2, 4))
      expect(over.status).toBe(409)
      expect(over.body.code).toBe('phone_number_limit_exceeded')
      expect(over.body.details).toBeUndefined()
      expect(over.body.error).toBe('This account holds 2 phone numbers and its cap is 3; ordering 2 more would exceed it.')
      expect(await heldNumbers(c)).toEqual(n.slice(0, 2).sort())

      // pending and inactive numbers count; released ones do not
      await db.update(phoneNumbers).set({ status: 'inactive' }).where(eq(phoneNumbers.number, n[0]!))
      await orderOk(c, [n[2]!])
      await db.update(phoneNumbers).set({ status: 'pending' }).where(eq(phoneNumbers.number, n[1]!))
      expect((await order(c, [n[3]!])).body.error).toBe('This account holds 3 phone numbers and its cap is 3; ordering 1 more would exceed it.')
      await db.update(phoneNumbers).set({ status: 'released' }).where(eq(phoneNumbers.number, n[0]!))
      await orderOk(c, [n[3]!])

      // raising the cap clears the error
      expect((await order(c, [n[4]!, n[5]!])).status).toBe(409)
      expect((await setCap(c, 5)).status).toBe(200)
      await orderOk(c, [n[4]!, n[5]!])
      expect(await heldNumbers(c, '?limit=100&status=active')).toEqual([n[2], n[3], n[4], n[5]].sort())
    })

    test('a cap of 0 refuses every order', async () => {
      const c = await ctx(undefined, { max_phone_numbers: 0 })
      const r = await order(c, await fresh(c, 1))
      expect(r.status).toBe(409)
      expect(r.body.error).toBe('This account holds 0 phone numbers and its cap is 0; ordering 1 more would exceed it.')
    })
  })

  describe('concurrency', () => {
    test('accounts racing for one number: exactly one wins, the others get phone_numbers_already_claimed (never 500)', async () => {
      // One platform's accounts: each platform has a sandbox of its own.
      const first = await ctx()
      const racers = [first, ...(await Promise.all([ctx(first.key), ctx(first.key), ctx(first.key), ctx(first.key)]))]
      const [x, y] = await fresh(racers[0]!, 2)
      const results = await Promise.all(racers.map((c, i) => order(c, i % 2 === 0 ? [x!] : [y!, x!])))
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409])
      for (const r of results.filter((r) => r.status === 409)) {
        expect(r.body.code).toBe('phone_numbers_already_claimed')
        expect(r.body.details.already_on_account).toEqual([])
        expect(r.body.details.in_service_elsewhere).toContain(x)
      }
      const holders = (await Promise.all(racers.map((c) => heldNumbers(c)))).filter((h) => h.length > 0)
      expect(holders).toHaveLength(1)
    })

    test('accounts racing for overlapping numbers in opposite orders: one wins, no deadlock, nothing half-written', async () => {
      const first = await ctx()
      const racers = [first, ...(await Promise.all([ctx(first.key), ctx(first.key), ctx(first.key)]))]
      const n = await fresh(racers[0]!, 3)
      const asks = [n, [...n].reverse(), [n[2]!, n[0]!], [n[1]!, n[2]!]]
      const results = await Promise.all(racers.map((c, i) => order(c, asks[i])))
      for (const r of results) expect([409, 200]).toContain(r.status)
      const held = await Promise.all(racers.map((c) => heldNumbers(c)))
      for (const [i, r] of results.entries()) expect(held[i]).toEqual(r.status === 200 ? [...asks[i]!].sort() : [])
      expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1)
      expect(held.flat().length).toBe(new Set(held.flat()).size)
    })

    test('one account ordering concurrently never goes over its cap', async () => {
      const c = await ctx(undefined, { max_phone_numbers: 3 })
      const n = await fresh(c, 6)
      const results = await Promise.all(n.map((x) => order(c, [x])))
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 409, 409, 409])
      for (const r of results.filter((r) => r.status === 409)) expect(r.body.code).toBe('phone_number_limit_exceeded')
      expect(await heldNumbers(c)).toHaveLength(3)
      expect((await t.call('GET', '/v1/phone-number-orders', c)).body.data).toHaveLength(3)
    })

    test('one account ordering the same number twice at once: one order, the other sees it already on the account', async () => {
      const c = await ctx()
      const [x] = await fresh(c, 1)
      const results = await Promise.all([order(c, [x]), order(c, [x]), order(c, [x])])
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409])
      for (const r of results.filter((r) => r.status === 409)) expect(r.body.details).toEqual({ already_on_account: [x], in_service_elsewhere: [] })
    })
  })

  describe('lists and reads', () => {
    test('orders: newest first, status and order_type filters, pages', async () => {
      const c = await ctx()
      const n = await fresh(c, 3)
      const o1 = await orderOk(c, [n[0]!])
      const o2 = await orderOk(c, [n[1]!, n[2]!])
      const all = await t.call('GET', '/v1/phone-number-orders', c)
      expect(all.body.data.map((o: any) => o.id)).toEqual([o2.id, o1.id])
      expect((await t.call('GET', '/v1/phone-number-orders?status=complete&order_type=order', c)).body.data).toHaveLength(2)
      expect((await t.call('GET', '/v1/phone-number-orders?status=pending', c)).body.data).toEqual([])
      expect((await t.call('GET', '/v1/phone-number-orders?order_type=disconnect', c)).body.data).toEqual([])
      const first = await t.call('GET', '/v1/phone-number-orders?limit=1', c)
      expect(first.body.data.map((o: any) => o.id)).toEqual([o2.id])
      const second = await t.call('GET', first.body.next_page_url, c)
      expect(second.body.data.map((o: any) => o.id)).toEqual([o1.id])
      expect(second.body.next_page_url).toBeNull()
      for (const qs of ['status=done', 'order_type=port', 'limit=0', 'limit=101', 'page=bogus', 'other=1']) {
        const r = await t.call('GET', `/v1/phone-number-orders?${qs}`, c)
        expect([qs, r.status]).toEqual([qs, 400])
      }
    })

    test('numbers: newest first, status filter, pages', async () => {
      const c = await ctx()
      const n = await fresh(c, 3)
      await orderOk(c, [n[0]!])
      await orderOk(c, [n[1]!])
      await orderOk(c, [n[2]!])
      const all = await t.call('GET', '/v1/phone-numbers', c)
      expect(all.body.data.map((p: any) => p.number)).toEqual([n[2], n[1], n[0]])
      expect((await t.call('GET', '/v1/phone-numbers?status=active', c)).body.data).toHaveLength(3)
      expect((await t.call('GET', '/v1/phone-numbers?status=released', c)).body.data).toEqual([])
      const page = await t.call('GET', '/v1/phone-numbers?limit=2', c)
      expect(page.body.data).toHaveLength(2)
      expect((await t.call('GET', page.body.next_page_url, c)).body.data.map((p: any) => p.number)).toEqual([n[0]])
      for (const qs of ['status=gone', 'limit=abc']) expect((await t.call('GET', `/v1/phone-numbers?${qs}`, c)).status).toBe(400)
    })

    test('another account sees none of it: 404 phone_number_not_found and phone_number_order_not_found', async () => {
      const a = await ctx()
      const b = await ctx()
      const o = await orderOk(a, await fresh(a, 1))
      const pn = (await t.call('GET', '/v1/phone-numbers', a)).body.data[0]
      const n1 = await t.call('GET', `/v1/phone-numbers/${pn.id}`, b)
      expect([n1.status, n1.body.code]).toEqual([404, 'phone_number_not_found'])
      const o1 = await t.call('GET', `/v1/phone-number-orders/${o.id}`, b)
      expect([o1.status, o1.body.code]).toEqual([404, 'phone_number_order_not_found'])
      expect((await t.call('GET', '/v1/phone-numbers', b)).body.data).toEqual([])
      expect((await t.call('GET', '/v1/phone-number-orders', b)).body.data).toEqual([])
      expect((await t.call('GET', '/v1/phone-numbers/pn_nope', a)).body.code).toBe('phone_number_not_found')
      expect((await t.call('GET', '/v1/phone-number-orders/pno_nope', a)).body.code).toBe('phone_number_order_not_found')
    })

    test('firstActiveNumber: the oldest active number, or undefined', async () => {
      const c = await ctx()
      expect(await firstActiveNumber(db, c.account)).toBeUndefined()
      const n = await fresh(c, 3)
      await orderOk(c, [n[2]!])
      await orderOk(c, [n[0]!, n[1]!])
      expect((await firstActiveNumber(db, c.account))?.number).toBe(n[2])
      await db.update(phoneNumbers).set({ status: 'inactive' }).where(eq(phoneNumbers.number, n[2]!))
      expect([n[0], n[1]]).toContain((await firstActiveNumber(db, c.account))?.number)
    })
  })

  describe('credentials', () => {
    test('an account session with account_onboarding can search, order and read; no credentials is 401', async () => {
      const c = await ctx()
      const s = await t.call('POST', '/v1/account_sessions', {
        key: c.key,
        body: { account: c.account, components: { account_onboarding: { enabled: true } } },
      })
      const token = { key: s.body.client_secret as string }
      const [x] = await available(token, '?quantity=1')
      expect((await order(token, [x])).status).toBe(200)
      expect((await t.call('GET', '/v1/phone-numbers', token)).body.data).toHaveLength(1)
      expect((await t.call('GET', '/v1/phone-numbers')).status).toBe(401)
      expect((await t.call('GET', '/v1/phone-numbers', { key: c.key })).status).toBe(400) // no Service-Account header
    })

    test('live keys: search and order are 502 carrier_unavailable, nothing is written; lists work', async () => {
      const p = await t.platform({ live_enabled: true })
      const live = await ctx(p.live_key)
      const s = await t.call('GET', '/v1/available-phone-numbers', live)
      expect([s.status, s.body.code]).toEqual([502, 'carrier_unavailable'])
      const [x] = await fresh(await ctx(), 1)
      for (const numbers of [[x], ['+14155550123']]) {
        const r = await order(live, numbers)
        expect([r.status, r.body.code]).toEqual([502, 'carrier_unavailable'])
      }
      expect((await t.call('GET', '/v1/phone-numbers', live)).body.data).toEqual([])
      expect((await t.call('GET', '/v1/phone-number-orders', live)).body.data).toEqual([])
    })
  })

  describe('reassign (POST /v1/phone-numbers/{id}/reassign)', () => {
    const reassign = (c: Creds, id: string, body: unknown) => t.call('POST', `/v1/phone-numbers/${id}/reassign`, { ...c, body })
    const numberId = async (c: Ctx, number: string) =>
      (await t.call('GET', '/v1/phone-numbers?limit=100', c)).body.data.find((p: any) => p.number === number).id as string

    test('moves the number to another account of the platform; its routing stays behind', async () => {
      const a = await ctx()
      const b = await ctx(a.key)
      const [n] = await fresh(a, 1)
      await orderOk(a, [n!])
      const id = await numberId(a, n!)
      const user = (await t.call('POST', '/v1/users', { ...a, body: { email: 'route@example.com' } })).body.id
      expect((await t.call('POST', `/v1/phone-numbers/${id}/route`, { ...a, body: { target: user } })).status).toBe(200)
      const r = await reassign(a, id, { account: b.account })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ id, number: n, status: 'active' })
      expect(await heldNumbers(a)).toEqual([])
      expect(await heldNumbers(b)).toEqual([n])
      expect((await t.call('GET', `/v1/phone-numbers/${id}`, a)).status).toBe(404)
      // On the new account it rings every user until routed there.
      const route = await t.call('GET', `/v1/phone-numbers/${id}/route-preview`, b)
      expect(route.status).toBe(200)
      expect(JSON.stringify(route.body)).not.toContain(user)
    })

    test('the gaining account’s cap: 409 phone_number_limit_exceeded, nothing moved', async () => {
      const a = await ctx()
      const b = await ctx(a.key)
      expect((await setCap(b, 0)).status).toBe(200)
      const [n] = await fresh(a, 1)
      await orderOk(a, [n!])
      const id = await numberId(a, n!)
      const r = await reassign(a, id, { account: b.account })
      expect(r.status).toBe(409)
      expect(r.body.code).toBe('phone_number_limit_exceeded')
      expect(await heldNumbers(a)).toEqual([n])
    })

    test('bad targets are 400 naming account; an unknown number is 404; sessions cannot move numbers', async () => {
      const a = await ctx()
      const stranger = await ctx()
      const [n] = await fresh(a, 1)
      await orderOk(a, [n!])
      const id = await numberId(a, n!)
      for (const account of [a.account, stranger.account, 'acct_nothing']) {
        const r = await reassign(a, id, { account })
        expect(r.status).toBe(400)
        expect(Object.keys(r.body.details)).toEqual(['account'])
      }
      expect((await reassign(a, id, {})).status).toBe(400)
      expect((await reassign(a, 'pn_nothing', { account: stranger.account })).status).toBe(404)
      const session = await t.call('POST', '/v1/account_sessions', {
        key: a.key,
        body: { account: a.account, components: { account_onboarding: { enabled: true } } },
      })
      expect((await reassign({ key: session.body.client_secret }, id, { account: stranger.account })).status).toBe(403)
      expect(await heldNumbers(a)).toEqual([n])
    })
  })
})
