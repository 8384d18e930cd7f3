/**
 * Sandbox calls that follow the account's routing (POST /v1/test_helpers/inbound_calls)
 * and the route preview (GET /v1/phone-numbers/{id}/route-preview), end to end: the
 * routing objects are created through the API, the calls run on the real actors with
 * VOICE_CLOCK_SPEED=200, and the webhooks are received and verified.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { callActors, quiescence } from './support/quiescence'
import { startTestService } from './support/service'
import { routedCallSandboxes, routingFixtures, type Sandbox } from './routing-fixtures'

const { sandbox, routeNumber, deleteAfterwards } = routedCallSandboxes(() => t)
const t = await startTestService({ VOICE_CLOCK_SPEED: '200', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const f = routingFixtures(t)
const call = (c: Sandbox, body: Record<string, unknown>) => f.post(c, '/v1/test_helpers/inbound_calls', body)
const preview = (c: Sandbox, query = '') => f.ok(f.get(c, `/v1/phone-numbers/${c.numberId}/route-preview${query}`))

/**
 * Every actor of the call (the call, its follow-up) has finished and its events are
 * delivered; then its events, verified, once each, in arrival order. A queue's events
 * for the call come first: the queue actor commits each before it ends the call.
 */
async function eventsOf(c: Sandbox, callId: string) {
  await quiescence(t, c.account, callActors(callId))
  const out = []
  const seen = new Set<string>()
  for (const r of c.rx.requests.filter((r) => r.body?.data?.call_id === callId)) {
    const e = await c.rx.verify(r, c.secret)
    // Delivery is at least once: a redelivered event (same id) counts once, as a consumer would take it.
    if (!seen.has(e.id)) out.push(e)
    seen.add(e.id)
  }
  return out
}
const ofFamily = (evs: any[], prefix: string) => evs.filter((e) => e.type.startsWith(prefix)).map((e) => e.type)
const ringingUsers = (evs: any[]) => evs.filter((e) => e.type === 'call.ringing').map((e) => e.data.user_id)
const endOf = (evs: any[]) => evs.find((e) => e.type === 'call.end')?.data

// Monday 2026-03-02 in New York: 10:00 (open) and 20:00 (after hours), as UTC instants.
const MONDAY_10_NY = '2026-03-02T15:00:00.000Z'
const MONDAY_20_NY = '2026-03-03T01:00:00.000Z'

