/**
 * E911 end to end over HTTP: locations' validate-e911 and provision-e911 (the state
 * they leave on the location), the signed-in user's emergency addresses under
 * /v1/me/emergency-addresses, the offline ZIP/state/city validation behind both,
 * onboarding_complete's E911 condition, and what call.emergency would carry
 * (services/e911/emergency-info.ts, read against the same database).
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { offlineAddressValidator } from '../src/services/accounts/address-validator'
import { emergencyInfoFor } from '../src/services/e911/emergency-info'
import { registerEmergencyAddressIp } from '../src/services/e911/emergency-addresses'
import { deviceFixtures, mac } from './device-fixtures'
import { and, eq } from 'drizzle-orm'
import { events } from '../src/db/schema'
import { until } from './support/polling'
import { startTestService } from './support/service'

const clock = manualClock('2026-05-05T10:00:00.000Z')
const t = await startTestService({}, { clock })
const f = deviceFixtures(t)
const db = t.service.database.db

type Ctx = { key: string; account: string }
const ok = (what: string, r: { status: number; body: any }) => {
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}
const springfield = { address_number: '100', street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' }

async function ctxWithMain(): Promise<Ctx & { main: string }> {
  const a = await t.account()
  return { key: a.key, account: a.id, main: a.account.main_location }
}
const location = async (c: Ctx, address: Record<string, unknown>, name = 'Branch') =>
  ok('location', await t.call('POST', '/v1/locations', { ...c, body: { name, address } }))
const validate = (c: Ctx, id: string) => t.call('POST', `/v1/locations/${id}/validate-e911`, c)
const provision = (c: Ctx, id: string) => t.call('POST', `/v1/locations/${id}/provision-e911`, c)
const getLocation = async (c: Ctx, id: string) => ok('get location', await t.call('GET', `/v1/locations/${id}`, c))

describe('the offline address validator (US ZIP code table)', () => {
  const v = offlineAddressValidator()
  test('a real ZIP code of its state passes, placed at the ZIP code’s centroid, the city in its preferred spelling', async () => {
    const r = await v.check({ street: 'Market St', city: 'st. louis', state: 'mo', postal_code: '63101' })
    expect(r.ok).toBe(true)
    if (!r.ok) return
    expect(r.suggestion).toBeNull()
    expect(r.address).toMatchObject({ city: 'Saint Louis', state: 'MO', country: 'US', postal_code: '63101' })
    expect(r.address.latitude).toBeCloseTo(38.63, 1)
    expect(r.address.longitude).toBeCloseTo(-90.19, 1)
  })
  test('ZIP+4, leading-zero ZIP codes and territories', async () => {
    expect((await v.check({ city: 'Allston', state: 'MA', postal_code: '02134-1234' })).ok).toBe(true)
    expect((await v.check({ city: 'Adjuntas', state: 'PR', postal_code: '00601' })).ok).toBe(true)
  })
  test('refused: unknown ZIP, ZIP of another state, bad format, bad state, unsupported country', async () => {
    expect(await v.check({ city: 'Nowhere', state: 'IL', postal_code: '00000' })).toEqual({ ok: false, details: { postal_code: 'is not a known US ZIP code' } })
    const other = await v.check({ city: 'Springfield', state: 'TX', postal_code: '62701' })
    expect(other).toEqual({
      ok: false,
      details: { postal_code: 'is a ZIP code of IL, not of TX', state: 'does not match postal_code 62701, which is in IL' },
    })
    expect(await v.check({ city: 'X', state: 'IL', postal_code: '6270' })).toMatchObject({
      ok: false,
      details: { postal_code: expect.stringContaining('ZIP') },
    })
    expect(await v.check({ city: 'X', state: 'ZZ', postal_code: '62701' })).toMatchObject({ ok: false, details: { state: expect.any(String) } })
    expect(await v.check({ city: 'Toronto', state: 'ON', postal_code: 'M5V 2T6', country: 'CA' })).toMatchObject({
      ok: false,
      details: { country: expect.stringContaining('US') },
    })
  })
  test('a city that is not the ZIP code’s: passes as given, with a suggestion of the ZIP code’s city', async () => {
    const r = await v.check({ street: 'Main St', city: 'Chicago', state: 'IL', postal_code: '62701' })
    expect(r.ok).toBe(true)
    if (!r.ok) return
    expect(r.address.city).toBe('Chicago')
    expect(r.suggestion).toMatchObject({ given: 'Chicago', city: 'Springfield', address: { city: 'Springfield', postal_code: '62701' } })
  })
})

describe('service addresses (accounts, locations) are checked against the ZIP code table', () => {
  test('unknown ZIP code and ZIP code of another state: 400 with field details, no location stored', async () => {
    const c = await ctxWithMain()
    const before = ok('list', await t.call('GET', '/v1/locations', c)).data.length
    const unknown = await t.call('POST', '/v1/locations', { ...c, body: { address: { ...springfield, postal_code: '00000' } } })
    expect([unknown.status, unknown.body.code, unknown.body.details]).toEqual([
      400,
      'validation_error',
      { 'address.postal_code': 'is not a known US ZIP code' },
    ])
    const mismatch = await t.call('POST', '/v1/locations', { ...c, body: { address: { ...springfield, state: 'TX' } } })
    expect(mismatch.status).toBe(400)
    expect(Object.keys(mismatch.body.details).sort()).toEqual(['address.postal_code', 'address.state'])
    expect(ok('list', await t.call('GET', '/v1/locations', c)).data.length).toBe(before)
  })
})

describe('location E911: validate-e911', () => {
  test('a new location reads unvalidated and not provisioned', async () => {
    const c = await ctxWithMain()
    const loc = await getLocation(c, c.main)
    expect(loc).toMatchObject({ e911_status: 'unvalidated', e911_provisioned: false, e911_validated_at: null, e911_provisioned_at: null })
  })

  test('a valid address: valid true, no details, recorded on the location as validated', async () => {
    const c = await ctxWithMain()
    const r = await validate(c, c.main)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      object: 'e911_validation',
      location: c.main,
      valid: true,
      suggested_address: null,
      details: {},
      e911_status: 'validated',
      validated_at: clock.now().toISOString(),
    })
    expect(r.body.address.postal_code).toBe('62701')
    expect(await getLocation(c, c.main)).toMatchObject({ e911_status: 'validated', e911_provisioned: false, e911_validated_at: clock.now().toISOString() })
  })

  test('a city that is not the ZIP code’s: valid false with details.city and the suggested address; fixing it makes the location provisionable', async () => {
    const c = await ctxWithMain()
    // A service address keeps its city: the ZIP code decides the jurisdiction.
    const loc = await location(c, { ...springfield, city: 'Chicago' })
    expect(loc.address.city).toBe('Chicago')
    const r = await validate(c, loc.id)
    expect(r.status).toBe(200)
    expect(r.body.valid).toBe(false)
    expect(r.body.e911_status).toBe('invalid')
    expect(r.body.details.city).toContain('Springfield')
    expect(r.body.suggested_address).toMatchObject({ city: 'Springfield', state: 'IL', postal_code: '62701', street: 'Main St' })
    expect((await getLocation(c, loc.id)).e911_status).toBe('invalid')

    const refused = await provision(c, loc.id)
    expect([refused.status, refused.body.code]).toEqual([422, 'emergency_address_invalid'])
    expect(refused.body.details.city).toContain('Springfield')
    expect(await getLocation(c, loc.id)).toMatchObject({ e911_status: 'invalid', e911_provisioned: false })

    const { place_id: _p, latitude: _la, longitude: _lo, formatted_address: _f, ...input } = r.body.suggested_address
    const fixed = ok(
      'update',
      await t.call('POST', `/v1/locations/${loc.id}`, { ...c, body: { address: Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null)) } }),
    )
    expect(fixed).toMatchObject({ e911_status: 'unvalidated', address: { city: 'Springfield' } })
    const done = await provision(c, loc.id)
    expect(done.status).toBe(200)
    expect(done.body).toMatchObject({ id: loc.id, object: 'location', e911_status: 'provisioned', e911_provisioned: true })
  })

  test('no street: valid false with details.street (a dispatcher needs it)', async () => {
    const c = await ctxWithMain()
    const loc = await location(c, { city: 'Springfield', state: 'IL', postal_code: '62701' })
    const r = await validate(c, loc.id)
    expect(r.body).toMatchObject({ valid: false, suggested_address: null, e911_status: 'invalid' })
    expect(Object.keys(r.body.details)).toEqual(['street'])
    expect((await provision(c, loc.id)).status).toBe(422)
  })

  test('an unknown location: 404 location_not_found, for both operations', async () => {
    const c = await ctxWithMain()
    const other = await ctxWithMain()
    for (const r of [await validate(c, 'loc_missing'), await provision(c, 'loc_missing'), await validate(c, other.main), await provision(c, other.main)]) {
      expect([r.status, r.body.code]).toEqual([404, 'location_not_found'])
    }
  })
})

describe('location E911: provision-e911', () => {
  test('provisions at once in the sandbox; again changes nothing; validating keeps it; a new address undoes it', async () => {
    const c = await ctxWithMain()
    const r = await provision(c, c.main)
    expect(r.status).toBe(200)
    const at = clock.now().toISOString()
    expect(r.body).toMatchObject({ id: c.main, e911_status: 'provisioned', e911_provisioned: true, e911_provisioned_at: at, e911_validated_at: at })
    clock.advance(60_000)
    const again = ok('again', await provision(c, c.main))
    expect(again.e911_provisioned_at).toBe(at)
    const v = ok('validate', await validate(c, c.main))
    expect(v).toMatchObject({ valid: true, e911_status: 'provisioned' })
    expect(await getLocation(c, c.main)).toMatchObject({ e911_status: 'provisioned', e911_provisioned_at: at })
    // Renaming keeps it; moving does not.
    expect(ok('rename', await t.call('POST', `/v1/locations/${c.main}`, { ...c, body: { name: 'HQ' } })).e911_provisioned).toBe(true)
    const moved = ok(
      'move',
      await t.call('POST', `/v1/locations/${c.main}`, {
        ...c,
        body: { address: { address_number: '7', street: 'Congress Ave', city: 'Austin', state: 'TX', postal_code: '73301' } },
      }),
    )
    expect(moved).toMatchObject({ e911_status: 'unvalidated', e911_provisioned: false, e911_provisioned_at: null, e911_validated_at: null })
    const list = ok('list', await t.call('GET', '/v1/locations', c))
    expect(list.data.find((l: any) => l.id === c.main)).toMatchObject({ e911_status: 'unvalidated' })
  })

  test('an inactive location: 409 location_inactive, nothing changes', async () => {
    const c = await ctxWithMain()
    const loc = await location(c, springfield)
    ok('deactivate', await t.call('POST', `/v1/locations/${loc.id}`, { ...c, body: { status: 'inactive' } }))
    const r = await provision(c, loc.id)
    expect([r.status, r.body.code]).toEqual([409, 'location_inactive'])
    expect((await getLocation(c, loc.id)).e911_status).toBe('unvalidated')
  })

  test('a live account: 502 carrier_unavailable (no E911 provider in this deployment); validation still answers', async () => {
    const p = await t.platform({ live_enabled: true })
    const a = await t.account({ key: p.live_key })
    const c = { key: a.key, account: a.id }
    const r = await provision(c, a.account.main_location)
    expect([r.status, r.body.code]).toEqual([502, 'carrier_unavailable'])
    expect(ok('validate', await validate(c, a.account.main_location)).valid).toBe(true)
  })

  test('a user token may not provision (403)', async () => {
    const c = await ctxWithMain()
    const u = await f.user(c)
    const tok = await f.userToken(c, u)
    expect((await t.call('POST', `/v1/locations/${c.main}/provision-e911`, { key: tok })).status).toBe(403)
  })
})

describe('onboarding_complete condition 3: an active phone number with E911 provisioned', () => {
  test('true only once the main location is provisioned (with a profile, a member, an active number and an assigned device)', async () => {
    const c = await ctxWithMain()
    const u = await f.user(c)
    const phone = ok(
      'device',
      await t.call('POST', '/v1/devices', { ...c, body: { type: 'deskphone', vendor: 'polycom', model: 'vvx-450', mac_address: mac() } }),
    )
    ok('assign', await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: u } }))
    const number = ok('available', await t.call('GET', '/v1/available-phone-numbers?quantity=1', c)).data[0].phone_number
    ok('order', await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [number] } }))
    const onboarding = async () => ok('account', await t.call('GET', `/v1/accounts/${c.account}`, { key: c.key })).onboarding_complete
    expect(await onboarding()).toBe(false)
    ok('provision', await provision(c, c.main))
    expect(await onboarding()).toBe(true)
    // Moving the main location undoes its provisioning, and so the condition.
    ok('move', await t.call('POST', `/v1/locations/${c.main}`, { ...c, body: { address: { ...springfield, address_number: '200' } } }))
    expect(await onboarding()).toBe(false)
  })

  test('a provisioned main location without an active number is not enough', async () => {
    const c = await ctxWithMain()
    const u = await f.user(c)
    const phone = ok(
      'device',
      await t.call('POST', '/v1/devices', { ...c, body: { type: 'deskphone', vendor: 'polycom', model: 'vvx-450', mac_address: mac() } }),
    )
    ok('assign', await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: u } }))
    ok('provision', await provision(c, c.main))
    expect(ok('account', await t.call('GET', `/v1/accounts/${c.account}`, { key: c.key })).onboarding_complete).toBe(false)
  })
})

describe('/v1/me/emergency-addresses', () => {
  const me = async () => {
    const c = await ctxWithMain()
    const u = await f.user(c)
    return { c, u, tok: await f.userToken(c, u) }
  }
  const add = (tok: string, body: Record<string, unknown>) => t.call('POST', '/v1/me/emergency-addresses', { key: tok, body })
  const list = async (tok: string) => ok('list', await t.call('GET', '/v1/me/emergency-addresses', { key: tok })).data

  test('create (country defaults to US), get, list, delete', async () => {
    const { tok } = await me()
    const r = await add(tok, { address_number: '100', street: 'Main St', unit: 'Suite 2', city: 'springfield', state: 'il', postal_code: '62701' })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      id: expect.stringMatching(/^ea_/),
      object: 'emergency_address',
      address: {
        address_number: '100',
        street: 'Main St',
        unit: 'Suite 2',
        city: 'Springfield',
        state: 'IL',
        postal_code: '62701',
        country: 'US',
        formatted_address: '100 Main St Suite 2, Springfield, IL 62701, US',
        latitude: expect.any(Number),
        longitude: expect.any(Number),
      },
      registered_ip: null,
      created_at: clock.now().toISOString(),
    })
    expect(ok('get', await t.call('GET', `/v1/me/emergency-addresses/${r.body.id}`, { key: tok }))).toEqual(r.body)
    clock.advance(1000)
    const second = ok('second', await add(tok, { street: '1600 Pennsylvania Ave NW', city: 'Washington', state: 'DC', postal_code: '20500', country: 'US' }))
    expect((await list(tok)).map((a: any) => a.id)).toEqual([second.id, r.body.id])
    const del = await t.call('DELETE', `/v1/me/emergency-addresses/${r.body.id}`, { key: tok })
    expect(del.body).toEqual({ id: r.body.id, object: 'emergency_address', deleted: true })
    const gone = await t.call('GET', `/v1/me/emergency-addresses/${r.body.id}`, { key: tok })
    expect([gone.status, gone.body.code]).toEqual([404, 'emergency_address_not_found'])
    const again = await t.call('DELETE', `/v1/me/emergency-addresses/${r.body.id}`, { key: tok })
    expect([again.status, again.body.code]).toEqual([404, 'emergency_address_not_found'])
    expect((await list(tok)).map((a: any) => a.id)).toEqual([second.id])
  })

  test('list pagination follows next_page_url', async () => {
    const { tok } = await me()
    for (const n of ['1', '2', '3']) {
      ok('add', await add(tok, { address_number: n, street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701' }))
      clock.advance(1000)
    }
    const p1 = ok('page 1', await t.call('GET', '/v1/me/emergency-addresses?limit=2', { key: tok }))
    expect(p1.data.map((a: any) => a.address.address_number)).toEqual(['3', '2'])
    const p2 = ok('page 2', await t.call('GET', p1.next_page_url, { key: tok }))
    expect(p2.data.map((a: any) => a.address.address_number)).toEqual(['1'])
    expect(p2.next_page_url).toBeNull()
  })

  test('DELETE .../registered_ip clears the network binding; the address stays', async () => {
    const { c, u, tok } = await me()
    const a = ok('add', await add(tok, { street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701' }))
    // A softphone presenting the address on connect binds it (service call: no HTTP route does that).
    await registerEmergencyAddressIp(db, { clock }, { accountId: c.account, userId: u }, a.id, '203.0.113.7')
    expect(ok('get', await t.call('GET', `/v1/me/emergency-addresses/${a.id}`, { key: tok })).registered_ip).toBe('203.0.113.7')
    const r = await t.call('DELETE', `/v1/me/emergency-addresses/${a.id}/registered_ip`, { key: tok })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: a.id, object: 'emergency_address', registered_ip: null, address: a.address })
    expect(ok('again', await t.call('DELETE', `/v1/me/emergency-addresses/${a.id}/registered_ip`, { key: tok })).registered_ip).toBeNull()
    const missing = await t.call('DELETE', '/v1/me/emergency-addresses/ea_missing/registered_ip', { key: tok })
    expect([missing.status, missing.body.code]).toEqual([404, 'emergency_address_not_found'])
  })

  const bad: [string, Record<string, unknown>, string[]][] = [
    ['unknown ZIP code', { street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '00000' }, ['postal_code']],
    ['ZIP code of another state', { street: 'Main St', city: 'Springfield', state: 'TX', postal_code: '62701' }, ['postal_code', 'state']],
    ['not a ZIP code', { street: 'Main St', city: 'Springfield', state: 'IL', postal_code: 'abcde' }, ['postal_code']],
    ['unsupported country', { street: 'King St W', city: 'Toronto', state: 'ON', postal_code: 'M5V2T6', country: 'CA' }, ['country']],
    ['country not a two-letter code', { street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'USA' }, ['country']],
    ['state not a two-letter code', { street: 'Main St', city: 'Springfield', state: 'Illinois', postal_code: '62701' }, ['state']],
    ['street too long', { street: 'S'.repeat(201), city: 'Springfield', state: 'IL', postal_code: '62701' }, ['street']],
    ['city too long', { street: 'Main St', city: 'C'.repeat(101), state: 'IL', postal_code: '62701' }, ['city']],
    ['unit too long', { street: 'Main St', unit: 'U'.repeat(51), city: 'Springfield', state: 'IL', postal_code: '62701' }, ['unit']],
    [
      'address_number too long',
      { address_number: '9'.repeat(21), street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701' },
      ['address_number'],
    ],
    ['postal_code too long', { street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701-12345' }, ['postal_code']],
    ['street missing', { city: 'Springfield', state: 'IL', postal_code: '62701' }, ['street']],
    ['city not the ZIP code’s', { street: 'Main St', city: 'Chicago', state: 'IL', postal_code: '62701' }, ['city']],
    ['unknown field', { street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', zip4: '1234' }, ['zip4']],
  ]
  for (const [name, body, fields] of bad) {
    test(`refused with field details, nothing stored: ${name}`, async () => {
      const { tok } = await me()
      const r = await add(tok, body)
      expect([r.status, r.body.code]).toEqual([400, 'validation_error'])
      expect(Object.keys(r.body.details).sort()).toEqual(fields)
      if (name.startsWith('city not')) expect(r.body.details.city).toContain('Springfield')
      expect(await list(tok)).toEqual([])
    })
  }

  test('each user sees only their own addresses', async () => {
    const { c, tok } = await me()
    const mine = ok('add', await add(tok, { street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701' }))
    const colleague = await f.userToken(c, await f.user(c))
    expect(await list(colleague)).toEqual([])
    for (const [method, path] of [
      ['GET', `/v1/me/emergency-addresses/${mine.id}`],
      ['DELETE', `/v1/me/emergency-addresses/${mine.id}`],
      ['DELETE', `/v1/me/emergency-addresses/${mine.id}/registered_ip`],
    ] as const) {
      const r = await t.call(method, path, { key: colleague })
      expect([r.status, r.body.code]).toEqual([404, 'emergency_address_not_found'])
    }
    expect(await list(tok)).toHaveLength(1)
  })

  test('user tokens only: no credential 401, a secret key 403', async () => {
    const { c } = await me()
    expect((await t.call('GET', '/v1/me/emergency-addresses')).status).toBe(401)
    expect((await t.call('GET', '/v1/me/emergency-addresses', c)).status).toBe(403)
    const r = await t.call('POST', '/v1/me/emergency-addresses', { ...c, body: { street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701' } })
    expect(r.status).toBe(403)
  })
})

describe('call.emergency information (services/e911/emergency-info.ts)', () => {
  test('a simulated call to 933: call.emergency names the provisioned main location', async () => {
    const c = await ctxWithMain()
    const u = await f.user(c)
    const number = ok('available', await t.call('GET', '/v1/available-phone-numbers?quantity=1', c)).data[0].phone_number
    ok('order', await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [number] } }))
    ok('provision', await provision(c, c.main))
    const call = ok('simulate', await t.call('POST', '/v1/test_helpers/calls', { ...c, body: { user: u, direction: 'outbound', to_number: '933' } }))
    // The call's first step (at the start, on the manual clock) commits call.initiated and call.emergency.
    const emergency = await until('call.emergency committed', async () => {
      const [row] = await db
        .select()
        .from(events)
        .where(and(eq(events.accountId, c.account), eq(events.type, 'call.emergency')))
      return row
    })
    expect(JSON.parse(emergency.body).data).toMatchObject({ call_id: call.id, to_number: '933', user_id: u, location_id: c.main, e911_provisioned: true })
  })

  test('the user’s device at a provisioned location: e911_provisioned with its location; unprovisioned: false', async () => {
    const c = await ctxWithMain()
    const u = await f.user(c)
    await f.extension(c, u)
    const branch = await location(c, springfield, 'Branch office')
    const phone = ok(
      'device',
      await t.call('POST', '/v1/devices', { ...c, body: { type: 'deskphone', vendor: 'polycom', model: 'vvx-450', mac_address: mac(), location: branch.id } }),
    )
    ok('assign', await t.call('POST', `/v1/devices/${phone.id}/users`, { ...c, body: { user: u } }))
    const before = await emergencyInfoFor(db, c.account, u)
    expect(before).toMatchObject({
      device_id: phone.id,
      extension: expect.any(String),
      location_id: branch.id,
      location_name: 'Branch office',
      location_address: branch.address.formatted_address,
      e911_provisioned: false,
    })
    ok('provision', await provision(c, branch.id))
    expect((await emergencyInfoFor(db, c.account, u)).e911_provisioned).toBe(true)
  })

  test('no device: the main location; a softphone on a bound network: that emergency address', async () => {
    const c = await ctxWithMain()
    const u = await f.user(c)
    ok('provision', await provision(c, c.main))
    const main = await getLocation(c, c.main)
    expect(await emergencyInfoFor(db, c.account, u)).toEqual({
      device_id: null,
      extension: null,
      location_id: c.main,
      location_name: main.name,
      location_address: main.address.formatted_address,
      e911_provisioned: true,
    })
    const tok = await f.userToken(c, u)
    const home = ok(
      'add',
      await t.call('POST', '/v1/me/emergency-addresses', { key: tok, body: { street: 'Congress Ave', city: 'Austin', state: 'TX', postal_code: '73301' } }),
    )
    await registerEmergencyAddressIp(db, { clock }, { accountId: c.account, userId: u }, home.id, '198.51.100.4')
    expect(await emergencyInfoFor(db, c.account, u, { sourceIp: '198.51.100.4' })).toMatchObject({
      location_id: null,
      location_address: home.address.formatted_address,
      e911_provisioned: true,
    })
    // Another network: back to the location.
    expect((await emergencyInfoFor(db, c.account, u, { sourceIp: '192.0.2.1' })).location_id).toBe(c.main)
  })
})
