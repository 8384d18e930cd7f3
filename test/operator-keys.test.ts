/**
 * Operator key rotation and revocation for any platform (/admin/platforms/{id}/keys):
 * a new key is shown once and works at once, the old one keeps working until it is
 * revoked, a revoked key stops working, and nothing shows a key after its creation.
 */
import { describe, expect, test } from 'bun:test'
import { ADMIN_TOKEN, startTestService } from './support/service'
import { until } from './support/polling'

const t = await startTestService()
const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }

describe('/admin/platforms/{id}/keys', () => {
  test('rotate: make a key, both work, revoke the old one, only the new one works', async () => {
    const platform = await t.platform()
    const listed = await t.call<any>('GET', `/admin/platforms/${platform.id}/keys`, admin)
    expect(listed.status).toBe(200)
    expect(listed.body.data.map((k: any) => k.mode).sort()).toEqual(['live', 'test'])
    const old = listed.body.data.find((k: any) => k.mode === 'test')
    expect(old.hint).toBe(platform.test_key.slice(-4))
    expect(JSON.stringify(listed.body)).not.toContain(platform.test_key)

    const made = await t.call<any>('POST', `/admin/platforms/${platform.id}/keys`, { ...admin, body: { mode: 'test' } })
    expect(made.status).toBe(200)
    expect(made.body.key).toMatch(/^sk_test_/)
    expect(made.body.revoked_at).toBeNull()
    for (const key of [platform.test_key, made.body.key]) expect((await t.call('GET', '/v1/accounts', { key })).status).toBe(200)

    const revoked = await t.call<any>('POST', `/admin/platforms/${platform.id}/keys/${old.id}/revoke`, admin)
    expect(revoked.status).toBe(200)
    expect(typeof revoked.body.revoked_at).toBe('string')
    // Idempotent: revoking again keeps the first time.
    const again = await t.call<any>('POST', `/admin/platforms/${platform.id}/keys/${old.id}/revoke`, admin)
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at)
    // Gateways cache a key lookup for a few seconds: the revoked key stops working within that.
    await until('the revoked key to be refused', async () => (await t.call('GET', '/v1/accounts', { key: platform.test_key })).status === 401, 15_000)
    expect((await t.call('GET', '/v1/accounts', { key: made.body.key })).status).toBe(200)

    const after = await t.call<any>('GET', `/admin/platforms/${platform.id}/keys`, admin)
    expect(after.body.data).toHaveLength(3)
    expect(JSON.stringify(after.body)).not.toContain(made.body.key)
  }, 30_000)

  test('unknown platform or key is 404; a bad mode is 400; no token is 401', async () => {
    const platform = await t.platform()
    expect((await t.call<any>('GET', '/admin/platforms/plat_missing/keys', admin)).body.code).toBe('platform_not_found')
    expect((await t.call<any>('POST', `/admin/platforms/${platform.id}/keys/key_missing/revoke`, admin)).body.code).toBe('api_key_not_found')
    const other = await t.platform()
    const otherKeys = await t.call<any>('GET', `/admin/platforms/${other.id}/keys`, admin)
    // A key of another platform is not this platform's to revoke.
    const cross = await t.call<any>('POST', `/admin/platforms/${platform.id}/keys/${otherKeys.body.data[0].id}/revoke`, admin)
    expect(cross.status).toBe(404)
    const bad = await t.call<any>('POST', `/admin/platforms/${platform.id}/keys`, { ...admin, body: { mode: 'prod' } })
    expect(bad.status).toBe(400)
    expect((await t.call('GET', `/admin/platforms/${platform.id}/keys`)).status).toBe(401)
    expect((await t.call<any>('GET', `/admin/platforms/${platform.id}/keys`, admin)).body.data).toHaveLength(2)
  })
})
