/**
 * Dial plans over HTTP: a node graph (menu, schedule, play, voice_app, route,
 * hangup). Every reference must be of the account; a plan that loops, or a
 * notify-mode voice_app node pointing at an AI-agent voice app, is a validation
 * error naming the offending path; a plan an extension routes to cannot be deleted.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { expectInvalid, ids, routingFixtures } from './routing-fixtures'
import { startTestService } from './support/service'

const clock = manualClock('2026-04-20T08:00:00.000Z')
const t = await startTestService({}, { clock })
const { ctx, ok, post, get, del, user, ringGroup, dialPlan, schedule, box, extension } = routingFixtures(t)

const webhookApp = async (c: { key: string; account: string }) =>
  (await ok(post(c, '/v1/voice-apps', { name: 'CRM', kind: 'webhook', url: 'https://crm.example.com/calls' }))).id as string
const agentApp = async (c: { key: string; account: string }) => {
  const agent = await ok(post(c, '/v1/ai-agents', { name: 'Ava', instructions: 'Book appointments.' }))
  return (await ok(post(c, '/v1/voice-apps', { name: 'Receptionist', kind: 'ai_agent', ai_agent: agent.id }))).id as string
}

describe('dial plans', () => {
  test('create a plan using every node kind; get, list, expand[]=extensions', async () => {
    const c = await ctx()
    const [sch, rg, svb, app] = [await schedule(c), await ringGroup(c), await box(c), await webhookApp(c)]
    const nodes = {
      hours: { kind: 'schedule', schedule: sch, open: 'notify', closed: 'closed' },
      notify: { kind: 'voice_app', app, mode: 'notify', next: 'menu' },
      menu: {
        kind: 'menu',
        prompt: 'clip_welcome',
        options: [
          { digit: '1', next: 'sales' },
          { digit: '2', next: 'crm' },
        ],
        default: 'closed',
      },
      sales: { kind: 'route', target: rg },
      crm: { kind: 'voice_app', app, mode: 'control' },
      closed: { kind: 'play', clip: 'clip_closed', next: 'vm' },
      vm: { kind: 'route', target: svb },
      bye: { kind: 'hangup' },
    }
    const r = await post(c, '/v1/dialplans', { name: 'Main', entry: 'hours', nodes })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ object: 'dial_plan', account: c.account, name: 'Main', entry: 'hours', nodes })
    expect(r.body.id).toMatch(/^dp_/)
    const id = r.body.id
    await extension(c, '100', id)
    expect((await ok(get(c, `/v1/dialplans/${id}`))).extensions).toBeUndefined()
    const expanded = await ok(get(c, `/v1/dialplans/${id}?expand[]=extensions`))
    expect(expanded.extensions.data.map((e: any) => e.number)).toEqual(['100'])
    const list = await get(c, '/v1/dialplans?expand[]=extensions')
    expect(ids(list)).toEqual([id])
    expect(list.body.data[0].extensions.data).toHaveLength(1)
  })

  test('references outside the account or the plan are refused with the node path; nothing stored', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const foreignGroup = await ringGroup(other)
    const foreignSchedule = await schedule(other)
    const r = await post(c, '/v1/dialplans', {
      name: 'X',
      entry: 'start',
      nodes: {
        start: { kind: 'schedule', schedule: foreignSchedule, open: 'a', closed: 'nowhere' },
        a: { kind: 'route', target: foreignGroup },
      },
    })
    expectInvalid(r, ['nodes.start.schedule', 'nodes.start.closed', 'nodes.a.target'])
    expectInvalid(await post(c, '/v1/dialplans', { name: 'X', entry: 'missing', nodes: { a: { kind: 'hangup' } } }), ['entry'])
    expectInvalid(await post(c, '/v1/dialplans', { name: 'X', entry: 'a', nodes: { a: { kind: 'route', target: 'bogus' } } }), ['nodes.a.target'])
    expectInvalid(await post(c, '/v1/dialplans', { name: 'X', entry: 'a', nodes: { a: { kind: 'teleport' } } }), [])
    expectInvalid(await post(c, '/v1/dialplans', { name: 'X', entry: 'a' }), ['nodes'])
    expectInvalid(
      await post(c, '/v1/dialplans', {
        name: 'X',
        entry: 'a',
        nodes: {
          a: {
            kind: 'menu',
            options: [
              { digit: '1', next: 'a' },
              { digit: '1', next: 'a' },
            ],
          },
        },
      }),
      ['nodes.a.options.1.digit'],
    )
    expect(ids(await get(c, '/v1/dialplans'))).toEqual([])
  })

  test('a loop inside the plan is refused, naming the path', async () => {
    const c = await ctx()
    const r = await post(c, '/v1/dialplans', {
      name: 'Loop',
      entry: 'a',
      nodes: { a: { kind: 'play', clip: 'clip_1', next: 'b' }, b: { kind: 'play', clip: 'clip_2', next: 'a' } },
    })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    const [field] = Object.keys(r.body.details)
    expect(['nodes.a.next', 'nodes.b.next']).toContain(field!)
    expect(r.body.details[field!]).toContain('loop')
  })

  test('a loop through a ring group and another plan is refused; the stored plan is unchanged', async () => {
    const c = await ctx()
    const first = await dialPlan(c, { entry: 'a', nodes: { a: { kind: 'hangup' } } })
    const group = await ringGroup(c, { no_answer_target: first })
    const second = await dialPlan(c, { entry: 'a', nodes: { a: { kind: 'route', target: group } } })
    const r = await post(c, `/v1/dialplans/${first}`, { nodes: { a: { kind: 'route', target: second } } })
    expect(r.status).toBe(400)
    expect(JSON.stringify(r.body.details)).toContain('loop')
    expect((await ok(get(c, `/v1/dialplans/${first}`))).nodes).toEqual({ a: { kind: 'hangup' } })
    // An extension to the plan closing a loop is refused the same way.
    const viaExt = await dialPlan(c, { entry: 'a', nodes: { a: { kind: 'hangup' } } })
    await extension(c, '200', viaExt)
    const extGroup = await ringGroup(c, { no_answer_target: viaExt })
    expect((await post(c, `/v1/dialplans/${viaExt}`, { nodes: { a: { kind: 'route', target: extGroup } } })).status).toBe(400)
  })

  test('a notify-mode voice_app node naming an AI-agent voice app is refused with its path; control mode is fine', async () => {
    const c = await ctx()
    const app = await agentApp(c)
    const r = await post(c, '/v1/dialplans', {
      name: 'X',
      entry: 'a',
      nodes: { a: { kind: 'voice_app', app, mode: 'notify', next: 'b' }, b: { kind: 'hangup' } },
    })
    expectInvalid(r, ['nodes.a.app'])
    expect(r.body.details['nodes.a.app']).toContain('AI-agent')
    expect((await post(c, '/v1/dialplans', { name: 'X', entry: 'a', nodes: { a: { kind: 'voice_app', app, mode: 'control' } } })).status).toBe(200)
    expectInvalid(await post(c, '/v1/dialplans', { name: 'X', entry: 'a', nodes: { a: { kind: 'voice_app', app: await webhookApp(c), mode: 'notify' } } }), [
      'nodes.a.next',
    ])
    // Turning a notified webhook app into an AI-agent app is refused too, naming the node.
    const hook = await webhookApp(c)
    const plan = await dialPlan(c, { entry: 'a', nodes: { a: { kind: 'voice_app', app: hook, mode: 'notify', next: 'b' }, b: { kind: 'hangup' } } })
    const agent = await ok(post(c, '/v1/ai-agents', { name: 'Bo', instructions: 'Help.' }))
    const turn = await post(c, `/v1/voice-apps/${hook}`, { kind: 'ai_agent', ai_agent: agent.id })
    expectInvalid(turn, [`dial_plans.${plan}.nodes.a.app`])
  })

  test('update and delete: 409 while an extension routes to it; 404 across accounts', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const u = await user(c)
    const id = await dialPlan(c, { entry: 'a', nodes: { a: { kind: 'hangup' } } })
    clock.advance(1000)
    const r = await ok(post(c, `/v1/dialplans/${id}`, { name: 'Renamed', entry: 'b', nodes: { b: { kind: 'route', target: u } } }))
    expect(r).toMatchObject({ name: 'Renamed', entry: 'b', updated_at: clock.now().toISOString() })
    await extension(c, '300', id)
    const used = await del(c, `/v1/dialplans/${id}`)
    expect([used.status, used.body.code, used.body.details.referenced_by]).toEqual([409, 'routing_object_in_use', ['extensions.300.target']])
    for (const [method, body] of [
      ['GET', undefined],
      ['POST', { name: 'Mine' }],
      ['DELETE', undefined],
    ] as const) {
      const x = await t.call(method, `/v1/dialplans/${id}`, { ...other, body })
      expect([method, x.status, x.body.code]).toEqual([method, 404, 'dial_plan_not_found'])
    }
    await ok(del(c, '/v1/extensions/300'))
    expect(await ok(del(c, `/v1/dialplans/${id}`))).toEqual({ id, object: 'dial_plan', deleted: true })
  })
})
