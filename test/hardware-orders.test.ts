/**
 * Hardware end to end over HTTP: the catalog, every hardware order operation and
 * every transition of the machine's table (machines/hardware-order.ts), the sandbox
 * reviewer's documented references on durable timers (VOICE_CLOCK_SPEED compresses
 * its 30 s and 60 s), fulfilled phones becoming devices with their intended users,
 * the location rule and the bad input the issue lists (each a 400, nothing stored).
 * PGlite, or PostgreSQL and NATS when DATABASE_URL and NATS_URL are set.
 */
import { describe, expect, test } from 'bun:test'
import { PHONE_MODELS } from '../src/services/devices/catalogue'
import { until } from './support/polling'
import { startTestService } from './support/service'

const t = await startTestService({ VOICE_CLOCK_SPEED: '1000' })
const a = await t.account()
const c = { key: a.key, account: a.id }
t.beforeStop(() => t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key }))

const post = (path: string, body: unknown = {}) => t.call('POST', path, { ...c, body })
const get = (path: string) => t.call('GET', path, c)
const home = a.account.main_location as string
const run = crypto.randomUUID().slice(0, 8)
const user = (await post('/v1/users', { name: 'Ada Desk', email: `ada-${run}@example.com` })).body.id as string
const user2 = (await post('/v1/users', { name: 'Bob Dect', email: `bob-${run}@example.com` })).body.id as string
const hex8 = () => Array.from({ length: 8 }, () => '0123456789ABCDEF'[Math.floor(Math.random() * 16)]).join('')
/** A fresh MAC (Yealink's OUI prefix 80:5E, random rest): no other run holds it. */
const freshMac = () => `805E${hex8()}`

async function create(body: Record<string, unknown>) {
  const r = await post('/v1/hardware-orders', { location: home, ...body })
  expect(r.status).toBe(200)
  return r.body
}
const statusOf = async (id: string) => (await get(`/v1/hardware-orders/${id}`)).body.status as string
const reaches = (id: string, status: string) => until(`hardware order ${id} to be ${status}`, async () => (await statusOf(id)) === status, 15_000)
const count = async () => (await get('/v1/hardware-orders?limit=100')).body.data.length as number

describe('GET /v1/catalog', () => {
  test('every provisioned phone model and the accessories, priced in cents, pageable', async () => {
    const all: any[] = []
    let r = await get('/v1/catalog?limit=5')
    expect(r.status).toBe(200)
    for (;;) {
      all.push(...r.body.data)
      if (!r.body.next_page_url) break
      r = await t.call('GET', r.body.next_page_url.replace(t.baseUrl, ''), c)
    }
    for (const p of PHONE_MODELS) {
      const item = all.find((i) => i.model === p.model && i.manufacturer.toLowerCase() === p.vendor)
      expect(item).toMatchObject({ object: 'catalog_item', device_type: p.type })
      expect(Number.isInteger(item.unit_price) && item.unit_price > 0).toBe(true)
    }
    expect(all.some((i) => i.device_type === 'accessory')).toBe(true)
    expect(all.find((i) => i.model === 'W56H').active).toBe(false)
    expect(new Set(all.map((i) => i.id)).size).toBe(all.length)
    const acc = await get('/v1/catalog?device_type=accessory&limit=100')
    expect(acc.body.data.every((i: any) => i.device_type === 'accessory')).toBe(true)
  })
})

