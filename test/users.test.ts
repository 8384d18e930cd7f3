/**
 * Users (team members) over HTTP: create, get, list (newest first, search,
 * expand[]=extensions), update, delete, and the per-account email rule.
 */
import { describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { manualClock } from '../src/clock'
import { voicemailGreetings } from '../src/db/schema'
import { pcmWav } from './fixtures/pcm-wav'
import { download, upload } from './fixtures/upload'
import { routingFixtures } from './routing-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-02-10T15:30:00.000Z')
const t = await startTestService({}, { clock })

type Ctx = { key: string; account: string }

async function ctx(): Promise<Ctx> {
  const a = await t.account()
  return { key: a.key, account: a.id }
}

async function createUser(c: Ctx, body: Record<string, unknown>) {
  const r = await t.call('POST', '/v1/users', { ...c, body })
  if (r.status !== 200) throw new Error(`user create failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

async function createExtension(c: Ctx, number: string, target: string, status?: string) {
  const r = await t.call('POST', '/v1/extensions', { ...c, body: { number, target, ...(status ? { status } : {}) } })
  if (r.status !== 200) throw new Error(`extension create failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

const ids = (r: { body: any }) => r.body.data.map((u: any) => u.id)
const f = routingFixtures(t)

describe('create a user', () => {
  test('email required, name optional: the created user is returned', async () => {
    const c = await ctx()
    const r = await t.call('POST', '/v1/users', { ...c, body: { email: 'grace@example.com', name: 'Grace Hopper' } })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      id: expect.stringMatching(/^usr_/),
      object: 'user',
      account: c.account,
      name: 'Grace Hopper',
      email: 'grace@example.com',
      created_at: clock.now().toISOString(),
      updated_at: clock.now().toISOString(),
    })
    expect(r.body.id.length).toBeLessThanOrEqual(255)
    const noName = await t.call('POST', '/v1/users', { ...c, body: { email: 'anon@example.com' } })
    expect(noName.status).toBe(200)
    expect(noName.body.name).toBeNull()
    const nullName = await t.call('POST', '/v1/users', { ...c, body: { email: 'anon2@example.com', name: null } })
    expect(nullName.status).toBe(200)
    expect(nullName.body.name).toBeNull()
  })

  test('missing email: validation_error with details.email', async () => {
    const c = await ctx()
    const r = await t.call('POST', '/v1/users', { ...c, body: { name: 'No Mail' } })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details.email).toBe('is required')
  })

  test('email format is validated', async () => {
    const c = await ctx()
    for (const email of ['not-an-email', 'a@', '@example.com', '', 'two words@example.com', 42, null]) {
      const r = await t.call('POST', '/v1/users', { ...c, body: { email } })
      expect([email, r.status]).toEqual([email, 400])
      expect(r.body.code).toBe('validation_error')
      expect(r.body.details.email).toBeDefined()
    }
    expect(ids(await t.call('GET', '/v1/users', c))).toEqual([])
  })

  test('unknown fields, wrong types and an over-long name are refused; invalid JSON is 400', async () => {
    const c = await ctx()
    const unknown = await t.call('POST', '/v1/users', { ...c, body: { email: 'a@example.com', role: 'admin' } })
    expect(unknown.status).toBe(400)
    expect(unknown.body.details.role).toBeDefined()
    const wrongType = await t.call('POST', '/v1/users', { ...c, body: { email: 'a@example.com', name: 7 } })
    expect(wrongType.status).toBe(400)
    expect(wrongType.body.details.name).toBeDefined()
    const long = await t.call('POST', '/v1/users', { ...c, body: { email: 'a@example.com', name: 'x'.repeat(201) } })
    expect(long.status).toBe(400)
    expect(long.body.details.name).toBeDefined()
    const bad = await t.call('POST', '/v1/users', { ...c, rawBody: '{"email":', headers: { 'content-type': 'application/json' } })
    expect(bad.status).toBe(400)
    expect(typeof bad.body.error).toBe('string')
    expect(ids(await t.call('GET', '/v1/users', c))).toEqual([])
  })

  test('duplicate email in the same account: 409 user_email_taken, case-insensitive', async () => {
    const c = await ctx()
    await createUser(c, { email: 'Dup@Example.com' })
    for (const email of ['Dup@Example.com', 'dup@example.com', 'DUP@EXAMPLE.COM']) {
      const r = await t.call('POST', '/v1/users', { ...c, body: { email } })
      expect(r.status).toBe(409)
      expect(r.body.code).toBe('user_email_taken')
    }
    expect(ids(await t.call('GET', '/v1/users', c))).toHaveLength(1)
  })

  test('concurrent creates with one email: exactly one wins, the others get 409 user_email_taken (never 500)', async () => {
    const c = await ctx()
    const results = await Promise.all(
      ['Race@example.com', 'race@example.com', 'RACE@example.com', 'race@EXAMPLE.com'].map((email) => t.call('POST', '/v1/users', { ...c, body: { email } })),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409])
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.code).toBe('user_email_taken')
    expect(ids(await t.call('GET', '/v1/users', c))).toHaveLength(1)
  })

  test('the same email in another account is fine (same platform or another)', async () => {
    const p = await t.platform()
    const a = { key: p.test_key, account: (await t.account({ key: p.test_key })).id }
    const b = { key: p.test_key, account: (await t.account({ key: p.test_key })).id }
    const elsewhere = await ctx()
    const ua = await createUser(a, { email: 'shared@example.com' })
    const ub = await createUser(b, { email: 'shared@example.com' })
    const ue = await createUser(elsewhere, { email: 'SHARED@example.com' })
    expect(new Set([ua.id, ub.id, ue.id]).size).toBe(3)
  })
})

