/**
 * /v1/devices over HTTP: every type through one record, the type filter and
 * expand[] (users, lines), device users (and onboarding condition 4: a device
 * assigned to a user), update back to pending_sync, check-sync, delete, and
 * cross-account isolation.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { eq } from 'drizzle-orm'
import { accounts, deviceLines, devices } from '../src/db/schema'
import { accountExtras } from '../src/services/accounts/accounts'
import { deviceForProvisioning, devicesForProvisioning } from '../src/services/devices/provisioning-read'
import { sipCredentialsFor } from '../src/services/devices/sip-credentials'
import { deviceFixtures, expectValidation, mac } from './device-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-05-05T09:00:00.000Z')
const t = await startTestService({}, { clock })
const f = deviceFixtures(t)

const create = (c: { key: string; account: string }, body: Record<string, unknown>) => t.call('POST', '/v1/devices', { ...c, body })
const ids = (r: { body: any }) => r.body.data.map((d: any) => d.id)

describe('create through /v1/devices', () => {
  test('a deskphone, a DECT base and a handset on it: one record, told apart by type', async () => {
    const c = await f.ctx()
    const phone = await create(c, { type: 'deskphone', vendor: 'polycom', model: 'vvx-450', mac_address: mac(), lines: [{}] })
    expect([phone.status, phone.body.type, phone.body.model, phone.body.location]).toEqual([200, 'deskphone', 'VVX 450', null])
    const base = await create(c, { type: 'dect_base', vendor: 'yealink', model: 'W60B', mac_address: mac() })
    expect([base.status, base.body.type]).toEqual([200, 'dect_base'])
    const handset = await create(c, { type: 'dect_handset', vendor: 'yealink', model: 'W56H', base: base.body.id })
    expect([handset.status, handset.body.type, handset.body.base, handset.body.mac_address]).toEqual([200, 'dect_handset', base.body.id, null])
    // A handset fetches no file of its own: no provisioning login.
    expect('provisioning_credentials' in handset.body).toBe(false)
    expect(base.body.provisioning_credentials).toBeDefined()
    const got = await t.call('GET', `/v1/devices/${handset.body.id}`, c)
    expect(got.body).toEqual(handset.body)
    expect((await t.call('GET', `/v1/dect-bases/${base.body.id}/handsets/${handset.body.id}`, c)).body).toEqual(handset.body)
  })

  test('a handset needs a base of the account (details.base); other types take none; a handset has no MAC; nothing stored', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const other = await f.ctx(p.test_key)
    const foreignBase = await f.base(other)
    const phone = await f.deskphone(c)
    expectValidation(await create(c, { type: 'dect_handset', vendor: 'yealink', model: 'W56H' }), 'base')
    expectValidation(await create(c, { type: 'dect_handset', vendor: 'yealink', model: 'W56H', base: foreignBase.id }), 'base')
    expectValidation(await create(c, { type: 'dect_handset', vendor: 'yealink', model: 'W56H', base: phone.id }), 'base')
    expectValidation(await create(c, { type: 'deskphone', vendor: 'yealink', model: 'T54W', mac_address: mac(), base: phone.id }), 'base')
    const base = await f.base(c)
    expectValidation(await create(c, { type: 'dect_handset', vendor: 'yealink', model: 'W56H', base: base.id, mac_address: mac() }), 'mac_address')
    expectValidation(await create(c, { type: 'dect_base', vendor: 'yealink', model: 'W60B', mac_address: mac(), lines: [{}] }), 'lines')
    expect(ids(await t.call('GET', '/v1/devices', c)).sort()).toEqual([phone.id, base.id].sort())
  })

  test('a retried create with the same Idempotency-Key answers the same device and makes no second one', async () => {
    const c = await f.ctx()
    const body = { type: 'deskphone', vendor: 'yealink', model: 'T54W', mac_address: mac(), lines: [{}] }
    const headers = { 'idempotency-key': `dev-${mac()}` }
    const first = await t.call('POST', '/v1/devices', { ...c, body, headers })
    const again = await t.call('POST', '/v1/devices', { ...c, body, headers })
    expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([200, 200, 'true'])
    expect(again.body).toEqual(first.body)
    expect(ids(await t.call('GET', '/v1/devices', c))).toEqual([first.body.id])
  })

  test('unknown fields, a bad type and an unknown vendor are refused', async () => {
    const c = await f.ctx()
    expectValidation(await create(c, { type: 'deskphone', vendor: 'yealink', model: 'T54W', mac_address: mac(), colour: 'red' }), 'colour')
    expectValidation(await create(c, { type: 'softphone', vendor: 'yealink', model: 'T54W', mac_address: mac() }), 'type')
    const r = await create(c, { type: 'deskphone', vendor: 'grandstream', model: 'GRP2614', mac_address: mac() })
    expect([r.status, r.body.code, typeof r.body.details.vendor]).toEqual([400, 'unsupported_vendor', 'string'])
  })
})

describe('list devices', () => {
  test('newest first, with the type filter; pages keep the filter', async () => {
    const c = await f.ctx()
    const phone = await f.deskphone(c)
    clock.advance(1000)
    const base = await f.base(c)
    clock.advance(1000)
    const handset = f.ok('handset', await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W73H' } }))
    expect(ids(await t.call('GET', '/v1/devices', c))).toEqual([handset.id, base.id, phone.id])
    expect(ids(await t.call('GET', '/v1/devices?type=deskphone', c))).toEqual([phone.id])
    expect(ids(await t.call('GET', '/v1/devices?type=dect_handset', c))).toEqual([handset.id])
    const first = await t.call('GET', '/v1/devices?type=dect_base&limit=1', c)
    expect(ids(first)).toEqual([base.id])
    expect(first.body.next_page_url).toBeNull()
    expectValidation(await t.call('GET', '/v1/devices?type=phone', c), 'type')
    expect((await t.call('GET', '/v1/devices?expand[]=buttons', c)).status).toBe(400)
  })

  test('expand[]=users and expand[]=lines inline them as lists; without expansion they are omitted', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const phone = await f.deskphone(c, { lines: [{ user: u }] })
    f.ok('assign', await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: u } }))
    const plain = (await t.call('GET', '/v1/devices', c)).body.data[0]
    expect('users' in plain || 'lines' in plain).toBe(false)
    const both = (await t.call('GET', '/v1/devices?expand[]=users&expand[]=lines', c)).body.data[0]
    expect(both.users).toEqual({ object: 'list', data: [expect.objectContaining({ object: 'device_user', device: phone.id, user: u })] })
    expect(both.lines.object).toBe('list')
    expect(both.lines.data.map((l: any) => [l.line_number, l.user])).toEqual([[1, u]])
  })
})

describe('device users', () => {
  test('assign, list, remove; a second assignment is 409; a foreign user is 400 (details.user); a base takes none', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const other = await f.ctx(p.test_key)
    const u = await f.user(c)
    const foreign = await f.user(other)
    const phone = await f.deskphone(c)
    const a = await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: u } })
    expect(a.body).toEqual({ id: expect.stringMatching(/^dusr_/), object: 'device_user', device: phone.id, user: u, created_at: clock.now().toISOString() })
    const again = await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: u } })
    expect([again.status, again.body.code]).toEqual([409, 'device_user_exists'])
    expectValidation(await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: foreign } }), 'user')
    expectValidation(await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: 'usr_missing' } }), 'user')
    const base = await f.base(c)
    expectValidation(await t.call('POST', `/v1/devices/${base.id}/users`, { ...c, body: { user: u } }), 'user')
    expect((await t.call('GET', `/v1/devices/${phone.id}/users`, c)).body.data.map((x: any) => x.user)).toEqual([u])
    const del = await t.call('DELETE', `/v1/devices/${phone.id}/users/${u}`, c)
    expect(del.body).toEqual({ id: a.body.id, object: 'device_user', deleted: true })
    const missing = await t.call('DELETE', `/v1/devices/${phone.id}/users/${u}`, c)
    expect([missing.status, missing.body.code]).toEqual([404, 'device_user_not_found'])
    expect((await t.call('GET', `/v1/devices/${phone.id}/users`, c)).body.data).toEqual([])
  })

  test('deleting a user removes its assignments; line users are cleared', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const phone = await f.deskphone(c, { lines: [{ user: u }] })
    f.ok('assign', await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: u } }))
    expect((await t.call('DELETE', `/v1/users/${u}`, c)).status).toBe(200)
    expect((await t.call('GET', `/v1/devices/${phone.id}/users`, c)).body.data).toEqual([])
    expect((await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data[0].user).toBeNull()
  })

  test('onboarding condition 4: a device assigned to a user', async () => {
    const c = await f.ctx()
    const db = t.service.database.db
    // onboarding_complete also needs an E911 number, which is not a resource yet: read the check itself.
    const check = async () => {
      const [acct] = await db.select().from(accounts).where(eq(accounts.id, c.account))
      return (await accountExtras(db, [acct!])).get(c.account)!.onboarding.device_assigned
    }
    const u = await f.user(c)
    const phone = await f.deskphone(c, { lines: [{ user: u }] })
    expect(await check()).toBe(false)
    f.ok('assign', await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: u } }))
    expect(await check()).toBe(true)
    await t.call('DELETE', `/v1/devices/${phone.id}/users/${u}`, c)
    expect(await check()).toBe(false)
  })
})

describe('update, check-sync, delete', () => {
  test('POST /v1/devices/{id} updates and sets the device back to pending_sync', async () => {
    const c = await f.ctx()
    const loc = await f.location(c)
    const phone = await f.deskphone(c)
    const r = await t.call('POST', `/v1/devices/${phone.id}`, { ...c, body: { status: 'pending_sync', name: 'Hall', location: loc } })
    expect([r.status, r.body.status, r.body.name, r.body.location]).toEqual([200, 'pending_sync', 'Hall', loc])
    expectValidation(await t.call('POST', `/v1/devices/${phone.id}`, { ...c, body: { mac_address: mac() } }), 'mac_address')
  })

  test('check-sync answers the device, pending_sync, with the time of the request', async () => {
    const c = await f.ctx()
    const base = await f.base(c)
    clock.advance(2000)
    const r = await t.call('POST', `/v1/devices/${base.id}/status/check-sync`, c)
    expect([r.status, r.body.status, r.body.check_sync_requested_at]).toEqual([200, 'pending_sync', clock.now().toISOString()])
  })

  test('deleting a DECT base deletes its handsets', async () => {
    const c = await f.ctx()
    const base = await f.base(c)
    const h = f.ok('handset', await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W56H' } }))
    expect((await t.call('DELETE', `/v1/devices/${base.id}`, c)).body).toEqual({ id: base.id, object: 'device', deleted: true })
    expect((await t.call('GET', `/v1/devices/${h.id}`, c)).status).toBe(404)
  })

  test('deleting an account with devices, lines, templates and assignments deletes them all', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const loc = await f.location(c)
    const tpl = f.ok('template', await t.call('POST', '/v1/button_templates', { ...c, body: { name: 'T', vendor: 'yealink' } }))
    f.ok('account', await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { default_button_template: tpl.id } }))
    const phone = await f.deskphone(c, { location: loc, lines: [{ user: u, extension: await f.extension(c, u) }] })
    f.ok('assign', await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: u } }))
    const base = await f.base(c, { location: loc })
    f.ok('handset', await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W56H' } }))
    expect((await t.call('DELETE', `/v1/accounts/${c.account}`, { key: c.key })).status).toBe(200)
    const left = await t.service.database.db.select().from(deviceLines).where(eq(deviceLines.accountId, c.account))
    expect(left).toEqual([])
    // The MAC is free for another account.
    expect((await f.deskphone(await f.ctx(), { mac_address: phone.mac_address })).mac_address).toBe(phone.mac_address)
  })

  test('a changed line, override or handset sets the phone (for a handset, its base) back to pending_sync', async () => {
    const c = await f.ctx()
    const db = t.service.database.db
    const phone = await f.deskphone(c)
    const base = await f.base(c)
    const synced = async (...ids: string[]) => {
      for (const id of ids) await db.update(devices).set({ status: 'synced' }).where(eq(devices.id, id))
    }
    const status = async (id: string) => (await t.call('GET', `/v1/devices/${id}`, c)).body.status
    await synced(phone.id, base.id)
    f.ok('line', await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: {} }))
    expect(await status(phone.id)).toBe('pending_sync')
    await synced(phone.id)
    f.ok('override', await t.call('POST', `/v1/devices/${phone.id}/button_overrides`, { ...c, body: { key: 1, type: 'dnd' } }))
    expect(await status(phone.id)).toBe('pending_sync')
    const h = f.ok('handset', await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W56H' } }))
    expect(await status(base.id)).toBe('pending_sync')
    await synced(base.id, h.id)
    f.ok(
      'extension',
      await t.call('POST', `/v1/dect-bases/${base.id}/handsets/${h.id}/extensions`, { ...c, body: { extension: await f.extension(c, await f.user(c)) } }),
    )
    expect([await status(base.id), await status(h.id)]).toEqual(['pending_sync', 'pending_sync'])
  })

  test('another account’s device is 404 device_not_found on every device route', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const other = await f.ctx(p.test_key)
    const u = await f.user(other)
    const phone = await f.deskphone(c)
    const calls: [string, string, unknown?][] = [
      ['GET', `/v1/devices/${phone.id}`],
      ['POST', `/v1/devices/${phone.id}`, {}],
      ['DELETE', `/v1/devices/${phone.id}`],
      ['POST', `/v1/devices/${phone.id}/status/check-sync`],
      ['GET', `/v1/devices/${phone.id}/users`],
      ['POST', `/v1/devices/${phone.id}/users`, { user: u }],
      ['DELETE', `/v1/devices/${phone.id}/users/${u}`],
      ['GET', `/v1/devices/${phone.id}/button_overrides`],
      ['POST', `/v1/devices/${phone.id}/button_overrides`, { key: 1, type: 'dnd' }],
      ['DELETE', `/v1/devices/${phone.id}/button_overrides/bovr_x`],
      ['GET', `/v1/devices/${phone.id}/buttons`],
      ['GET', `/v1/devices/${phone.id}/compatible_button_templates`],
    ]
    for (const [method, path, body] of calls) {
      const r = await t.call(method, path, { ...other, ...(body !== undefined ? { body } : {}) })
      expect({ method, path, status: r.status, code: r.body.code }).toEqual({ method, path, status: 404, code: 'device_not_found' })
    }
    expect((await t.call('GET', `/v1/devices/${phone.id}`, c)).body.status).toBe('pending_sync')
  })
})

describe('what provisioning reads', () => {
  test('deviceForProvisioning(mac): the device, its account, its lines with the credentials the platform key sees, its effective buttons', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const e = await f.extension(c, u)
    const tpl = f.ok(
      'template',
      await t.call('POST', '/v1/button_templates', { ...c, body: { name: 'T', vendor: 'yealink', buttons: [{ key: 1, type: 'line', value: '1' }] } }),
    )
    const phone = await f.deskphone(c, { model: 'T33G', button_template: tpl.id, lines: [{ user: u, extension: e, label: 'Ada' }, {}] })
    f.ok('override', await t.call('POST', `/v1/devices/${phone.id}/button_overrides`, { ...c, body: { key: 4, type: 'dnd' } }))
    const seen = (await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data
    const db = t.service.database.db
    // Any accepted spelling of the MAC finds it.
    const view = await deviceForProvisioning(db, phone.mac_address.toLowerCase().match(/../g)!.join(':'))
    expect(view!.device.id).toBe(phone.id)
    expect(view!.provisioning_credentials).toEqual(phone.provisioning_credentials)
    expect(view!.account.id).toBe(c.account)
    expect(view!.model).toMatchObject({ vendor: 'yealink', model: 'T33G', lines: 4, keys: 4 })
    const ext = (await t.call('GET', '/v1/extensions', c)).body.data[0]
    expect(view!.lines.map((l) => [l.line_number, l.slot, l.user, l.extension, l.extension_number, l.label])).toEqual([
      [1, 1, u, e, ext.number, 'Ada'],
      [2, 2, null, null, null, null],
    ])
    for (const l of view!.lines) expect(l.credentials).toEqual(seen.find((s: any) => s.id === l.id).sip_credentials)
    expect(view!.buttons.map((b) => [b.key, b.type, b.source])).toEqual([
      [1, 'line', 'template'],
      [4, 'dnd', 'override'],
    ])
    expect(await deviceForProvisioning(db, '001122334455')).toBeUndefined()
    expect(await deviceForProvisioning(db, 'not a mac')).toBeUndefined()
  })

  test('a DECT base: the lines of all its handsets, numbered as the base’s account slots, and each handset’s buttons', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const base = await f.base(c)
    const h1 = f.ok('handset', await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W56H' } }))
    const h2 = f.ok('handset', await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W73H' } }))
    for (const h of [h1, h2]) {
      const ext = await f.extension(c, u)
      f.ok('handset extension', await t.call('POST', `/v1/dect-bases/${base.id}/handsets/${h.id}/extensions`, { ...c, body: { extension: ext } }))
    }
    const view = await deviceForProvisioning(t.service.database.db, base.mac_address)
    expect(view!.lines.map((l) => [l.device, l.line_number, l.slot])).toEqual([
      [h1.id, 1, 1],
      [h2.id, 1, 2],
    ])
    expect(view!.handsets.map((h) => h.device.id)).toEqual([h1.id, h2.id])
  })

  test('devicesForProvisioning(macs): fetches arriving together are read in one statement, each device with its own lines and buttons', async () => {
    const c = await f.ctx()
    const other = await f.ctx()
    const u = await f.user(c)
    const one = await f.deskphone(c, { model: 'T33G', lines: [{ user: u, label: 'One' }] })
    const two = await f.deskphone(c, { model: 'T54W', lines: [{ label: 'Two a' }, { label: 'Two b' }] })
    f.ok('override', await t.call('POST', `/v1/devices/${two.id}/button_overrides`, { ...c, body: { key: 3, type: 'dnd' } }))
    const base = await f.base(c)
    const handset = f.ok('handset', await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W56H' } }))
    f.ok(
      'handset extension',
      await t.call('POST', `/v1/dect-bases/${base.id}/handsets/${handset.id}/extensions`, { ...c, body: { extension: await f.extension(c, u) } }),
    )
    const foreign = await f.deskphone(other, { model: 'T33G', lines: [{ label: 'Foreign' }] })
    const db = t.service.database.db
    const macs = [one, two, base, foreign].map((d) => d.mac_address as string)
    const views = await devicesForProvisioning(db, [...macs, '001122334455'])
    expect([...views.keys()].sort()).toEqual([...macs].sort())
    // The batch answers exactly what each device read alone answers.
    for (const m of macs) expect(views.get(m)).toEqual((await deviceForProvisioning(db, m))!)
    expect(views.get(one.mac_address)!.lines.map((l) => l.label)).toEqual(['One'])
    expect(views.get(two.mac_address)!.lines.map((l) => l.label)).toEqual(['Two a', 'Two b'])
    expect(views.get(two.mac_address)!.buttons.find((b) => b.key === 3)?.type).toBe('dnd')
    expect(views.get(one.mac_address)!.buttons.some((b) => b.type === 'dnd')).toBe(false)
    expect(views.get(base.mac_address)!.lines.map((l) => l.device)).toEqual([handset.id])
    expect(views.get(foreign.mac_address)!.account.id).toBe(other.account)
    expect((await devicesForProvisioning(db, [])).size).toBe(0)
  })

  test('sipCredentialsFor(username): the line a registrar authenticates; an unknown username is credentials_not_found', async () => {
    const c = await f.ctx()
    const phone = await f.deskphone(c, { lines: [{}] })
    const line = (await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data[0]
    const db = t.service.database.db
    expect(await sipCredentialsFor(db, line.sip_credentials.username)).toEqual({
      line: line.id,
      device: phone.id,
      account: c.account,
      credentials: line.sip_credentials,
    })
    await t.call('DELETE', `/v1/deskphones/${phone.id}/lines/${line.id}`, c)
    await expect(sipCredentialsFor(db, line.sip_credentials.username)).rejects.toMatchObject({ status: 404, code: 'credentials_not_found' })
  })

  test('SIP passwords are stored sealed, not in clear', async () => {
    const c = await f.ctx()
    const phone = await f.deskphone(c, { lines: [{}] })
    const line = (await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data[0]
    const [row] = await t.service.database.db.select().from(deviceLines).where(eq(deviceLines.id, line.id))
    expect(row!.sipPasswordSealed).not.toContain(line.sip_credentials.password)
    expect(row!.sipPasswordSealed.startsWith('v1.')).toBe(true)
  })
})