describe('the lifecycle', () => {
  test('submitted → approved → fulfilled: phones and DECT units become devices with their users, accessories do not', async () => {
    const mac = freshMac()
    const o = await create({
      items: [
        { catalog_item: 'hw_yealink_t54w', user, mac_address: mac.toLowerCase() },
        { catalog_item: 'hw_yealink_w60b' },
        { catalog_item: 'hw_yealink_w73h', quantity: 2, user: user2 },
        { catalog_item: 'hw_yealink_exp50', quantity: 2 },
      ],
    })
    expect(o).toMatchObject({ object: 'hardware_order', status: 'submitted', rejection_reason: null, location: home })
    expect(o.items).toHaveLength(6)
    expect(o.items[0]).toMatchObject({ user, mac_address: mac, device: null })
    expect(o.total_price).toBe(21900 + 8900 + 2 * 6900 + 2 * 11900)
    await reaches(o.id, 'fulfilled')
    const done = (await get(`/v1/hardware-orders/${o.id}?expand[]=catalog_items`)).body
    expect(done.catalog_items.data.map((x: any) => x.id).sort()).toEqual(['hw_yealink_exp50', 'hw_yealink_t54w', 'hw_yealink_w60b', 'hw_yealink_w73h'])
    const [phone, base, h1, h2, acc1, acc2] = done.items
    expect(acc1.device).toBeNull()
    expect(acc2.device).toBeNull()
    const dev = (await get(`/v1/devices/${phone.device}`)).body
    expect(dev).toMatchObject({ type: 'deskphone', mac_address: mac, location: home })
    expect((await get(`/v1/devices/${phone.device}/users`)).body.data.map((u: any) => u.user)).toEqual([user])
    expect(base.mac_address).toMatch(/^02[0-9A-F]{10}$/)
    expect((await get(`/v1/devices/${base.device}`)).body.type).toBe('dect_base')
    for (const h of [h1, h2]) {
      const d = (await get(`/v1/devices/${h.device}`)).body
      expect(d.type).toBe('dect_handset')
      expect((await get(`/v1/devices/${h.device}/users`)).body.data.map((u: any) => u.user)).toEqual([user2])
    }
    // final: nothing more
    expect((await post(`/v1/hardware-orders/${o.id}`, { status: 'cancelled' })).body.code).toBe('hardware_order_invalid_state')
    expect((await post(`/v1/hardware-orders/${o.id}/items/${phone.id}`, { user: null })).status).toBe(409)
  })

  test('submitted → rejected (SANDBOX-REJECT) with rejection_reason; final', async () => {
    const o = await create({ reference: 'sandbox-reject', items: [{ catalog_item: 'hw_polycom_vvx_450' }] })
    await reaches(o.id, 'rejected')
    const r = (await get(`/v1/hardware-orders/${o.id}`)).body
    expect(r.rejection_reason).toContain('SANDBOX-REJECT')
    expect(r.items[0].device).toBeNull()
    const x = await post(`/v1/hardware-orders/${o.id}`, { status: 'cancelled' })
    expect({ status: x.status, code: x.body.code }).toEqual({ status: 409, code: 'hardware_order_invalid_state' })
    expect((await post(`/v1/hardware-orders/${o.id}`, { items: [{ catalog_item: 'hw_polycom_vvx_450' }] })).status).toBe(409)
  })

  test('submitted: items replaced, intents set, then cancelled; cancelled is final', async () => {
    const o = await create({ reference: 'SANDBOX-HOLD-REVIEW', items: [{ catalog_item: 'hw_yealink_t31p' }] })
    const u = await post(`/v1/hardware-orders/${o.id}`, { items: [{ catalog_item: 'hw_yealink_t33g', quantity: 2 }, { catalog_item: 'hw_poe_injector' }] })
    expect(u.status).toBe(200)
    expect(u.body.items.map((i: any) => i.catalog_item)).toEqual(['hw_yealink_t33g', 'hw_yealink_t33g', 'hw_poe_injector'])
    const item = u.body.items[1]
    const mac = freshMac()
    const s = await post(`/v1/hardware-orders/${o.id}/items/${item.id}`, { user, mac_address: mac })
    expect(s.status).toBe(200)
    expect(s.body.items[1]).toMatchObject({ id: item.id, user, mac_address: mac })
    const read = (await get(`/v1/hardware-orders/${o.id}`)).body
    expect(read.items[1]).toMatchObject({ user, mac_address: mac })
    expect(read.status).toBe('submitted')
    const x = await post(`/v1/hardware-orders/${o.id}`, { status: 'cancelled' })
    expect(x.body.status).toBe('cancelled')
    expect(await statusOf(o.id)).toBe('cancelled')
    for (const r of [
      await post(`/v1/hardware-orders/${o.id}`, { status: 'cancelled' }),
      await post(`/v1/hardware-orders/${o.id}`, { items: [{ catalog_item: 'hw_yealink_t33g' }] }),
      await post(`/v1/hardware-orders/${o.id}/items/${item.id}`, { user: null }),
    ])
      expect({ status: r.status, code: r.body.code }).toEqual({ status: 409, code: 'hardware_order_invalid_state' })
  })

  test('approved: items refused, intents taken, cancelled', async () => {
    const o = await create({ reference: 'SANDBOX-HOLD-DELIVERY', items: [{ catalog_item: 'hw_polycom_vvx_250' }] })
    await reaches(o.id, 'approved')
    const x = await post(`/v1/hardware-orders/${o.id}`, { items: [{ catalog_item: 'hw_polycom_vvx_150' }] })
    expect({ status: x.status, code: x.body.code }).toEqual({ status: 409, code: 'hardware_order_invalid_state' })
    const s = await post(`/v1/hardware-orders/${o.id}/items/${o.items[0].id}`, { user })
    expect(s.body.items[0].user).toBe(user)
    expect((await post(`/v1/hardware-orders/${o.id}`, { status: 'cancelled' })).body.status).toBe('cancelled')
    await new Promise((r) => setTimeout(r, 300))
    expect(await statusOf(o.id)).toBe('cancelled')
  })

  test('list, status filter, 404s', async () => {
    const o = await create({ reference: 'SANDBOX-HOLD-REVIEW', items: [{ catalog_item: 'hw_yealink_yhs36' }] })
    const l = await get('/v1/hardware-orders?status=submitted&limit=100')
    expect(l.body.data.map((x: any) => x.id)).toContain(o.id)
    expect((await get('/v1/hardware-orders/hwo_nope')).body.code).toBe('hardware_order_not_found')
    expect((await post(`/v1/hardware-orders/${o.id}/items/hwi_nope`, { user })).body.code).toBe('hardware_order_item_not_found')
    await post(`/v1/hardware-orders/${o.id}`, { status: 'cancelled' })
  })
})

