/** Shared helpers of the routing resource tests (ring groups, schedules, dial plans, queues...). */
import { expect } from 'bun:test'
import type { startTestService } from './support/service'

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
