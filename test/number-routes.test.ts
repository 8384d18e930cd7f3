/**
 * A phone number's inbound routing over HTTP (POST /v1/phone-numbers/{id}/route):
 * a target of the account, no target (every user rings), or route to nothing
 * (inbound calls drop). A routed-to object cannot be deleted while the number
 * routes to it.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { expectInvalid, routingFixtures } from './routing-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-04-20T08:00:00.000Z')
const t = await startTestService({}, { clock })
const { ctx, ok, post, del, ringGroup, dialPlan, box } = routingFixtures(t)

/** A number nobody holds (the PostgreSQL database outlives a run: fixed numbers would be taken by the last one). */
async function number(c: { key: string; account: string }) {
  const e164 = (await ok(t.call('GET', '/v1/available-phone-numbers?quantity=1', c))).data[0].phone_number as string
  await ok(post(c, '/v1/phone-number-orders', { phone_numbers: [e164] }))
  const list = await ok(t.call('GET', '/v1/phone-numbers', c))
  return list.data.find((n: any) => n.number === e164) as { id: string; number: string }
}

describe('number routes', () => {
  test('a target, then no target (rings every user), then route to nothing (drop)', async () => {
    const c = await ctx()
    const pn = await number(c)
    const rg = await ringGroup(c)
    const r = await post(c, `/v1/phone-numbers/${pn.id}/route`, { target: rg })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      object: 'phone_number_route',
      phone_number: pn.id,
      number: pn.number,
      mode: 'target',
      target: rg,
      updated_at: clock.now().toISOString(),
    })
    expect(await ok(post(c, `/v1/phone-numbers/${pn.id}/route`, { target: null }))).toMatchObject({ mode: 'ring_all', target: null })
    expect(await ok(post(c, `/v1/phone-numbers/${pn.id}/route`, {}))).toMatchObject({ mode: 'ring_all', target: null })
    expect(await ok(post(c, `/v1/phone-numbers/${pn.id}/route`, { mode: 'drop' }))).toMatchObject({ mode: 'drop', target: null })
    expect(await ok(post(c, `/v1/phone-numbers/${pn.id}/route`, { mode: 'target', target: rg }))).toMatchObject({ mode: 'target', target: rg })
  })

  test('bad routes are refused with details.target; the route is unchanged', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const pn = await number(c)
    const svb = await box(c)
    await ok(post(c, `/v1/phone-numbers/${pn.id}/route`, { target: svb }))
    for (const body of [{ target: await ringGroup(other) }, { target: 'rg_nothere' }, { target: 'junk' }, { mode: 'target' }, { mode: 'drop', target: svb }]) {
      expectInvalid(await post(c, `/v1/phone-numbers/${pn.id}/route`, body), ['target'])
    }
    expectInvalid(await post(c, `/v1/phone-numbers/${pn.id}/route`, { mode: 'voicemail' }), ['mode'])
    // Unchanged: the box is still routed to, so it cannot be deleted.
    const used = await del(c, `/v1/shared_voicemail_boxes/${svb}`)
    expect([used.status, used.body.code, used.body.details.referenced_by]).toEqual([409, 'routing_object_in_use', [`phone_numbers.${pn.id}.target`]])
  })

  test('a dial plan a number routes to cannot be deleted; another account’s number is 404', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const pn = await number(c)
    const plan = await dialPlan(c, { entry: 'a', nodes: { a: { kind: 'hangup' } } })
    await ok(post(c, `/v1/phone-numbers/${pn.id}/route`, { target: plan }))
    expect((await del(c, `/v1/dialplans/${plan}`)).status).toBe(409)
    await ok(post(c, `/v1/phone-numbers/${pn.id}/route`, { mode: 'drop' }))
    expect((await del(c, `/v1/dialplans/${plan}`)).status).toBe(200)
    const foreign = await post(other, `/v1/phone-numbers/${pn.id}/route`, { mode: 'drop' })
    expect([foreign.status, foreign.body.code]).toEqual([404, 'phone_number_not_found'])
  })
})
