/**
 * Lists (spec conventions 6, Limits): URL-based cursor pagination, newest first,
 * `limit` 1..100 default 10, opaque cursors that are tamper-proof, expire after
 * 24 hours and belong to the one list (path, account, filters) they came from.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { startTestService } from './support/service'

const clock = manualClock('2026-03-02T09:00:00.000Z')
const t = await startTestService({}, { clock })

/** An account with `n` users created one second apart (u0 oldest); returns their ids newest first. */
async function accountWithUsers(n: number, prefix = 'user') {
  const a = await t.account()
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    clock.advance(1000)
    const r = await t.call('POST', '/v1/users', { key: a.key, account: a.id, body: { email: `${prefix}${i}@example.com`, name: `${prefix} ${i}` } })
    expect(r.status).toBe(200)
    ids.push(r.body.id)
  }
  return { ...a, k: { key: a.key, account: a.id }, newestFirst: ids.reverse() }
}

/** A next/previous URL as given, fetched from this test's server (it is absolute, built from BASE_URL). */
const follow = (url: string) => {
  expect(url.startsWith(t.service.config.baseUrl)).toBe(true)
  const u = new URL(url)
  return u.pathname + u.search
}

const pageParam = (url: string) => new URL(url).searchParams.get('page')!

async function walk(first: string, k: { key: string; account: string }) {
  const seen: string[] = []
  let r = await t.call('GET', first, k)
  let pages = 0
  for (;;) {
    expect(r.status).toBe(200)
    seen.push(...r.body.data.map((u: { id: string }) => u.id))
    pages++
    if (r.body.next_page_url === null) break
    r = await t.call('GET', follow(r.body.next_page_url), k)
  }
  return { seen, pages }
}

describe('list envelope', () => {
  test('object list, url, next_page_url, previous_page_url (null on the first page) and data', async () => {
    const a = await accountWithUsers(3)
    const r = await t.call('GET', '/v1/users?limit=2', a.k)
    expect(r.status).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(['data', 'next_page_url', 'object', 'previous_page_url', 'url'])
    expect(r.body.object).toBe('list')
    expect(r.body.url).toBeString()
    expect(r.body.url).toContain('/v1/users')
    expect(r.body.previous_page_url).toBeNull()
    expect(r.body.next_page_url).toBeString()
    expect(r.body.data).toHaveLength(2)
    const last = await t.call('GET', follow(r.body.next_page_url), a.k)
    expect(last.body.data).toHaveLength(1)
    expect(last.body.next_page_url).toBeNull()
    expect(last.body.previous_page_url).toBeString()
  })

  test('an empty list has data [] and both page URLs null', async () => {
    const a = await t.account()
    const r = await t.call('GET', '/v1/users', { key: a.key, account: a.id })
    expect(r.body).toMatchObject({ object: 'list', data: [], next_page_url: null, previous_page_url: null })
  })

  test('every list route answers with the envelope', async () => {
    const a = await accountWithUsers(1)
    for (const path of ['/v1/users', '/v1/extensions', '/v1/locations', '/v1/audit-logs']) {
      const r = await t.call('GET', path, a.k)
      expect(r.status, path).toBe(200)
      expect(r.body.object).toBe('list')
      expect(r.body.previous_page_url).toBeNull()
      expect(Array.isArray(r.body.data)).toBe(true)
    }
    const accounts = await t.call('GET', '/v1/accounts', { key: a.key })
    expect(accounts.body.object).toBe('list')
    expect(accounts.body.data.map((x: { id: string }) => x.id)).toEqual([a.id])
  })
})

describe('limit: integer 1 to 100, default 10', () => {
  test('default page size is 10', async () => {
    const a = await accountWithUsers(11)
    const r = await t.call('GET', '/v1/users', a.k)
    expect(r.body.data).toHaveLength(10)
    expect(r.body.next_page_url).toBeString()
    expect(new URL(r.body.next_page_url).searchParams.get('limit')).toBe('10')
  })

  test('1 and 100 are accepted; 100 returns everything of a smaller list', async () => {
    const a = await accountWithUsers(11)
    const one = await t.call('GET', '/v1/users?limit=1', a.k)
    expect(one.body.data).toHaveLength(1)
    const hundred = await t.call('GET', '/v1/users?limit=100', a.k)
    expect(hundred.body.data).toHaveLength(11)
    expect(hundred.body.next_page_url).toBeNull()
  })

  test("0, 101, -1, 1.5 and 'abc' are validation errors on limit", async () => {
    const a = await t.account()
    for (const bad of ['0', '101', '-1', '1.5', 'abc', '']) {
      const r = await t.call('GET', `/v1/users?limit=${bad}`, { key: a.key, account: a.id })
      expect(r.status, `limit=${bad}`).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(r.body.details.limit, `limit=${bad}`).toBeString()
    }
  })
})

