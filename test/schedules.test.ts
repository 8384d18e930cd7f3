/**
 * Schedules over HTTP: weekly hours in an IANA time zone, holidays, and a hold
 * (POST .../hold sets open or closed, DELETE .../hold clears it).
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { expectInvalid, ids, routingFixtures } from './routing-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-04-20T08:00:00.000Z')
const t = await startTestService({}, { clock })
const { ctx, ok, post, get, del, schedule, dialPlan } = routingFixtures(t)

const hours = [
  { day: 'mon', open: '09:00', close: '17:00' },
  { day: 'fri', open: '22:00', close: '24:00' },
]

describe('schedules', () => {
  test('create, get, list newest first with pagination', async () => {
    const c = await ctx()
    const r = await post(c, '/v1/schedules', { name: 'Office', time_zone: 'Europe/Paris', hours, holidays: ['2026-12-25'] })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      id: r.body.id,
      object: 'schedule',
      account: c.account,
      name: 'Office',
      time_zone: 'Europe/Paris',
      hours,
      holidays: ['2026-12-25'],
      hold: null,
      created_at: clock.now().toISOString(),
      updated_at: clock.now().toISOString(),
    })
    expect(r.body.id).toMatch(/^sch_/)
    expect(await ok(get(c, `/v1/schedules/${r.body.id}`))).toEqual(r.body)
    clock.advance(1000)
    const second = await schedule(c)
    expect(ids(await get(c, '/v1/schedules'))).toEqual([second, r.body.id])
    const p1 = await get(c, '/v1/schedules?limit=1')
    expect(ids(p1)).toEqual([second])
    expect(ids(await get(c, p1.body.next_page_url))).toEqual([r.body.id])
  })

  test('bad hours, dates and zones are refused with the field path; nothing stored', async () => {
    const c = await ctx()
    expectInvalid(await post(c, '/v1/schedules', { name: 'X', time_zone: 'Mars/Olympus' }), ['time_zone'])
    expectInvalid(await post(c, '/v1/schedules', { time_zone: 'UTC' }), ['name'])
    expectInvalid(await post(c, '/v1/schedules', { name: 'X', time_zone: 'UTC', hours: [hours[0], { day: 'tue', open: '17:00', close: '09:00' }] }), [
      'hours.1.close',
    ])
    expectInvalid(await post(c, '/v1/schedules', { name: 'X', time_zone: 'UTC', hours: [{ day: 'someday', open: '09:00', close: '10:00' }] }), [])
    expectInvalid(await post(c, '/v1/schedules', { name: 'X', time_zone: 'UTC', holidays: ['2026-02-31'] }), ['holidays.0'])
    expectInvalid(await post(c, '/v1/schedules', { name: 'X', time_zone: 'UTC', holidays: ['tomorrow'] }), [])
    expect(ids(await get(c, '/v1/schedules'))).toEqual([])
  })

  test('time_zone omitted: the account’s config.timezone, read at creation (a later change of the account’s zone leaves it)', async () => {
    const a = await t.account({ body: { config: { timezone: 'America/Denver' } } })
    const c = { key: a.key, account: a.id }
    const r = await ok(post(c, '/v1/schedules', { name: 'Front desk', hours }))
    expect(r.time_zone).toBe('America/Denver')
    expect((await ok(post(c, `/v1/accounts/${a.id}`, { config: { timezone: 'Europe/Paris' } }))).config.timezone).toBe('Europe/Paris')
    expect((await ok(get(c, `/v1/schedules/${r.id}`))).time_zone).toBe('America/Denver')
    expect((await ok(post(c, '/v1/schedules', { name: 'Back office' }))).time_zone).toBe('Europe/Paris')
  })

  test('update replaces given fields; a bad update leaves it unchanged', async () => {
    const c = await ctx()
    const id = await schedule(c)
    clock.advance(1000)
    const r = await ok(post(c, `/v1/schedules/${id}`, { time_zone: 'Asia/Tokyo', holidays: ['2027-01-01'] }))
    expect(r).toMatchObject({
      time_zone: 'Asia/Tokyo',
      holidays: ['2027-01-01'],
      hours: [{ day: 'mon', open: '09:00', close: '17:00' }],
      updated_at: clock.now().toISOString(),
    })
    expectInvalid(await post(c, `/v1/schedules/${id}`, { time_zone: 'Nowhere/Land' }), ['time_zone'])
    expect((await ok(get(c, `/v1/schedules/${id}`))).time_zone).toBe('Asia/Tokyo')
  })

  test('hold: POST sets open or closed, DELETE clears; a bad hold is refused', async () => {
    const c = await ctx()
    const id = await schedule(c)
    expect((await ok(post(c, `/v1/schedules/${id}/hold`, { hold: 'closed' }))).hold).toBe('closed')
    expect((await ok(get(c, `/v1/schedules/${id}`))).hold).toBe('closed')
    expect((await ok(post(c, `/v1/schedules/${id}/hold`, { hold: 'open' }))).hold).toBe('open')
    expectInvalid(await post(c, `/v1/schedules/${id}/hold`, { hold: 'maybe' }), ['hold'])
    expectInvalid(await post(c, `/v1/schedules/${id}/hold`, {}), ['hold'])
    expect((await ok(del(c, `/v1/schedules/${id}/hold`))).hold).toBeNull()
    expect((await ok(get(c, `/v1/schedules/${id}`))).hold).toBeNull()
  })

  test('delete: 409 while a dial plan reads it; then 404 schedule_not_found', async () => {
    const c = await ctx()
    const id = await schedule(c)
    const plan = await dialPlan(c, { entry: 'when', nodes: { when: { kind: 'schedule', schedule: id, open: 'bye', closed: 'bye' }, bye: { kind: 'hangup' } } })
    const used = await del(c, `/v1/schedules/${id}`)
    expect([used.status, used.body.code]).toEqual([409, 'routing_object_in_use'])
    expect(used.body.details.referenced_by).toEqual([`dial_plans.${plan}.nodes.when.schedule`])
    await ok(del(c, `/v1/dialplans/${plan}`))
    expect(await ok(del(c, `/v1/schedules/${id}`))).toEqual({ id, object: 'schedule', deleted: true })
    const gone = await get(c, `/v1/schedules/${id}`)
    expect([gone.status, gone.body.code]).toEqual([404, 'schedule_not_found'])
  })

  test('another account’s schedule is 404 on every operation', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const id = await schedule(other)
    for (const [method, path, body] of [
      ['GET', `/v1/schedules/${id}`, undefined],
      ['POST', `/v1/schedules/${id}`, { name: 'Mine' }],
      ['DELETE', `/v1/schedules/${id}`, undefined],
      ['POST', `/v1/schedules/${id}/hold`, { hold: 'open' }],
      ['DELETE', `/v1/schedules/${id}/hold`, undefined],
    ] as const) {
      const r = await t.call(method, path, { ...c, body })
      expect([method, path, r.status, r.body.code]).toEqual([method, path, 404, 'schedule_not_found'])
    }
    expect((await ok(get(other, `/v1/schedules/${id}`))).hold).toBeNull()
  })
})