describe('POST /v1/test_helpers/inbound_calls', () => {
  let c: Sandbox
  beforeAll(async () => {
    c = await sandbox()
  })

  test('a ring group rings three users: three call.ringing, one call_id; the first answers; the preview agrees', async () => {
    const rg = await f.ringGroup(c, { members: c.users.map((user) => ({ user })) })
    await routeNumber(c, { target: rg })
    const r = await call(c, { to: c.number, from_number: '+15551234567', talk_seconds: 5 })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ object: 'test_inbound_call', expected: { status: 'completed', answered_by: c.users[0] } })
    expect(r.body.plan).toEqual((await preview(c)).steps)
    expect(r.body.plan[0]).toMatchObject({ kind: 'ring', users: c.users, timeout_seconds: 30, source: { type: 'ring_group', id: rg } })

    const evs = await eventsOf(c, r.body.id)
    expect(ofFamily(evs, 'call.')).toEqual(['call.incoming', 'call.ringing', 'call.ringing', 'call.ringing', 'call.answered', 'call.end'])
    expect(ringingUsers(evs).sort()).toEqual([...c.users].sort())
    expect(new Set(evs.map((e) => e.data.call_id))).toEqual(new Set([r.body.id]))
    expect(endOf(evs)).toMatchObject({ status: 'completed', user_id: c.users[0], from_number: '+15551234567', to_number: c.number, duration_seconds: 5 })
  })

  test('a sequential group moves on after a no-answer: the second member rings when the first one’s time runs out', async () => {
    const rg = await f.ringGroup(c, { strategy: 'sequential', members: [{ user: c.users[0], ring_seconds: 8 }, { user: c.users[1] }] })
    await routeNumber(c, { target: rg })
    const r = await call(c, { to: c.number, outcomes: { [c.users[0]!]: 'no-answer', [c.users[1]!]: 'answer' } })
    expect(r.status).toBe(200)
    expect(r.body.plan.map((s: any) => [s.kind, s.users, s.timeout_seconds])).toEqual([
      ['ring', [c.users[0]], 8],
      ['ring', [c.users[1]], 30],
      ['hangup', undefined, undefined],
    ])
    const evs = await eventsOf(c, r.body.id)
    const rings = evs.filter((e) => e.type === 'call.ringing')
    expect(rings.map((e) => e.data.user_id)).toEqual([c.users[0], c.users[1]])
    expect((Date.parse(rings[1].data.ringing_at) - Date.parse(rings[0].data.ringing_at)) / 1000).toBe(8)
    expect(endOf(evs)).toMatchObject({ status: 'completed', user_id: c.users[1] })
  })

  test('busy users decline at once: a sequential group moves on without waiting out the ring time; everyone busy ends busy', async () => {
    const rg = await f.ringGroup(c, { strategy: 'sequential', members: [{ user: c.users[0], ring_seconds: 20 }, { user: c.users[1] }] })
    await routeNumber(c, { target: rg })
    const r = await call(c, { to: c.number, outcomes: { [c.users[0]!]: 'busy', [c.users[1]!]: 'answer' } })
    expect(r.status).toBe(200)
    expect(r.body.expected).toEqual({ status: 'completed', answered_by: c.users[1] })
    const evs = await eventsOf(c, r.body.id)
    const rings = evs.filter((e) => e.type === 'call.ringing')
    expect(rings.map((e) => e.data.user_id)).toEqual([c.users[0], c.users[1]])
    // one second of busy signal, not the member's 20 s
    expect((Date.parse(rings[1].data.ringing_at) - Date.parse(rings[0].data.ringing_at)) / 1000).toBe(1)
    expect(endOf(evs)).toMatchObject({ status: 'completed', user_id: c.users[1] })

    const allBusy = await call(c, { to: c.number, outcomes: { [c.users[0]!]: 'busy', [c.users[1]!]: 'busy' } })
    expect(allBusy.body.expected).toEqual({ status: 'busy', answered_by: null })
    const busyEvs = await eventsOf(c, allBusy.body.id)
    expect(ringingUsers(busyEvs)).toEqual([c.users[0], c.users[1]])
    expect(ofFamily(busyEvs, 'call.').filter((t) => t === 'call.answered')).toEqual([])
    expect(endOf(busyEvs)).toMatchObject({ status: 'busy', connected_at: null })
  })

  test('dnd users are skipped: never rung, left out of the plan', async () => {
    const rg = await f.ringGroup(c, { members: c.users.map((user) => ({ user })) })
    await routeNumber(c, { target: rg })
    const r = await call(c, { to: c.number, outcomes: { [c.users[1]!]: 'dnd', [c.users[2]!]: 'answer' } })
    expect(r.status).toBe(200)
    expect(r.body.plan[0].users).toEqual([c.users[0], c.users[2]])
    const evs = await eventsOf(c, r.body.id)
    expect(ringingUsers(evs)).toEqual([c.users[0], c.users[2]])
    expect(endOf(evs)).toMatchObject({ status: 'completed', user_id: c.users[2] })
  })

  test('route to nothing drops the call: incoming then end, nobody rung; the preview says dropped', async () => {
    await routeNumber(c, { mode: 'drop' })
    expect((await preview(c)).steps).toEqual([{ kind: 'hangup', reason: 'dropped', source: { type: 'phone_number', id: c.numberId } }])
    const r = await call(c, { to: c.number })
    expect(r.status).toBe(200)
    expect(r.body.expected).toEqual({ status: 'no-answer', answered_by: null })
    const evs = await eventsOf(c, r.body.id)
    expect(ofFamily(evs, 'call.')).toEqual(['call.incoming', 'call.end'])
    expect(endOf(evs)).toMatchObject({ status: 'no-answer', connected_at: null })
  })

  test('an extension leads to its target; call.incoming names the single user it targets', async () => {
    await f.extension(c, '201', c.users[1]!)
    const r = await call(c, { to: '201' })
    expect(r.status).toBe(200)
    const evs = await eventsOf(c, r.body.id)
    expect(evs[0]).toMatchObject({ type: 'call.incoming', data: { to_number: '201', user_id: c.users[1], to_user_id: c.users[1] } })
    expect(ringingUsers(evs)).toEqual([c.users[1]])
  })

  test('bad input: a number or extension not of the account, a user not of the account', async () => {
    const r1 = await call(c, { to: '+15005559998' })
    expect({ status: r1.status, code: r1.body.code, to: typeof r1.body.details?.to }).toEqual({ status: 400, code: 'validation_error', to: 'string' })
    const r2 = await call(c, { to: '999' })
    expect(r2.status).toBe(400)
    const r3 = await call(c, { to: c.number, outcomes: { usr_nobody: 'answer' } })
    expect(r3.status).toBe(400)
    expect(Object.keys(r3.body.details)).toEqual(['outcomes.usr_nobody'])
    const r4 = await call(c, { to: c.number, outcomes: { [c.users[0]!]: 'maybe' } })
    expect(r4.status).toBe(400)
  })

  test('sandbox only; the preview answers 404 for a number of another account', async () => {
    const p = await t.platform({ live_enabled: true })
    const live = await t.account({ key: p.live_key })
    deleteAfterwards({ key: live.key, account: live.id })
    const r = await t.call('POST', '/v1/test_helpers/inbound_calls', { key: live.key, account: live.id, body: { to: c.number } })
    expect({ status: r.status, code: r.body.code }).toEqual({ status: 400, code: 'sandbox_only' })
    const other = await f.ctx()
    deleteAfterwards(other)
    const foreign = await f.get(other, `/v1/phone-numbers/${c.numberId}/route-preview`)
    expect({ status: foreign.status, code: foreign.body.code }).toEqual({ status: 404, code: 'phone_number_not_found' })
  })
})

