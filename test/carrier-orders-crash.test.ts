/**
 * The carrier side's lifecycles survive a crash: port orders, hardware orders and
 * faxes move on their actors' durable timers (the sandbox carrier, reviewer and fax
 * carrier answer on them), the real server process (`bun src/main.ts`) is killed with
 * SIGKILL while they are in flight, and started again on the same data. Every one
 * finishes its lifecycle, and exactly once: one event per status change of each port
 * order, exactly one of fax.delivered or fax.failed per fax, one device per phone of
 * each fulfilled hardware order (webhooks are at least once: events are counted by id).
 *
 * Data: a PGlite folder on disk; with DATABASE_URL, a fresh database on that server.
 */
import { afterAll, expect, test } from 'bun:test'
import { addBusinessDays, easternDate } from '../src/services/porting/business-days'
import { freshDataDir } from './support/data-dir'
import { makePdf } from './support/pdf'
import { until } from './support/polling'
import { scratchPostgres } from './support/scratch-postgres'
import { startServiceProcess, type ServiceProcess } from './support/service-process'
import { startWebhookReceiver } from './support/webhook-receiver'

const ADMIN = 'carrier-crash-admin-token-0123456789'
const PORT_ORDERS = 4
const HARDWARE_ORDERS = 3
const FAXES = 3

const processes: ServiceProcess[] = []
const stores: { dispose(): Promise<void> }[] = []
afterAll(async () => {
  for (const p of processes) await p.kill()
  for (const s of stores) await s.dispose().catch(() => {})
}, 30_000)

async function freshStore(): Promise<{ env: Record<string, string>; dispose(): Promise<void> }> {
  const pg = await scratchPostgres('carrier_crash')
  if (pg.url) return { env: { ...pg.env, DATA_DIR: 'memory://' }, dispose: pg.dispose }
  const { dataDir, dispose } = freshDataDir('carrier-crash')
  return { env: { DATA_DIR: dataDir }, dispose }
}

async function startServer(env: Record<string, string>) {
  const p = await startServiceProcess({
    ...env,
    VOICE_ADMIN_TOKEN: ADMIN,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
    // The sandbox's 30 s and 60 s answers take 6 s and 12 s: in flight when the process dies.
    VOICE_CLOCK_SPEED: '5',
    ...(process.env.NATS_URL ? { NATS_URL: process.env.NATS_URL } : {}),
  })
  processes.push(p)
  return p
}

