/**
 * Extensions over HTTP: the number is the path identifier, unique per account,
 * as long as config.extension_length; the target is a routable resource of the
 * account.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { startTestService } from './support/service'

const clock = manualClock('2026-04-20T08:00:00.000Z')
const t = await startTestService({}, { clock })

type Ctx = { key: string; account: string }

async function ctx(key?: string): Promise<Ctx> {
  const a = await t.account(key ? { key } : {})
  return { key: a.key, account: a.id }
}

async function user(c: Ctx, email = `u${Math.random().toString(36).slice(2)}@example.com`) {
  const r = await t.call('POST', '/v1/users', { ...c, body: { email } })
  if (r.status !== 200) throw new Error(`user create failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.id as string
}

const create = (c: Ctx, body: Record<string, unknown>) => t.call('POST', '/v1/extensions', { ...c, body })
const numbers = (r: { body: any }) => r.body.data.map((e: any) => e.number)

const expectValidation = (r: { status: number; body: any }, field: string) => {
  expect(r.status).toBe(400)
  expect(r.body.code).toBe('validation_error')
  expect(r.body.details[field]).toBeDefined()
}

describe('create an extension', () => {
  test('returns the extension: number, target, status active by default, timestamps', async () => {
    const c = await ctx()
    const u = await user(c)
    const r = await create(c, { number: '101', target: u })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      id: expect.stringMatching(/^ext_/),
      object: 'extension',
      account: c.account,
      number: '101',
      target: u,
      status: 'active',
      created_at: clock.now().toISOString(),
      updated_at: clock.now().toISOString(),
    })
    const inactive = await create(c, { number: '102', target: u, status: 'inactive' })
    expect(inactive.status).toBe(200)
    expect(inactive.body.status).toBe('inactive')
  })

  test('extension numbers are unique per account: a duplicate is 409 extension_exists', async () => {
    const c = await ctx()
    const u1 = await user(c)
    const u2 = await user(c)
    expect((await create(c, { number: '200', target: u1 })).status).toBe(200)
    const dup = await create(c, { number: '200', target: u2 })
    expect(dup.status).toBe(409)
    expect(dup.body.code).toBe('extension_exists')
    const kept = await t.call('GET', '/v1/extensions/200', c)
    expect(kept.body.target).toBe(u1)
  })

  test('concurrent creates of one number: exactly one wins, the others get 409 extension_exists (never 500)', async () => {
    const c = await ctx()
    const u = await user(c)
    const results = await Promise.all([0, 1, 2, 3].map(() => create(c, { number: '250', target: u })))
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409])
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.code).toBe('extension_exists')
    expect(numbers(await t.call('GET', '/v1/extensions', c))).toEqual(['250'])
  })

  test('the same number in another account is fine', async () => {
    const p = await t.platform()
    const a = await ctx(p.test_key)
    const b = await ctx(p.test_key)
    const ra = await create(a, { number: '300', target: await user(a) })
    const rb = await create(b, { number: '300', target: await user(b) })
    expect(ra.status).toBe(200)
    expect(rb.status).toBe(200)
    expect(ra.body.id).not.toBe(rb.body.id)
    expect((await t.call('GET', '/v1/extensions/300', a)).body.id).toBe(ra.body.id)
    expect((await t.call('GET', '/v1/extensions/300', b)).body.id).toBe(rb.body.id)
  })

  test('its length follows config.extension_length (default 3)', async () => {
    const c = await ctx()
    const u = await user(c)
    const acct = await t.call('GET', `/v1/accounts/${c.account}`, { key: c.key })
    expect(acct.body.config.extension_length).toBe(3)
    for (const number of ['12', '1234', '1']) expectValidation(await create(c, { number, target: u }), 'number')
    expect((await create(c, { number: '007', target: u })).status).toBe(200)
  })

  test('after the account config sets extension_length 4: 3-digit numbers are refused, 4-digit accepted', async () => {
    const c = await ctx()
    const u = await user(c)
    expect((await create(c, { number: '555', target: u })).status).toBe(200)
    const upd = await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { config: { extension_length: 4 } } })
    expect(upd.status).toBe(200)
    expect(upd.body.config.extension_length).toBe(4)
    expectValidation(await create(c, { number: '556', target: u }), 'number')
    const four = await create(c, { number: '5560', target: u })
    expect(four.status).toBe(200)
    // Existing shorter extensions remain addressable.
    expect((await t.call('GET', '/v1/extensions/555', c)).status).toBe(200)
    expect(numbers(await t.call('GET', '/v1/extensions', c))).toEqual(['5560', '555'])
  })

  test('non-digits are refused', async () => {
    const c = await ctx()
    const u = await user(c)
    for (const number of ['abc', '12a', '1 2', '+12', '-12', '1.2', '١٢٣', '', 123]) {
      expectValidation(await create(c, { number, target: u }), 'number')
    }
    expect(numbers(await t.call('GET', '/v1/extensions', c))).toEqual([])
  })

  test('target must be a routable resource of the account: unknown id or another account’s user is a validation_error (details.target)', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const foreign = await user(other)
    const bad = [foreign, 'usr_doesnotexist', 'nope', c.account, other.account]
    for (const target of bad) {
      const r = await create(c, { number: '400', target })
      expectValidation(r, 'target')
    }
    expectValidation(await create(c, { number: '400' }), 'target')
    expectValidation(await create(c, { number: '400', target: '' }), 'target')
    expect(numbers(await t.call('GET', '/v1/extensions', c))).toEqual([])
    // Both problems are reported together.
    const both = await create(c, { number: '40', target: 'usr_doesnotexist' })
    expect(both.status).toBe(400)
    expect(Object.keys(both.body.details).sort()).toEqual(['number', 'target'])
  })

  test('unknown fields and a bad status are refused', async () => {
    const c = await ctx()
    const u = await user(c)
    expectValidation(await create(c, { number: '500', target: u, label: 'Front desk' }), 'label')
    expectValidation(await create(c, { number: '500', target: u, status: 'paused' }), 'status')
  })
})

describe('list extensions', () => {
  test('newest first; only the account’s own; target filter', async () => {
    const c = await ctx()
    const other = await ctx()
    const u1 = await user(c)
    const u2 = await user(c)
    await create(other, { number: '600', target: await user(other) })
    for (const [number, target] of [
      ['601', u1],
      ['602', u2],
      ['603', u1],
      ['604', u2],
    ] as const) {
      expect((await create(c, { number, target })).status).toBe(200)
      clock.advance(1000)
    }
    const all = await t.call('GET', '/v1/extensions', c)
    expect(all.status).toBe(200)
    expect(all.body.object).toBe('list')
    expect(numbers(all)).toEqual(['604', '603', '602', '601'])
    expect(numbers(await t.call('GET', `/v1/extensions?target=${u1}`, c))).toEqual(['603', '601'])
    expect(numbers(await t.call('GET', `/v1/extensions?target=${u2}`, c))).toEqual(['604', '602'])
    expect(numbers(await t.call('GET', '/v1/extensions?target=usr_nobody', c))).toEqual([])
    const page1 = await t.call('GET', `/v1/extensions?target=${u1}&limit=1`, c)
    expect(numbers(page1)).toEqual(['603'])
    expect(page1.body.next_page_url).toContain(`target=${u1}`)
    const page2 = await t.call('GET', page1.body.next_page_url, c)
    expect(numbers(page2)).toEqual(['601'])
    expect(page2.body.next_page_url).toBeNull()
    expect(page2.body.previous_page_url).not.toBeNull()
  })

  test('unknown query parameters are refused', async () => {
    const c = await ctx()
    const r = await t.call('GET', '/v1/extensions?status=active', c)
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
  })
})

describe('get, update, delete an extension (by number)', () => {
  test('get by number', async () => {
    const c = await ctx()
    const u = await user(c)
    const made = (await create(c, { number: '700', target: u })).body
    const r = await t.call('GET', '/v1/extensions/700', c)
    expect(r.status).toBe(200)
    expect(r.body).toEqual(made)
  })

  test('unknown number: 404 extension_not_found on get, update and delete; another account’s number is unknown', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    await create(other, { number: '710', target: await user(other) })
    for (const number of ['999', '710', 'abc', '1234567890123']) {
      for (const [method, body] of [
        ['GET', undefined],
        ['POST', { status: 'inactive' }],
        ['DELETE', undefined],
      ] as const) {
        const r = await t.call(method, `/v1/extensions/${number}`, { ...c, body })
        expect([number, method, r.status, r.body.code]).toEqual([number, method, 404, 'extension_not_found'])
      }
    }
    expect((await t.call('GET', '/v1/extensions/710', other)).body.status).toBe('active')
  })

  test('update target and status; omitted fields unchanged; updated_at moves', async () => {
    const c = await ctx()
    const u1 = await user(c)
    const u2 = await user(c)
    const made = (await create(c, { number: '720', target: u1 })).body
    clock.advance(5000)
    const status = await t.call('POST', '/v1/extensions/720', { ...c, body: { status: 'inactive' } })
    expect(status.status).toBe(200)
    expect(status.body.status).toBe('inactive')
    expect(status.body.target).toBe(u1)
    expect(status.body.created_at).toBe(made.created_at)
    expect(status.body.updated_at).toBe(clock.now().toISOString())
    const target = await t.call('POST', '/v1/extensions/720', { ...c, body: { target: u2 } })
    expect(target.body.target).toBe(u2)
    expect(target.body.status).toBe('inactive')
    const both = await t.call('POST', '/v1/extensions/720', { ...c, body: { target: u1, status: 'active' } })
    expect(both.body).toMatchObject({ number: '720', target: u1, status: 'active', id: made.id })
    expect((await t.call('GET', '/v1/extensions/720', c)).body).toEqual(both.body)
    expect(numbers(await t.call('GET', `/v1/extensions?target=${u1}`, c))).toEqual(['720'])
  })

  test('update to a target that is not routable in the account: validation_error (details.target), unchanged', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const u = await user(c)
    await create(c, { number: '730', target: u })
    for (const target of [await user(other), 'usr_doesnotexist', '']) {
      expectValidation(await t.call('POST', '/v1/extensions/730', { ...c, body: { target } }), 'target')
    }
    expectValidation(await t.call('POST', '/v1/extensions/730', { ...c, body: { status: 'on' } }), 'status')
    expectValidation(await t.call('POST', '/v1/extensions/730', { ...c, body: { number: '731' } }), 'number')
    expect((await t.call('GET', '/v1/extensions/730', c)).body).toMatchObject({ target: u, status: 'active' })
  })

  test('delete: then 404 extension_not_found; the number can be used again', async () => {
    const c = await ctx()
    const u = await user(c)
    const made = (await create(c, { number: '740', target: u })).body
    const r = await t.call('DELETE', '/v1/extensions/740', c)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ id: made.id, object: 'extension', number: '740', deleted: true })
    const gone = await t.call('GET', '/v1/extensions/740', c)
    expect(gone.status).toBe(404)
    expect(gone.body.code).toBe('extension_not_found')
    expect((await t.call('DELETE', '/v1/extensions/740', c)).status).toBe(404)
    const again = await create(c, { number: '740', target: u })
    expect(again.status).toBe(200)
    expect(again.body.id).not.toBe(made.id)
    // Deleting the extension leaves its user in place.
    expect((await t.call('GET', `/v1/users/${u}`, c)).status).toBe(200)
  })
})