describe('get a user', () => {
  test('returns the user; no extensions field without expand', async () => {
    const c = await ctx()
    const u = await createUser(c, { email: 'get@example.com', name: 'Get Me' })
    await createExtension(c, '101', u.id)
    const r = await t.call('GET', `/v1/users/${u.id}`, c)
    expect(r.status).toBe(200)
    expect(r.body).toEqual(u)
    expect('extensions' in r.body).toBe(false)
  })

  test('expand[]=extensions inlines {object: "list", data}', async () => {
    const c = await ctx()
    const u = await createUser(c, { email: 'exp@example.com' })
    const e1 = await createExtension(c, '201', u.id)
    const e2 = await createExtension(c, '202', u.id, 'inactive')
    const r = await t.call('GET', `/v1/users/${u.id}?expand[]=extensions`, c)
    expect(r.status).toBe(200)
    expect(r.body.extensions.object).toBe('list')
    expect(r.body.extensions.data).toEqual([e1, e2])
    const encoded = await t.call('GET', `/v1/users/${u.id}?expand%5B%5D=extensions`, c)
    expect(encoded.body.extensions.data).toHaveLength(2)
  })

  test('an unknown expand value is a validation_error', async () => {
    const c = await ctx()
    const u = await createUser(c, { email: 'x@example.com' })
    const r = await t.call('GET', `/v1/users/${u.id}?expand[]=devices`, c)
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
  })

  test('a user of another account (same platform) is absent: 404 user_not_found on get, update, delete', async () => {
    const p = await t.platform()
    const a = { key: p.test_key, account: (await t.account({ key: p.test_key })).id }
    const b = { key: p.test_key, account: (await t.account({ key: p.test_key })).id }
    const ub = await createUser(b, { email: 'b@example.com', name: 'Bee' })
    for (const [method, body] of [
      ['GET', undefined],
      ['POST', { name: 'Stolen' }],
      ['DELETE', undefined],
    ] as const) {
      const r = await t.call(method, `/v1/users/${ub.id}`, { ...a, body })
      expect(r.status).toBe(404)
      expect(r.body.code).toBe('user_not_found')
    }
    const still = await t.call('GET', `/v1/users/${ub.id}`, b)
    expect(still.status).toBe(200)
    expect(still.body.name).toBe('Bee')
  })

  test('an unknown id: 404 user_not_found; an id over 255 characters: validation_error', async () => {
    const c = await ctx()
    const r = await t.call('GET', '/v1/users/usr_nope', c)
    expect(r.status).toBe(404)
    expect(r.body.code).toBe('user_not_found')
    const long = await t.call('GET', `/v1/users/${'u'.repeat(256)}`, c)
    expect(long.status).toBe(400)
    expect(long.body.code).toBe('validation_error')
  })
})

