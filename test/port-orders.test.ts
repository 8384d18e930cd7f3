/**
 * Number porting end to end over HTTP: port-in eligibility, every port order
 * operation and every row of the spec's "Port order (status)" table, the sandbox
 * carrier's documented inputs on durable timers (VOICE_CLOCK_SPEED compresses its
 * 30 s answers), webhooks received and verified, and the bad input the issue lists.
 * PGlite, or PostgreSQL and NATS when DATABASE_URL and NATS_URL are set.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { actorSnapshots, durableTimers, portOrders } from '../src/db/schema'
import { addBusinessDays, addDays, easternDate } from '../src/services/porting/business-days'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { pdfText } from './support/pdf'
import { startWebhookReceiver } from './support/webhook-receiver'

const t = await startTestService({ VOICE_CLOCK_SPEED: '1000', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const rx = await startWebhookReceiver({ autoStop: false })
const a = await t.account()
const c = { key: a.key, account: a.id }
const ep = await t.call('POST', '/v1/webhook_endpoints', { ...c, body: { url: rx.url, enabled_events: ['*'] } })
afterAll(() => rx.stop())
t.beforeStop(() => t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key }))

const today = () => easternDate(new Date())
const okDate = () => addBusinessDays(today(), 8)
const digits = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 10)).join('')
/** A fresh exchange per call: numbers no other run holds. */
const exchange = () => `+1${2 + Math.floor(Math.random() * 8)}${digits(2)}${2 + Math.floor(Math.random() * 8)}${digits(2)}`
const num = (line: string) => `${exchange()}${line}`
const subscriber = {
  btn: '+12125550123',
  business_name: 'Acme Dental',
  approver_name: 'Ada Owner',
  address: { house_number: '100', street_name: 'Main St', city: 'Springfield', state: 'IL', zip: '62701' },
}

