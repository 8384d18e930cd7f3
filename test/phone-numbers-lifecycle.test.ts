/**
 * The phone-number lifecycle over HTTP: POST /v1/phone-numbers/{id} (active,
 * inactive, recovering a released number against the cap), POST .../disconnect
 * (a disconnect order; the 30-day minimum hold), GET/POST .../sms-port-out, and
 * phone_number.activated / .disconnected on live accounts (checked in the outbox:
 * an event exists exactly when its change committed), none for sandbox accounts.
 *
 * Live numbers cannot be ordered here (no carrier): the live account's numbers are
 * written as a completed port would write them.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import { manualClock } from '../src/clock'
import { events, phoneNumbers, portOrders } from '../src/db/schema'
import { activatePortedNumbers } from '../src/services/porting/port-orders'
import { startTestService } from './support/service'

const clock = manualClock('2026-06-01T09:00:00.000Z')
const t = await startTestService({}, { clock })
const db = t.service.database.db
const DAY = 86_400_000

type Ctx = { key: string; account: string }
const created: Ctx[] = []

async function ctx(key?: string): Promise<Ctx> {
  const a = await t.account(key ? { key } : {})
  const c = { key: a.key, account: a.id }
  created.push(c)
  return c
}

async function orderNumbers(c: Ctx, n: number): Promise<{ id: string; number: string }[]> {
  const offers = (await t.call('GET', `/v1/available-phone-numbers?quantity=${n}`, c)).body.data.map((o: any) => o.phone_number)
  const r = await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: offers } })
  if (r.status !== 200) throw new Error(`order failed: ${r.status} ${JSON.stringify(r.body)}`)
  const list = (await t.call('GET', '/v1/phone-numbers?limit=100', c)).body.data
  return offers.map((num: string) => list.find((p: any) => p.number === num))
}

const update = (c: Ctx, id: string, body: unknown) => t.call('POST', `/v1/phone-numbers/${id}`, { ...c, body })
const disconnect = (c: Ctx, id: string) => t.call('POST', `/v1/phone-numbers/${id}/disconnect`, c)
const getNumber = async (c: Ctx, id: string) => (await t.call('GET', `/v1/phone-numbers/${id}`, c)).body
const setCap = (c: Ctx, max: number) => t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { config: { max_phone_numbers: max } } })

async function outbox(accountId: string) {
  const rows = await db.select({ type: events.type, body: events.body }).from(events).where(eq(events.accountId, accountId)).orderBy(asc(events.seq))
  return rows.filter((r) => r.type.startsWith('phone_number.')).map((r) => ({ type: r.type, body: JSON.parse(r.body) }))
}

describe('phone number lifecycle', () => {
  afterAll(async () => {
    // Deleting the accounts frees their sandbox numbers for the next run against the same database.
    for (const c of created) await t.call('DELETE', `/v1/accounts/${c.account}`, { key: c.key })
  })

  describe('POST /v1/phone-numbers/{id}', () => {
    test('active and inactive switch; validation names the field; unknown ids are 404', async () => {
      const c = await ctx()
      const [pn] = await orderNumbers(c, 1)
      let r = await update(c, pn!.id, { status: 'inactive' })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ id: pn!.id, object: 'phone_number', status: 'inactive' })
      r = await update(c, pn!.id, { status: 'active' })
      expect(r.status).toBe(200)
      expect(r.body.status).toBe('active')
      r = await update(c, pn!.id, {})
      expect(r.status).toBe(200)
      expect(r.body.status).toBe('active')

      for (const body of [{ status: 'released' }, { status: 'pending' }, { status: 7 }]) {
        r = await update(c, pn!.id, body)
        expect(r.status).toBe(400)
        expect(r.body.code).toBe('validation_error')
        expect(Object.keys(r.body.details)).toContain('status')
      }
      r = await update(c, pn!.id, { nickname: 'x' })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect((await getNumber(c, pn!.id)).status).toBe('active')

      r = await update(c, 'pn_doesnotexist', { status: 'inactive' })
      expect(r.status).toBe(404)
      expect(r.body.code).toBe('phone_number_not_found')
    })

    test('a pending number waits for its order', async () => {
      const c = await ctx()
      const [pn] = await orderNumbers(c, 1)
      await db.update(phoneNumbers).set({ status: 'pending' }).where(eq(phoneNumbers.id, pn!.id))
      const r = await update(c, pn!.id, { status: 'inactive' })
      expect(r.status).toBe(409)
      expect(r.body.code).toBeUndefined()
      expect((await disconnect(c, pn!.id)).status).toBe(409)
      expect((await getNumber(c, pn!.id)).status).toBe('pending')
    })
  })

  describe('POST /v1/phone-numbers/{id}/disconnect and recovery', () => {
    test('refused within the 30-day hold; afterwards a complete disconnect order releases the number; recovery counts against the cap', async () => {
      const c = await ctx()
      const [a, b] = await orderNumbers(c, 2)
      let r = await disconnect(c, a!.id)
      expect(r.status).toBe(409)
      expect(r.body.code).toBeUndefined()
      expect(r.body.error).toContain('30-day')
      expect((await getNumber(c, a!.id)).status).toBe('active')
      expect((await t.call('GET', '/v1/phone-number-orders?order_type=disconnect', c)).body.data).toEqual([])

      clock.advance(30 * DAY + 1000)
      r = await disconnect(c, a!.id)
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ object: 'phone_number_order', order_type: 'disconnect', status: 'complete', phone_numbers: [a!.number] })
      const orderId = r.body.id
      expect((await t.call('GET', `/v1/phone-number-orders/${orderId}`, c)).body.order_type).toBe('disconnect')
      expect((await t.call('GET', '/v1/phone-number-orders?order_type=disconnect', c)).body.data.map((o: any) => o.id)).toEqual([orderId])
      expect((await getNumber(c, a!.id)).status).toBe('released')
      expect((await t.call('GET', '/v1/phone-numbers?status=released', c)).body.data.map((p: any) => p.id)).toEqual([a!.id])

      r = await disconnect(c, a!.id)
      expect(r.status).toBe(409)
      expect(r.body.code).toBeUndefined()
      expect((await update(c, a!.id, { status: 'inactive' })).status).toBe(409)

      // Recovery counts against the cap: one number held, cap 1.
      expect((await setCap(c, 1)).status).toBe(200)
      r = await update(c, a!.id, { status: 'active' })
      expect(r.status).toBe(409)
      expect(r.body.code).toBe('phone_number_limit_exceeded')
      expect(r.body.error).toContain('holds 1 phone number')
      expect(r.body.error).toContain('cap is 1')
      expect((await getNumber(c, a!.id)).status).toBe('released')

      expect((await setCap(c, 2)).status).toBe(200)
      r = await update(c, a!.id, { status: 'active' })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ id: a!.id, number: a!.number, status: 'active' })
      // A recovered number starts a new minimum hold.
      expect((await disconnect(c, a!.id)).status).toBe(409)
      expect((await getNumber(c, b!.id)).status).toBe('active')
      // Sandbox accounts get no billable-count events.
      expect(await outbox(c.account)).toEqual([])
    })

    test('a released number that went live elsewhere is not recoverable', async () => {
      const c = await ctx()
      const other = await ctx(c.key)
      const [a] = await orderNumbers(c, 1)
      clock.advance(31 * DAY)
      expect((await disconnect(c, a!.id)).status).toBe(200)
      const r1 = await t.call('POST', '/v1/phone-number-orders', { ...other, body: { phone_numbers: [a!.number] } })
      expect(r1.status).toBe(200)
      const r = await update(c, a!.id, { status: 'active' })
      expect(r.status).toBe(409)
      expect(r.body.code).toBeUndefined()
      expect((await getNumber(c, a!.id)).status).toBe('released')
    })
  })

  describe('GET/POST /v1/phone-numbers/{id}/sms-port-out', () => {
    test('locked by default; open for 72 hours; lock; validation; released numbers cannot open', async () => {
      const c = await ctx()
      const [pn] = await orderNumbers(c, 1)
      const path = `/v1/phone-numbers/${pn!.id}/sms-port-out`
      let r = await t.call('GET', path, c)
      expect(r.status).toBe(200)
      expect(r.body).toEqual({ object: 'sms_port_out', phone_number: pn!.id, number: pn!.number, status: 'locked', opened_at: null, expires_at: null })

      r = await t.call('POST', path, { ...c, body: { status: 'open' } })
      expect(r.status).toBe(200)
      const now = clock.now()
      expect(r.body).toMatchObject({ status: 'open', opened_at: now.toISOString(), expires_at: new Date(now.getTime() + 72 * 3_600_000).toISOString() })
      expect((await t.call('GET', path, c)).body.status).toBe('open')

      r = await t.call('POST', path, { ...c, body: { status: 'locked' } })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ status: 'locked', opened_at: null, expires_at: null })

      for (const body of [{ status: 'unlocked' }, {}]) {
        r = await t.call('POST', path, { ...c, body })
        expect(r.status).toBe(400)
        expect(r.body.code).toBe('validation_error')
        expect(Object.keys(r.body.details)).toContain('status')
      }

      // The window locks again by itself.
      expect((await t.call('POST', path, { ...c, body: { status: 'open' } })).status).toBe(200)
      clock.advance(72 * 3_600_000 + 1000)
      expect((await t.call('GET', path, c)).body.status).toBe('locked')

      expect((await t.call('GET', '/v1/phone-numbers/pn_doesnotexist/sms-port-out', c)).body.code).toBe('phone_number_not_found')

      clock.advance(30 * DAY)
      expect((await t.call('POST', path, { ...c, body: { status: 'open' } })).status).toBe(200)
      expect((await disconnect(c, pn!.id)).status).toBe(200)
      expect((await t.call('GET', path, c)).body.status).toBe('locked')
      r = await t.call('POST', path, { ...c, body: { status: 'open' } })
      expect(r.status).toBe(409)
      expect(r.body.code).toBeUndefined()
    })
  })

  describe('phone_number.activated / .disconnected on a live account', () => {
    test('disconnect and recovery emit one event each, in the outbox with order, request and billable counts', async () => {
      const p = await t.platform({ live_enabled: true })
      const live = await ctx(p.live_key)
      const digits = String(Date.now()).slice(-7)
      const now = clock.now()
      const rows = await db
        .insert(phoneNumbers)
        .values(
          [`+1212${digits}`, `+1646${digits}`].map((number, i) => ({
            id: `pn_lifecycle${digits}${i}`,
            accountId: live.account,
            mode: 'live' as const,
            number,
            space: 'live',
            status: 'active' as const,
            orderId: null,
            createdAt: new Date(now.getTime() - (i === 0 ? 40 : 2) * DAY),
            updatedAt: now,
          })),
        )
        .returning()
      const [old, recent] = rows

      // Within the hold: refused, nothing written.
      expect((await disconnect(live, recent!.id)).status).toBe(409)
      // Status changes that keep the number on the account send nothing.
      expect((await update(live, old!.id, { status: 'inactive' })).status).toBe(200)
      expect((await update(live, old!.id, { status: 'active' })).status).toBe(200)
      expect(await outbox(live.account)).toEqual([])

      const d = await disconnect(live, old!.id)
      expect(d.status).toBe(200)
      let ev = await outbox(live.account)
      expect(ev.length).toBe(1)
      expect(ev[0]!.body).toMatchObject({
        type: 'phone_number.disconnected',
        account: live.account,
        data: {
          phone_number: old!.id,
          number: old!.number,
          order: d.body.id,
          previous_billable_dids: 2,
          current_billable_dids: 1,
          request: d.headers.get('x-request-id'),
        },
      })
      expect(ev[0]!.body.account_id).toBeUndefined()

      // A refused recovery writes nothing.
      expect((await setCap(live, 1)).status).toBe(200)
      expect((await update(live, old!.id, { status: 'active' })).body.code).toBe('phone_number_limit_exceeded')
      expect((await outbox(live.account)).length).toBe(1)

      expect((await setCap(live, 25)).status).toBe(200)
      const r = await update(live, old!.id, { status: 'active' })
      expect(r.status).toBe(200)
      ev = await outbox(live.account)
      expect(ev.length).toBe(2)
      expect(ev[1]!.body).toMatchObject({
        type: 'phone_number.activated',
        account: live.account,
        data: { phone_number: old!.id, number: old!.number, previous_billable_dids: 1, current_billable_dids: 2, request: r.headers.get('x-request-id') },
      })
      expect(ev[1]!.body.data.order).toBeUndefined()
      expect(typeof ev[1]!.body.data.changed_at).toBe('string')
    })

    test('a reassign sends disconnected on the losing account and activated on the gaining one, with the same request; a refused one sends nothing', async () => {
      const p = await t.platform({ live_enabled: true })
      const losing = await ctx(p.live_key)
      const gaining = await ctx(p.live_key)
      const [moving] = await liveNumbers(losing.account, 2, 40)
      await liveNumbers(gaining.account, 1, 40)

      expect((await setCap(gaining, 1)).status).toBe(200)
      const refused = await t.call('POST', `/v1/phone-numbers/${moving!.id}/reassign`, { ...losing, body: { account: gaining.account } })
      expect(refused.body.code).toBe('phone_number_limit_exceeded')
      expect(await outbox(losing.account)).toEqual([])
      expect(await outbox(gaining.account)).toEqual([])

      expect((await setCap(gaining, 25)).status).toBe(200)
      const r = await t.call('POST', `/v1/phone-numbers/${moving!.id}/reassign`, { ...losing, body: { account: gaining.account } })
      expect(r.status).toBe(200)
      const request = r.headers.get('x-request-id')
      const lost = await outbox(losing.account)
      const gained = await outbox(gaining.account)
      expect(lost).toHaveLength(1)
      expect(gained).toHaveLength(1)
      expect(lost[0]!.body).toMatchObject({
        type: 'phone_number.disconnected',
        account: losing.account,
        data: { phone_number: moving!.id, number: moving!.number, previous_billable_dids: 2, current_billable_dids: 1, request },
      })
      expect(gained[0]!.body).toMatchObject({
        type: 'phone_number.activated',
        account: gaining.account,
        data: { phone_number: moving!.id, number: moving!.number, previous_billable_dids: 1, current_billable_dids: 2, request },
      })
      expect(lost[0]!.body.data.order).toBeUndefined()
    })

    test('a completed port activates its numbers with phone_number.activated carrying the order, one per number', async () => {
      const p = await t.platform({ live_enabled: true })
      const live = await ctx(p.live_key)
      await liveNumbers(live.account, 1, 40)
      const digits = String(Date.now()).slice(-7)
      const ported = [`+1415${digits}`, `+1510${digits}`]
      const orderId = `po_lifecycle${digits}`
      const at = clock.now()
      await db.insert(portOrders).values({
        id: orderId,
        accountId: live.account,
        mode: 'live',
        status: 'foc',
        details: {
          phone_numbers: ported,
          subscriber: { btn: null, business_name: null, approver_name: null, account_number: null, pin: null, address: null },
          approval: null,
          requested_foc_date: '2026-06-10',
          requested_foc_time: null,
          rejection: null,
        },
        submittedAt: at,
        createdAt: at,
        updatedAt: at,
      })
      expect(await db.transaction((tx) => activatePortedNumbers(tx as never, clock, { orderId, numbers: ported, at: at.toISOString() }))).toBe(2)
      const ev = await outbox(live.account)
      expect(ev.map((e) => [e.type, e.body.data.number, e.body.data.previous_billable_dids, e.body.data.current_billable_dids, e.body.data.order])).toEqual([
        ['phone_number.activated', ported.slice().sort()[0], 1, 2, orderId],
        ['phone_number.activated', ported.slice().sort()[1], 2, 3, orderId],
      ])
      // A port completes without a request of the customer's.
      for (const e of ev) expect(e.body.data.request).toBeUndefined()
    })
  })
})

/** Live numbers of the account, written as a completed port writes them (no live carrier here), active `ageDays` ago. */
async function liveNumbers(accountId: string, n: number, ageDays: number) {
  const base = String(Date.now() + Math.floor(Math.random() * 1e6)).slice(-6)
  const at = new Date(clock.now().getTime() - ageDays * DAY)
  return db
    .insert(phoneNumbers)
    .values(
      Array.from({ length: n }, (_, i) => ({
        id: `pn_live${base}${i}${accountId.slice(-6)}`,
        accountId,
        mode: 'live' as const,
        number: `+1917${base}${i}`,
        space: 'live',
        status: 'active' as const,
        orderId: null,
        createdAt: at,
        updatedAt: at,
      })),
    )
    .returning()
}
