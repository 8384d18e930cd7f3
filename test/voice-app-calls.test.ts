/**
 * Calls that reach voice apps and AI agents, end to end (POST /v1/test_helpers/inbound_calls):
 * a webhook app answers and receives the call's events from then on at its own URL,
 * signed with its own secret, and controls the call with POST /v1/calls/{id}; an AI
 * agent answers and the call log carries its summary; a notify-mode node lets the app
 * follow the call while the plan goes on. VOICE_CLOCK_SPEED=20: a 120-second call
 * lasts 6 s, time enough for the app to act on call.answered.
 */
import { afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { routedCallSandboxes, routingFixtures, type Sandbox } from './routing-fixtures'
import { callActors, quiescence } from './support/quiescence'
import { startTestService } from './support/service'
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver'

const { sandbox, routeNumber } = routedCallSandboxes(() => t)
const t = await startTestService({ VOICE_CLOCK_SPEED: '20', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const f = routingFixtures(t)
const app = await startWebhookReceiver()

const inboundCall = (c: Sandbox, body: Record<string, unknown>) => f.ok(f.post(c, '/v1/test_helpers/inbound_calls', body))
const forCall = (id: string) => (r: { body?: any }) => r.body?.data?.call_id === id

/** Every event of the call that reached `rx`, verified with `secret`, once each, in arrival order. */
async function received(rx: WebhookReceiver, secret: string, callId: string) {
  const out = []
  const seen = new Set<string>()
  for (const r of rx.requests.filter(forCall(callId))) {
    const e = await rx.verify(r, secret)
    if (!seen.has(e.id)) out.push(e)
    seen.add(e.id)
  }
  return out
}

describe('voice apps and AI agents take routed calls', () => {
  let c: Sandbox
  beforeAll(async () => {
    c = await sandbox()
  })
  // A test's app answers only its own calls' events.
  afterEach(() => app.respond(200))

  test('a webhook app answers: its events go to its URL under its secret, and it hangs the call up itself', async () => {
    const va = await f.ok(f.post(c, '/v1/voice-apps', { name: 'IVR', kind: 'webhook', url: app.url }))
    await routeNumber(c, { target: va.id })
    // The app hangs up as soon as it is told it has the call, long before the caller would (120 s of talk).
    app.respond(async (req) => {
      if (req.body?.type === 'call.answered') await t.call('POST', `/v1/calls/${req.body.data.call_id}`, { ...c, body: { action: 'hangup' } })
      return 200
    })
    const r = await inboundCall(c, { to: c.number, talk_seconds: 120 })
    expect(r.plan).toEqual([{ kind: 'voice_app', app: va.id, source: { type: 'voice_app', id: va.id } }])
    expect(r.expected).toEqual({ status: 'completed', answered_by: null })

    await app.waitFor(3, { where: forCall(r.id), timeoutMs: 20_000 })
    await quiescence(t, c.account, callActors(r.id), 20_000)
    // The app follows the call from its answer (not the call.incoming before it), and hears how its hangup went.
    const toApp = await received(app, va.secret, r.id)
    expect(toApp.map((e) => e.type)).toEqual(['call.answered', 'call.end', 'call.command_succeeded'])
    expect(toApp[2].data).toMatchObject({ command: 'hangup' })
    expect(toApp[0].data).toMatchObject({ call_id: r.id, from_number: expect.any(String), to_number: c.number, connected_at: null })
    expect(toApp[0].data.answered_at).toBeString()
    // Signed with the app's secret, not the account endpoint's.
    await expect(app.verify(app.requests.find(forCall(r.id))!, c.secret)).rejects.toThrow()

    // The platform's endpoint has every event of the call, under its own secret.
    const toEndpoint = await received(c.rx, c.secret, r.id)
    const lifecycle = toEndpoint.filter((e) => !e.type.startsWith('call.command_')).map((e) => e.type)
    expect(lifecycle).toEqual(['call.incoming', 'call.answered', 'call.end'])
    expect(toEndpoint.find((e) => e.type === 'call.command_succeeded')?.data).toMatchObject({ command: 'hangup' })
    const end = toApp[1].data
    // Hung up by the app well before the caller's 120 s.
    expect(end).toMatchObject({ status: 'completed', connected_at: null })
    expect(end.duration_seconds).toBeLessThan(120)

    const log = await f.ok(f.get(c, `/v1/calls/${r.id}`))
    expect(log).toMatchObject({ status: 'completed', connected_at: null, answered_at: end.answered_at, summary: null })
  })

  test('an app’s call refuses hold (409 call_not_active, with the reason) and takes a blind transfer to a user', async () => {
    const va = await f.ok(f.post(c, '/v1/voice-apps', { name: 'Router', kind: 'webhook', url: app.url }))
    await routeNumber(c, { target: va.id })
    const answers: Record<string, { status: number; body: any }> = {}
    app.respond(async (req) => {
      if (req.body?.type !== 'call.answered') return 200
      const id = req.body.data.call_id
      answers.hold = await t.call('POST', `/v1/calls/${id}`, { ...c, body: { action: 'hold' } })
      answers.transfer = await t.call('POST', `/v1/calls/${id}`, { ...c, body: { action: 'transfer', to: c.users[1], mode: 'blind' } })
      return 200
    })
    const r = await inboundCall(c, { to: c.number, talk_seconds: 120, outcomes: { [c.users[1]!]: 'answer' } })
    await app.waitFor(4, { where: forCall(r.id), timeoutMs: 20_000 })
    await quiescence(t, c.account, callActors(r.id), 20_000)
    expect([answers.hold?.status, answers.hold?.body.code]).toEqual([409, 'call_not_active'])
    expect(answers.hold?.body.error).toContain('voice app')
    expect(answers.transfer?.status).toBe(202)
    const toApp = await received(app, va.secret, r.id)
    expect(toApp.map((e) => e.type)).toEqual(['call.answered', 'call.transfer', 'call.end', 'call.command_succeeded'])
    // The new leg is a call of its own, to the user, linked back to the app's call.
    const leg: string = toApp[1].data.related_call
    expect(leg).toMatch(/^call_/)
    expect(toApp[1].data).toMatchObject({ transferred_to: c.users[1], transferred_by: va.id })
    await quiescence(t, c.account, callActors(leg), 20_000)
    expect(await f.ok(f.get(c, `/v1/calls/${leg}`))).toMatchObject({ related_call: r.id, to_user_id: c.users[1] })
  })

  test('an AI agent answers: completed with answered_at and no connected_at, and a summary naming the agent', async () => {
    const agent = await f.ok(f.post(c, '/v1/ai-agents', { name: 'Ava', instructions: 'Book appointments.', greeting: 'Hi, this is Ava.' }))
    const va = await f.ok(f.post(c, '/v1/voice-apps', { name: 'Receptionist', kind: 'ai_agent', ai_agent: agent.id }))
    await routeNumber(c, { target: va.id })
    const r = await inboundCall(c, { to: c.number, talk_seconds: 40 })
    expect(r.plan[0]).toMatchObject({ kind: 'ai_agent', ai_agent: agent.id, app: va.id })
    expect(r.expected).toEqual({ status: 'completed', answered_by: null })
    await quiescence(t, c.account, callActors(r.id), 20_000)
    const evs = await received(c.rx, c.secret, r.id)
    expect(evs.map((e) => e.type)).toEqual(['call.incoming', 'call.answered', 'call.end'])
    expect(evs[2].data).toMatchObject({ status: 'completed', connected_at: null, duration_seconds: 40 })
    const log = await f.ok(f.get(c, `/v1/calls/${r.id}`))
    expect(log).toMatchObject({ status: 'completed', connected_at: null, duration_seconds: 40 })
    expect(log.summary).toContain('AI agent Ava')
    expect(log.summary).toContain('40-second')
  })

  test('a notify node tells the app and the plan goes on: the app follows the ringing, the answer and the end', async () => {
    const va = await f.ok(f.post(c, '/v1/voice-apps', { name: 'CRM pop', kind: 'webhook', url: app.url }))
    const plan = await f.dialPlan(c, {
      entry: 'crm',
      nodes: { crm: { kind: 'voice_app', app: va.id, mode: 'notify', next: 'desk' }, desk: { kind: 'route', target: c.users[0] } },
    })
    await routeNumber(c, { target: plan })
    const r = await inboundCall(c, { to: c.number, talk_seconds: 5 })
    expect(r.plan.map((s: any) => s.kind)).toEqual(['notify', 'ring', 'voicemail'])
    expect(r.expected).toEqual({ status: 'completed', answered_by: c.users[0] })
    await quiescence(t, c.account, callActors(r.id), 20_000)
    await app.waitFor(3, { where: forCall(r.id), timeoutMs: 20_000 })
    const toApp = await received(app, va.secret, r.id)
    expect(toApp.map((e) => e.type)).toEqual(['call.ringing', 'call.answered', 'call.end'])
    expect(toApp[2].data).toMatchObject({ status: 'completed', user_id: c.users[0] })
    expect(toApp[2].data.connected_at).toBeString()
  })
})