describe('a location with pending hardware orders cannot be deleted', () => {
  test('409 location_in_use while submitted; deleted once the order is cancelled', async () => {
    const address = { address_number: '7', street: 'Elm St', city: 'Austin', state: 'TX', postal_code: '73301', country: 'US' }
    const loc = (await post('/v1/locations', { name: `Branch ${run}`, address })).body.id as string
    const o = await create({ location: loc, reference: 'SANDBOX-HOLD-REVIEW', items: [{ catalog_item: 'hw_yealink_psu_5v2a' }] })
    const d = await t.call('DELETE', `/v1/locations/${loc}`, c)
    expect({ status: d.status, code: d.body.code }).toEqual({ status: 409, code: 'location_in_use' })
    await post(`/v1/hardware-orders/${o.id}`, { status: 'cancelled' })
    expect((await t.call('DELETE', `/v1/locations/${loc}`, c)).status).toBe(200)
  })
})

describe('bad input: each a 400 with field details, nothing stored', () => {
  test('create', async () => {
    const before = await count()
    const bad = async (body: Record<string, unknown>, field: string) => {
      const r = await post('/v1/hardware-orders', { location: home, items: [{ catalog_item: 'hw_yealink_t54w' }], ...body })
      expect({ status: r.status, code: r.body.code }).toEqual({ status: 400, code: 'validation_error' })
      expect(Object.keys(r.body.details ?? {})).toContain(field)
    }
    await bad({ items: [{ catalog_item: 'hw_nokia_3310' }] }, 'items[0].catalog_item')
    await bad({ items: [{ catalog_item: 'hw_yealink_w56h' }] }, 'items[0].catalog_item')
    await bad({ items: [{ catalog_item: 'hw_yealink_t54w', quantity: 0 }] }, 'items[0].quantity')
    await bad({ items: [{ catalog_item: 'hw_yealink_t54w', quantity: 51 }] }, 'items[0].quantity')
    await bad(
      { items: [{ catalog_item: 'hw_yealink_t54w', quantity: 50 }, { catalog_item: 'hw_yealink_t31p', quantity: 50 }, { catalog_item: 'hw_poe_injector' }] },
      'items',
    )
    await bad({ items: [{ catalog_item: 'hw_yealink_t54w', user: 'usr_nobody' }] }, 'items[0].user')
    await bad({ items: [{ catalog_item: 'hw_yealink_exp50', user }] }, 'items[0].user')
    await bad({ items: [{ catalog_item: 'hw_yealink_t54w', mac_address: 'zz' }] }, 'items[0].mac_address')
    await bad({ items: [{ catalog_item: 'hw_yealink_t54w', quantity: 2, mac_address: freshMac() }] }, 'items[0].mac_address')
    await bad({ items: [{ catalog_item: 'hw_yealink_w73h' }] }, 'items[0].base')
    await bad({ items: [{ catalog_item: 'hw_yealink_w73h', base: 'dev_nope' }] }, 'items[0].base')
    await bad({ location: 'loc_nope' }, 'location')
    const other = await t.account()
    await bad({ location: other.account.main_location }, 'location')
    await t.call('DELETE', `/v1/accounts/${other.id}`, { key: other.key })
    expect(await count()).toBe(before)
  })

  test('update and intents', async () => {
    const o = await create({ reference: 'SANDBOX-HOLD-REVIEW', items: [{ catalog_item: 'hw_yealink_t54w' }, { catalog_item: 'hw_yealink_w60b' }] })
    const u = await post(`/v1/hardware-orders/${o.id}`, { items: [{ catalog_item: 'hw_unknown' }] })
    expect(u.body.details).toHaveProperty(['items[0].catalog_item'])
    const i1 = await post(`/v1/hardware-orders/${o.id}/items/${o.items[0].id}`, { user: 'usr_nobody' })
    expect({ status: i1.status, field: Object.keys(i1.body.details) }).toEqual({ status: 400, field: ['user'] })
    const i2 = await post(`/v1/hardware-orders/${o.id}/items/${o.items[1].id}`, { user })
    expect(Object.keys(i2.body.details)).toEqual(['user'])
    const e = await post(`/v1/hardware-orders/${o.id}`, {})
    expect(e.status).toBe(400)
    const after = (await get(`/v1/hardware-orders/${o.id}`)).body
    expect(after.items.map((i: any) => [i.id, i.user])).toEqual(o.items.map((i: any) => [i.id, null]))
    await post(`/v1/hardware-orders/${o.id}`, { status: 'cancelled' })
  })
})
