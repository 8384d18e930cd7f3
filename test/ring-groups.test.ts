/**
 * Ring groups over HTTP: members ring simultaneously or one after another, then
 * the no-answer target. Members are users of the account, the target a routing
 * target of it, and no change may form a routing loop.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { expectInvalid, ids, routingFixtures } from './routing-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-04-20T08:00:00.000Z')
const t = await startTestService({}, { clock })
const { ctx, ok, post, get, del, user, ringGroup, dialPlan, box, extension } = routingFixtures(t)

describe('create and read ring groups', () => {
  test('create with members: defaults simultaneous, 30 s; the answer inlines members', async () => {
    const c = await ctx()
    const [u1, u2] = [await user(c), await user(c)]
    const r = await post(c, '/v1/ring_groups', { name: 'Sales', members: [{ user: u1 }, { user: u2, ring_seconds: 10 }] })
    expect(r.status).toBe(200)
    const id = r.body.id
    expect(id).toMatch(/^rg_/)
    expect(r.body).toMatchObject({
      object: 'ring_group',
      account: c.account,
      name: 'Sales',
      strategy: 'simultaneous',
      ring_seconds: 30,
      no_answer_target: null,
      member_count: 2,
      created_at: clock.now().toISOString(),
    })
    expect(r.body.members.data.map((m: any) => [m.user, m.ring_seconds])).toEqual([
      [u1, null],
      [u2, 10],
    ])
    const plain = await ok(get(c, `/v1/ring_groups/${id}`))
    expect(plain.members).toBeUndefined()
    const expanded = await ok(get(c, `/v1/ring_groups/${id}?expand[]=members`))
    expect(expanded.members).toEqual(r.body.members)
  })

  test('list newest first, paginated, expand[]=members; only the account’s own', async () => {
    const c = await ctx()
    const other = await ctx()
    await ringGroup(other)
    const made: string[] = []
    for (let i = 0; i < 3; i++) {
      made.push(await ringGroup(c, { name: `G${i}`, members: [{ user: await user(c) }] }))
      clock.advance(1000)
    }
    const all = await get(c, '/v1/ring_groups?expand[]=members')
    expect(ids(all)).toEqual([...made].reverse())
    expect(all.body.data[0].members.data).toHaveLength(1)
    const p1 = await get(c, '/v1/ring_groups?limit=2')
    expect(ids(p1)).toEqual([made[2], made[1]])
    expect(ids(await get(c, p1.body.next_page_url))).toEqual([made[0]])
  })

  test('sequential with per-member ring seconds and a no-answer target', async () => {
    const c = await ctx()
    const [u1, u2] = [await user(c), await user(c)]
    const b = await box(c)
    const r = await ok(
      post(c, '/v1/ring_groups', {
        name: 'Support',
        strategy: 'sequential',
        ring_seconds: 15,
        no_answer_target: b,
        members: [{ user: u1, ring_seconds: 5 }, { user: u2 }],
      }),
    )
    expect(r).toMatchObject({ strategy: 'sequential', ring_seconds: 15, no_answer_target: b })
  })
})

describe('bad input is refused with field details, nothing stored', () => {
  test('missing, wrong-typed and out-of-range fields', async () => {
    const c = await ctx()
    expectInvalid(await post(c, '/v1/ring_groups', {}), ['name'])
    expectInvalid(await post(c, '/v1/ring_groups', { name: 'X', strategy: 'random' }), ['strategy'])
    expectInvalid(await post(c, '/v1/ring_groups', { name: 'X', ring_seconds: 0 }), ['ring_seconds'])
    expectInvalid(await post(c, '/v1/ring_groups', { name: 'X', ring_seconds: 'ten' }), ['ring_seconds'])
    expectInvalid(await post(c, '/v1/ring_groups', { name: 'X', colour: 'red' }), ['colour'])
    expect(ids(await get(c, '/v1/ring_groups'))).toEqual([])
  })

  test('members that are not users of the account (foreign, unknown, duplicate)', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const mine = await user(c)
    const foreign = await user(other)
    const r = await post(c, '/v1/ring_groups', { name: 'X', members: [{ user: mine }, { user: foreign }, { user: 'usr_nobody' }, { user: mine }] })
    expectInvalid(r, ['members.1.user', 'members.2.user', 'members.3.user'])
    expect(Object.keys(r.body.details)).not.toContain('members.0.user')
    expect(ids(await get(c, '/v1/ring_groups'))).toEqual([])
  })

  test('a no-answer target outside the account, or of no routable kind', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    for (const target of [await ringGroup(other), await user(other), 'rg_nothere', 'nonsense', c.account]) {
      expectInvalid(await post(c, '/v1/ring_groups', { name: 'X', no_answer_target: target }), ['no_answer_target'])
    }
    expect(ids(await get(c, '/v1/ring_groups'))).toEqual([])
  })

  test('a change that forms a routing loop is refused with the path; the stored group is unchanged', async () => {
    const c = await ctx()
    const a = await ringGroup(c, { name: 'A' })
    const b = await ringGroup(c, { name: 'B', no_answer_target: a })
    const self = await post(c, `/v1/ring_groups/${a}`, { no_answer_target: a })
    expectInvalid(self, ['no_answer_target'])
    expect(self.body.details.no_answer_target).toContain('loop')
    const loop = await post(c, `/v1/ring_groups/${a}`, { no_answer_target: b })
    expect(loop.status).toBe(400)
    expect(JSON.stringify(loop.body.details)).toContain('loop')
    expect(Object.keys(loop.body.details).some((k) => k === 'no_answer_target' || k === `ring_groups.${b}.no_answer_target`)).toBe(true)
    expect((await ok(get(c, `/v1/ring_groups/${a}`))).no_answer_target).toBeNull()
    // Through a dial plan too.
    const plan = await dialPlan(c, { entry: 'start', nodes: { start: { kind: 'route', target: b } } })
    expectInvalid(await post(c, `/v1/ring_groups/${a}`, { no_answer_target: plan }), [])
  })
  test('two concurrent writes that would each close half a loop: exactly one is stored', async () => {
    const c = await ctx()
    const a = await ringGroup(c, { name: 'A' })
    const b = await ringGroup(c, { name: 'B' })
    const results = await Promise.all([post(c, `/v1/ring_groups/${a}`, { no_answer_target: b }), post(c, `/v1/ring_groups/${b}`, { no_answer_target: a })])
    expect(results.map((r) => r.status).sort()).toEqual([200, 400])
    const stored = [(await ok(get(c, `/v1/ring_groups/${a}`))).no_answer_target, (await ok(get(c, `/v1/ring_groups/${b}`))).no_answer_target]
    expect(stored.filter((x) => x !== null)).toHaveLength(1)
  })
})

describe('update, members, delete', () => {
  test('update replaces given fields; members replaces the list', async () => {
    const c = await ctx()
    const [u1, u2] = [await user(c), await user(c)]
    const id = await ringGroup(c, { members: [{ user: u1 }] })
    clock.advance(2000)
    const r = await ok(post(c, `/v1/ring_groups/${id}`, { name: 'Renamed', strategy: 'sequential', members: [{ user: u2 }, { user: u1, ring_seconds: 20 }] }))
    expect(r).toMatchObject({ name: 'Renamed', strategy: 'sequential', ring_seconds: 30, updated_at: clock.now().toISOString() })
    expect(r.members.data.map((m: any) => m.user)).toEqual([u2, u1])
  })

  test('add a member (last), a duplicate is 409 ring_group_member_conflict, a foreign user is refused; remove by member id', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const [u1, u2] = [await user(c), await user(c)]
    const id = await ringGroup(c, { members: [{ user: u1 }] })
    const m = await post(c, `/v1/ring_groups/${id}/members`, { user: u2, ring_seconds: 12 })
    expect(m.status).toBe(200)
    expect(m.body).toEqual({ id: expect.stringMatching(/^rgm_/), object: 'ring_group_member', ring_group: id, user: u2, ring_seconds: 12 })
    const dup = await post(c, `/v1/ring_groups/${id}/members`, { user: u1 })
    expect([dup.status, dup.body.code]).toEqual([409, 'ring_group_member_conflict'])
    expectInvalid(await post(c, `/v1/ring_groups/${id}/members`, { user: await user(other) }), ['user'])
    expectInvalid(await post(c, `/v1/ring_groups/${id}/members`, {}), ['user'])
    expect((await ok(get(c, `/v1/ring_groups/${id}?expand[]=members`))).members.data.map((x: any) => x.user)).toEqual([u1, u2])
    const gone = await del(c, `/v1/ring_groups/${id}/members/${m.body.id}`)
    expect(gone.status).toBe(200)
    expect(gone.body).toMatchObject({ id: m.body.id, deleted: true })
    const again = await del(c, `/v1/ring_groups/${id}/members/${m.body.id}`)
    expect([again.status, again.body.code]).toEqual([404, 'ring_group_member_not_found'])
    expect((await ok(get(c, `/v1/ring_groups/${id}`))).member_count).toBe(1)
  })

  test('delete: 409 routing_object_in_use while an extension or another group routes to it; then 404', async () => {
    const c = await ctx()
    const id = await ringGroup(c)
    await extension(c, '101', id)
    const used = await del(c, `/v1/ring_groups/${id}`)
    expect([used.status, used.body.code]).toEqual([409, 'routing_object_in_use'])
    expect(used.body.details.referenced_by).toEqual(['extensions.101.target'])
    await ok(del(c, '/v1/extensions/101'))
    const parent = await ringGroup(c, { no_answer_target: id })
    const used2 = await del(c, `/v1/ring_groups/${id}`)
    expect(used2.body.details.referenced_by).toEqual([`ring_groups.${parent}.no_answer_target`])
    await ok(del(c, `/v1/ring_groups/${parent}`))
    expect(await ok(del(c, `/v1/ring_groups/${id}`))).toEqual({ id, object: 'ring_group', deleted: true })
    const missing = await get(c, `/v1/ring_groups/${id}`)
    expect([missing.status, missing.body.code]).toEqual([404, 'ring_group_not_found'])
  })

  test('another account’s ring group is 404 on every operation', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const id = await ringGroup(other)
    for (const [method, path, body] of [
      ['GET', `/v1/ring_groups/${id}`, undefined],
      ['POST', `/v1/ring_groups/${id}`, { name: 'Mine' }],
      ['DELETE', `/v1/ring_groups/${id}`, undefined],
      ['POST', `/v1/ring_groups/${id}/members`, { user: await user(c) }],
      ['DELETE', `/v1/ring_groups/${id}/members/rgm_x`, undefined],
    ] as const) {
      const r = await t.call(method, path, { ...c, body })
      expect([method, path, r.status, r.body.code]).toEqual([method, path, 404, 'ring_group_not_found'])
    }
    expect((await ok(get(other, `/v1/ring_groups/${id}`))).name).toBe('Sales')
  })

  test('extensions may now target a ring group of the account (not another account’s)', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const id = await ringGroup(c)
    expect((await extension(c, '300', id)).target).toBe(id)
    expectInvalid(await post(c, '/v1/extensions', { number: '301', target: await ringGroup(other) }), ['target'])
  })
})
