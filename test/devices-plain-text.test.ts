/**
 * What a phone shows (device and handset names, line and button labels, users'
 * names as display names) is written into its configuration file, where a line
 * break would end the value or slip in a setting: such text is refused when it is
 * written, 400 naming the field with nothing stored, instead of every later fetch
 * failing with invalid_configuration.
 */
import { describe, expect, test } from 'bun:test'
import { deviceFixtures, expectValidation, mac } from './device-fixtures'
import { startTestService } from './support/service'

const t = await startTestService({})
const f = deviceFixtures(t)
const INJECTED = 'Front desk\naccount.1.sip_server.1.address = evil.example'

describe('text a phone shows holds no control characters', () => {
  test('device and handset names, on create and update; nothing stored', async () => {
    const c = await f.ctx()
    const m = mac()
    expectValidation(await t.call('POST', '/v1/deskphones', { ...c, body: { vendor: 'yealink', model: 'T54W', mac_address: m, name: INJECTED } }), 'name')
    expectValidation(
      await t.call('POST', '/v1/devices', { ...c, body: { type: 'dect_base', vendor: 'yealink', model: 'W60B', mac_address: mac(), name: 'a\tb' } }),
      'name',
    )
    expect((await t.call<any>('GET', '/v1/devices', c)).body.data).toEqual([])

    const phone = await f.deskphone(c, { name: 'Reception' })
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}`, { ...c, body: { name: INJECTED } }), 'name')
    const base = await f.base(c)
    expectValidation(await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W56H', name: INJECTED } }), 'name')
    expect((await t.call<any>('GET', `/v1/deskphones/${phone.id}`, c)).body.name).toBe('Reception')
    expect((await t.call<any>('GET', `/v1/dect-bases/${base.id}/handsets`, c)).body.data).toEqual([])
  })

  test('line and handset-extension labels; nothing stored', async () => {
    const c = await f.ctx()
    const u = await f.user(c)
    const e = await f.extension(c, u)
    expectValidation(
      await t.call('POST', '/v1/deskphones', {
        ...c,
        body: { vendor: 'yealink', model: 'T54W', mac_address: mac(), lines: [{ label: 'ok' }, { label: INJECTED }] },
      }),
      'lines[1].label',
    )
    const phone = await f.deskphone(c, { lines: [{ label: 'Main' }] })
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}/lines`, { ...c, body: { label: INJECTED } }), 'label')
    const [line] = (await t.call<any>('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data
    expectValidation(await t.call('POST', `/v1/deskphones/${phone.id}/lines/${line.id}`, { ...c, body: { label: INJECTED } }), 'label')
    const lines = (await t.call<any>('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data
    expect(lines.map((l: any) => l.label)).toEqual(['Main'])

    const base = await f.base(c)
    const handset = f.ok('handset', await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W56H' } }))
    expectValidation(
      await t.call('POST', `/v1/dect-bases/${base.id}/handsets/${handset.id}/extensions`, { ...c, body: { extension: e, label: INJECTED } }),
      'label',
    )
    expect((await t.call<any>('GET', `/v1/dect-bases/${base.id}/handsets/${handset.id}/extensions`, c)).body.data).toEqual([])
  })

  test('button labels: template buttons (create, add, update) and device overrides; nothing stored', async () => {
    const c = await f.ctx()
    const bad = { key: 1, type: 'speed_dial', value: '+15551234567', label: INJECTED }
    expectValidation(await t.call('POST', '/v1/button_templates', { ...c, body: { name: 'Reception', vendor: 'yealink', buttons: [bad] } }), 'buttons[0].label')
    const template = await f.template(c)
    expectValidation(await t.call('POST', `/v1/button_templates/${template.id}/buttons`, { ...c, body: bad }), 'label')
    const button = f.ok('button', await t.call('POST', `/v1/button_templates/${template.id}/buttons`, { ...c, body: { ...bad, label: 'Boss' } }))
    expectValidation(await t.call('POST', `/v1/button_templates/${template.id}/buttons/${button.id}`, { ...c, body: { label: INJECTED } }), 'label')
    expect((await t.call<any>('GET', `/v1/button_templates/${template.id}/buttons`, c)).body.data.map((b: any) => b.label)).toEqual(['Boss'])

    const phone = await f.deskphone(c)
    expectValidation(await t.call('POST', `/v1/devices/${phone.id}/button_overrides`, { ...c, body: bad }), 'label')
    expect((await t.call<any>('GET', `/v1/devices/${phone.id}/button_overrides`, c)).body.data).toEqual([])
  })

  test('a user’s name (their phones’ display name), on create and update; nothing stored', async () => {
    const c = await f.ctx()
    expectValidation(await t.call('POST', '/v1/users', { ...c, body: { email: 'pat@example.com', name: 'Pat\r\nAgent' } }), 'name')
    expect((await t.call<any>('GET', '/v1/users', c)).body.data).toEqual([])
    const u = await f.user(c)
    expectValidation(await t.call('POST', `/v1/users/${u}`, { ...c, body: { name: INJECTED } }), 'name')
    expect((await t.call<any>('GET', `/v1/users/${u}`, c)).body.name).toBeNull()
    // Ordinary names, accents and all, are fine.
    expect((await t.call<any>('POST', `/v1/users/${u}`, { ...c, body: { name: 'Zoë O’Brien-Núñez' } })).body.name).toBe('Zoë O’Brien-Núñez')
  })
})
