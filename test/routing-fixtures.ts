/** Shared helpers of the routing resource tests (ring groups, schedules, dial plans, queues...). */
import { afterAll, expect } from 'bun:test'
import type { startTestService } from './support/service'
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver'

export type Service = Awaited<ReturnType<typeof startTestService>>
export type Ctx = { key: string; account: string }
export type Answer = { status: number; body: any }

export function routingFixtures(t: Service) {
  const ctx = async (key?: string): Promise<Ctx> => {
    const a = await t.account(key ? { key } : {})
    return { key: a.key, account: a.id }
  }
  const ok = async (r: Promise<Answer>): Promise<any> => {
    const a = await r
    if (a.status !== 200) throw new Error(`expected 200, got ${a.status} ${JSON.stringify(a.body)}`)
    return a.body
  }
  const post = (c: Ctx, path: string, body?: Record<string, unknown>) => t.call('POST', path, { ...c, body: body ?? {} })
  const get = (c: Ctx, path: string) => t.call('GET', path, c)
  const del = (c: Ctx, path: string) => t.call('DELETE', path, c)
  const user = async (c: Ctx) => (await ok(post(c, '/v1/users', { email: `u${Math.random().toString(36).slice(2)}@example.com` }))).id as string
  const ringGroup = async (c: Ctx, body: Record<string, unknown> = {}) => (await ok(post(c, '/v1/ring_groups', { name: 'Sales', ...body }))).id as string
  const dialPlan = async (c: Ctx, body: Record<string, unknown>) => (await ok(post(c, '/v1/dialplans', { name: 'Main', ...body }))).id as string
  const schedule = async (c: Ctx, body: Record<string, unknown> = {}) =>
    (await ok(post(c, '/v1/schedules', { name: 'Office', time_zone: 'America/New_York', hours: [{ day: 'mon', open: '09:00', close: '17:00' }], ...body })))
      .id as string
  const box = async (c: Ctx) => (await ok(post(c, '/v1/shared_voicemail_boxes', { name: 'Support' }))).id as string
  const queue = async (c: Ctx, body: Record<string, unknown> = {}) => (await ok(post(c, '/v1/queues', { name: 'Help desk', ...body }))).id as string
  const extension = (c: Ctx, number: string, target: string) => ok(post(c, '/v1/extensions', { number, target }))
  return { ctx, ok, post, get, del, user, ringGroup, dialPlan, schedule, box, queue, extension }
}

/** A 400 whose details name each of these fields (and with this code). */
export function expectInvalid(r: Answer, fields: string[], code = 'validation_error') {
  expect({ status: r.status, code: r.body.code }).toEqual({ status: 400, code })
  for (const f of fields) expect(Object.keys(r.body.details ?? {})).toContain(f)
}

export const ids = (r: Answer) => r.body.data.map((x: any) => x.id)

export type Sandbox = Ctx & { users: string[]; number: string; numberId: string; rx: WebhookReceiver; secret: string }

/**
 * Routed sandbox calls' accounts: each with three users, one phone number and a
 * webhook endpoint for every event. The file's afterAll stops the receivers and
 * deletes the accounts, which frees their numbers for the next run against the same
 * database.
 */
export function routedCallSandboxes(service: () => Service) {
  const receivers: WebhookReceiver[] = []
  const created: Ctx[] = []
  // Registered before the service starts (and registers its own stop): hooks run in order, so this runs while it still answers.
  afterAll(async () => {
    for (const rx of receivers) await rx.stop()
    for (const c of created) await service().call('DELETE', `/v1/accounts/${c.account}`, { key: c.key })
  })
  const fixtures = () => routingFixtures(service())
  async function sandbox(): Promise<Sandbox> {
    const f = fixtures()
    const c = await f.ctx()
    created.push(c)
    const users = [await f.user(c), await f.user(c), await f.user(c)]
    const avail = await f.ok(f.get(c, '/v1/available-phone-numbers?quantity=1'))
    const number = avail.data[0].phone_number as string
    await f.ok(f.post(c, '/v1/phone-number-orders', { phone_numbers: [number] }))
    const numbers = await f.ok(f.get(c, '/v1/phone-numbers'))
    const numberId = numbers.data.find((n: any) => n.number === number).id as string
    const rx = await startWebhookReceiver({ autoStop: false })
    receivers.push(rx)
    const ep = await f.ok(f.post(c, '/v1/webhook_endpoints', { url: rx.url, enabled_events: ['*'] }))
    return { ...c, users, number, numberId, rx, secret: ep.secret }
  }
  const routeNumber = (c: Sandbox, body: Record<string, unknown>) => fixtures().ok(fixtures().post(c, `/v1/phone-numbers/${c.numberId}/route`, body))
  /** Another account the test made, deleted with the sandboxes. */
  const deleteAfterwards = (c: Ctx) => created.push(c)
  return { sandbox, routeNumber, deleteAfterwards }
}
