/**
 * Registration end to end: a deskphone's line registers through the registrar built
 * on the running service's database and actors (the SIP transport is the SIP
 * server's business; here REGISTER messages are handed to the registrar as the
 * server would), the device actor holds the binding, the user's presence follows it
 * (GET /v1/users/{id}/presence), and GET /v1/quality/device-registrations lists it,
 * until it is removed or expires on the service's clock.
 */
import { describe, expect, test } from 'bun:test'
import { deviceTellWriter } from '../actors/devices/registrar-messages'
import { registrarOnDatabase } from '../media/registrar/directory'
import { authorizationFor, challengeOf, headerValues, type PhoneAccount, registerRequest } from '../media/registrar/sip-phone.testkit'
import type { SipSource } from '../media/sip/handler'
import { manualClock } from '../src/clock'
import { registeredDevicesFromBindings, registrarLine } from '../src/services/devices/registrations'
import { type Ctx, deviceFixtures } from './device-fixtures'
import { until } from './support/polling'
import { startTestService } from './support/service'

const clock = manualClock('2026-06-01T09:00:00.000Z')
const t = await startTestService({}, { clock })
const f = deviceFixtures(t)
const registrar = registrarOnDatabase({
  db: t.service.database.db,
  clock,
  writeTells: deviceTellWriter(clock),
  secret: 'device-registrations-test-secret',
  lookupLine: (username) => registrarLine(t.service.database.db, username),
})
const SOURCE: SipSource = { transport: 'udp', address: '192.0.2.10', port: 5062 }

/** A deskphone with one line for a new user, and that line's SIP account as the platform reads it. */
async function phoneOfNewUser(c: Ctx) {
  const user = await f.user(c)
  const extension = await f.extension(c, user)
  const phone = await f.deskphone(c, { lines: [{ user, extension }] })
  const lines = await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)
  expect(lines.status).toBe(200)
  const account: PhoneAccount = lines.body.data[0].sip_credentials
  return { user, phone: phone.id as string, line: lines.body.data[0].id as string, account }
}

/** What a phone does: REGISTER, take the challenge, REGISTER again with the digest. */
async function register(account: PhoneAccount, expires: number, contacts?: string[]) {
  const challenge = await registrar(registerRequest(account, { expires, contacts }), SOURCE)
  expect(challenge.status).toBe(401)
  const { nonce } = challengeOf(challenge)
  return registrar(registerRequest(account, { expires, contacts, auth: authorizationFor(account, { nonce }) }), SOURCE)
}

const presence = async (c: Ctx, user: string) => {
  const r = await t.call('GET', `/v1/users/${user}/presence`, c)
  expect(r.status).toBe(200)
  return r.body.status as string
}
const registrations = async (c: Ctx, query = '') => {
  const r = await t.call('GET', `/v1/quality/device-registrations${query}`, c)
  expect(r.status).toBe(200)
  return r.body
}

describe('registration over the running service', () => {
  test('a line registers: the user goes from offline to available and the binding is listed; unregistering takes both back', async () => {
    const c = await f.ctx()
    const { user, phone, line, account } = await phoneOfNewUser(c)
    expect(await presence(c, user)).toBe('offline')
    expect((await registrations(c)).data).toEqual([])

    const ok = await register(account, 600)
    expect(ok.status).toBe(200)
    expect(headerValues(ok, 'Contact')).toEqual([`<sip:${account.username}@192.0.2.10:5062>;expires=600`])
    await until('the user available', async () => (await presence(c, user)) === 'available')

    const list = await registrations(c)
    expect(list.object).toBe('list')
    expect(list.data).toHaveLength(1)
    expect(list.data[0]).toMatchObject({
      object: 'device_registration',
      device: phone,
      device_type: 'deskphone',
      vendor: 'yealink',
      model: 'T54W',
      users: [user],
    })
    expect(list.data[0].bindings).toEqual([
      {
        line,
        line_device: phone,
        username: account.username,
        users: [user],
        contact: `sip:${account.username}@192.0.2.10:5062`,
        transport: 'udp',
        source_address: '192.0.2.10',
        source_port: 5062,
        user_agent: 'Yealink SIP-T54W 96.86.0.100',
        registered_at: '2026-06-01T09:00:00.000Z',
        refreshed_at: '2026-06-01T09:00:00.000Z',
        expires_at: '2026-06-01T09:10:00.000Z',
        expires_in: 600,
      },
    ])

    // Click-to-call rings the user's registered devices: this phone now.
    const registered = registeredDevicesFromBindings(t.service.database.db, clock)
    expect(await registered.ofUser(c.account, user)).toEqual([{ id: phone, kind: 'deskphone' }])

    const gone = await register(account, 0)
    expect([gone.status, headerValues(gone, 'Contact')]).toEqual([200, []])
    await until('the user offline', async () => (await presence(c, user)) === 'offline')
    expect((await registrations(c)).data).toEqual([])
    expect(await registered.ofUser(c.account, user)).toEqual([])
  })

  test('a binding expires on the service clock: presence goes back to offline and the list empties', async () => {
    const c = await f.ctx()
    const { user, account } = await phoneOfNewUser(c)
    expect((await register(account, 120)).status).toBe(200)
    await until('the user available', async () => (await presence(c, user)) === 'available')
    clock.advance(121_000)
    // A binding past its expiry is never listed, even before the actor drops it.
    expect((await registrations(c)).data).toEqual([])
    await until('the user offline after expiry', async () => (await presence(c, user)) === 'offline')
  })

  test('wrong password: 403 and nothing registered', async () => {
    const c = await f.ctx()
    const { user, account } = await phoneOfNewUser(c)
    const { nonce } = challengeOf(await registrar(registerRequest(account, { expires: 600 }), SOURCE))
    const r = await registrar(registerRequest(account, { expires: 600, auth: authorizationFor(account, { nonce, password: 'guess' }) }), SOURCE)
    expect(r.status).toBe(403)
    expect(await presence(c, user)).toBe('offline')
    expect((await registrations(c)).data).toEqual([])
  })

  test('the list belongs to the account and takes device, user and type filters', async () => {
    const c = await f.ctx()
    const other = await f.ctx()
    const a = await phoneOfNewUser(c)
    const b = await phoneOfNewUser(c)
    expect((await register(a.account, 600)).status).toBe(200)
    expect((await register(b.account, 600)).status).toBe(200)
    // The 200 answers once the messages are committed; the device actors apply them right after.
    await until('both phones listed', async () => (await registrations(c)).data.length === 2)
    const all = await registrations(c)
    expect(all.data.map((d: { device: string }) => d.device).sort()).toEqual([a.phone, b.phone].sort())
    expect((await registrations(c, `?user=${a.user}`)).data.map((d: { device: string }) => d.device)).toEqual([a.phone])
    expect((await registrations(c, `?device=${b.phone}`)).data.map((d: { device: string }) => d.device)).toEqual([b.phone])
    expect((await registrations(c, '?type=dect_base')).data).toEqual([])
    const page = await registrations(c, '?limit=1')
    expect(page.data).toHaveLength(1)
    expect(page.next_page_url).not.toBeNull()
    expect((await registrations(other)).data).toEqual([])
    expect((await registrations(other, `?device=${a.phone}`)).data).toEqual([])
    const bad = await t.call('GET', '/v1/quality/device-registrations?type=fax', c)
    expect([bad.status, bad.body.code]).toEqual([400, 'validation_error'])
    // The phones unregister (Contact * would do too): nothing left for the next test run to see.
    await register(a.account, 0)
    await register(b.account, 0)
  })
})