describe('list users', () => {
  test('newest first, with pagination links', async () => {
    const c = await ctx()
    const made = []
    for (let i = 0; i < 5; i++) {
      made.push(await createUser(c, { email: `n${i}@example.com`, name: `N${i}` }))
      clock.advance(1000)
    }
    const newestFirst = made.map((u) => u.id).reverse()
    const all = await t.call('GET', '/v1/users', c)
    expect(all.status).toBe(200)
    expect(all.body.object).toBe('list')
    expect(all.body.next_page_url).toBeNull()
    expect(all.body.previous_page_url).toBeNull()
    expect(ids(all)).toEqual(newestFirst)
    const p1 = await t.call('GET', '/v1/users?limit=2', c)
    expect(ids(p1)).toEqual(newestFirst.slice(0, 2))
    const p2 = await t.call('GET', p1.body.next_page_url, c)
    expect(ids(p2)).toEqual(newestFirst.slice(2, 4))
    const p3 = await t.call('GET', p2.body.next_page_url, c)
    expect(ids(p3)).toEqual(newestFirst.slice(4))
    expect(p3.body.next_page_url).toBeNull()
  })

  test('newest first also for users created within the same instant', async () => {
    const c = await ctx()
    const made = []
    for (let i = 0; i < 6; i++) made.push((await createUser(c, { email: `same${i}@example.com` })).id)
    expect(ids(await t.call('GET', '/v1/users', c))).toEqual(made.reverse())
  })

  test('lists only the account’s own users', async () => {
    const a = await ctx()
    const b = await ctx()
    const ua = await createUser(a, { email: 'mine@example.com' })
    await createUser(b, { email: 'theirs@example.com' })
    expect(ids(await t.call('GET', '/v1/users', a))).toEqual([ua.id])
  })

  test('search matches name or email, case-insensitive', async () => {
    const c = await ctx()
    const ada = await createUser(c, { email: 'ada@lovelace.org', name: 'Ada Lovelace' })
    clock.advance(1000)
    const alan = await createUser(c, { email: 'alan@turing.org', name: 'Alan Turing' })
    clock.advance(1000)
    const anon = await createUser(c, { email: 'LOVE.letters@example.com' })
    const q = async (s: string) => ids(await t.call('GET', `/v1/users?search=${encodeURIComponent(s)}`, c))
    expect(await q('ada')).toEqual([ada.id])
    expect(await q('TURING')).toEqual([alan.id])
    expect(await q('turing.org')).toEqual([alan.id])
    expect(await q('love')).toEqual([anon.id, ada.id])
    expect(await q('nobody')).toEqual([])
    expect(await q('a')).toEqual([anon.id, alan.id, ada.id])
  })

  test('search treats LIKE wildcards (% and _) and backslash literally', async () => {
    const c = await ctx()
    const pct = await createUser(c, { email: 'promo@example.com', name: '50% Off' })
    clock.advance(1000)
    const under = await createUser(c, { email: 'first_last@example.com', name: 'First Last' })
    clock.advance(1000)
    const back = await createUser(c, { email: 'slash@example.com', name: 'Back\\Slash' })
    clock.advance(1000)
    await createUser(c, { email: 'plain@example.com', name: 'Plain 500 Offers' })
    const q = async (s: string) => ids(await t.call('GET', `/v1/users?search=${encodeURIComponent(s)}`, c))
    expect(await q('%')).toEqual([pct.id])
    expect(await q('50%')).toEqual([pct.id])
    expect(await q('_')).toEqual([under.id])
    expect(await q('t_l')).toEqual([under.id])
    expect(await q('\\')).toEqual([back.id])
  })

  test('search is kept in the pagination links', async () => {
    const c = await ctx()
    const made = []
    for (let i = 0; i < 3; i++) {
      made.push((await createUser(c, { email: `team${i}@example.com` })).id)
      clock.advance(1000)
    }
    await createUser(c, { email: 'other@example.com' })
    const p1 = await t.call('GET', '/v1/users?search=team&limit=2', c)
    expect(ids(p1)).toEqual([made[2], made[1]])
    expect(p1.body.next_page_url).toContain('search=team')
    const p2 = await t.call('GET', p1.body.next_page_url, c)
    expect(ids(p2)).toEqual([made[0]])
  })

  test('expand[]=extensions: absent without expand, {object: "list", data} with it (empty list when none)', async () => {
    const c = await ctx()
    const u1 = await createUser(c, { email: 'one@example.com' })
    clock.advance(1000)
    const u2 = await createUser(c, { email: 'two@example.com' })
    const e1 = await createExtension(c, '301', u1.id)
    const e2 = await createExtension(c, '300', u1.id)
    const plain = await t.call('GET', '/v1/users', c)
    for (const u of plain.body.data) expect('extensions' in u).toBe(false)
    const expanded = await t.call('GET', '/v1/users?expand[]=extensions', c)
    expect(expanded.status).toBe(200)
    const [first, second] = expanded.body.data
    expect(first.id).toBe(u2.id)
    expect(first.extensions).toEqual({ object: 'list', data: [] })
    expect(second.id).toBe(u1.id)
    expect(second.extensions.object).toBe('list')
    expect(second.extensions.data.map((e: any) => e.number).sort()).toEqual(['300', '301'])
    expect(second.extensions.data).toContainEqual(e1)
    expect(second.extensions.data).toContainEqual(e2)
  })

  test('limit is 1 to 100; out of range is a validation_error; a forged page cursor is invalid_pagination', async () => {
    const c = await ctx()
    for (const limit of ['0', '101', 'abc']) {
      const r = await t.call('GET', `/v1/users?limit=${limit}`, c)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
    }
    const bad = await t.call('GET', '/v1/users?page=abc.def', c)
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('invalid_pagination')
  })
})

