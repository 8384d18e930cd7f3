/**
 * Idempotency (spec conventions 9): every POST and DELETE honours an
 * Idempotency-Key for 24 hours. A retry with the same key and request replays the
 * first answer without doing the work again; keys belong to the platform that
 * used them.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { sampleAccount, startTestService } from './support/service'

const clock = manualClock('2026-04-01T10:00:00.000Z')
const t = await startTestService({}, { clock })

let n = 0
const key = () => `idem-${Date.now().toString(36)}-${++n}`
const idem = (k: string) => ({ 'idempotency-key': k })

async function setup() {
  const a = await t.account()
  return { ...a, k: { key: a.key, account: a.id } }
}

async function users(k: { key: string; account: string }) {
  const r = await t.call('GET', '/v1/users?limit=100', k)
  expect(r.status).toBe(200)
  return r.body.data as { id: string; email: string }[]
}

async function audit(k: { key: string; account: string }, query: string) {
  const r = await t.call('GET', `/v1/audit-logs?limit=100&${query}`, k)
  expect(r.status).toBe(200)
  return r.body.data as { outcome: string; resource: string | null; request_id: string }[]
}

describe('a retry with the same key and body replays the first answer', () => {
  test('same status and body, Idempotent-Replayed: true, and the work is done once (one user, one audit success)', async () => {
    const a = await setup()
    const k = key()
    const first = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'once@example.com', name: 'Once' }, headers: idem(k) })
    expect(first.status).toBe(200)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    for (let i = 0; i < 3; i++) {
      const retry = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'once@example.com', name: 'Once' }, headers: idem(k) })
      expect(retry.status).toBe(200)
      expect(retry.body).toEqual(first.body)
      expect(retry.headers.get('idempotent-replayed')).toBe('true')
      expect(retry.headers.get('content-type')).toContain('application/json')
      // A replay is still its own request.
      expect(retry.headers.get('x-request-id')).toMatch(/^req_/)
      expect(retry.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'))
    }
    expect((await users(a.k)).map((u) => u.id)).toEqual([first.body.id])
    const logs = await audit(a.k, 'event=createUser')
    expect(logs).toHaveLength(1)
    expect(logs[0]).toMatchObject({ outcome: 'success', resource: first.body.id, request_id: first.headers.get('x-request-id') })
  })

  test('without a key every POST does the work: the second identical create is a conflict', async () => {
    const a = await setup()
    expect((await t.call('POST', '/v1/users', { ...a.k, body: { email: 'twice@example.com' } })).status).toBe(200)
    expect((await t.call('POST', '/v1/users', { ...a.k, body: { email: 'twice@example.com' } })).status).toBe(409)
  })

  test('platform-level creates honour it too: createAccount makes one account', async () => {
    const p = await t.platform()
    const k = key()
    const first = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount(), headers: idem(k) })
    expect(first.status).toBe(200)
    const retry = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount(), headers: idem(k) })
    expect(retry.status).toBe(200)
    expect(retry.body).toEqual(first.body)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    const list = await t.call('GET', '/v1/accounts', { key: p.test_key })
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([first.body.id])
  })

  test('updates (POST on a resource) replay their first answer, not the state after later changes', async () => {
    const a = await setup()
    const user = (await t.call('POST', '/v1/users', { ...a.k, body: { email: 'upd@example.com', name: 'One' } })).body
    const k = key()
    const first = await t.call('POST', `/v1/users/${user.id}`, { ...a.k, body: { name: 'Two' }, headers: idem(k) })
    expect(first.body.name).toBe('Two')
    clock.advance(1000)
    await t.call('POST', `/v1/users/${user.id}`, { ...a.k, body: { name: 'Three' } })
    const retry = await t.call('POST', `/v1/users/${user.id}`, { ...a.k, body: { name: 'Two' }, headers: idem(k) })
    expect(retry.body).toEqual(first.body)
    expect((await t.call('GET', `/v1/users/${user.id}`, a.k)).body.name).toBe('Three')
  })
})

describe('a key reused for a different request is refused', () => {
  test('same key with a different body gives 422 idempotency_key_reused and does nothing', async () => {
    const a = await setup()
    const k = key()
    expect((await t.call('POST', '/v1/users', { ...a.k, body: { email: 'first@example.com' }, headers: idem(k) })).status).toBe(200)
    const r = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'second@example.com' }, headers: idem(k) })
    expect(r.status).toBe(422)
    expect(r.body.code).toBe('idempotency_key_reused')
    expect(typeof r.body.error).toBe('string')
    expect((await users(a.k)).map((u) => u.email)).toEqual(['first@example.com'])
  })

  test('same key on another path or another account gives 422 too', async () => {
    const a = await setup()
    const b = await t.account({ key: a.key })
    const k = key()
    expect((await t.call('POST', '/v1/users', { ...a.k, body: { email: 'p@example.com' }, headers: idem(k) })).status).toBe(200)
    const otherPath = await t.call('POST', '/v1/locations', { ...a.k, body: { name: 'x', address: sampleAccount().address }, headers: idem(k) })
    expect(otherPath.status).toBe(422)
    expect(otherPath.body.code).toBe('idempotency_key_reused')
    const otherAccount = await t.call('POST', '/v1/users', { key: b.key, account: b.id, body: { email: 'p@example.com' }, headers: idem(k) })
    expect(otherAccount.status).toBe(422)
    expect(otherAccount.body.code).toBe('idempotency_key_reused')
    expect(await users({ key: b.key, account: b.id })).toHaveLength(0)
  })
})

describe('concurrent requests with the same key', () => {
  test('ten at once create exactly one resource; the others replay it or get 409 idempotency_key_in_use', async () => {
    const a = await setup()
    const k = key()
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => t.call('POST', '/v1/users', { ...a.k, body: { email: 'race@example.com' }, headers: idem(k) })),
    )
    const created = await users(a.k)
    expect(created).toHaveLength(1)
    const ok = replies.filter((r) => r.status === 200)
    expect(ok.length).toBeGreaterThanOrEqual(1)
    for (const r of ok) expect(r.body.id).toBe(created[0]!.id)
    expect(ok.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1)
    for (const r of replies.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(409)
      expect(r.body.code).toBe('idempotency_key_in_use')
    }
    expect((await audit(a.k, 'event=createUser&outcome=success')).length).toBe(1)
    // Once the first has finished, a retry replays it.
    const after = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'race@example.com' }, headers: idem(k) })
    expect(after.status).toBe(200)
    expect(after.body.id).toBe(created[0]!.id)
    expect(after.headers.get('idempotent-replayed')).toBe('true')
  })

  test('ten at once with ten different keys create ten resources', async () => {
    const a = await setup()
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) => t.call('POST', '/v1/users', { ...a.k, body: { email: `many${i}@example.com` }, headers: idem(key()) })),
    )
    expect(replies.map((r) => r.status)).toEqual(Array(10).fill(200))
    expect(await users(a.k)).toHaveLength(10)
  })
})

describe('client errors are answers too', () => {
  test('a 4xx result is replayed, even after the cause has gone away', async () => {
    const a = await setup()
    const existing = (await t.call('POST', '/v1/users', { ...a.k, body: { email: 'taken@example.com' } })).body
    const k = key()
    const first = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'taken@example.com' }, headers: idem(k) })
    expect(first.status).toBe(409)
    expect(first.body.code).toBe('user_email_taken')
    expect((await t.call('DELETE', `/v1/users/${existing.id}`, a.k)).status).toBe(200)
    const retry = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'taken@example.com' }, headers: idem(k) })
    expect(retry.status).toBe(409)
    expect(retry.body).toEqual(first.body)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(await users(a.k)).toHaveLength(0)
  })

  test('a 404 is replayed', async () => {
    const a = await setup()
    const k = key()
    const first = await t.call('POST', '/v1/users/usr_missing', { ...a.k, body: { name: 'x' }, headers: idem(k) })
    expect(first.status).toBe(404)
    const retry = await t.call('POST', '/v1/users/usr_missing', { ...a.k, body: { name: 'x' }, headers: idem(k) })
    expect(retry.status).toBe(404)
    expect(retry.body).toEqual(first.body)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
  })
})

describe('keys last 24 hours', () => {
  test('within 24 h the key replays; after 24 h it is free again and does new work', async () => {
    const a = await setup()
    const k = key()
    const first = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'day1@example.com' }, headers: idem(k) })
    expect(first.status).toBe(200)
    clock.advance(23 * 3600 * 1000)
    const within = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'day1@example.com' }, headers: idem(k) })
    expect(within.headers.get('idempotent-replayed')).toBe('true')
    expect((await t.call('POST', '/v1/users', { ...a.k, body: { email: 'day1b@example.com' }, headers: idem(k) })).status).toBe(422)
    clock.advance(3600 * 1000 + 1000)
    const later = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'day2@example.com' }, headers: idem(k) })
    expect(later.status).toBe(200)
    expect(later.headers.get('idempotent-replayed')).toBeNull()
    expect(later.body.id).not.toBe(first.body.id)
    // And the new use is remembered in turn.
    const again = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'day2@example.com' }, headers: idem(k) })
    expect(again.body.id).toBe(later.body.id)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await users(a.k)).toHaveLength(2)
  })
})

describe('DELETE honours Idempotency-Key', () => {
  test('a retried delete replays its 200 instead of answering 404', async () => {
    const a = await setup()
    const user = (await t.call('POST', '/v1/users', { ...a.k, body: { email: 'gone@example.com' } })).body
    const k = key()
    const first = await t.call('DELETE', `/v1/users/${user.id}`, { ...a.k, headers: idem(k) })
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ id: user.id, deleted: true })
    const retry = await t.call('DELETE', `/v1/users/${user.id}`, { ...a.k, headers: idem(k) })
    expect(retry.status).toBe(200)
    expect(retry.body).toEqual(first.body)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    const plain = await t.call('DELETE', `/v1/users/${user.id}`, a.k)
    expect(plain.status).toBe(404)
    expect((await audit(a.k, 'event=deleteUser&outcome=success')).length).toBe(1)
  })
})

describe('key format', () => {
  test('a key of 255 characters is accepted; 256 or empty gives 400 validation_error and does nothing', async () => {
    const a = await setup()
    const ok = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'k255@example.com' }, headers: idem('k'.repeat(255)) })
    expect(ok.status).toBe(200)
    for (const bad of ['k'.repeat(256), 'k'.repeat(5000), '']) {
      const r = await t.call('POST', '/v1/users', { ...a.k, body: { email: `bad${bad.length}@example.com` }, headers: idem(bad) })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(r.body.details['Idempotency-Key']).toBeString()
    }
    expect(await users(a.k)).toHaveLength(1)
  })

  test('keys are opaque text: unicode-ish and punctuation keys work', async () => {
    const a = await setup()
    for (const [i, k] of ['a b c', 'ключ', '🔑'.repeat(10), `"quoted"'`, '%00%ff'].entries()) {
      const headerSafe = Buffer.from(k, 'utf8').toString('latin1') // what a raw HTTP client sends
      const first = await t.call('POST', '/v1/users', { ...a.k, body: { email: `opaque${i}@example.com` }, headers: idem(headerSafe) })
      expect(first.status).toBe(200)
      const retry = await t.call('POST', '/v1/users', { ...a.k, body: { email: `opaque${i}@example.com` }, headers: idem(headerSafe) })
      expect(retry.body.id).toBe(first.body.id)
    }
  })
})

describe('keys are scoped per platform', () => {
  test('another platform may use the same key for its own request', async () => {
    const a = await setup()
    const b = await setup()
    const k = key()
    const ra = await t.call('POST', '/v1/users', { ...a.k, body: { email: 'shared@example.com' }, headers: idem(k) })
    const rb = await t.call('POST', '/v1/users', { ...b.k, body: { email: 'other@example.com' }, headers: idem(k) })
    expect(ra.status).toBe(200)
    expect(rb.status).toBe(200)
    expect(rb.headers.get('idempotent-replayed')).toBeNull()
    expect(rb.body.id).not.toBe(ra.body.id)
    expect(rb.body.account).toBe(b.id)
    // Each platform's retry replays its own answer.
    expect((await t.call('POST', '/v1/users', { ...a.k, body: { email: 'shared@example.com' }, headers: idem(k) })).body.id).toBe(ra.body.id)
    expect((await t.call('POST', '/v1/users', { ...b.k, body: { email: 'other@example.com' }, headers: idem(k) })).body.id).toBe(rb.body.id)
  })
})

describe('the request is compared by meaning, not by byte order', () => {
  test('the same fields in another order replay the first answer instead of 422', async () => {
    const s = await setup()
    const k = key()
    const a = await t.call('POST', '/v1/users', {
      ...s.k,
      rawBody: '{"email":"order@example.com","name":"Ord"}',
      headers: { ...idem(k), 'content-type': 'application/json' },
    })
    const b = await t.call('POST', '/v1/users', {
      ...s.k,
      rawBody: '{"name":"Ord","email":"order@example.com"}',
      headers: { ...idem(k), 'content-type': 'application/json' },
    })
    expect(a.status).toBe(200)
    expect(b.status).toBe(200)
    expect(b.headers.get('idempotent-replayed')).toBe('true')
    expect(b.body.id).toBe(a.body.id)
  })
})