describe('order and walking', () => {
  test('newest first', async () => {
    const a = await accountWithUsers(5)
    const r = await t.call('GET', '/v1/users', a.k)
    expect(r.body.data.map((u: { id: string }) => u.id)).toEqual(a.newestFirst)
    const created = r.body.data.map((u: { created_at: string }) => u.created_at)
    expect([...created].sort().reverse()).toEqual(created)
  })

  test('rows created in the same instant still come out in one stable order, each exactly once', async () => {
    const a = await t.account()
    // No clock movement: every user shares created_at, so the id breaks the tie.
    for (let i = 0; i < 7; i++)
      expect((await t.call('POST', '/v1/users', { key: a.key, account: a.id, body: { email: `same${i}@example.com` } })).status).toBe(200)
    const all = (await t.call('GET', '/v1/users?limit=100', { key: a.key, account: a.id })).body.data.map((u: { id: string }) => u.id)
    const { seen } = await walk('/v1/users?limit=2', { key: a.key, account: a.id })
    expect(seen).toEqual(all)
    expect(new Set(seen).size).toBe(7)
  })

  test('following next_page_url walks every row exactly once', async () => {
    const a = await accountWithUsers(23)
    for (const limit of [1, 3, 10, 23, 100]) {
      const { seen, pages } = await walk(`/v1/users?limit=${limit}`, a.k)
      expect(seen).toEqual(a.newestFirst)
      expect(pages).toBe(Math.max(1, Math.ceil(23 / limit)))
    }
  })

  test('previous_page_url goes back to exactly the previous page', async () => {
    const a = await accountWithUsers(10)
    const pages = [await t.call('GET', '/v1/users?limit=3', a.k)]
    while (pages.at(-1)!.body.next_page_url) pages.push(await t.call('GET', follow(pages.at(-1)!.body.next_page_url), a.k))
    expect(pages.map((p) => p.body.data.length)).toEqual([3, 3, 3, 1])
    for (let i = pages.length - 1; i > 0; i--) {
      const back = await t.call('GET', follow(pages[i]!.body.previous_page_url), a.k)
      expect(back.status).toBe(200)
      expect(back.body.data).toEqual(pages[i - 1]!.body.data)
      // Back on the first page there is nothing newer.
      if (i === 1) expect(back.body.previous_page_url).toBeNull()
      else expect(back.body.previous_page_url).toBeString()
      // And forward again from the page we came back to.
      const forward = await t.call('GET', follow(back.body.next_page_url), a.k)
      expect(forward.body.data).toEqual(pages[i]!.body.data)
    }
  })

  test('pages stay correct while rows are inserted between requests: no duplicates, no gaps', async () => {
    const a = await accountWithUsers(9)
    const first = await t.call('GET', '/v1/users?limit=3', a.k)
    expect(first.body.data.map((u: { id: string }) => u.id)).toEqual(a.newestFirst.slice(0, 3))
    // Five newer users arrive between page 1 and page 2.
    for (let i = 0; i < 5; i++) {
      clock.advance(1000)
      expect((await t.call('POST', '/v1/users', { ...a.k, body: { email: `late${i}@example.com` } })).status).toBe(200)
    }
    const second = await t.call('GET', follow(first.body.next_page_url), a.k)
    expect(second.body.data.map((u: { id: string }) => u.id)).toEqual(a.newestFirst.slice(3, 6))
    const seen = [...first.body.data, ...second.body.data].map((u: { id: string }) => u.id)
    let r = second
    while (r.body.next_page_url) {
      // More arrive on every page turn.
      clock.advance(1000)
      await t.call('POST', '/v1/users', { ...a.k, body: { email: `later${seen.length}@example.com` } })
      r = await t.call('GET', follow(r.body.next_page_url), a.k)
      seen.push(...r.body.data.map((u: { id: string }) => u.id))
    }
    expect(seen).toEqual(a.newestFirst)
  })

  test('pages stay correct while rows are deleted between requests', async () => {
    const a = await accountWithUsers(9)
    const first = await t.call('GET', '/v1/users?limit=3', a.k)
    // The last row of page 1 (the cursor's own row) and the first row of page 2 go away.
    for (const id of [a.newestFirst[2], a.newestFirst[3]]) expect((await t.call('DELETE', `/v1/users/${id}`, a.k)).status).toBe(200)
    const second = await t.call('GET', follow(first.body.next_page_url), a.k)
    expect(second.body.data.map((u: { id: string }) => u.id)).toEqual(a.newestFirst.slice(4, 7))
  })

  test('expand[] carries into the page URLs and the next page is expanded too', async () => {
    const a = await accountWithUsers(3)
    const first = await t.call('GET', '/v1/users?limit=2&expand[]=extensions', a.k)
    expect(first.status).toBe(200)
    expect(first.body.data[0].extensions).toEqual({ object: 'list', data: [] })
    const second = await t.call('GET', follow(first.body.next_page_url), a.k)
    expect(second.status).toBe(200)
    expect(second.body.data).toHaveLength(1)
    expect(second.body.data[0].extensions).toEqual({ object: 'list', data: [] })
    const back = await t.call('GET', follow(second.body.previous_page_url), a.k)
    expect(back.body.data).toEqual(first.body.data)
  })

  test('filters carry into the page URLs (search)', async () => {
    const a = await t.account()
    for (let i = 0; i < 6; i++) {
      clock.advance(1000)
      await t.call('POST', '/v1/users', { key: a.key, account: a.id, body: { email: `${i % 2 ? 'odd' : 'even'}${i}@example.com` } })
    }
    const { seen } = await walk('/v1/users?limit=1&search=odd', { key: a.key, account: a.id })
    expect(seen).toHaveLength(3)
    const first = await t.call('GET', '/v1/users?limit=1&search=odd', { key: a.key, account: a.id })
    expect(new URL(first.body.next_page_url).searchParams.get('search')).toBe('odd')
  })
})