describe('update a user', () => {
  test('updates name and email; omitted fields unchanged; updated_at moves', async () => {
    const c = await ctx()
    const u = await createUser(c, { email: 'old@example.com', name: 'Old Name' })
    clock.advance(60_000)
    const r = await t.call('POST', `/v1/users/${u.id}`, { ...c, body: { name: 'New Name' } })
    expect(r.status).toBe(200)
    expect(r.body.name).toBe('New Name')
    expect(r.body.email).toBe('old@example.com')
    expect(r.body.created_at).toBe(u.created_at)
    expect(r.body.updated_at).toBe(clock.now().toISOString())
    const mail = await t.call('POST', `/v1/users/${u.id}`, { ...c, body: { email: 'new@example.com' } })
    expect(mail.body.email).toBe('new@example.com')
    expect(mail.body.name).toBe('New Name')
    const cleared = await t.call('POST', `/v1/users/${u.id}`, { ...c, body: { name: null } })
    expect(cleared.body.name).toBeNull()
    const got = await t.call('GET', `/v1/users/${u.id}`, c)
    expect(got.body).toEqual(cleared.body)
  })

  test('changing email to another user’s (any case) is 409 user_email_taken; re-casing one’s own is fine', async () => {
    const c = await ctx()
    const a = await createUser(c, { email: 'a@example.com' })
    const b = await createUser(c, { email: 'b@example.com' })
    const r = await t.call('POST', `/v1/users/${b.id}`, { ...c, body: { email: 'A@EXAMPLE.COM' } })
    expect(r.status).toBe(409)
    expect(r.body.code).toBe('user_email_taken')
    expect((await t.call('GET', `/v1/users/${b.id}`, c)).body.email).toBe('b@example.com')
    const own = await t.call('POST', `/v1/users/${a.id}`, { ...c, body: { email: 'A@Example.com' } })
    expect(own.status).toBe(200)
    expect(own.body.email).toBe('A@Example.com')
  })

  test('two users concurrently taking the same new email: one wins, the other 409 user_email_taken', async () => {
    const c = await ctx()
    const a = await createUser(c, { email: 'x1@example.com' })
    const b = await createUser(c, { email: 'x2@example.com' })
    const results = await Promise.all([a, b].map((u) => t.call('POST', `/v1/users/${u.id}`, { ...c, body: { email: 'wanted@example.com' } })))
    expect(results.map((r) => r.status).sort()).toEqual([200, 409])
    expect(results.find((r) => r.status === 409)!.body.code).toBe('user_email_taken')
  })

  test('invalid email or unknown field on update: validation_error; unknown user: 404', async () => {
    const c = await ctx()
    const u = await createUser(c, { email: 'v@example.com' })
    const bad = await t.call('POST', `/v1/users/${u.id}`, { ...c, body: { email: 'nope' } })
    expect(bad.status).toBe(400)
    expect(bad.body.details.email).toBeDefined()
    const unknown = await t.call('POST', `/v1/users/${u.id}`, { ...c, body: { account: 'acct_x' } })
    expect(unknown.status).toBe(400)
    const absent = await t.call('POST', '/v1/users/usr_nope', { ...c, body: { name: 'x' } })
    expect(absent.status).toBe(404)
    expect(absent.body.code).toBe('user_not_found')
  })
})

