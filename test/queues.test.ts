/**
 * Call queues over HTTP: members (agents), the queue-agent standing of a user,
 * and the spec's rules: adding a member already in the queue is a conflict
 * (QueueMemberConflict); a timeout target not in the account, or a change forming
 * a routing loop through ring groups, dial plans or other queues, is refused as
 * QueueValidationFailed.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { expectInvalid, ids, routingFixtures } from './routing-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-04-20T08:00:00.000Z')
const t = await startTestService({}, { clock })
const { ctx, ok, post, get, del, user, ringGroup, dialPlan, queue, box, extension } = routingFixtures(t)

describe('queues', () => {
  test('create (max wait 0 = the one-hour ceiling by default), get, list with expand[]=members', async () => {
    const c = await ctx()
    const b = await box(c)
    const r = await post(c, '/v1/queues', { name: 'Help desk', max_wait_seconds: 120, timeout_target: b })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ object: 'queue', account: c.account, name: 'Help desk', max_wait_seconds: 120, timeout_target: b })
    expect(r.body.id).toMatch(/^que_/)
    const q2 = await ok(post(c, '/v1/queues', { name: 'Billing' }))
    expect(q2).toMatchObject({ max_wait_seconds: 0, timeout_target: null })
    const u = await user(c)
    await ok(post(c, `/v1/queues/${r.body.id}/members`, { user: u }))
    expect((await ok(get(c, `/v1/queues/${r.body.id}`))).members).toBeUndefined()
    expect((await ok(get(c, `/v1/queues/${r.body.id}?expand[]=members`))).members.data.map((m: any) => m.user)).toEqual([u])
    const list = await get(c, '/v1/queues?expand[]=members')
    expect(ids(list)).toEqual([q2.id, r.body.id])
    expect(list.body.data.map((q: any) => q.members.data.length)).toEqual([0, 1])
  })

  test('members: add in order, list paginated, 409 queue_member_conflict on a duplicate, remove', async () => {
    const c = await ctx()
    const q = await queue(c)
    const us = [await user(c), await user(c), await user(c)]
    const made = []
    for (const u of us) {
      const m = await post(c, `/v1/queues/${q}/members`, { user: u })
      expect(m.status).toBe(200)
      expect(m.body).toMatchObject({ object: 'queue_member', queue: q, user: u })
      expect(m.body.id).toMatch(/^qm_/)
      made.push(m.body.id)
      clock.advance(1000)
    }
    const dup = await post(c, `/v1/queues/${q}/members`, { user: us[0] })
    expect([dup.status, dup.body.code]).toEqual([409, 'queue_member_conflict'])
    const p1 = await get(c, `/v1/queues/${q}/members?limit=2`)
    expect(ids(p1)).toEqual([made[2], made[1]])
    expect(ids(await get(c, p1.body.next_page_url))).toEqual([made[0]])
    const gone = await del(c, `/v1/queues/${q}/members/${made[1]}`)
    expect(gone.status).toBe(200)
    expect(gone.body).toMatchObject({ id: made[1], deleted: true })
    const again = await del(c, `/v1/queues/${q}/members/${made[1]}`)
    expect([again.status, again.body.code]).toEqual([404, 'queue_member_not_found'])
    expect(ids(await get(c, `/v1/queues/${q}/members`))).toEqual([made[2], made[0]])
  })

  test('a member outside the account, or a timeout target not in the account: queue_validation_failed naming the field; nothing stored', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const q = await queue(c)
    expectInvalid(await post(c, `/v1/queues/${q}/members`, { user: await user(other) }), ['user'], 'queue_validation_failed')
    expectInvalid(await post(c, `/v1/queues/${q}/members`, { user: 'usr_nobody' }), ['user'], 'queue_validation_failed')
    expect(ids(await get(c, `/v1/queues/${q}/members`))).toEqual([])
    for (const target of [await ringGroup(other), await queue(other), 'que_nothere', 'garbage']) {
      expectInvalid(await post(c, '/v1/queues', { name: 'X', timeout_target: target }), ['timeout_target'], 'queue_validation_failed')
      expectInvalid(await post(c, `/v1/queues/${q}`, { timeout_target: target }), ['timeout_target'], 'queue_validation_failed')
    }
    expect(ids(await get(c, '/v1/queues'))).toEqual([q])
    expect((await ok(get(c, `/v1/queues/${q}`))).timeout_target).toBeNull()
    // Schema problems stay plain validation errors.
    expectInvalid(await post(c, '/v1/queues', { name: 'X', max_wait_seconds: -1 }), ['max_wait_seconds'])
    expectInvalid(await post(c, '/v1/queues', {}), ['name'])
  })

  test('a loop through a ring group and a dial plan is QueueValidationFailed with the path', async () => {
    const c = await ctx()
    const q = await queue(c)
    const plan = await dialPlan(c, { entry: 'a', nodes: { a: { kind: 'route', target: q } } })
    const group = await ringGroup(c, { no_answer_target: plan })
    const self = await post(c, `/v1/queues/${q}`, { timeout_target: q })
    expectInvalid(self, ['timeout_target'], 'queue_validation_failed')
    expect(self.body.details.timeout_target).toContain('loop')
    const r = await post(c, `/v1/queues/${q}`, { timeout_target: group })
    expect([r.status, r.body.code]).toEqual([400, 'queue_validation_failed'])
    expect(JSON.stringify(r.body.details)).toContain('loop')
    expect((await ok(get(c, `/v1/queues/${q}`))).timeout_target).toBeNull()
  })

  test('update, delete (409 while an extension routes to it), 404 across accounts', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const q = await queue(c)
    clock.advance(1000)
    expect(await ok(post(c, `/v1/queues/${q}`, { name: 'Renamed', max_wait_seconds: 60 }))).toMatchObject({
      name: 'Renamed',
      max_wait_seconds: 60,
      updated_at: clock.now().toISOString(),
    })
    await extension(c, '500', q)
    const used = await del(c, `/v1/queues/${q}`)
    expect([used.status, used.body.code, used.body.details.referenced_by]).toEqual([409, 'routing_object_in_use', ['extensions.500.target']])
    for (const [method, path, body] of [
      ['GET', `/v1/queues/${q}`, undefined],
      ['POST', `/v1/queues/${q}`, { name: 'x' }],
      ['DELETE', `/v1/queues/${q}`, undefined],
      ['GET', `/v1/queues/${q}/members`, undefined],
      ['POST', `/v1/queues/${q}/members`, { user: await user(other) }],
      ['DELETE', `/v1/queues/${q}/members/qm_x`, undefined],
    ] as const) {
      const r = await t.call(method, path, { ...other, body })
      expect([method, path, r.status, r.body.code]).toEqual([method, path, 404, 'queue_not_found'])
    }
    await ok(del(c, '/v1/extensions/500'))
    expect(await ok(del(c, `/v1/queues/${q}`))).toEqual({ id: q, object: 'queue', deleted: true })
    expect((await get(c, `/v1/queues/${q}`)).status).toBe(404)
  })

  test('queue-agent: available by default with the queues the user is in; set unavailable; 404 for another account’s user', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const u = await user(c)
    const q = await queue(c)
    await ok(post(c, `/v1/queues/${q}/members`, { user: u }))
    expect(await ok(get(c, `/v1/users/${u}/queue-agent`))).toEqual({ object: 'queue_agent', user: u, status: 'available', queues: [q], updated_at: null })
    const set = await ok(post(c, `/v1/users/${u}/queue-agent`, { status: 'unavailable' }))
    expect(set).toEqual({ object: 'queue_agent', user: u, status: 'unavailable', queues: [q], updated_at: clock.now().toISOString() })
    expect((await ok(get(c, `/v1/users/${u}/queue-agent`))).status).toBe('unavailable')
    expectInvalid(await post(c, `/v1/users/${u}/queue-agent`, { status: 'asleep' }), ['status'])
    for (const r of [await get(other, `/v1/users/${u}/queue-agent`), await post(other, `/v1/users/${u}/queue-agent`, { status: 'available' })]) {
      expect([r.status, r.body.code]).toEqual([404, 'user_not_found'])
    }
  })
})