const post = (path: string, body: unknown = {}) => t.call('POST', path, { ...c, body })
const get = (path: string) => t.call('GET', path, c)
async function create(numbers: string[], extra: Record<string, unknown> = {}) {
  const r = await post('/v1/port-orders', { phone_numbers: numbers, subscriber, requested_foc_date: okDate(), requested_foc_time: '10:00', ...extra })
  expect(r.status).toBe(200)
  return r.body
}
const approve = (id: string) => post(`/v1/port-orders/${id}/approve`, { signature: 'Ada Owner', ip: '203.0.113.7' })
async function submitted(numbers: string[], extra: Record<string, unknown> = {}) {
  const o = await create(numbers, extra)
  expect((await approve(o.id)).status).toBe(200)
  const s = await post(`/v1/port-orders/${o.id}/submit`)
  expect(s.status).toBe(200)
  expect(s.body.status).toBe('submitted')
  return o.id as string
}
const statusOf = async (id: string) => (await get(`/v1/port-orders/${id}`)).body.status as string
const reaches = (id: string, status: string) => until(`port order ${id} to be ${status}`, async () => (await statusOf(id)) === status, 15_000)
/** The order's webhooks, verified, once each (delivery is at least once), once `n` distinct ones arrived. */
async function webhooks(id: string, n: number) {
  const distinct = () => new Set(rx.requests.filter((r) => r.body?.data?.port_order === id).map((r) => r.body.id)).size
  await until(`${n} webhooks of ${id}`, () => distinct() >= n, 15_000)
  const out: any[] = []
  for (const r of rx.requests.filter((r) => r.body?.data?.port_order === id)) out.push(await rx.verify(r, ep.body.secret))
  const seen = new Map(out.map((e) => [e.id, e]))
  return [...seen.values()].sort((x, y) => (x.data.changed_at < y.data.changed_at ? -1 : 1))
}
const pdf = (text = 'bill') => new TextEncoder().encode(`%PDF-1.4\n1 0 obj<<>>endobj\n% ${text}\ntrailer<<>>\n%%EOF\n`)
function upload(id: string, kind: 'bill-copy' | 'csr', bytes: Uint8Array, type = 'application/pdf') {
  const form = new FormData()
  form.set('file', new Blob([bytes], { type }), 'doc.pdf')
  return fetch(`${t.baseUrl}/v1/port-orders/${id}/${kind}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account },
    body: form,
  })
}

describe('POST /v1/port-in-eligibility', () => {
  test('platform-scoped: portable and non-portable records of the documented shape', async () => {
    const landline = num('1234')
    const wireless = num('7123')
    const r = await t.call('POST', '/v1/port-in-eligibility', {
      key: c.key,
      body: { phone_numbers: [landline, wireless, num('9901'), '+15005550150', '+442071234567'] },
    })
    expect(r.status).toBe(200)
    expect(r.body.portable_numbers).toEqual([
      { phone_number: landline, losing_carrier_name: 'Sandbox Telecom', losing_carrier_spid: '0123', is_wireless: false, account_number_required: false },
      { phone_number: wireless, losing_carrier_name: 'Sandbox Wireless', losing_carrier_spid: '6529', is_wireless: true, account_number_required: true },
    ])
    expect(r.body.non_portable_numbers.map((n: any) => n.phone_number)).toHaveLength(3)
    expect(r.body.non_portable_numbers[2]).toEqual({ phone_number: '+442071234567', rate_center: null, city: null, state: null })
  })
  test('bad E.164 is a 400 with field details', async () => {
    const r = await t.call('POST', '/v1/port-in-eligibility', { key: c.key, body: { phone_numbers: ['212-555-0100'] } })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
  })
})

describe('create: eligible numbers, the date window, the cap', () => {
  test('created as draft with submitted_at null, listed, and its first event', async () => {
    const o = await create([num('1000')])
    expect(o).toMatchObject({ object: 'port_order', status: 'draft', submitted_at: null })
    expect(o.details.requested_foc_time).toBe('10:00')
    expect(o.details.approval).toBeUndefined()
    const list = await get('/v1/port-orders?status=draft&limit=100')
    expect(list.body.data.map((x: any) => x.id)).toContain(o.id)
    const ev = await get(`/v1/port-orders/${o.id}/events`)
    expect(ev.body.data.map((e: any) => [e.previous_status, e.status])).toEqual([[null, 'draft']])
  })
  test('bad input: each a 400 with field details, nothing stored', async () => {
    const before = (await get('/v1/port-orders?limit=100')).body.data.length
    const bad = async (body: Record<string, unknown>, field: string) => {
      const r = await post('/v1/port-orders', { phone_numbers: [num('1001')], subscriber, requested_foc_date: okDate(), ...body })
      expect({ status: r.status, code: r.body.code }).toEqual({ status: 400, code: 'validation_error' })
      expect(Object.keys(r.body.details)).toContain(field)
    }
    await bad({ phone_numbers: ['+1 212 555'] }, 'phone_numbers[0]')
    await bad({ phone_numbers: [num('9950')] }, 'phone_numbers[0]')
    await bad({ phone_numbers: ['+15005550150'] }, 'phone_numbers[0]')
    const n = num('1002')
    await bad({ phone_numbers: [n, n] }, 'phone_numbers[1]')
    await bad({ requested_foc_date: addBusinessDays(today(), 2) }, 'requested_foc_date')
    // A weekend day inside the 5-business-day window: today on a weekend (none lies ahead inside it from a Sunday), else the coming Saturday.
    let weekend = today()
    while (![0, 6].includes(new Date(`${weekend}T00:00:00Z`).getUTCDay())) weekend = addDays(weekend, 1)
    await bad({ requested_foc_date: weekend }, 'requested_foc_date')
    await bad({ requested_foc_date: addDays(today(), 31) }, 'requested_foc_date')
    await bad({ requested_foc_date: '2026-13-01' }, 'requested_foc_date')
    await bad({ requested_foc_time: '07:59' }, 'requested_foc_time')
    await bad({ requested_foc_time: '20:30' }, 'requested_foc_time')
    expect((await get('/v1/port-orders?limit=100')).body.data.length).toBe(before)
  })
  test('a number already in another port order in progress is refused', async () => {
    const n = num('1003')
    await create([n])
    const r = await post('/v1/port-orders', { phone_numbers: [n], subscriber, requested_foc_date: okDate() })
    expect(r.status).toBe(400)
    expect(r.body.details['phone_numbers[0]']).toContain('another port order')
  })
  test('the number cap counts held numbers and port reservations: 409 phone_number_limit_exceeded', async () => {
    const other = await t.account()
    const oc = { key: other.key, account: other.id }
    const many = Array.from({ length: 20 }, (_, i) => num(String(1100 + i)))
    const r1 = await t.call('POST', '/v1/port-orders', { ...oc, body: { phone_numbers: many, subscriber, requested_foc_date: okDate() } })
    expect(r1.status).toBe(200)
    const more = Array.from({ length: 6 }, (_, i) => num(String(1200 + i)))
    const r2 = await t.call('POST', '/v1/port-orders', { ...oc, body: { phone_numbers: more, subscriber, requested_foc_date: okDate() } })
    expect({ status: r2.status, code: r2.body.code }).toEqual({ status: 409, code: 'phone_number_limit_exceeded' })
    expect(r2.body.details).toBeUndefined()
    // Editing the order to add numbers counts too.
    const r3 = await t.call('POST', `/v1/port-orders/${r1.body.id}`, { ...oc, body: { phone_numbers: [...many, ...more] } })
    expect({ status: r3.status, code: r3.body.code }).toEqual({ status: 409, code: 'phone_number_limit_exceeded' })
    // Cancelled orders reserve nothing.
    expect((await t.call('POST', `/v1/port-orders/${r1.body.id}/cancel`, { ...oc, body: {} })).status).toBe(200)
    const r4 = await t.call('POST', '/v1/port-orders', { ...oc, body: { phone_numbers: more, subscriber, requested_foc_date: okDate() } })
    expect(r4.status).toBe(200)
    await t.call('DELETE', `/v1/accounts/${other.id}`, { key: other.key })
  })
  test('unknown order: 404 port_order_not_found', async () => {
    const r = await get('/v1/port-orders/po_missing')
    expect({ status: r.status, code: r.body.code }).toEqual({ status: 404, code: 'port_order_not_found' })
  })
})

describe('the state table', () => {
  test('draft → approved → submitted → foc → complete: numbers active, events and webhooks', async () => {
    const numbers = [num('2000'), num('2001')]
    const o = await create(numbers)
    const ap = await approve(o.id)
    expect(ap.body.status).toBe('approved')
    expect(ap.body.details.approval).toMatchObject({ signature: 'Ada Owner', ip: '203.0.113.7' })
    expect(Date.parse(ap.body.details.approval.timestamp)).toBeGreaterThan(0)
    const sub = await post(`/v1/port-orders/${o.id}/submit`)
    expect(sub.body.status).toBe('submitted')
    expect(sub.body.submitted_at).not.toBeNull()
    await reaches(o.id, 'complete')
    const pns = (await get('/v1/phone-numbers?limit=100')).body.data.filter((p: any) => numbers.includes(p.number))
    expect(pns.map((p: any) => p.status)).toEqual(['active', 'active'])
    const ev = await get(`/v1/port-orders/${o.id}/events`)
    expect(ev.body.data.map((e: any) => e.status).reverse()).toEqual(['draft', 'approved', 'submitted', 'foc', 'complete'])
    const hooks = await webhooks(o.id, 4)
    expect(hooks.map((h) => [h.type, h.data.previous_status, h.data.status])).toEqual([
      ['port_order.status_changed', 'draft', 'approved'],
      ['port_order.status_changed', 'approved', 'submitted'],
      ['port_order.status_changed', 'submitted', 'foc'],
      ['port_order.status_changed', 'foc', 'complete'],
    ])
    expect(hooks[2]!.data.foc_date).toBe(o.details.requested_foc_date)
    expect(hooks[0]!.account_id).toBe(a.id)
    // complete is final: cancel and update are refused.
    for (const r of [await post(`/v1/port-orders/${o.id}/cancel`), await post(`/v1/port-orders/${o.id}`, { requested_foc_date: okDate() })])
      expect({ status: r.status, code: r.body.code }).toEqual({ status: 409, code: 'port_order_invalid_state' })
  })

  test('approved + details update → draft, approval cleared; approve again', async () => {
    const o = await create([num('2100')])
    await approve(o.id)
    const same = await post(`/v1/port-orders/${o.id}`, { requested_foc_time: '10:00' })
    expect(same.body.status).toBe('approved')
    const u = await post(`/v1/port-orders/${o.id}`, { subscriber: { pin: '4321' } })
    expect(u.body.status).toBe('draft')
    expect(u.body.details.approval).toBeUndefined()
    expect(u.body.details.subscriber.pin).toBe('4321')
    expect((await get(`/v1/port-orders/${o.id}`)).body.status).toBe('draft')
    expect((await approve(o.id)).body.status).toBe('approved')
    await webhooks(o.id, 3)
  })

  test('approving an order not in draft: 409; submitting a draft: 422 port_order_approval_required', async () => {
    const o = await create([num('2200')])
    const s = await post(`/v1/port-orders/${o.id}/submit`)
    expect({ status: s.status, code: s.body.code }).toEqual({ status: 422, code: 'port_order_approval_required' })
    await approve(o.id)
    const again = await approve(o.id)
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: 'port_order_invalid_state' })
    expect(again.body.error).toContain('approved')
    expect(again.body.details).toBeUndefined()
  })

  test('submitted → exception with each rejection code; corrected and resubmitted → submitted → complete', async () => {
    const codes = ['address_mismatch', 'account_number_invalid', 'name_mismatch', 'business_name_mismatch', 'btn_mismatch', 'pin_required', 'pin_invalid']
    const ids = await Promise.all(codes.map((_, i) => submitted([num(`000${i + 1}`)])))
    for (const [i, id] of ids.entries()) {
      await reaches(id, 'exception')
      const o = (await get(`/v1/port-orders/${id}`)).body
      expect(o.details.rejection.code).toBe(codes[i])
      expect(o.details.rejection.message.length).toBeGreaterThan(0)
    }
    const id = ids[6]!
    const unchanged = await post(`/v1/port-orders/${id}/submit`)
    expect({ status: unchanged.status, code: unchanged.body.code }).toEqual({ status: 409, code: 'port_order_invalid_state' })
    const fixed = await post(`/v1/port-orders/${id}`, { subscriber: { pin: '2468' } })
    expect(fixed.body.status).toBe('exception')
    const re = await post(`/v1/port-orders/${id}/submit`)
    expect(re.body.status).toBe('submitted')
    expect(re.body.details.rejection).toBeUndefined()
    await reaches(id, 'complete')
    const hooks = await webhooks(id, 6)
    expect(hooks.map((h) => h.data.status)).toEqual(['approved', 'submitted', 'exception', 'submitted', 'foc', 'complete'])
    expect(hooks[2]!.data.rejection).toEqual({ code: 'pin_invalid', message: expect.any(String) })
  })

  test('wireless numbers need account number and PIN', async () => {
    const id = await submitted([num('7500')])
    await reaches(id, 'exception')
    expect((await get(`/v1/port-orders/${id}`)).body.details.rejection.code).toBe('account_number_invalid')
    await post(`/v1/port-orders/${id}`, { subscriber: { account_number: 'ACC-1', pin: '1357' } })
    await post(`/v1/port-orders/${id}/submit`)
    await reaches(id, 'complete')
  })

  test('submitted: only the date and time may change; cancel withdraws it; cancelled is final', async () => {
    const id = await submitted([num('0008')])
    const d = await post(`/v1/port-orders/${id}`, { requested_foc_date: addBusinessDays(today(), 9), requested_foc_time: '15:30' })
    expect(d.status).toBe(200)
    expect(d.body.status).toBe('submitted')
    expect(d.body.details.requested_foc_time).toBe('15:30')
    for (const body of [{ subscriber: { pin: '1' } }, { requested_foc_date: okDate(), phone_numbers: [num('0008')] }]) {
      const r = await post(`/v1/port-orders/${id}`, body)
      expect({ status: r.status, code: r.body.code }).toEqual({ status: 409, code: 'port_order_invalid_state' })
    }
    const doc = await upload(id, 'bill-copy', pdf())
    expect(doc.status).toBe(409)
    expect(((await doc.json()) as any).code).toBe('port_order_invalid_state')
    const sub = await post(`/v1/port-orders/${id}/submit`)
    expect(sub.status).toBe(409)
    const x = await post(`/v1/port-orders/${id}/cancel`)
    expect(x.body.status).toBe('cancelled')
    const again = await post(`/v1/port-orders/${id}/cancel`)
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: 'port_order_invalid_state' })
    expect((await get(`/v1/port-orders?status=cancelled&limit=100`)).body.data.map((o: any) => o.id)).toContain(id)
  })

  test('foc: the date may change, other fields not; cancel from foc', async () => {
    const id = await submitted([num('0009')])
    await reaches(id, 'foc')
    const d = await post(`/v1/port-orders/${id}`, { requested_foc_date: addBusinessDays(today(), 10) })
    expect(d.body.status).toBe('foc')
    const r = await post(`/v1/port-orders/${id}`, { subscriber: { business_name: 'X' } })
    expect(r.status).toBe(409)
    expect((await post(`/v1/port-orders/${id}/cancel`)).body.status).toBe('cancelled')
    const hooks = await webhooks(id, 4)
    expect(hooks.map((h) => h.data.status)).toEqual(['approved', 'submitted', 'foc', 'cancelled'])
  })

  test('cancel from draft, approved and exception', async () => {
    const d = await create([num('2300')])
    expect((await post(`/v1/port-orders/${d.id}/cancel`)).body.status).toBe('cancelled')
    const ap = await create([num('2301')])
    await approve(ap.id)
    expect((await post(`/v1/port-orders/${ap.id}/cancel`)).body.status).toBe('cancelled')
    const ex = await submitted([num('0001')])
    await reaches(ex.toString(), 'exception')
    expect((await post(`/v1/port-orders/${ex}/cancel`)).body.status).toBe('cancelled')
  })
})

describe('documents: bill copy and CSR', () => {
  test('upload and download a real PDF in draft and in exception', async () => {
    const o = await create([num('3000')])
    const bytes = pdf('bill copy of Acme')
    const up = await upload(o.id, 'bill-copy', bytes)
    expect(up.status).toBe(200)
    const body = (await up.json()) as any
    expect(body).toMatchObject({ object: 'port_order_document', port_order: o.id, type: 'bill_copy', content_type: 'application/pdf', size: bytes.length })
    const down = await fetch(`${t.baseUrl}/v1/port-orders/${o.id}/bill-copy`, { headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account } })
    expect(down.status).toBe(200)
    expect(down.headers.get('content-type')).toBe('application/pdf')
    expect(new Uint8Array(await down.arrayBuffer())).toEqual(bytes)
    const none = await get(`/v1/port-orders/${o.id}/csr`)
    expect({ status: none.status, code: none.body.code }).toEqual({ status: 404, code: 'port_order_document_not_found' })
    const ex = await submitted([num('0003')])
    await reaches(ex, 'exception')
    expect((await upload(ex, 'csr', pdf('csr'))).status).toBe(200)
  })

  test('non-PDF, empty and oversized files: 400 with details.file, nothing stored', async () => {
    const o = await create([num('3100')])
    const refused = async (bytes: Uint8Array, type?: string) => {
      const r = await upload(o.id, 'csr', bytes, type)
      expect(r.status).toBe(400)
      const b = (await r.json()) as any
      expect(b.code).toBe('validation_error')
      expect(Object.keys(b.details)).toEqual(['file'])
    }
    await refused(new TextEncoder().encode('GIF89a not a pdf'))
    await refused(new Uint8Array())
    await refused(new TextEncoder().encode('%PDF-1.4 truncated'))
    await refused(new Uint8Array(3 * 1024 * 1024 + 1).fill(37))
    const none = await get(`/v1/port-orders/${o.id}/csr`)
    expect(none.status).toBe(404)
  })
})

describe('the letter of authorization (generated at submit)', () => {
  const loa = (id: string) => fetch(`${t.baseUrl}/v1/port-orders/${id}/loa`, { headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account } })

  test('none before submit; at submit a PDF of the order as approved, without the PIN; a resubmission writes a new one', async () => {
    const o = await create([num('0005')], { subscriber: { ...subscriber, pin: '97531' } })
    const before = await loa(o.id)
    expect(before.status).toBe(404)
    expect(((await before.json()) as any).code).toBe('port_order_document_not_found')
    await approve(o.id)
    expect((await loa(o.id)).status).toBe(404)
    const sub = await post(`/v1/port-orders/${o.id}/submit`)
    expect(sub.status).toBe(200)
    const first = await loa(o.id)
    expect(first.status).toBe(200)
    expect(first.headers.get('content-type')).toBe('application/pdf')
    const bytes = new Uint8Array(await first.arrayBuffer())
    expect(new TextDecoder().decode(bytes.subarray(0, 5))).toBe('%PDF-')
    const text = await pdfText(bytes)
    if (text === null) console.warn('[port-orders] ghostscript (gs) is not installed: the LOA text read-back is skipped')
    else {
      for (const s of [
        o.id,
        o.details.phone_numbers[0],
        'Acme Dental',
        'Ada Owner',
        '100 Main St, Springfield, IL 62701',
        'Sandbox Telecom (SPID 0123)',
        '203.0.113.7',
      ])
        expect(text).toContain(s)
      expect(text).toContain(sub.body.details.approval.timestamp)
      expect(text).not.toContain('97531')
    }
    // Line 0005: rejected btn_mismatch; corrected, approved again is not needed, resubmitted: a new letter with the correction.
    await reaches(o.id, 'exception')
    expect((await post(`/v1/port-orders/${o.id}`, { subscriber: { btn: '+12125550999' } })).status).toBe(200)
    expect((await post(`/v1/port-orders/${o.id}/submit`)).status).toBe(200)
    const second = new Uint8Array(await (await loa(o.id)).arrayBuffer())
    expect(second).not.toEqual(bytes)
    const text2 = await pdfText(second)
    if (text2 !== null) expect(text2).toContain('+12125550999')
  })

  test('the LOA cannot be uploaded: it is the service’s own document', async () => {
    const o = await create([num('3200')])
    const form = new FormData()
    form.set('file', new Blob([pdf()], { type: 'application/pdf' }), 'loa.pdf')
    const r = await fetch(`${t.baseUrl}/v1/port-orders/${o.id}/loa`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account },
      body: form,
    })
    // The path answers GET only: 405 naming it, as for any method a path does not take.
    expect(r.status).toBe(405)
    expect(r.headers.get('allow')).toContain('GET')
    expect((await loa(o.id)).status).toBe(404)
  })
})

describe('the subscriber PIN is sealed at rest', () => {
  test('shown to the account, but neither the order row, the actor snapshot nor a durable command holds it in plain text; the same PIN again keeps an approval', async () => {
    const db = t.service.database.db
    const stored = async (id: string) => {
      const [order] = await db.select({ details: portOrders.details }).from(portOrders).where(eq(portOrders.id, id))
      const snaps = await db.select().from(actorSnapshots).where(eq(actorSnapshots.id, id))
      const timers = await db.select().from(durableTimers).where(eq(durableTimers.actorId, id))
      return JSON.stringify([order, snaps, timers])
    }
    const o = await create([num('2300')], { subscriber: { ...subscriber, pin: '97531' } })
    expect(o.details.subscriber.pin).toBe('97531')
    expect((await get(`/v1/port-orders/${o.id}`)).body.details.subscriber.pin).toBe('97531')
    await approve(o.id)
    const again = await post(`/v1/port-orders/${o.id}`, { subscriber: { pin: '97531' } })
    expect(again.body).toMatchObject({ status: 'approved', details: { subscriber: { pin: '97531' } } })
    const changed = await post(`/v1/port-orders/${o.id}`, { subscriber: { pin: '86420' } })
    expect(changed.body).toMatchObject({ status: 'draft', details: { subscriber: { pin: '86420' } } })
    await until('the update applied', async () => (await get(`/v1/port-orders/${o.id}`)).body.details.subscriber.pin === '86420')
    const raw = await stored(o.id)
    expect(raw).toContain(o.id)
    expect(raw).not.toContain('97531')
    expect(raw).not.toContain('86420')
    const [row] = await db.select({ details: portOrders.details }).from(portOrders).where(eq(portOrders.id, o.id))
    expect(row!.details.subscriber.pin).toMatch(/^\S+$/)
    expect(row!.details.subscriber.pin).not.toBe('86420')
  })
})