describe('delete a user', () => {
  test('deleted: then 404 user_not_found; its extensions are removed, others kept', async () => {
    const c = await ctx()
    const u = await createUser(c, { email: 'gone@example.com' })
    const keep = await createUser(c, { email: 'keep@example.com' })
    await createExtension(c, '401', u.id)
    await createExtension(c, '402', u.id)
    await createExtension(c, '403', keep.id)
    const r = await t.call('DELETE', `/v1/users/${u.id}`, c)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ id: u.id, object: 'user', deleted: true })
    const get = await t.call('GET', `/v1/users/${u.id}`, c)
    expect(get.status).toBe(404)
    expect(get.body.code).toBe('user_not_found')
    const again = await t.call('DELETE', `/v1/users/${u.id}`, c)
    expect(again.status).toBe(404)
    expect(again.body.code).toBe('user_not_found')
    for (const n of ['401', '402']) expect((await t.call('GET', `/v1/extensions/${n}`, c)).body.code).toBe('extension_not_found')
    expect((await t.call('GET', '/v1/extensions/403', c)).status).toBe(200)
    expect(ids(await t.call('GET', '/v1/users', c))).toEqual([keep.id])
    // The number is free again, and so is the email.
    expect((await t.call('POST', '/v1/extensions', { ...c, body: { number: '401', target: keep.id } })).status).toBe(200)
    expect((await t.call('POST', '/v1/users', { ...c, body: { email: 'gone@example.com' } })).status).toBe(200)
  })
})

