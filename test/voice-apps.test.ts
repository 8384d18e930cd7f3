/**
 * Voice apps and AI agents over HTTP: a webhook app (url) or an ai_agent app (an
 * AI agent of the account); the secret appears only in the create and
 * rotate_secret answers. AI agents in use by an app cannot be deleted.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { expectInvalid, ids, routingFixtures } from './routing-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-04-20T08:00:00.000Z')
const t = await startTestService({}, { clock })
const { ctx, ok, post, get, del, extension, dialPlan } = routingFixtures(t)

const agent = async (c: { key: string; account: string }) =>
  (await ok(post(c, '/v1/ai-agents', { name: 'Ava', instructions: 'Book appointments.' }))).id as string

describe('AI agents', () => {
  test('create, get, list, update, delete; fields refused with details; 404 across accounts', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const r = await post(c, '/v1/ai-agents', { name: 'Ava', instructions: 'Book appointments.', greeting: 'Hi, this is Ava.' })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      id: r.body.id,
      object: 'ai_agent',
      account: c.account,
      name: 'Ava',
      instructions: 'Book appointments.',
      greeting: 'Hi, this is Ava.',
      created_at: clock.now().toISOString(),
      updated_at: clock.now().toISOString(),
    })
    expect(r.body.id).toMatch(/^aia_/)
    expect(await ok(get(c, `/v1/ai-agents/${r.body.id}`))).toEqual(r.body)
    expect(ids(await get(c, '/v1/ai-agents'))).toEqual([r.body.id])
    expect(await ok(post(c, `/v1/ai-agents/${r.body.id}`, { greeting: null }))).toMatchObject({ greeting: null, name: 'Ava' })
    expectInvalid(await post(c, '/v1/ai-agents', { name: 'X' }), ['instructions'])
    expectInvalid(await post(c, '/v1/ai-agents', { name: 'X', instructions: '' }), ['instructions'])
    for (const [method, body] of [
      ['GET', undefined],
      ['POST', { name: 'Mine' }],
      ['DELETE', undefined],
    ] as const) {
      const x = await t.call(method, `/v1/ai-agents/${r.body.id}`, { ...other, body })
      expect([method, x.status, x.body.code]).toEqual([method, 404, 'ai_agent_not_found'])
    }
    expect(await ok(del(c, `/v1/ai-agents/${r.body.id}`))).toEqual({ id: r.body.id, object: 'ai_agent', deleted: true })
  })

  test('an agent an app names cannot be deleted (409 routing_object_in_use)', async () => {
    const c = await ctx()
    const a = await agent(c)
    const app = await ok(post(c, '/v1/voice-apps', { name: 'Receptionist', kind: 'ai_agent', ai_agent: a }))
    const used = await del(c, `/v1/ai-agents/${a}`)
    expect([used.status, used.body.code, used.body.details.referenced_by]).toEqual([409, 'routing_object_in_use', [`voice_apps.${app.id}.ai_agent`]])
  })
})

describe('voice apps', () => {
  test('create a webhook app: the secret is in the create answer only; rotate_secret shows a new one', async () => {
    const c = await ctx()
    const r = await post(c, '/v1/voice-apps', { name: 'CRM', kind: 'webhook', url: 'https://crm.example.com/calls' })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      object: 'voice_app',
      account: c.account,
      name: 'CRM',
      kind: 'webhook',
      url: 'https://crm.example.com/calls',
      ai_agent: null,
    })
    expect(r.body.id).toMatch(/^va_/)
    expect(r.body.secret).toMatch(/^vsec_/)
    const id = r.body.id
    expect((await ok(get(c, `/v1/voice-apps/${id}`))).secret).toBeUndefined()
    expect((await get(c, '/v1/voice-apps')).body.data[0].secret).toBeUndefined()
    expect((await ok(post(c, `/v1/voice-apps/${id}`, { name: 'CRM 2' }))).secret).toBeUndefined()
    const rotated = await ok(post(c, `/v1/voice-apps/${id}/rotate_secret`))
    expect(rotated.secret).toMatch(/^vsec_/)
    expect(rotated.secret).not.toBe(r.body.secret)
    expect((await ok(get(c, `/v1/voice-apps/${id}`))).secret).toBeUndefined()
  })

  test('kind rules: webhook needs url, ai_agent needs an AI agent of the account', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    expectInvalid(await post(c, '/v1/voice-apps', { name: 'X', kind: 'webhook' }), ['url'])
    expectInvalid(await post(c, '/v1/voice-apps', { name: 'X', kind: 'webhook', url: 'ftp://x' }), ['url'])
    expectInvalid(await post(c, '/v1/voice-apps', { name: 'X', kind: 'ai_agent' }), ['ai_agent'])
    expectInvalid(await post(c, '/v1/voice-apps', { name: 'X', kind: 'ai_agent', ai_agent: await agent(other) }), ['ai_agent'])
    expectInvalid(await post(c, '/v1/voice-apps', { name: 'X', kind: 'ai_agent', ai_agent: 'usr_x' }), ['ai_agent'])
    expectInvalid(await post(c, '/v1/voice-apps', { name: 'X', kind: 'robot' }), ['kind'])
    expect(ids(await get(c, '/v1/voice-apps'))).toEqual([])
    const a = await agent(c)
    const app = await ok(post(c, '/v1/voice-apps', { name: 'Receptionist', kind: 'ai_agent', ai_agent: a }))
    expect(app).toMatchObject({ kind: 'ai_agent', ai_agent: a, url: null })
    // Switching kind drops the other kind's field.
    expect(await ok(post(c, `/v1/voice-apps/${app.id}`, { kind: 'webhook', url: 'https://x.example.com' }))).toMatchObject({ kind: 'webhook', ai_agent: null })
  })

  test('expand[]=extensions; delete is 409 while routed to; 404 across accounts', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const id = (await ok(post(c, '/v1/voice-apps', { name: 'CRM', kind: 'webhook', url: 'https://crm.example.com' }))).id
    await extension(c, '800', id)
    expect((await ok(get(c, `/v1/voice-apps/${id}?expand[]=extensions`))).extensions.data.map((e: any) => e.number)).toEqual(['800'])
    const used = await del(c, `/v1/voice-apps/${id}`)
    expect([used.status, used.body.code]).toEqual([409, 'routing_object_in_use'])
    await ok(del(c, '/v1/extensions/800'))
    const plan = await dialPlan(c, { entry: 'a', nodes: { a: { kind: 'voice_app', app: id, mode: 'control' } } })
    expect((await del(c, `/v1/voice-apps/${id}`)).body.details.referenced_by).toEqual([`dial_plans.${plan}.nodes.a.app`])
    for (const [method, path] of [
      ['GET', `/v1/voice-apps/${id}`],
      ['POST', `/v1/voice-apps/${id}`],
      ['DELETE', `/v1/voice-apps/${id}`],
      ['POST', `/v1/voice-apps/${id}/rotate_secret`],
    ] as const) {
      const r = await t.call(method, path, { ...other, body: method === 'POST' ? {} : undefined })
      expect([method, path, r.status, r.body.code]).toEqual([method, path, 404, 'voice_app_not_found'])
    }
  })
})

describe('shared voicemail boxes', () => {
  test('create with users of the account, get, list with expand[]=extensions, update, delete (409 while routed to)', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const u = (await ok(post(c, '/v1/users', { email: 'vm@example.com' }))).id
    const r = await post(c, '/v1/shared_voicemail_boxes', { name: 'Support', users: [u] })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ object: 'shared_voicemail_box', account: c.account, name: 'Support', users: [u] })
    expect(r.body.id).toMatch(/^svb_/)
    const id = r.body.id
    const foreign = (await ok(post(other, '/v1/users', { email: 'x@example.com' }))).id
    expectInvalid(await post(c, '/v1/shared_voicemail_boxes', { name: 'X', users: [u, foreign] }), ['users.1'])
    expectInvalid(await post(c, `/v1/shared_voicemail_boxes/${id}`, { users: ['usr_nobody'] }), ['users.0'])
    expect(await ok(post(c, `/v1/shared_voicemail_boxes/${id}`, { name: 'Help', users: [] }))).toMatchObject({ name: 'Help', users: [] })
    await extension(c, '900', id)
    const list = await get(c, '/v1/shared_voicemail_boxes?expand[]=extensions')
    expect(ids(list)).toEqual([id])
    expect(list.body.data[0].extensions.data.map((e: any) => e.number)).toEqual(['900'])
    const used = await del(c, `/v1/shared_voicemail_boxes/${id}`)
    expect([used.status, used.body.code, used.body.details.referenced_by]).toEqual([409, 'routing_object_in_use', ['extensions.900.target']])
    const foreignGet = await get(other, `/v1/shared_voicemail_boxes/${id}`)
    expect([foreignGet.status, foreignGet.body.code]).toEqual([404, 'shared_voicemail_box_not_found'])
    await ok(del(c, '/v1/extensions/900'))
    expect(await ok(del(c, `/v1/shared_voicemail_boxes/${id}`))).toEqual({ id, object: 'shared_voicemail_box', deleted: true })
  })
})
