/**
 * Deskphones over HTTP: the record, MAC addresses (validated, normalised, unique),
 * the vendor and model catalogue, lines with SIP credentials (shown to platform
 * keys only), provisioning history, and the location rules.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { deviceFixtures, expectValidation, mac } from './device-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-05-04T09:00:00.000Z')
const t = await startTestService({}, { clock })
const f = deviceFixtures(t)

const create = (c: { key: string; account: string }, body: Record<string, unknown>) => t.call('POST', '/v1/deskphones', { ...c, body })
const countDevices = async (c: { key: string; account: string }) => (await t.call('GET', '/v1/devices?limit=100', c)).body.data.length

describe('create a deskphone', () => {
  test('returns the device: type deskphone, catalogue names, normalised MAC, location unset, pending_sync', async () => {
    const c = await f.ctx()
    const r = await create(c, { vendor: 'Yealink', model: 't54w', mac_address: '00:15:65:aa:bb:0c', name: 'Front desk' })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      id: expect.stringMatching(/^dev_/),
      object: 'device',
      account: c.account,
      type: 'deskphone',
      vendor: 'yealink',
      model: 'T54W',
      mac_address: expect.stringMatching(/^001565AABB0C$/),
      name: 'Front desk',
      location: null,
      base: null,
      button_template: null,
      status: 'pending_sync',
      provisioning_credentials: { username: expect.stringMatching(/^p[a-z0-9]{11}$/), password: expect.any(String) },
      ip_address: null,
      provisioned_at: null,
      last_fetched_at: null,
      check_sync_requested_at: null,
      created_at: clock.now().toISOString(),
      updated_at: clock.now().toISOString(),
    })
    const got = await t.call('GET', `/v1/deskphones/${r.body.id}`, c)
    expect(got.body).toEqual(r.body)
    await t.call('DELETE', `/v1/deskphones/${r.body.id}`, c)
  })

  test('MAC spellings: plain, colons, dashes, dotted quads, any case; all stored as 12 uppercase hex digits', async () => {
    const c = await f.ctx()
    const raw = mac().toLowerCase()
    const forms = [raw, raw.match(/../g)!.join(':'), raw.match(/../g)!.join('-').toUpperCase(), raw.match(/..../g)!.join('.')]
    for (const form of forms) {
      const r = await create(c, { vendor: 'polycom', model: 'VVX 250', mac_address: form })
      expect(r.status).toBe(200)
      expect(r.body.mac_address).toBe(raw.toUpperCase())
      expect((await t.call('DELETE', `/v1/deskphones/${r.body.id}`, c)).status).toBe(200)
    }
  })

  test('malformed MAC addresses are 400 with details.mac_address, and nothing is stored', async () => {
    const c = await f.ctx()
    const bad = ['', '00156', '001565AABBCCDD', 'GG1565AABBCC', '00:15:65:AA:BB', '00:15-65:AA:BB:CC', '000000000000', '011565AABBCC', 'FFFFFFFFFFFF', ' ']
    for (const m of bad) expectValidation(await create(c, { vendor: 'yealink', model: 'T54W', mac_address: m }), 'mac_address')
    expectValidation(await create(c, { vendor: 'yealink', model: 'T54W' }), 'mac_address')
    expect(await countDevices(c)).toBe(0)
  })

  test('a MAC address is one device service-wide: a duplicate (any spelling, any account) is 409 mac_address_taken', async () => {
    const c = await f.ctx()
    const other = await f.ctx()
    const m = mac()
    const first = await create(c, { vendor: 'yealink', model: 'T31P', mac_address: m })
    expect(first.status).toBe(200)
    const again = await create(c, { vendor: 'yealink', model: 'T46U', mac_address: m.toLowerCase().match(/../g)!.join(':') })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe('mac_address_taken')
    const elsewhere = await create(other, { vendor: 'yealink', model: 'T31P', mac_address: m })
    expect(elsewhere.body.code).toBe('mac_address_taken')
    const base = await t.call('POST', '/v1/dect-bases', { ...c, body: { vendor: 'yealink', model: 'W60B', mac_address: m } })
    expect(base.body.code).toBe('mac_address_taken')
    expect(await countDevices(c)).toBe(1)
    expect(await countDevices(other)).toBe(0)
  })

  test('concurrent creates with one MAC: exactly one wins, the others get 409 (never 500)', async () => {
    const c = await f.ctx()
    const m = mac()
    const rs = await Promise.all([0, 1, 2].map(() => create(c, { vendor: 'yealink', model: 'T31P', mac_address: m })))
    expect(rs.map((r) => r.status).sort()).toEqual([200, 409, 409])
  })

  test('an unknown vendor or model is 400 unsupported_vendor naming the field; a model of another type is a validation_error', async () => {
    const c = await f.ctx()
    const vendor = await create(c, { vendor: 'cisco', model: '8841', mac_address: mac() })
    expect(vendor.status).toBe(400)
    expect(vendor.body.code).toBe('unsupported_vendor')
    expect(vendor.body.details.vendor).toContain('yealink')
    const model = await create(c, { vendor: 'yealink', model: 'T99X', mac_address: mac() })
    expect(model.body.code).toBe('unsupported_vendor')
    expect(model.body.details.model).toContain('T54W')
    expectValidation(await create(c, { vendor: 'yealink', model: 'W60B', mac_address: mac() }), 'model')
    expect(await countDevices(c)).toBe(0)
  })

  test('a location must be the account’s (details.location); a foreign one stores nothing', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const other = await f.ctx(p.test_key)
    const foreign = await f.location(other)
    expectValidation(await create(c, { vendor: 'yealink', model: 'T54W', mac_address: mac(), location: foreign }), 'location')
    expect(await countDevices(c)).toBe(0)
    const mine = await f.location(c)
    const ok = await create(c, { vendor: 'yealink', model: 'T54W', mac_address: mac(), location: mine })
    expect(ok.body.location).toBe(mine)
  })
})

describe('lines', () => {
  test('lines given at creation get numbers, users, extensions and SIP credentials (shown to the platform key)', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const e = await f.extension(c, u)
    const phone = await f.deskphone(c, { model: 'T31P', lines: [{ user: u, extension: e, label: 'Main' }, { line_number: 2 }] })
    const lines = await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)
    expect(lines.status).toBe(200)
    const byNumber = [...lines.body.data].sort((a: any, b: any) => a.line_number - b.line_number)
    expect(byNumber.map((l: any) => [l.line_number, l.user, l.extension, l.label])).toEqual([
      [1, u, e, 'Main'],
      [2, null, null, null],
    ])
    for (const l of byNumber) {
      expect(l.sip_credentials).toEqual({ username: expect.stringMatching(/^u[a-z0-9]{11}$/), password: expect.any(String), domain: expect.any(String) })
      expect(l.sip_credentials.password.length).toBeGreaterThanOrEqual(20)
    }
    expect(byNumber[0].sip_credentials.username).not.toBe(byNumber[1].sip_credentials.username)
  })

  test('more lines than the model has, or a line number beyond it, is 400 with field details; nothing is stored', async () => {
    const c = await f.ctx()
    const three = [{}, {}, {}]
    expectValidation(await create(c, { vendor: 'yealink', model: 'T31P', mac_address: mac(), lines: three }), 'lines')
    expectValidation(await create(c, { vendor: 'polycom', model: 'VVX 250', mac_address: mac(), lines: [{ line_number: 5 }] }), 'lines[0].line_number')
    expectValidation(
      await create(c, { vendor: 'polycom', model: 'VVX 250', mac_address: mac(), lines: [{ line_number: 1 }, { line_number: 1 }] }),
      'lines[1].line_number',
    )
    expect(await countDevices(c)).toBe(0)

    const phone = await f.deskphone(c, { model: 'T31P' })
    expect((await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: {} })).body.line_number).toBe(1)
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: { line_number: 3 } }), 'line_number')
    const dup = await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: { line_number: 1 } })
    expect(dup.status).toBe(409)
    expect(dup.body.code).toBe('device_line_exists')
    expect((await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: {} })).body.line_number).toBe(2)
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: {} }), 'line_number')
    expect((await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data.length).toBe(2)
  })

  test('concurrent additions never exceed the model’s lines nor share a number (and never 500)', async () => {
    const c = await f.ctx()
    const phone = await f.deskphone(c, { model: 'T31P' })
    const rs = await Promise.all([0, 1, 2].map(() => t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: {} })))
    expect(rs.map((r) => r.status).sort()).toEqual([200, 200, 400])
    expect(
      rs
        .filter((r) => r.status === 200)
        .map((r) => r.body.line_number)
        .sort(),
    ).toEqual([1, 2])
  })

  test('foreign-account users and extensions are 400 with field details; nothing is stored', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const other = await f.ctx(p.test_key)
    const ou = await f.user(other)
    const oe = await f.extension(other, ou)
    const r = await create(c, { vendor: 'yealink', model: 'T54W', mac_address: mac(), lines: [{ user: ou, extension: oe }] })
    expectValidation(r, 'lines[0].user', 'lines[0].extension')
    expect(await countDevices(c)).toBe(0)
    const phone = await f.deskphone(c)
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: { user: ou } }), 'user')
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: { extension: oe } }), 'extension')
    expect((await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data).toEqual([])
  })

  test('update a line (user, extension, label; its credentials stay) and delete it', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const phone = await f.deskphone(c)
    const line = f.ok('line', await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: { label: 'L1' } }))
    const upd = await t.call('POST', `/v1/deskphones/${phone.id}/lines/${line.id}`, { ...c, body: { user: u, label: 'Ada' } })
    expect(upd.status).toBe(200)
    expect([upd.body.user, upd.body.label, upd.body.sip_credentials.username]).toEqual([u, 'Ada', line.sip_credentials.username])
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}/lines/${line.id}`, { ...c, body: { user: 'usr_nope' } }), 'user')
    expect((await t.call('DELETE', `/v1/deskphones/${phone.id}/lines/${line.id}`, c)).body).toEqual({ id: line.id, object: 'device_line', deleted: true })
    const gone = await t.call('DELETE', `/v1/deskphones/${phone.id}/lines/${line.id}`, c)
    expect([gone.status, gone.body.code]).toEqual([404, 'device_line_not_found'])
    expect((await t.call('POST', `/v1/deskphones/${phone.id}/lines/${line.id}`, { ...c, body: {} })).body.code).toBe('device_line_not_found')
  })
})

describe('SIP credentials are shown to platform secret keys only', () => {
  test('the phone’s provisioning login: the platform key sees it on the device; an account session does not', async () => {
    const c = await f.ctx()
    const phone = await f.deskphone(c)
    expect(phone.provisioning_credentials.password.length).toBeGreaterThanOrEqual(20)
    expect((await t.call('GET', `/v1/devices/${phone.id}`, c)).body.provisioning_credentials).toEqual(phone.provisioning_credentials)
    const session = await f.session(c)
    for (const path of [`/v1/devices/${phone.id}`, `/v1/deskphones/${phone.id}`]) {
      const r = await t.call('GET', path, { key: session })
      expect([r.status, 'provisioning_credentials' in r.body]).toEqual([200, false])
    }
    expect('provisioning_credentials' in (await t.call('GET', '/v1/deskphones', { key: session })).body.data[0]).toBe(false)
    const made = await t.call('POST', '/v1/deskphones', { key: session, body: { vendor: 'yealink', model: 'T31P', mac_address: mac() } })
    expect([made.status, 'provisioning_credentials' in made.body]).toEqual([200, false])
    // Each phone has its own.
    expect((await f.deskphone(c)).provisioning_credentials.username).not.toBe(phone.provisioning_credentials.username)
  })

  test('platform key sees them; an account session does not (field omitted); a user token cannot reach devices', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const phone = await f.deskphone(c, { lines: [{ user: u }] })
    const session = await f.session(c)
    const asKey = await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)
    expect(asKey.body.data[0].sip_credentials).toBeDefined()
    const asSession = await t.call('GET', `/v1/deskphones/${phone.id}/lines`, { key: session })
    expect(asSession.status).toBe(200)
    expect(asSession.body.data[0].id).toBe(asKey.body.data[0].id)
    expect('sip_credentials' in asSession.body.data[0]).toBe(false)
    const expanded = await t.call('GET', '/v1/devices?expand[]=lines', { key: session })
    expect(expanded.body.data[0].lines.data.length).toBe(1)
    expect('sip_credentials' in expanded.body.data[0].lines.data[0]).toBe(false)
    expect((await t.call('GET', '/v1/devices?expand[]=lines', c)).body.data[0].lines.data[0].sip_credentials).toEqual(asKey.body.data[0].sip_credentials)
    // A line made by a session is answered without its credentials too.
    const made = await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { key: session, body: {} })
    expect(made.status).toBe(200)
    expect('sip_credentials' in made.body).toBe(false)
    const token = await f.userToken(c, u)
    for (const path of [`/v1/deskphones/${phone.id}/lines`, `/v1/devices/${phone.id}`, '/v1/devices?expand[]=lines']) {
      expect((await t.call('GET', path, { key: token })).status).toBe(403)
    }
  })

  test('other accounts and other platforms cannot reach a deskphone or its lines (404 / 403)', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const sibling = await f.ctx(p.test_key)
    const stranger = await f.ctx()
    const phone = await f.deskphone(c, { lines: [{}] })
    for (const path of [`/v1/deskphones/${phone.id}`, `/v1/deskphones/${phone.id}/lines`, `/v1/deskphones/${phone.id}/provisioning-events`]) {
      const r = await t.call('GET', path, sibling)
      expect([r.status, r.body.code]).toEqual([404, 'deskphone_not_found'])
      expect((await t.call('GET', path, stranger)).status).toBe(404)
      // Another platform's key naming this account is refused before any lookup.
      const cross = await t.call('GET', path, { key: stranger.key, account: c.account })
      expect([cross.status, cross.body.code]).toEqual([403, 'account_forbidden'])
    }
    const siblingSession = await f.session(sibling)
    expect((await t.call('GET', `/v1/deskphones/${phone.id}/lines`, { key: siblingSession })).status).toBe(404)
    expect((await t.call('DELETE', `/v1/deskphones/${phone.id}`, sibling)).status).toBe(404)
    expect((await t.call('GET', `/v1/deskphones/${phone.id}`, c)).status).toBe(200)
  })
})

describe('list, update, delete, provisioning events', () => {
  test('the list holds deskphones only, newest first, paginated', async () => {
    const c = await f.ctx()
    const a = await f.deskphone(c)
    clock.advance(1000)
    const b = await f.deskphone(c, { vendor: 'polycom', model: 'VVX 450' })
    await f.base(c)
    const page1 = await t.call('GET', '/v1/deskphones?limit=1', c)
    expect(page1.body.data.map((d: any) => d.id)).toEqual([b.id])
    const page2 = await t.call('GET', page1.body.next_page_url, c)
    expect(page2.body.data.map((d: any) => d.id)).toEqual([a.id])
    expect(page2.body.next_page_url).toBeNull()
    const base = await t.call('GET', `/v1/deskphones/${(await t.call('GET', '/v1/dect-bases', c)).body.data[0].id}`, c)
    expect([base.status, base.body.code]).toEqual([404, 'deskphone_not_found'])
  })

  test('update name and location; any update sets the phone back to pending_sync; location null unsets it', async () => {
    const c = await f.ctx()
    const loc = await f.location(c)
    const phone = await f.deskphone(c)
    clock.advance(5000)
    const r = await t.call('POST', `/v1/deskphones/${phone.id}`, { ...c, body: { name: 'Lab', location: loc, status: 'pending_sync' } })
    expect([r.body.name, r.body.location, r.body.status]).toEqual(['Lab', loc, 'pending_sync'])
    expect(r.body.updated_at).toBe(clock.now().toISOString())
    expect((await t.call('POST', `/v1/deskphones/${phone.id}`, { ...c, body: { location: null } })).body.location).toBeNull()
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}`, { ...c, body: { location: 'loc_nope' } }), 'location')
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}`, { ...c, body: { status: 'synced' } }), 'status')
  })

  test('check-sync is recorded in the provisioning events and marks the device pending_sync', async () => {
    const c = await f.ctx()
    const phone = await f.deskphone(c)
    expect((await t.call('GET', `/v1/deskphones/${phone.id}/provisioning-events`, c)).body.data).toEqual([])
    clock.advance(1000)
    const r = await t.call('POST', `/v1/devices/${phone.id}/status/check-sync`, c)
    expect(r.status).toBe(200)
    expect([r.body.status, r.body.check_sync_requested_at]).toEqual(['pending_sync', clock.now().toISOString()])
    const events = await t.call('GET', `/v1/deskphones/${phone.id}/provisioning-events`, c)
    expect(events.body.data).toEqual([
      {
        id: expect.stringMatching(/^pev_/),
        object: 'provisioning_event',
        device: phone.id,
        type: 'check_sync_requested',
        error_code: null,
        ip_address: null,
        user_agent: null,
        created_at: clock.now().toISOString(),
      },
    ])
  })

  test('a location with devices cannot be deleted (409 location_in_use); once they move it can', async () => {
    const c = await f.ctx()
    const loc = await f.location(c)
    const phone = await f.deskphone(c, { location: loc })
    const r = await t.call('DELETE', `/v1/locations/${loc}`, c)
    expect([r.status, r.body.code]).toEqual([409, 'location_in_use'])
    await t.call('POST', `/v1/deskphones/${phone.id}`, { ...c, body: { location: null } })
    expect((await t.call('DELETE', `/v1/locations/${loc}`, c)).status).toBe(200)
  })

  test('delete: the phone, its lines and their credentials go; a second delete is 404', async () => {
    const c = await f.ctx()
    const phone = await f.deskphone(c, { lines: [{}] })
    expect((await t.call('DELETE', `/v1/deskphones/${phone.id}`, c)).body).toEqual({ id: phone.id, object: 'device', deleted: true })
    expect((await t.call('GET', `/v1/deskphones/${phone.id}`, c)).status).toBe(404)
    expect((await t.call('DELETE', `/v1/deskphones/${phone.id}`, c)).status).toBe(404)
    // The MAC is free again.
    expect((await create(c, { vendor: 'yealink', model: 'T54W', mac_address: phone.mac_address })).status).toBe(200)
  })
})