test('kill -9 while port orders, hardware orders and faxes move on their timers: after the restart each finishes once', async () => {
  const store = await freshStore()
  stores.push(store)
  const rx = await startWebhookReceiver()
  const first = await startServer(store.env)

  const platform = await first.call('POST', '/admin/platforms', { key: ADMIN, body: { name: 'Carrier crash' } })
  expect(platform.status).toBe(200)
  const key = platform.body.test_key as string
  const acct = await first.call('POST', '/v1/accounts', {
    key,
    body: {
      email: 'owner@example.com',
      primary_contact_name: 'Ada Owner',
      name: 'Carrier crash',
      address: { address_number: '100', street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
      pricing: { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 },
    },
  })
  expect(acct.status).toBe(200)
  const account = acct.body.id as string
  const as = { key, account }
  const call = (p: ServiceProcess, method: string, path: string, body?: unknown) => p.call(method, path, { ...as, body })
  expect((await call(first, 'POST', '/v1/webhook_endpoints', { url: rx.url })).status).toBe(200)

  // A number to fax from.
  const offer = (await call(first, 'GET', '/v1/available-phone-numbers?quantity=1')).body.data[0].phone_number
  expect((await call(first, 'POST', '/v1/phone-number-orders', { phone_numbers: [offer] })).status).toBe(200)

  // Port orders: approved and submitted (FOC after 30 s, ported 30 s later).
  const ports: string[] = []
  for (let i = 0; i < PORT_ORDERS; i++) {
    const o = await call(first, 'POST', '/v1/port-orders', {
      phone_numbers: [`+1212555${2000 + i}`],
      subscriber: { business_name: 'Acme Dental', approver_name: 'Ada Owner' },
      requested_foc_date: addBusinessDays(easternDate(new Date()), 8),
    })
    expect(o.status).toBe(200)
    expect((await call(first, 'POST', `/v1/port-orders/${o.body.id}/approve`, { signature: 'Ada Owner', ip: '203.0.113.7' })).status).toBe(200)
    expect((await call(first, 'POST', `/v1/port-orders/${o.body.id}/submit`)).status).toBe(200)
    ports.push(o.body.id)
  }
  // Hardware orders: a desk phone and an accessory each (approved after 30 s, delivered 60 s later).
  const hardware: string[] = []
  for (let i = 0; i < HARDWARE_ORDERS; i++) {
    const mac = `805EC0FFEE${String(i).padStart(2, '0')}`
    const o = await call(first, 'POST', '/v1/hardware-orders', {
      location: acct.body.main_location,
      items: [{ catalog_item: 'hw_yealink_t54w', mac_address: mac }, { catalog_item: 'hw_yealink_exp50' }],
    })
    expect(o.status).toBe(200)
    hardware.push(o.body.id)
  }
  // Faxes of 3 pages (dialled after 5 s, 10 s a page); the last one to a busy line (fails).
  const faxes: string[] = []
  for (let i = 0; i < FAXES; i++) {
    const form = new FormData()
    form.set('purpose', 'fax_document')
    form.set('file', new Blob([makePdf(3, `fax ${i}`)]), `fax-${i}.pdf`)
    const up = await fetch(`${first.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'service-account': account }, body: form })
    expect(up.status).toBe(200)
    const file = ((await up.json()) as { id: string }).id
    const f = await call(first, 'POST', '/v1/faxes', { file, to_number: i === FAXES - 1 ? '+15005550200' : `+1415555${3000 + i}` })
    expect(f.status).toBe(200)
    faxes.push(f.body.id)
  }

  const hooks = () => {
    const byId = new Map<string, any>()
    for (const r of rx.requests) if (r.body?.id) byId.set(r.body.id, r.body)
    return [...byId.values()]
  }
  // In flight: the first order has its FOC (read from the order itself: webhooks may lag on a loaded machine), none is complete.
  await until('the first FOC', async () => (await call(first, 'GET', `/v1/port-orders/${ports[0]}`)).body.status === 'foc', 30_000)
  // Its port is due 6 s later: the process dies with it (and the hardware orders and faxes) still in flight.
  await first.kill()
  const second = await startServer(store.env)

  const finished = async () => {
    const p = await Promise.all(ports.map(async (id) => (await call(second, 'GET', `/v1/port-orders/${id}`)).body.status))
    const h = await Promise.all(hardware.map(async (id) => (await call(second, 'GET', `/v1/hardware-orders/${id}`)).body.status))
    const f = (await call(second, 'GET', '/v1/faxes?limit=100')).body.data.filter((x: any) => faxes.includes(x.id)).map((x: any) => x.status)
    return { p, h, f }
  }
  await until(
    'every order and fax at its end',
    async () => {
      const s = await finished()
      return (
        s.p.every((x) => x === 'complete') &&
        s.h.every((x) => x === 'fulfilled') &&
        s.f.length === FAXES &&
        s.f.every((x: string) => x === 'delivered' || x === 'failed')
      )
    },
    60_000,
  )
  // The events of the last steps are delivered after their commit: wait for them.
  const wanted = PORT_ORDERS * 4 + FAXES
  await until(
    'every event delivered',
    () => hooks().filter((e) => e.type === 'port_order.status_changed' || e.type.startsWith('fax.')).length >= wanted,
    30_000,
  )
  await Bun.sleep(1500) // a duplicate written by a repeated step would arrive by now

  const events = hooks()
  for (const id of ports) {
    const changes = events
      .filter((e) => e.type === 'port_order.status_changed' && e.data.port_order === id)
      .map((e) => `${e.data.previous_status}>${e.data.status}`)
    expect(changes.sort()).toEqual(['approved>submitted', 'draft>approved', 'foc>complete', 'submitted>foc'])
    const history = (await call(second, 'GET', `/v1/port-orders/${id}/events`)).body.data.map((e: any) => e.status).reverse()
    expect(history).toEqual(['draft', 'approved', 'submitted', 'foc', 'complete'])
  }
  const numbers = (await call(second, 'GET', '/v1/phone-numbers?limit=100')).body.data.map((n: any) => n.number).sort()
  expect(numbers).toEqual([offer, ...ports.map((_, i) => `+1212555${2000 + i}`)].sort())
  for (const [i, id] of faxes.entries()) {
    const ends = events.filter((e) => (e.type === 'fax.delivered' || e.type === 'fax.failed') && e.data.fax_id === id).map((e) => e.type)
    expect(ends).toEqual([i === FAXES - 1 ? 'fax.failed' : 'fax.delivered'])
  }
  const devices = (await call(second, 'GET', '/v1/devices?limit=100')).body.data
  expect(devices.map((d: any) => d.mac_address).sort()).toEqual(hardware.map((_, i) => `805EC0FFEE${String(i).padStart(2, '0')}`))
  for (const id of hardware) {
    const items = (await call(second, 'GET', `/v1/hardware-orders/${id}`)).body.items
    expect(items.map((x: any) => x.device === null)).toEqual([false, true])
  }
}, 180_000)
