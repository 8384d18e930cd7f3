/**
 * Call queues as actors, end to end over HTTP: routed sandbox calls
 * (POST /v1/test_helpers/inbound_calls) reach one queue actor per queue, where they
 * wait together in order for the queue's agents (its members, as their queue-agent
 * standing and presence say); webhooks are received and verified. VOICE_CLOCK_SPEED
 * compresses simulated time. PGlite, or PostgreSQL and NATS when DATABASE_URL and
 * NATS_URL are set.
 */
import { describe, expect, test } from 'bun:test'
import { readActorState } from '../actors/runtime/commands'
import { quiescenceState } from './support/quiescence'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { type Ctx, routedCallSandboxes, routingFixtures, type Sandbox } from './routing-fixtures'

const { sandbox, routeNumber } = routedCallSandboxes(() => t)
const t = await startTestService({ VOICE_CLOCK_SPEED: '200', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const f = routingFixtures(t)
async function call(c: Sandbox, body: Record<string, unknown>): Promise<string> {
  const r = await f.post(c, '/v1/test_helpers/inbound_calls', body)
  expect(r.status).toBe(200)
  return r.body.id as string
}
async function queueWith(c: Sandbox, members: string[], body: Record<string, unknown> = {}) {
  const q = await f.queue(c, { name: 'Help desk', ...body })
  for (const user of members) await f.ok(f.post(c, `/v1/queues/${q}/members`, { user }))
  await routeNumber(c, { target: q })
  return q
}

/**
 * Nothing more will happen for the account: every call actor has finished, no actor of
 * the account has a timer left, and every event has been delivered. The queue actors
 * live on (they hold the queue), idle.
 */
async function settled(c: Sandbox) {
  let last: unknown
  await until(
    `the account ${c.account} to settle`,
    async () => {
      const s = await quiescenceState(t, c.account, 'every actor of the account')
      last = s
      return s.active.every((a) => a.kind === 'queue') && s.timers.length === 0 && s.undispatched === 0 && s.pending === 0
    },
    20_000,
  ).catch((e) => {
    throw new Error(`${(e as Error).message}; still going on: ${JSON.stringify(last)}`)
  })
}

/** Every event the account's endpoint received, verified, once each (delivery is at least once), in the order they were created. */
async function received(c: Sandbox) {
  await settled(c)
  const out = new Map<string, any>()
  for (const r of c.rx.requests) {
    const e = await c.rx.verify(r, c.secret)
    out.set(e.id, e)
  }
  return [...out.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}
const ofCall = (evs: any[], callId: string) => evs.filter((e) => e.data?.call_id === callId)
const types = (evs: any[], prefix = '') => evs.filter((e) => e.type.startsWith(prefix)).map((e) => e.type)
const one = (evs: any[], type: string) => evs.find((e) => e.type === type)?.data
const ringingUsers = (evs: any[]) => evs.filter((e) => e.type === 'call.ringing').map((e) => e.data.user_id)

async function userToken(c: Ctx, userId: string) {
  const r = await t.call('POST', '/v1/user_sessions', { key: c.key, body: { user: userId } })
  expect(r.status).toBe(200)
  return r.body.client_secret as string
}

/**
 * PUT /v1/me/presence with the user's token, then wait until the user's presence actor
 * holds the choice (the command is applied after the answer; a call routed meanwhile
 * would still see the previous choice).
 */
async function setPresence(tok: string, userId: string, status: 'dnd' | 'available') {
  expect((await t.call('PUT', '/v1/me/presence', { key: tok, body: { status } })).status).toBe(200)
  await until(`presence ${status} of ${userId}`, async () => {
    const state = await readActorState(t.service.database.db, 'presence', userId)
    return (state?.snapshot as { context?: { manual?: string } } | undefined)?.context?.manual === status
  })
}

describe('queues as actors', () => {
  test('two agents and a caller who abandons: queued, dispatched to both, abandoned; the call ends unanswered', async () => {
    const c = await sandbox()
    const q = await queueWith(c, c.users.slice(0, 2), { max_wait_seconds: 300 })
    const id = await call(c, { to: c.number, outcomes: { [c.users[0]!]: 'no-answer', [c.users[1]!]: 'no-answer' }, hangup_after_seconds: 10 })
    const evs = ofCall(await received(c), id)
    expect(types(evs, 'queue.call.')).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.abandoned'])
    expect(one(evs, 'queue.call.queued')).toMatchObject({ queue: q, queue_id: q, queue_name: 'Help desk', position_at_admit: 1, wait_seconds: 0 })
    expect(one(evs, 'queue.call.dispatched')).toMatchObject({ agents_claimed: 2, targets_dispatched: 2 })
    expect(one(evs, 'queue.call.abandoned')).toMatchObject({ wait_seconds: 10 })
    expect(ringingUsers(evs).sort()).toEqual(c.users.slice(0, 2).sort())
    expect(one(evs, 'call.end')).toMatchObject({ status: 'no-answer', duration_seconds: 10 })
  }, 30_000)

  test('two callers to a one-agent queue wait together and are served in order once the agent is back (presence tells the queue)', async () => {
    const c = await sandbox()
    const agent = c.users[0]!
    await queueWith(c, [agent])
    const outcomes = { [agent]: 'answer' }
    const tok = await userToken(c, agent)
    await setPresence(tok, agent, 'dnd')
    const first = await call(c, { to: c.number, from_number: '+15550000001', outcomes, talk_seconds: 5 })
    const second = await call(c, { to: c.number, from_number: '+15550000002', outcomes, talk_seconds: 5 })
    await until('both callers to wait', async () => c.rx.requests.filter((r) => r.body?.type === 'queue.call.queued').length === 2)
    // Back from dnd: the presence actor tells the queue, which offers the head of the line.
    await setPresence(tok, agent, 'available')
    const evs = await received(c)
    const a = ofCall(evs, first)
    const b = ofCall(evs, second)
    for (const x of [a, b])
      expect(types(x, 'queue.call.')).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.answered', 'queue.call.completed'])
    expect(one(a, 'queue.call.queued').position_at_admit).toBe(1)
    expect(one(b, 'queue.call.queued').position_at_admit).toBe(2)
    const ms = (iso: string) => Date.parse(iso)
    // in order: the second is offered only once the first has completed (one agent)
    expect(ms(one(b, 'queue.call.dispatched').dispatched_at)).toBeGreaterThanOrEqual(ms(one(a, 'queue.call.completed').completed_at))
    for (const x of [a, b]) {
      expect(one(x, 'queue.call.completed')).toMatchObject({ agent_user: agent, agent_user_id: agent })
      expect(one(x, 'call.end')).toMatchObject({ status: 'completed', user_id: agent, duration_seconds: 5 })
    }
    expect(ms(one(b, 'queue.call.answered').answered_at)).toBeGreaterThan(ms(one(a, 'queue.call.answered').answered_at))
  }, 30_000)

  test('a callback keeps its place: asked while waiting, the caller hangs up, and is called back before a later caller', async () => {
    const c = await sandbox()
    const agent = c.users[0]!
    const q = await queueWith(c, [agent])
    const outcomes = { [agent]: 'answer' }
    // The agent is away (dnd) while the two callers arrive and the first asks for a callback.
    const tok = await userToken(c, agent)
    await setPresence(tok, agent, 'dnd')
    const asker = await call(c, { to: c.number, from_number: '+15550000011', outcomes, talk_seconds: 5, queue_callback_after_seconds: 5 })
    const later = await call(c, { to: c.number, from_number: '+15550000012', outcomes, talk_seconds: 5 })
    await until('the callback request', async () => c.rx.requests.some((r) => r.body?.type === 'queue.call.callback_requested'))
    await until('the later caller to wait', async () => c.rx.requests.some((r) => r.body?.type === 'queue.call.queued' && r.body.data.call_id === later))
    await setPresence(tok, agent, 'available')
    const evs = await received(c)
    const callback = `${asker}_callback`
    const cb = evs.filter((e) => e.data?.callback === callback)
    expect(types(cb)).toEqual(['queue.call.callback_requested', 'queue.call.callback_attempted'])
    expect(cb[0].data).toMatchObject({
      queue: q,
      queue_id: q,
      queue_name: 'Help desk',
      callback_id: callback,
      from_number: '+15550000011',
      original_priority: 0,
    })
    expect(cb[1].data).toMatchObject({ attempt_number: 1, result: 'answered', next_attempt_at: null })
    // The caller left the line when asking: the call ended unanswered, no abandon.
    const a = ofCall(evs, asker)
    expect(types(a, 'queue.call.')).toEqual(['queue.call.queued'])
    expect(one(a, 'call.end')).toMatchObject({ status: 'no-answer' })
    // The callback is made before the later caller is offered: its place was kept.
    const b = ofCall(evs, later)
    expect(evs.indexOf(cb[1])).toBeLessThan(evs.findIndex((e) => e.type === 'queue.call.dispatched' && e.data.call_id === later))
    // The agent called the caller back: an outbound call from the agent to the caller's number, answered.
    const back = evs.filter((e) => e.type === 'call.initiated' && e.data.to_number === '+15550000011')
    expect(back).toHaveLength(1)
    expect(back[0].data).toMatchObject({ user_id: agent, from_number: c.number })
    expect(one(ofCall(evs, back[0].data.call_id), 'call.end')).toMatchObject({ status: 'completed' })
    // ... and took the later caller once that call was over
    expect(Date.parse(one(b, 'queue.call.dispatched').dispatched_at)).toBeGreaterThanOrEqual(
      Date.parse(one(ofCall(evs, back[0].data.call_id), 'call.end').ended_at),
    )
    expect(one(b, 'queue.call.answered')).toMatchObject({ agent_user: agent })
  }, 30_000)

  test('agents not taking calls are skipped: one set dnd (PUT /v1/me/presence), one logged out of queues (queue-agent)', async () => {
    const c = await sandbox()
    const [dnd, out, free] = c.users as [string, string, string]
    await queueWith(c, c.users)
    await setPresence(await userToken(c, dnd), dnd, 'dnd')
    expect((await f.post(c, `/v1/users/${out}/queue-agent`, { status: 'unavailable' })).status).toBe(200)
    const id = await call(c, { to: c.number, outcomes: { [dnd]: 'answer', [out]: 'answer', [free]: 'answer' }, talk_seconds: 5 })
    const evs = ofCall(await received(c), id)
    expect(ringingUsers(evs)).toEqual([free])
    expect(one(evs, 'queue.call.dispatched')).toMatchObject({ agents_claimed: 1 })
    expect(one(evs, 'queue.call.answered')).toMatchObject({ agent_user: free })
  }, 30_000)

  test('max wait: a ring in progress finishes, then the caller goes to the timeout target (a user, then their voicemail with user_id)', async () => {
    const c = await sandbox()
    const [agent, target] = c.users as [string, string]
    await queueWith(c, [agent], { max_wait_seconds: 20, timeout_target: target })
    const id = await call(c, { to: c.number, outcomes: { [agent]: 'no-answer', [target]: 'no-answer' }, talk_seconds: 7 })
    const evs = ofCall(await received(c), id)
    expect(types(evs, 'queue.call.')).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.dispatched', 'queue.call.timed_out'])
    // offers ring 15 s: the second, rung at 15 s, finishes at 30 s, past the 20 s max wait
    expect(one(evs, 'queue.call.timed_out')).toMatchObject({ wait_seconds: 30 })
    expect(ringingUsers(evs)).toEqual([agent, target])
    expect(one(evs, 'call.end')).toMatchObject({ status: 'voicemail' })
    expect(one(evs, 'voicemail.new')).toMatchObject({ user_id: target, duration_seconds: 7 })
  }, 30_000)
})

describe('a queue call goes on as a normal answered call', () => {
  test('hung up by a call command: the queue completes it then, not at the scripted end', async () => {
    // 120 s of talk (the most a test call has) is 0.6 s at clock speed 200: a loaded
    // machine may send the hang-up after the scripted end. Such a try proves nothing
    // either way, so the call is placed again (at most three times).
    for (let attempt = 1; ; attempt++) {
      const c = await sandbox()
      const agent = c.users[0]!
      await queueWith(c, [agent])
      const id = await call(c, { to: c.number, outcomes: { [agent]: 'answer' }, talk_seconds: 120 })
      // the call log, not a webhook: it shows the answer as soon as it is committed
      await until('the agent to answer', async () => (await f.get(c, `/v1/calls/${id}`)).body.answered_at)
      const hangup = await f.post(c, `/v1/calls/${id}`, { action: 'hangup' })
      expect(hangup.status).toBe(202)
      const evs = ofCall(await received(c), id)
      const end = one(evs, 'call.end')
      if (end.duration_seconds >= 120 && attempt < 3) continue
      expect(end.duration_seconds).toBeLessThan(120)
      expect(one(evs, 'queue.call.completed')).toMatchObject({ agent_user: agent, completed_at: end.ended_at })
      return
    }
  }, 60_000)
})

describe('voicemail of a routed call', () => {
  test('a ring group whose no-answer target is a user: voicemail.new names that user', async () => {
    const c = await sandbox()
    const [member, owner] = c.users as [string, string]
    const rg = await f.ringGroup(c, { members: [{ user: member }], no_answer_target: owner })
    await routeNumber(c, { target: rg })
    const id = await call(c, { to: c.number, outcomes: {}, talk_seconds: 9 })
    const evs = ofCall(await received(c), id)
    expect(ringingUsers(evs)).toEqual([member, owner])
    expect(one(evs, 'call.end')).toMatchObject({ status: 'voicemail' })
    expect(one(evs, 'voicemail.new')).toMatchObject({ user_id: owner, call_id: id, duration_seconds: 9 })
  }, 30_000)
})