describe('schedules and shared voicemail boxes', () => {
  test('after hours (via at) the call goes to the shared box: voicemail.new without user_id; in hours the group rings', async () => {
    const c = await sandbox()
    const schedule = await f.schedule(c, { time_zone: 'America/New_York', hours: [{ day: 'mon', open: '09:00', close: '17:00' }] })
    const box = await f.box(c)
    const rg = await f.ringGroup(c, { members: [{ user: c.users[0] }] })
    const plan = await f.dialPlan(c, {
      entry: 'hours',
      nodes: {
        hours: { kind: 'schedule', schedule, open: 'office', closed: 'after' },
        office: { kind: 'route', target: rg },
        after: { kind: 'route', target: box },
      },
    })
    await routeNumber(c, { target: plan })

    const closed = await preview(c, `?at=${MONDAY_20_NY}`)
    expect(closed.steps).toEqual([{ kind: 'voicemail', voicemail_box: { type: 'shared', id: box }, source: { type: 'voicemail_box', id: box } }])
    expect((await preview(c, `?at=${MONDAY_10_NY}`)).steps[0]).toMatchObject({ kind: 'ring', users: [c.users[0]] })

    const r = await call(c, { to: c.number, at: MONDAY_20_NY, talk_seconds: 12 })
    expect(r.status).toBe(200)
    expect(r.body.plan).toEqual(closed.steps)
    expect(r.body.expected).toEqual({ status: 'voicemail', answered_by: null })
    const evs = await eventsOf(c, r.body.id)
    expect(ofFamily(evs, 'call.')).toEqual(['call.incoming', 'call.answered', 'call.end'])
    expect(endOf(evs)).toMatchObject({ status: 'voicemail', connected_at: null })
    const vm = evs.find((e) => e.type === 'voicemail.new')
    expect(vm.data).toMatchObject({ call_id: r.body.id, duration_seconds: 12 })
    expect('user_id' in vm.data).toBe(false)
    // The stored message names its box, and the box finds it.
    // (written in the step that emitted voicemail.new)
    const stored = await f.ok(f.get(c, `/v1/voicemails/${vm.data.voicemail_id}`))
    expect(stored).toMatchObject({ owner: null, shared_voicemail_box_id: box })
    expect((await f.ok(f.get(c, `/v1/voicemails?owner=${box}`))).data.map((v: any) => v.id)).toEqual([vm.data.voicemail_id])

    const open = await call(c, { to: c.number, at: MONDAY_10_NY })
    expect(open.body.expected).toEqual({ status: 'completed', answered_by: c.users[0] })
    expect(ringingUsers(await eventsOf(c, open.body.id))).toEqual([c.users[0]])
  })
})

describe('queues', () => {
  test('two agents and a caller who abandons: queue.call.queued, dispatched, then abandoned; the call ends unanswered', async () => {
    const c = await sandbox()
    const q = await f.queue(c, { name: 'Help desk', max_wait_seconds: 300 })
    for (const user of c.users.slice(0, 2)) await f.ok(f.post(c, `/v1/queues/${q}/members`, { user }))
    await routeNumber(c, { target: q })
    expect((await preview(c)).steps[0]).toMatchObject({ kind: 'enqueue', queue: q, agents: c.users.slice(0, 2), max_wait_seconds: 300 })

    const r = await call(c, { to: c.number, outcomes: { [c.users[0]!]: 'no-answer', [c.users[1]!]: 'no-answer' }, hangup_after_seconds: 10 })
    expect(r.status).toBe(200)
    const evs = await eventsOf(c, r.body.id)
    const queued = evs.filter((e) => e.type.startsWith('queue.call.'))
    expect(queued.map((e) => e.type)).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.abandoned'])
    expect(queued[0].data).toMatchObject({ queue: q, queue_id: q, queue_name: 'Help desk', call_id: r.body.id, position_at_admit: 1 })
    expect(queued[1].data).toMatchObject({ agents_claimed: 2 })
    expect(queued[2].data).toMatchObject({ wait_seconds: 10 })
    expect(ringingUsers(evs).sort()).toEqual(c.users.slice(0, 2).sort())
    expect(endOf(evs)).toMatchObject({ status: 'no-answer', duration_seconds: 10 })
  })

  test('an agent answers: queued, dispatched, answered, completed with agent_user and its alias', async () => {
    const c = await sandbox()
    const q = await f.queue(c, { name: 'Sales line' })
    for (const user of c.users.slice(0, 2)) await f.ok(f.post(c, `/v1/queues/${q}/members`, { user }))
    await routeNumber(c, { target: q })
    const r = await call(c, { to: c.number, outcomes: { [c.users[1]!]: 'answer' }, talk_seconds: 6 })
    const evs = await eventsOf(c, r.body.id)
    expect(ofFamily(evs, 'queue.call.')).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.answered', 'queue.call.completed'])
    expect(evs.find((e) => e.type === 'queue.call.completed').data).toMatchObject({ agent_user: c.users[1], agent_user_id: c.users[1] })
    expect(endOf(evs)).toMatchObject({ status: 'completed', user_id: c.users[1] })
  })
})