describe('delete a user: what refers to them', () => {
  /** A number nobody holds (the PostgreSQL database outlives a run); the account is deleted at the end to free it. */
  async function number(c: Ctx) {
    t.beforeStop(() => t.call('DELETE', `/v1/accounts/${c.account}`, { key: c.key }))
    const e164 = (await f.ok(f.get(c, '/v1/available-phone-numbers?quantity=1'))).data[0].phone_number as string
    await f.ok(f.post(c, '/v1/phone-number-orders', { phone_numbers: [e164] }))
    return (await f.ok(f.get(c, '/v1/phone-numbers'))).data.find((n: any) => n.number === e164).id as string
  }
  const members = async (c: Ctx, rg: string) => (await f.ok(f.get(c, `/v1/ring_groups/${rg}?expand[]=members`))).members.data.map((m: any) => m.user)
  const queueMembers = async (c: Ctx, q: string) => (await f.ok(f.get(c, `/v1/queues/${q}/members`))).data.map((m: any) => m.user)
  const boxUsers = async (c: Ctx, box: string) => (await f.ok(f.get(c, `/v1/shared_voicemail_boxes/${box}`))).users

  test('memberships go with the user: ring groups, queues, shared voicemail box users; the others stay', async () => {
    const c = await ctx()
    const [gone, keep] = [await f.user(c), await f.user(c)]
    const rg = await f.ringGroup(c, { strategy: 'sequential', members: [{ user: gone, ring_seconds: 10 }, { user: keep }] })
    const q = await f.queue(c)
    await f.ok(f.post(c, `/v1/queues/${q}/members`, { user: gone }))
    await f.ok(f.post(c, `/v1/queues/${q}/members`, { user: keep }))
    await f.ok(f.post(c, `/v1/users/${gone}/queue-agent`, { status: 'unavailable' }))
    const box = await f.ok(f.post(c, '/v1/shared_voicemail_boxes', { name: 'Support', users: [gone, keep] }))
    expect((await t.call('DELETE', `/v1/users/${gone}`, c)).status).toBe(200)
    expect(await members(c, rg)).toEqual([keep])
    expect((await f.ok(f.get(c, `/v1/ring_groups/${rg}`))).member_count).toBe(1)
    expect(await queueMembers(c, q)).toEqual([keep])
    expect(await boxUsers(c, box.id)).toEqual([keep])
    // The user's id may not come back as a member by the back door either.
    expect((await f.post(c, `/v1/ring_groups/${rg}/members`, { user: gone })).status).toBe(400)
  })

  test('a routing object that sends calls to the user refuses the delete: 409 routing_object_in_use naming each field, nothing deleted', async () => {
    const c = await ctx()
    const [gone, keep] = [await f.user(c), await f.user(c)]
    const pn = await number(c)
    await f.ok(f.post(c, `/v1/phone-numbers/${pn}/route`, { target: gone }))
    const rg = await f.ringGroup(c, { members: [{ user: gone }, { user: keep }], no_answer_target: gone })
    const q = await f.queue(c, { max_wait_seconds: 60, timeout_target: gone })
    await f.ok(f.post(c, `/v1/queues/${q}/members`, { user: gone }))
    const dp = await f.dialPlan(c, { entry: 'a', nodes: { a: { kind: 'route', target: gone } } })
    await f.extension(c, '611', gone)

    const refused = await t.call('DELETE', `/v1/users/${gone}`, c)
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 409, code: 'routing_object_in_use' })
    expect([...refused.body.details.referenced_by].sort()).toEqual(
      [`dial_plans.${dp}.nodes.a.target`, `phone_numbers.${pn}.target`, `queues.${q}.timeout_target`, `ring_groups.${rg}.no_answer_target`].sort(),
    )
    // One transaction: the memberships and the extension removed before the refusal are all back.
    expect((await t.call('GET', `/v1/users/${gone}`, c)).status).toBe(200)
    expect(await members(c, rg)).toEqual([gone, keep])
    expect(await queueMembers(c, q)).toEqual([gone])
    expect((await t.call('GET', '/v1/extensions/611', c)).body.target).toBe(gone)

    // Pointed elsewhere, the user can go.
    await f.ok(f.post(c, `/v1/phone-numbers/${pn}/route`, { target: keep }))
    await f.ok(f.post(c, `/v1/ring_groups/${rg}`, { no_answer_target: null }))
    await f.ok(f.post(c, `/v1/queues/${q}`, { timeout_target: keep }))
    await f.ok(f.post(c, `/v1/dialplans/${dp}`, { nodes: { a: { kind: 'hangup' } } }))
    expect((await t.call('DELETE', `/v1/users/${gone}`, c)).status).toBe(200)
    expect((await t.call('GET', '/v1/extensions/611', c)).body.code).toBe('extension_not_found')
  })

  test('the user’s voicemail greetings go with them, audio included', async () => {
    const c = await ctx()
    const gone = await f.user(c)
    const wav = pcmWav({ sampleRate: 8000, channels: 1, bits: 16, seconds: 0.5 })
    const greetings = []
    for (const type of ['unavailable', 'name']) {
      const r = await upload(t, `/v1/voicemail_greetings/${gone}/${type}`, c, { raw: wav, type: 'audio/wav' })
      expect(r.status).toBe(200)
      greetings.push(r.body)
    }
    expect((await download(greetings[0].url)).status).toBe(200)
    expect((await t.call('DELETE', `/v1/users/${gone}`, c)).status).toBe(200)
    for (const g of greetings) expect((await download(g.url)).status).toBe(404)
    const rows = await t.service.database.db.select().from(voicemailGreetings).where(eq(voicemailGreetings.ownerId, gone))
    expect(rows).toEqual([])
    expect((await t.call('GET', `/v1/voicemail_greetings/${gone}/unavailable`, c)).body.code).toBe('voicemail_owner_not_found')
  })
})
