/**
 * Button templates and device buttons over HTTP: templates with their buttons,
 * for_device and expand[], per-device overrides, effective buttons (template
 * overridden per key, on the keys the model has), compatible templates, and the
 * account default_button_template inherited by new compatible devices.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { deviceFixtures, expectValidation } from './device-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-05-07T09:00:00.000Z')
const t = await startTestService({}, { clock })
const f = deviceFixtures(t)

type Ctx = { key: string; account: string }
const createTemplate = (c: Ctx, body: Record<string, unknown>) =>
  t.call('POST', '/v1/button_templates', { ...c, body: { name: 'T', vendor: 'yealink', ...body } })
const listCount = async (c: Ctx) => (await t.call('GET', '/v1/button_templates?limit=100', c)).body.data.length

describe('templates', () => {
  test('create with buttons: the answer inlines them by key; get inlines them only with expand[]=buttons', async () => {
    const c = await f.ctx()
    const r = await createTemplate(c, {
      name: 'Reception',
      vendor: 'Yealink',
      models: ['t54w', 'T46U'],
      buttons: [
        { key: 2, type: 'speed_dial', value: '+15551234567', label: 'Office' },
        { key: 1, type: 'line', value: '1' },
      ],
    })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ object: 'button_template', account: c.account, name: 'Reception', vendor: 'yealink', models: ['T54W', 'T46U'] })
    expect(r.body.id).toMatch(/^btpl_/)
    expect(r.body.buttons.data.map((b: any) => [b.key, b.type, b.value, b.label])).toEqual([
      [1, 'line', '1', null],
      [2, 'speed_dial', '+15551234567', 'Office'],
    ])
    const plain = await t.call('GET', `/v1/button_templates/${r.body.id}`, c)
    expect('buttons' in plain.body).toBe(false)
    const expanded = await t.call('GET', `/v1/button_templates/${r.body.id}?expand[]=buttons`, c)
    expect(expanded.body.buttons.data.length).toBe(2)
    expect((await t.call('GET', '/v1/button_templates', c)).body.data.map((x: any) => x.id)).toEqual([r.body.id])
  })

  test('an unknown vendor is 400 unsupported_vendor; bad models, keys beyond the models’ keys, twice the same key and wrong values are field errors; nothing stored', async () => {
    const c = await f.ctx()
    expect((await createTemplate(c, { vendor: 'cisco' })).body.code).toBe('unsupported_vendor')
    expectValidation(await createTemplate(c, { models: ['VVX 450'] }), 'models[0]')
    expectValidation(await createTemplate(c, { models: ['W60B'] }), 'models[0]')
    expectValidation(await createTemplate(c, { models: ['T31P'], buttons: [{ key: 3, type: 'dnd' }] }), 'buttons[0].key')
    expectValidation(
      await createTemplate(c, {
        buttons: [
          { key: 1, type: 'dnd' },
          { key: 1, type: 'park' },
        ],
      }),
      'buttons[1].key',
    )
    expectValidation(await createTemplate(c, { buttons: [{ key: 1, type: 'speed_dial' }] }), 'buttons[0].value')
    expectValidation(await createTemplate(c, { buttons: [{ key: 1, type: 'dnd', value: '5' }] }), 'buttons[0].value')
    expectValidation(await createTemplate(c, { buttons: [{ key: 1, type: 'line', value: 'x' }] }), 'buttons[0].value')
    expectValidation(await createTemplate(c, { buttons: [{ key: 1, type: 'teleport' }] }), 'buttons[0].type')
    expect(await listCount(c)).toBe(0)
  })

  test('update name and models; models leaving out a device using the template are 409 button_template_in_use', async () => {
    const c = await f.ctx()
    const tpl = f.ok('template', await createTemplate(c, { models: ['T54W', 'T46U'] }))
    const phone = await f.deskphone(c, { model: 'T46U', button_template: tpl.id })
    expect(phone.button_template).toBe(tpl.id)
    const renamed = await t.call('POST', `/v1/button_templates/${tpl.id}`, { ...c, body: { name: 'Sales' } })
    expect(renamed.body.name).toBe('Sales')
    const narrowed = await t.call('POST', `/v1/button_templates/${tpl.id}`, { ...c, body: { models: ['T54W'] } })
    expect([narrowed.status, narrowed.body.code]).toEqual([409, 'button_template_in_use'])
    expectValidation(await t.call('POST', `/v1/button_templates/${tpl.id}`, { ...c, body: { vendor: 'polycom' } }), 'vendor')
    expect((await t.call('POST', `/v1/button_templates/${tpl.id}`, { ...c, body: { models: [] } })).body.models).toEqual([])
  })

  test('delete: refused (409) while a device or the account default uses it; then gone', async () => {
    const c = await f.ctx()
    const tpl = f.ok('template', await createTemplate(c, {}))
    const phone = await f.deskphone(c, { button_template: tpl.id })
    const inUse = await t.call('DELETE', `/v1/button_templates/${tpl.id}`, c)
    expect([inUse.status, inUse.body.code]).toEqual([409, 'button_template_in_use'])
    await t.call('POST', `/v1/devices/${phone.id}`, { ...c, body: { button_template: null } })
    f.ok('account', await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { default_button_template: tpl.id } }))
    expect((await t.call('DELETE', `/v1/button_templates/${tpl.id}`, c)).body.code).toBe('button_template_in_use')
    f.ok('account', await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { default_button_template: null } }))
    expect((await t.call('DELETE', `/v1/button_templates/${tpl.id}`, c)).body).toEqual({ id: tpl.id, object: 'button_template', deleted: true })
    const gone = await t.call('GET', `/v1/button_templates/${tpl.id}`, c)
    expect([gone.status, gone.body.code]).toEqual([404, 'button_template_not_found'])
  })

  test('another account’s template is 404 everywhere, and 400 where a request names it', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const other = await f.ctx(p.test_key)
    const tpl = f.ok('template', await createTemplate(other, { buttons: [{ key: 1, type: 'dnd' }] }))
    const button = tpl.buttons.data[0].id
    for (const [method, path, body] of [
      ['GET', `/v1/button_templates/${tpl.id}`],
      ['POST', `/v1/button_templates/${tpl.id}`, {}],
      ['DELETE', `/v1/button_templates/${tpl.id}`],
      ['GET', `/v1/button_templates/${tpl.id}/buttons`],
      ['POST', `/v1/button_templates/${tpl.id}/buttons`, { key: 2, type: 'dnd' }],
      ['POST', `/v1/button_templates/${tpl.id}/buttons/${button}`, {}],
      ['DELETE', `/v1/button_templates/${tpl.id}/buttons/${button}`],
    ] as [string, string, unknown?][]) {
      const r = await t.call(method, path, { ...c, ...(body !== undefined ? { body } : {}) })
      expect({ path, status: r.status, code: r.body.code }).toEqual({ path, status: 404, code: 'button_template_not_found' })
    }
    expectValidation(
      await t.call('POST', '/v1/deskphones', { ...c, body: { vendor: 'yealink', model: 'T54W', mac_address: '001565000001', button_template: tpl.id } }),
      'button_template',
    )
    expectValidation(await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { default_button_template: tpl.id } }), 'default_button_template')
    expect((await t.call('GET', '/v1/devices', c)).body.data).toEqual([])
  })

  test('a speed dial or BLF naming a user must name one of the account’s (details.value)', async () => {
    const p = await t.platform()
    const c = await f.ctx(p.test_key)
    const other = await f.ctx(p.test_key)
    const mine = await f.user(c)
    const foreign = await f.user(other)
    expectValidation(await createTemplate(c, { buttons: [{ key: 1, type: 'blf', value: foreign }] }), 'buttons[0].value')
    const tpl = f.ok('template', await createTemplate(c, { buttons: [{ key: 1, type: 'blf', value: mine }] }))
    expectValidation(await t.call('POST', `/v1/button_templates/${tpl.id}/buttons`, { ...c, body: { key: 2, type: 'speed_dial', value: foreign } }), 'value')
    const phone = await f.deskphone(c)
    expectValidation(await t.call('POST', `/v1/devices/${phone.id}/button_overrides`, { ...c, body: { key: 2, type: 'blf', value: foreign } }), 'value')
    expect((await t.call('GET', `/v1/devices/${phone.id}/button_overrides`, c)).body.data).toEqual([])
  })
})

describe('template buttons', () => {
  test('add, list, update, delete; a key in use is 409 button_key_taken; a key beyond the models is 400', async () => {
    const c = await f.ctx()
    const tpl = f.ok('template', await createTemplate(c, { models: ['T33G'] }))
    const add = (body: Record<string, unknown>) => t.call('POST', `/v1/button_templates/${tpl.id}/buttons`, { ...c, body })
    const b1 = await add({ key: 1, type: 'blf', value: '101', label: 'Ann' })
    expect(b1.body).toMatchObject({ object: 'button', template: tpl.id, key: 1, type: 'blf', value: '101', label: 'Ann' })
    const taken = await add({ key: 1, type: 'dnd' })
    expect([taken.status, taken.body.code]).toEqual([409, 'button_key_taken'])
    expectValidation(await add({ key: 5, type: 'dnd' }), 'key')
    const b2 = f.ok('button', await add({ key: 2, type: 'park' }))
    expect((await t.call('GET', `/v1/button_templates/${tpl.id}/buttons`, c)).body.data.map((b: any) => b.key).sort()).toEqual([1, 2])
    const moved = await t.call('POST', `/v1/button_templates/${tpl.id}/buttons/${b2.id}`, { ...c, body: { key: 3, type: 'voicemail' } })
    expect([moved.body.key, moved.body.type, moved.body.value]).toEqual([3, 'voicemail', null])
    const clash = await t.call('POST', `/v1/button_templates/${tpl.id}/buttons/${b2.id}`, { ...c, body: { key: 1 } })
    expect([clash.status, clash.body.code]).toEqual([409, 'button_key_taken'])
    expect((await t.call('DELETE', `/v1/button_templates/${tpl.id}/buttons/${b2.id}`, c)).status).toBe(200)
    const gone = await t.call('DELETE', `/v1/button_templates/${tpl.id}/buttons/${b2.id}`, c)
    expect([gone.status, gone.body.code]).toEqual([404, 'button_not_found'])
  })
})

describe('device buttons', () => {
  test('effective buttons: the template’s, overridden per key, on the keys the model has; none blanks a key', async () => {
    const c = await f.ctx()
    const tpl = f.ok(
      'template',
      await createTemplate(c, {
        buttons: [
          { key: 1, type: 'line', value: '1' },
          { key: 2, type: 'speed_dial', value: '200' },
          { key: 3, type: 'park' },
          { key: 4, type: 'dnd' },
        ],
      }),
    )
    const small = await f.deskphone(c, { model: 'T31P', button_template: tpl.id })
    const big = await f.deskphone(c, { model: 'T54W', button_template: tpl.id })
    const effective = async (id: string) => (await t.call('GET', `/v1/devices/${id}/buttons`, c)).body
    expect((await effective(small.id)).data.map((b: any) => b.key)).toEqual([1, 2])
    const over = await t.call('POST', `/v1/devices/${big.id}/button_overrides`, { ...c, body: { key: 2, type: 'blf', value: '105', label: 'Bo' } })
    expect(over.body).toMatchObject({ object: 'button_override', device: big.id, key: 2, type: 'blf', value: '105', label: 'Bo' })
    f.ok('override', await t.call('POST', `/v1/devices/${big.id}/button_overrides`, { ...c, body: { key: 3, type: 'none' } }))
    f.ok('override', await t.call('POST', `/v1/devices/${big.id}/button_overrides`, { ...c, body: { key: 20, type: 'voicemail' } }))
    const e = await effective(big.id)
    expect(e.object).toBe('device_buttons')
    expect(e.device).toBe(big.id)
    expect(e.data).toEqual([
      { key: 1, type: 'line', value: '1', label: null, source: 'template' },
      { key: 2, type: 'blf', value: '105', label: 'Bo', source: 'override' },
      { key: 4, type: 'dnd', value: null, label: null, source: 'template' },
      { key: 20, type: 'voicemail', value: null, label: null, source: 'override' },
    ])
    // A second override of a key replaces the first.
    const again = await t.call('POST', `/v1/devices/${big.id}/button_overrides`, { ...c, body: { key: 2, type: 'speed_dial', value: '+15550001111' } })
    expect(again.body.id).toBe(over.body.id)
    expect((await t.call('GET', `/v1/devices/${big.id}/button_overrides`, c)).body.data.length).toBe(3)
    expect((await t.call('DELETE', `/v1/devices/${big.id}/button_overrides/${over.body.id}`, c)).status).toBe(200)
    expect((await effective(big.id)).data.find((b: any) => b.key === 2)).toEqual({ key: 2, type: 'speed_dial', value: '200', label: null, source: 'template' })
    const gone = await t.call('DELETE', `/v1/devices/${big.id}/button_overrides/${over.body.id}`, c)
    expect([gone.status, gone.body.code]).toEqual([404, 'button_override_not_found'])
  })

  test('an override on a key the model lacks is 400 (details.key); a base has no keys; nothing stored', async () => {
    const c = await f.ctx()
    const phone = await f.deskphone(c, { vendor: 'polycom', model: 'VVX 150' })
    expectValidation(await t.call('POST', `/v1/devices/${phone.id}/button_overrides`, { ...c, body: { key: 3, type: 'dnd' } }), 'key')
    expectValidation(await t.call('POST', `/v1/devices/${phone.id}/button_overrides`, { ...c, body: { key: 1, type: 'blf' } }), 'value')
    const base = await f.base(c)
    expectValidation(await t.call('POST', `/v1/devices/${base.id}/button_overrides`, { ...c, body: { key: 1, type: 'dnd' } }), 'key')
    expect((await t.call('GET', `/v1/devices/${phone.id}/button_overrides`, c)).body.data).toEqual([])
    expect((await t.call('GET', `/v1/devices/${base.id}/buttons`, c)).body.data).toEqual([])
  })

  test('compatible templates and for_device: the device’s vendor, and its model or none named', async () => {
    const c = await f.ctx()
    const any = f.ok(
      'template',
      await createTemplate(c, {
        name: 'any',
        buttons: [
          { key: 1, type: 'dnd' },
          { key: 3, type: 'park' },
        ],
      }),
    )
    clock.advance(1000)
    const t54 = f.ok('template', await createTemplate(c, { name: 't54', models: ['T54W'] }))
    const poly = f.ok('template', await createTemplate(c, { name: 'poly', vendor: 'polycom' }))
    const phone = await f.deskphone(c, { model: 'T31P' })
    const compatible = await t.call('GET', `/v1/devices/${phone.id}/compatible_button_templates`, c)
    expect(compatible.body.data.map((x: any) => x.id)).toEqual([any.id])
    const base = await f.base(c)
    expect((await t.call('GET', `/v1/devices/${base.id}/compatible_button_templates`, c)).body.data).toEqual([])
    const fits = await t.call('GET', `/v1/button_templates/${any.id}?for_device=${phone.id}&expand[]=buttons`, c)
    expect([fits.body.compatible, fits.body.buttons.data.map((b: any) => b.key)]).toEqual([true, [1]])
    expect((await t.call('GET', `/v1/button_templates/${t54.id}?for_device=${phone.id}`, c)).body.compatible).toBe(false)
    expect((await t.call('GET', `/v1/button_templates/${poly.id}?for_device=${phone.id}`, c)).body.compatible).toBe(false)
    expectValidation(await t.call('GET', `/v1/button_templates/${any.id}?for_device=dev_nope`, c), 'for_device')
    expectValidation(await t.call('POST', `/v1/devices/${phone.id}`, { ...c, body: { button_template: t54.id } }), 'button_template')
  })
})

describe('account default_button_template', () => {
  test('names a template of the account; new compatible deskphones and handsets inherit it, others and explicit null do not, existing devices unchanged', async () => {
    const c = await f.ctx()
    const before = await f.deskphone(c)
    const tpl = f.ok('template', await createTemplate(c, { models: ['T54W', 'W56H'] }))
    expectValidation(
      await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { default_button_template: 'btpl_nope' } }),
      'default_button_template',
    )
    const acct = await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { default_button_template: tpl.id } })
    expect(acct.body.default_button_template).toBe(tpl.id)
    expect((await f.deskphone(c)).button_template).toBe(tpl.id)
    expect((await f.deskphone(c, { model: 'T46U' })).button_template).toBeNull()
    expect((await f.deskphone(c, { button_template: null })).button_template).toBeNull()
    expect((await f.deskphone(c, { vendor: 'polycom', model: 'VVX 450' })).button_template).toBeNull()
    const base = await f.base(c)
    expect(base.button_template).toBeNull()
    const h = await t.call('POST', `/v1/dect-bases/${base.id}/handsets`, { ...c, body: { model: 'W56H' } })
    expect(h.body.button_template).toBe(tpl.id)
    expect((await t.call('GET', `/v1/devices/${before.id}`, c)).body.button_template).toBeNull()
  })
})
