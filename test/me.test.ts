/**
 * GET /v1/me with a user token: the signed-in user's UserProfile.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { startTestService } from './support/service'

const clock = manualClock('2026-05-05T10:00:00.000Z')
const t = await startTestService({}, { clock })

type Ctx = { key: string; account: string }

async function ctx(key?: string): Promise<Ctx> {
  const a = await t.account(key ? { key } : {})
  return { key: a.key, account: a.id }
}

async function user(c: Ctx, body: Record<string, unknown>) {
  const r = await t.call('POST', '/v1/users', { ...c, body })
  if (r.status !== 200) throw new Error(`user create failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

async function ext(c: Ctx, number: string, target: string, status?: string) {
  const r = await t.call('POST', '/v1/extensions', { ...c, body: { number, target, ...(status ? { status } : {}) } })
  if (r.status !== 200) throw new Error(`extension create failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

async function token(c: Ctx, userId: string) {
  const r = await t.call('POST', '/v1/user_sessions', { key: c.key, body: { user: userId } })
  if (r.status !== 200) throw new Error(`user session failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.client_secret as string
}

describe('GET /v1/me (UserProfile)', () => {
  test('UserProfile: id, name, email, account, extensions [{number, status}], created_at, updated_at', async () => {
    const c = await ctx()
    const u = await user(c, { email: 'me@example.com', name: 'Mae Jemison' })
    clock.advance(1000)
    await ext(c, '102', u.id, 'inactive')
    await ext(c, '101', u.id)
    const tok = await token(c, u.id)
    const r = await t.call('GET', '/v1/me', { key: tok })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      id: u.id,
      object: 'user_profile',
      name: 'Mae Jemison',
      email: 'me@example.com',
      account: c.account,
      extensions: [
        { number: '101', status: 'active' },
        { number: '102', status: 'inactive' },
      ],
      created_at: u.created_at,
      updated_at: u.updated_at,
    })
  })

  test('a user with no extensions and no name: extensions [] and name null', async () => {
    const c = await ctx()
    const u = await user(c, { email: 'plain@example.com' })
    const r = await t.call('GET', '/v1/me', { key: await token(c, u.id) })
    expect(r.status).toBe(200)
    expect(r.body.extensions).toEqual([])
    expect(r.body.name).toBeNull()
    expect(r.body.email).toBe('plain@example.com')
  })

  test('only the signed-in user’s own extensions, not those of colleagues or other accounts', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const me = await user(c, { email: 'mine@example.com' })
    const colleague = await user(c, { email: 'col@example.com' })
    const stranger = await user(other, { email: 'mine@example.com' })
    await ext(c, '201', me.id)
    await ext(c, '202', colleague.id)
    await ext(other, '203', stranger.id)
    const mine = await t.call('GET', '/v1/me', { key: await token(c, me.id) })
    expect(mine.body.extensions).toEqual([{ number: '201', status: 'active' }])
    const theirs = await t.call('GET', '/v1/me', { key: await token(other, stranger.id) })
    expect(theirs.body.id).toBe(stranger.id)
    expect(theirs.body.account).toBe(other.account)
    expect(theirs.body.extensions).toEqual([{ number: '203', status: 'active' }])
  })

  test('the profile is read live: changes made with the key show through the same token', async () => {
    const c = await ctx()
    const u = await user(c, { email: 'before@example.com', name: 'Before' })
    const tok = await token(c, u.id)
    clock.advance(30_000)
    const upd = await t.call('POST', `/v1/users/${u.id}`, { ...c, body: { name: 'After', email: 'after@example.com' } })
    expect(upd.status).toBe(200)
    await ext(c, '301', u.id)
    const r = await t.call('GET', '/v1/me', { key: tok })
    expect(r.body).toMatchObject({ name: 'After', email: 'after@example.com', extensions: [{ number: '301', status: 'active' }] })
    expect(r.body.updated_at).toBe(upd.body.updated_at)
    expect(r.body.created_at).toBe(u.created_at)
    expect(Date.parse(r.body.updated_at)).toBeGreaterThan(Date.parse(r.body.created_at))
    // Status changes and deletions of extensions show too.
    await t.call('POST', '/v1/extensions/301', { ...c, body: { status: 'inactive' } })
    expect((await t.call('GET', '/v1/me', { key: tok })).body.extensions).toEqual([{ number: '301', status: 'inactive' }])
    await t.call('DELETE', '/v1/extensions/301', c)
    expect((await t.call('GET', '/v1/me', { key: tok })).body.extensions).toEqual([])
  })

  test('a user token needs no Service-Account header; another account in the header is refused (403 account_forbidden)', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const u = await user(c, { email: 'h@example.com' })
    const tok = await token(c, u.id)
    expect((await t.call('GET', '/v1/me', { key: tok, account: c.account })).status).toBe(200)
    // The token's account is the only account it acts on, as for account sessions.
    const r = await t.call('GET', '/v1/me', { key: tok, account: other.account })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('account_forbidden')
  })

  test('/v1/me needs a user token: no credential 401, a secret key or an account session 403', async () => {
    const c = await ctx()
    expect((await t.call('GET', '/v1/me')).status).toBe(401)
    expect((await t.call('GET', '/v1/me', { key: c.key, account: c.account })).status).toBe(403)
    const s = await t.call('POST', '/v1/account_sessions', { key: c.key, body: { account: c.account, components: { account_onboarding: { enabled: true } } } })
    expect((await t.call('GET', '/v1/me', { key: s.body.client_secret })).status).toBe(403)
  })
})

describe('GET /v1/me/directory (DirectoryEntry)', () => {
  test('every other user of the account, {user, display_name} only; an unnamed user shows its id; other accounts never appear', async () => {
    const c = await ctx()
    const other = await ctx()
    const me = await user(c, { email: 'self@example.com', name: 'Self' })
    const ada = await user(c, { email: 'ada@example.com', name: 'Ada Lovelace' })
    const anon = await user(c, { email: 'anon@example.com' })
    await user(other, { email: 'stranger@example.com', name: 'Stranger' })
    const tok = await token(c, me.id)
    const r = await t.call('GET', '/v1/me/directory', { key: tok })
    expect(r.status).toBe(200)
    const entries = r.body.data as Array<Record<string, unknown>>
    expect(entries).toHaveLength(2)
    expect(entries).toContainEqual({ user: ada.id, display_name: 'Ada Lovelace' })
    expect(entries).toContainEqual({ user: anon.id, display_name: anon.id })
    for (const e of entries) expect(Object.keys(e).sort()).toEqual(['display_name', 'user'])
  })

  test('pages with limit and next_page_url; a bad limit is a 400 naming the field', async () => {
    const c = await ctx()
    const me = await user(c, { email: 'pager@example.com' })
    const ids = new Set<string>()
    for (let i = 0; i < 5; i++) ids.add((await user(c, { email: `p${i}@example.com`, name: `P ${i}` })).id)
    const tok = await token(c, me.id)
    const seen: string[] = []
    let url: string | null = '/v1/me/directory?limit=2'
    for (let guard = 0; url && guard < 10; guard++) {
      const r: { status: number; body: any } = await t.call('GET', url, { key: tok })
      expect(r.status).toBe(200)
      expect(r.body.data.length).toBeLessThanOrEqual(2)
      seen.push(...r.body.data.map((e: { user: string }) => e.user))
      const next: string | null = r.body.next_page_url
      url = next ? new URL(next).pathname + new URL(next).search : null
    }
    expect(new Set(seen)).toEqual(ids)
    const bad = await t.call('GET', '/v1/me/directory?limit=0', { key: tok })
    expect(bad.status).toBe(400)
    expect(JSON.stringify(bad.body)).toContain('limit')
  })

  test('needs a user token: a secret key is 403', async () => {
    const c = await ctx()
    expect((await t.call('GET', '/v1/me/directory', { key: c.key, account: c.account })).status).toBe(403)
    expect((await t.call('GET', '/v1/me/directory')).status).toBe(401)
  })
})