describe('cursors are opaque, tamper-proof, expiring and bound to their list (invalid_pagination)', () => {
  test('a tampered cursor gives 400 invalid_pagination', async () => {
    const a = await accountWithUsers(4)
    const next = (await t.call('GET', '/v1/users?limit=2', a.k)).body.next_page_url as string
    const page = pageParam(next)
    const [data, sig] = page.split('.') as [string, string]
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1)
    // A cursor naming another row (the newest one) with the old signature.
    const forgedPayload = JSON.parse(Buffer.from(data, 'base64url').toString())
    forgedPayload.i = a.newestFirst[0]
    const forged = `${Buffer.from(JSON.stringify(forgedPayload)).toString('base64url')}.${sig}`
    for (const bad of [flip(page, 3), flip(page, page.length - 2), `${data}.`, data, `${page}.x`, 'abc', '%%%', '.', forged, 'x'.repeat(2048)]) {
      const r = await t.call('GET', `/v1/users?limit=2&page=${encodeURIComponent(bad)}`, a.k)
      expect(r.status, bad).toBe(400)
      expect(r.body.code, bad).toBe('invalid_pagination')
    }
    // The untouched cursor still works.
    expect((await t.call('GET', follow(next), a.k)).status).toBe(200)
  })

  test('a cursor older than 24 hours is expired: invalid_pagination', async () => {
    const a = await accountWithUsers(4)
    const next = (await t.call('GET', '/v1/users?limit=2', a.k)).body.next_page_url as string
    clock.advance(23 * 3600 * 1000)
    expect((await t.call('GET', follow(next), a.k)).status).toBe(200)
    clock.advance(3600 * 1000 + 1)
    const r = await t.call('GET', follow(next), a.k)
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('invalid_pagination')
    expect(r.body.error).toContain('expired')
    // A fresh first page gives working cursors again.
    const fresh = (await t.call('GET', '/v1/users?limit=2', a.k)).body.next_page_url as string
    expect((await t.call('GET', follow(fresh), a.k)).status).toBe(200)
  })

  test('a cursor used with different filters is refused', async () => {
    const a = await t.account()
    for (let i = 0; i < 4; i++) {
      clock.advance(1000)
      await t.call('POST', '/v1/users', { key: a.key, account: a.id, body: { email: `match${i}@example.com` } })
    }
    const k = { key: a.key, account: a.id }
    const filtered = (await t.call('GET', '/v1/users?limit=1&search=match', k)).body.next_page_url as string
    const unfiltered = (await t.call('GET', '/v1/users?limit=1', k)).body.next_page_url as string
    const cases = [
      `/v1/users?limit=1&page=${pageParam(filtered)}`,
      `/v1/users?limit=1&search=other&page=${pageParam(filtered)}`,
      `/v1/users?limit=1&search=match&page=${pageParam(unfiltered)}`,
      `/v1/users?limit=1&expand[]=extensions&page=${pageParam(unfiltered)}`,
    ]
    for (const url of cases) {
      const r = await t.call('GET', url, k)
      expect(r.status, url).toBe(400)
      expect(r.body.code, url).toBe('invalid_pagination')
    }
    // The page size is not part of the list's identity: changing limit is fine.
    expect((await t.call('GET', `/v1/users?limit=3&search=match&page=${pageParam(filtered)}`, k)).status).toBe(200)
  })

  test("a cursor from another account's list, or another list, is refused", async () => {
    const a = await accountWithUsers(3)
    const b = await t.account({ key: a.key }) // same platform and key
    await t.call('POST', '/v1/users', { key: b.key, account: b.id, body: { email: 'b@example.com' } })
    const next = (await t.call('GET', '/v1/users?limit=1', a.k)).body.next_page_url as string
    const other = await t.call('GET', follow(next), { key: b.key, account: b.id })
    expect(other.status).toBe(400)
    expect(other.body.code).toBe('invalid_pagination')
    for (const path of ['/v1/extensions', '/v1/locations', '/v1/audit-logs']) {
      const r = await t.call('GET', `${path}?limit=1&page=${pageParam(next)}`, a.k)
      expect(r.status, path).toBe(400)
      expect(r.body.code, path).toBe('invalid_pagination')
    }
    const accounts = await t.call('GET', `/v1/accounts?limit=1&page=${pageParam(next)}`, { key: a.key })
    expect(accounts.body.code).toBe('invalid_pagination')
  })
})
