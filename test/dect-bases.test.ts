/**
 * DECT bases over HTTP: the base, its handsets (bounded by the base model), and the
 * extensions each handset carries, one SIP line each, bounded by the base's SIP
 * account count; credentials shown to platform keys only.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { deviceFixtures, expectValidation, mac } from './device-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-05-06T09:00:00.000Z')
const t = await startTestService({}, { clock })
const f = deviceFixtures(t)

type Ctx = { key: string; account: string }
const handset = (c: Ctx, base: string, body: Record<string, unknown> = { model: 'W56H' }) => t.call('POST', `/v1/dect-bases/${base}/handsets`, { ...c, body })
const addExt = (c: Ctx, base: string, h: string, extension: string) =>
  t.call('POST', `/v1/dect-bases/${base}/handsets/${h}/extensions`, { ...c, body: { extension } })

describe('DECT bases', () => {
  test('create, get, list, update, delete', async () => {
    const c = await f.ctx()
    const r = await t.call('POST', '/v1/dect-bases', { ...c, body: { vendor: 'yealink', model: 'w60b', mac_address: mac(), name: 'Warehouse' } })
    expect([r.status, r.body.type, r.body.model, r.body.status, r.body.location]).toEqual([200, 'dect_base', 'W60B', 'pending_sync', null])
    expect((await t.call('GET', `/v1/dect-bases/${r.body.id}`, c)).body).toEqual(r.body)
    await f.deskphone(c)
    expect((await t.call('GET', '/v1/dect-bases', c)).body.data.map((d: any) => d.id)).toEqual([r.body.id])
    const upd = await t.call('POST', `/v1/dect-bases/${r.body.id}`, { ...c, body: { name: 'Dock' } })
    expect(upd.body.name).toBe('Dock')
    expectValidation(await t.call('POST', `/v1/dect-bases/${r.body.id}`, { ...c, body: { button_template: 'btpl_x' } }), 'button_template')
    expect((await t.call('DELETE', `/v1/dect-bases/${r.body.id}`, c)).status).toBe(200)
    const gone = await t.call('GET', `/v1/dect-bases/${r.body.id}`, c)
    expect([gone.status, gone.body.code]).toEqual([404, 'dect_base_not_found'])
  })

  test('a deskphone model, an unknown model, a bad or duplicate MAC are refused; nothing stored', async () => {
    const c = await f.ctx()
    const m = mac()
    await f.base(c, { mac_address: m })
    const post = (body: Record<string, unknown>) =>
      t.call('POST', '/v1/dect-bases', { ...c, body: { vendor: 'yealink', model: 'W60B', mac_address: mac(), ...body } })
    expectValidation(await post({ model: 'T54W' }), 'model')
    expect((await post({ vendor: 'polycom', model: 'VVX 450' })).body.details.model).toBeDefined()
    expect((await post({ vendor: 'snom', model: 'M700' })).body.code).toBe('unsupported_vendor')
    expectValidation(await post({ mac_address: 'not-a-mac' }), 'mac_address')
    expect((await post({ mac_address: m })).body.code).toBe('mac_address_taken')
    expect((await t.call('GET', '/v1/dect-bases', c)).body.data.length).toBe(1)
  })
})

describe('handsets', () => {
  test('add, get, list, update, delete; the handset takes the base vendor; a deskphone or foreign-vendor model is refused', async () => {
    const c = await f.ctx()
    const base = await f.base(c)
    const h = await handset(c, base.id, { model: 'W73H', name: 'Picker 1' })
    expect([h.status, h.body.type, h.body.vendor, h.body.base, h.body.name]).toEqual([200, 'dect_handset', 'yealink', base.id, 'Picker 1'])
    expect((await t.call('GET', `/v1/dect-bases/${base.id}/handsets/${h.body.id}`, c)).body).toEqual(h.body)
    expect((await t.call('GET', `/v1/dect-bases/${base.id}/handsets`, c)).body.data.map((d: any) => d.id)).toEqual([h.body.id])
    expectValidation(await handset(c, base.id, { model: 'T54W' }), 'model')
    expect((await handset(c, base.id, { vendor: 'polycom', model: 'VVX 150' })).status).toBe(400)
    const upd = await t.call('POST', `/v1/dect-bases/${base.id}/handsets/${h.body.id}`, { ...c, body: { name: 'Picker 2' } })
    expect(upd.body.name).toBe('Picker 2')
    expect((await t.call('DELETE', `/v1/dect-bases/${base.id}/handsets/${h.body.id}`, c)).status).toBe(200)
    const gone = await t.call('GET', `/v1/dect-bases/${base.id}/handsets/${h.body.id}`, c)
    expect([gone.status, gone.body.code]).toEqual([404, 'handset_not_found'])
  })

  test('a base takes as many handsets as its model (W60B: 8); the ninth is 400 and not stored', async () => {
    const c = await f.ctx()
    const base = await f.base(c)
    for (let i = 0; i < 8; i++) expect((await handset(c, base.id)).status).toBe(200)
    expectValidation(await handset(c, base.id), 'model')
    expect((await t.call('GET', `/v1/dect-bases/${base.id}/handsets?limit=100`, c)).body.data.length).toBe(8)
  })

  test('a handset of another base, or a base of another account, is not found', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const other = await f.ctx(p.test_key)
    const a = await f.base(c)
    const b = await f.base(c)
    const h = f.ok('handset', await handset(c, a.id))
    const wrongBase = await t.call('GET', `/v1/dect-bases/${b.id}/handsets/${h.id}`, c)
    expect([wrongBase.status, wrongBase.body.code]).toEqual([404, 'handset_not_found'])
    const foreign = await t.call('GET', `/v1/dect-bases/${a.id}/handsets/${h.id}`, other)
    expect([foreign.status, foreign.body.code]).toEqual([404, 'dect_base_not_found'])
    expect((await handset(other, a.id)).body.code).toBe('dect_base_not_found')
    expect((await t.call('GET', `/v1/dect-bases/${h.id}`, c)).body.code).toBe('dect_base_not_found')
  })
})

describe('handset extensions', () => {
  test('an extension on a handset is a SIP line with credentials, shown to the platform key only; removed by extension ID', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const e = await f.extension(c, u)
    const base = await f.base(c)
    const h = f.ok('handset', await handset(c, base.id))
    const r = await addExt(c, base.id, h.id, e)
    expect(r.body).toEqual({
      id: expect.stringMatching(/^line_/),
      object: 'handset_extension',
      base: base.id,
      handset: h.id,
      extension: e,
      line_number: 1,
      label: null,
      sip_credentials: { username: expect.any(String), password: expect.any(String), domain: expect.any(String) },
      created_at: clock.now().toISOString(),
    })
    const session = await f.session(c)
    const asSession = await t.call('GET', `/v1/dect-bases/${base.id}/handsets/${h.id}/extensions`, { key: session })
    expect(asSession.body.data.length).toBe(1)
    expect('sip_credentials' in asSession.body.data[0]).toBe(false)
    const asKey = await t.call('GET', `/v1/dect-bases/${base.id}/handsets/${h.id}/extensions`, c)
    expect(asKey.body.data[0].sip_credentials).toEqual(r.body.sip_credentials)
    const token = await f.userToken(c, u)
    expect((await t.call('GET', `/v1/dect-bases/${base.id}/handsets/${h.id}/extensions`, { key: token })).status).toBe(403)

    const dup = await addExt(c, base.id, h.id, e)
    expect([dup.status, dup.body.code]).toEqual([409, 'device_line_exists'])
    const del = await t.call('DELETE', `/v1/dect-bases/${base.id}/handsets/${h.id}/extensions/${e}`, c)
    expect(del.body).toEqual({ id: e, object: 'handset_extension', deleted: true })
    const again = await t.call('DELETE', `/v1/dect-bases/${base.id}/handsets/${h.id}/extensions/${e}`, c)
    expect([again.status, again.body.code]).toEqual([404, 'handset_extension_not_found'])
  })

  test('a foreign or unknown extension is 400 (details.extension); nothing stored', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const other = await f.ctx(p.test_key)
    const foreign = await f.extension(other, await f.user(other))
    const base = await f.base(c)
    const h = f.ok('handset', await handset(c, base.id))
    expectValidation(await addExt(c, base.id, h.id, foreign), 'extension')
    expectValidation(await addExt(c, base.id, h.id, 'ext_nope'), 'extension')
    expect((await t.call('GET', `/v1/dect-bases/${base.id}/handsets/${h.id}/extensions`, c)).body.data).toEqual([])
  })

  test('all handsets of a base share its SIP accounts (W60B: 8); the ninth extension is 400', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const base = await f.base(c)
    const h1 = f.ok('handset', await handset(c, base.id))
    const h2 = f.ok('handset', await handset(c, base.id))
    for (let i = 0; i < 8; i++) expect((await addExt(c, base.id, i % 2 ? h1.id : h2.id, await f.extension(c, u))).status).toBe(200)
    expectValidation(await addExt(c, base.id, h1.id, await f.extension(c, u)), 'extension')
  })
})
