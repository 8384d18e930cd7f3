/**
 * planRoutedCall: the router's plan played as a call machine script (and queue
 * machine events). Each script is run through the real call machine here, so the
 * tests see the call.* events the call actor would emit.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createActor } from 'xstate'
import { type CallEmitted, type CallMachineEvent, callMachine } from '../../machines/call'
import { buildRoutingConfig, type Plan, type RoutingInput, route, type Target } from '../../machines/routing'
import { planAfterQueue, planRoutedCall, type QueueCallerSim, type RoutedCallRequest, routeSimulated, type UserOutcome } from './routed-simulation'

const NOW = new Date('2026-03-02T15:00:00.000Z')
const owner = { platformId: 'plt_1', accountId: 'acc_1', mode: 'test' as const }

type Input = Required<Omit<RoutingInput, 'defaults'>>

function input(over: Partial<RoutingInput> = {}): Input {
  return {
    users: ['u1', 'u2', 'u3'].map((id) => ({ id, presence: 'available' as const, voicemail: true })),
    extensions: [],
    ringGroups: [],
    queues: [],
    dialPlans: [],
    schedules: [],
    voicemailBoxes: [{ id: 'box1' }],
    voiceApps: [],
    aiAgents: [],
    phoneNumbers: [],
    ...over,
  }
}

const numberTo = (target: { type: 'ring_group' | 'queue' | 'user' | 'dial_plan'; id: string }) => ({
  phoneNumbers: [{ id: 'pn1', number: '+15005550001', routing: { mode: 'target' as const, target } }],
})

function plan(cfg: RoutingInput, digits: (string | null)[] = []): Plan {
  const config = buildRoutingConfig(cfg)
  return routeSimulated((d) => route(config, { entry: { type: 'number', number: '+15005550001' }, digits: d }, NOW), digits)
}

function play(p: Plan, over: Partial<RoutedCallRequest> = {}) {
  const sim = planRoutedCall(
    { owner, plan: p, to_number: '+15005550001', from_number: '+15555550123', from_name: null, talk_seconds: 10, queue_names: { q1: 'Help desk' }, ...over },
    NOW,
    { call: 'call_1' },
  )
  const emitted: CallEmitted[] = []
  const actor = createActor(callMachine.provide({ actions: { emit: (_, e) => void emitted.push(e) } }), { input: sim.call }).start()
  // Timers fire in due order; ties in the order they were written.
  const events = sim.script.map((s, i) => ({ s, i })).sort((a, b) => Date.parse(a.s.at as string) - Date.parse(b.s.at as string) || a.i - b.i)
  for (const { s } of events) actor.send(s.event as CallMachineEvent)
  return {
    sim,
    emitted,
    types: emitted.map((e) => e.type),
    end: emitted.find((e) => e.type === 'call.end')?.data as unknown as Record<string, unknown> | undefined,
  }
}

const ringGroup = (strategy: 'simultaneous' | 'sequential', noAnswerTarget: Target | null = null) => ({
  ringGroups: [{ id: 'rg1', strategy, members: [{ user: 'u1' }, { user: 'u2', ringSeconds: 7 }, { user: 'u3' }], ringSeconds: 20, noAnswerTarget }],
})

describe('planRoutedCall', () => {
  test('a simultaneous ring group: one call.ringing per member, one call id, the first member answers by default', () => {
    const r = play(plan(input({ ...ringGroup('simultaneous'), ...numberTo({ type: 'ring_group', id: 'rg1' }) })))
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.ringing', 'call.ringing', 'call.answered', 'call.end'])
    expect(r.emitted.filter((e) => e.type === 'call.ringing').map((e) => (e.data as { user_id: string }).user_id)).toEqual(['u1', 'u2', 'u3'])
    expect(r.end).toMatchObject({ status: 'completed', user_id: 'u1', duration_seconds: 10 })
    expect(r.sim.outcome).toMatchObject({ status: 'completed', answered_by: 'u1' })
    expect(r.sim.queue).toBeNull()
  })

  test('sequential: the next member rings when the previous one’s own ring time runs out', () => {
    const r = play(plan(input({ ...ringGroup('sequential'), ...numberTo({ type: 'ring_group', id: 'rg1' }) })), { outcomes: { u3: 'answer' } })
    const rings = r.emitted.filter((e) => e.type === 'call.ringing').map((e) => e.data as { user_id: string; ringing_at: string })
    expect(rings.map((x) => [x.user_id, (Date.parse(x.ringing_at) - NOW.getTime()) / 1000])).toEqual([
      ['u1', 0],
      ['u2', 20],
      ['u3', 27],
    ])
    expect(r.end).toMatchObject({ status: 'completed', user_id: 'u3' })
  })

  test('busy members give up at once; everyone busy and nothing further ends busy', () => {
    const r = play(plan(input({ ...ringGroup('sequential'), ...numberTo({ type: 'ring_group', id: 'rg1' }) })), {
      outcomes: { u1: 'busy', u2: 'busy', u3: 'busy' },
    })
    // one second of busy signal per member
    expect(r.end).toMatchObject({ status: 'busy', ended_at: '2026-03-02T15:00:03.000Z' })
    expect(r.sim.outcome.status).toBe('busy')
  })

  test('nobody answers, then the shared voicemail box: answered by voicemail, a message stored', () => {
    const r = play(plan(input({ ...ringGroup('simultaneous', { type: 'voicemail_box', id: 'box1' }), ...numberTo({ type: 'ring_group', id: 'rg1' }) })), {
      outcomes: {},
    })
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.ringing', 'call.ringing', 'call.answered', 'call.end'])
    expect(r.end).toMatchObject({ status: 'voicemail', connected_at: null })
    expect(r.sim.call.user_id).toBeNull()
  })

  test('route to nothing: incoming, then the end without a ring', () => {
    const r = play(plan(input({ phoneNumbers: [{ id: 'pn1', number: '+15005550001', routing: { mode: 'drop' } }] })))
    expect(r.types).toEqual(['call.incoming', 'call.end'])
    expect(r.end).toMatchObject({ status: 'no-answer' })
  })

  test('a direct user: call.incoming names the user; unanswered goes to their voicemail', () => {
    const r = play(plan(input(numberTo({ type: 'user', id: 'u2' }))), { outcomes: { u2: 'no-answer' } })
    expect(r.emitted[0]!.data).toMatchObject({ user_id: 'u2', to_user_id: 'u2' })
    expect(r.end).toMatchObject({ status: 'voicemail' })
  })

  const queueCfg = (maxWaitSeconds = 60) =>
    input({ queues: [{ id: 'q1', name: 'Help desk', members: ['u1', 'u2'], maxWaitSeconds, timeoutTarget: null }], ...numberTo({ type: 'queue', id: 'q1' }) })

  test('a queue: the script stops where the call reaches the queue, and the queue actor takes the caller with the rest of the plan', () => {
    const cfg = input({
      ...ringGroup('simultaneous', { type: 'queue', id: 'q1' }),
      queues: [{ id: 'q1', name: 'Help desk', members: ['u1', 'u2'], maxWaitSeconds: 30, timeoutTarget: { type: 'voicemail_box', id: 'box1' } }],
      ...numberTo({ type: 'ring_group', id: 'rg1' }),
    })
    const r = play(plan(cfg), { outcomes: {}, queue_priority: 2 })
    // The ring group rang out for 20 s; nothing ends the call in the script: the queue actor does.
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.ringing', 'call.ringing'])
    const q = r.sim.queue!
    expect(q).toMatchObject({ kind: 'queue', id: 'q1', input: { queue_id: 'q1', queue_name: 'Help desk', max_wait_seconds: 30, runtime: { owner } } })
    const arrival = q.command.arrival
    expect(arrival).toMatchObject({ type: 'CALLER_ARRIVED', call_id: 'call_1', priority: 2, at: NOW.toISOString(), arrives_at: '2026-03-02T15:00:20.000Z' })
    expect(arrival.agents).toEqual([
      { user_id: 'u1', status: 'available' },
      { user_id: 'u2', status: 'available' },
    ])
    expect(q.input.events).toEqual([arrival])
    const sim = arrival.attachment as QueueCallerSim
    expect(sim.rest.map((s) => s.kind)).toEqual(['voicemail'])
    // expected: as if alone in the queue, nobody answers in its max wait, then the box
    expect(r.sim.outcome).toMatchObject({ status: 'voicemail', answered_by: null })

    // The queue times out at 50 s: the rest of the plan is the box, from then on.
    const after = planAfterQueue(sim, 'call_1', '2026-03-02T15:00:50.000Z', { command: 'cmd_2' })
    expect(after.queue).toBeNull()
    expect(after.script.map((s) => [s.event.type, s.at])).toEqual([
      ['VOICEMAIL', '2026-03-02T15:00:50.000Z'],
      ['MESSAGE_STORED', '2026-03-02T15:01:00.000Z'],
      ['HANGUP', '2026-03-02T15:01:00.000Z'],
    ])
  })

  test('a queue first: the caller arrives now (no arrives_at); dnd for the call is offline to the queue; a logged-out member too', () => {
    const r = play(plan(queueCfg()), {
      outcomes: { u1: 'dnd' },
      queue_members: {
        q1: [
          { user_id: 'u1', standing: 'available', presence: undefined },
          { user_id: 'u2', standing: 'unavailable', presence: undefined },
          { user_id: 'u3', standing: 'available', presence: { context: { manual: 'available', live_calls: ['c9'] } } },
        ],
      },
    })
    const arrival = r.sim.queue!.command.arrival
    expect(arrival.arrives_at).toBeUndefined()
    expect(arrival.agents).toEqual([
      { user_id: 'u1', status: 'offline' },
      { user_id: 'u2', status: 'offline' },
      { user_id: 'u3', status: 'busy' },
    ])
  })

  test('a user voicemail reached through a ring group names the box on the call (voicemail.new carries its user)', () => {
    const cfg = input({ ...ringGroup('simultaneous', { type: 'user', id: 'u3' }), ...numberTo({ type: 'ring_group', id: 'rg1' }) })
    const r = play(plan(cfg), { outcomes: {} })
    expect(r.sim.call.voicemail_box).toEqual({ type: 'user', id: 'u3' })
    expect(r.sim.call.user_id).toBeNull()
  })

  test('a menu without a digit takes the no-input branch', () => {
    const dp = {
      dialPlans: [
        {
          id: 'dp1',
          entry: 'menu',
          nodes: {
            menu: { kind: 'menu' as const, prompt: null, options: [{ digit: '1', next: 'sales' }], default: 'bye' },
            sales: { kind: 'route' as const, target: { type: 'user' as const, id: 'u1' } },
            bye: { kind: 'hangup' as const },
          },
        },
      ],
      ...numberTo({ type: 'dial_plan', id: 'dp1' }),
    }
    expect(plan(input(dp)).steps.map((s) => s.kind)).toEqual(['menu', 'hangup'])
    expect(plan(input(dp), ['1']).steps.map((s) => s.kind)).toEqual(['menu', 'ring', 'voicemail'])
  })

  test('a notify node, an unanswered user, then an AI agent: the app follows from the notify, the agent answers, completed; the agent named', () => {
    const dp = {
      voiceApps: [
        { id: 'va_crm', kind: 'webhook' as const },
        { id: 'va_bot', kind: 'ai_agent' as const, agent: 'ai_ava' },
      ],
      aiAgents: [{ id: 'ai_ava' }],
      dialPlans: [
        {
          id: 'dp1',
          entry: 'crm',
          nodes: {
            crm: { kind: 'voice_app' as const, app: 'va_crm', mode: 'notify' as const, next: 'desk' },
            desk: { kind: 'route' as const, target: { type: 'ring_group' as const, id: 'rg1' } },
          },
        },
      ],
      ringGroups: [
        {
          id: 'rg1',
          strategy: 'simultaneous' as const,
          members: [{ user: 'u1' }],
          ringSeconds: 20,
          noAnswerTarget: { type: 'voice_app' as const, id: 'va_bot' },
        },
      ],
      ...numberTo({ type: 'dial_plan', id: 'dp1' }),
    }
    const p = plan(input(dp))
    expect(p.steps.map((s) => s.kind)).toEqual(['notify', 'ring', 'ai_agent'])
    const r = play(p, { outcomes: { u1: 'no-answer' }, ai_agent_names: { ai_ava: 'Ava' }, talk_seconds: 40 })
    expect(r.sim.outcome).toEqual({ status: 'completed', answered_by: null, steps_taken: 3 })
    expect(r.sim.call.ai_agent).toEqual({ id: 'ai_ava', name: 'Ava' })
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.end'])
    const answered = r.emitted.find((e) => e.type === 'call.answered')!.data
    expect(answered).toMatchObject({ answered_at: new Date(NOW.getTime() + 20_000).toISOString(), connected_at: null })
    expect(r.end).toMatchObject({ status: 'completed', connected_at: null, duration_seconds: 40 })
    // The notify app is told at once; the agent's app answers after the ring time.
    expect(r.sim.script.map((x) => (x.event as { type: string; app?: string }).app).filter(Boolean)).toEqual(['va_crm', 'va_bot'])
  })

  test('a caller who hangs up while a webhook app has the call ends it at that time, completed', () => {
    const p = plan(
      input({
        voiceApps: [{ id: 'va_crm', kind: 'webhook' }],
        phoneNumbers: [{ id: 'pn1', number: '+15005550001', routing: { mode: 'target', target: { type: 'voice_app', id: 'va_crm' } } }],
      }),
    )
    const r = play(p, { talk_seconds: 60, hangup_after_seconds: 7 })
    expect(r.types).toEqual(['call.incoming', 'call.answered', 'call.end'])
    expect(r.end).toMatchObject({ status: 'completed', duration_seconds: 7 })
  })

  test('property: whatever the outcomes, the script ends the call exactly once, with no more than one ringing per user', () => {
    const outcome = fc.constantFrom<UserOutcome>('answer', 'no-answer', 'busy', 'dnd')
    fc.assert(
      fc.property(
        fc.constantFrom('simultaneous', 'sequential'),
        fc.boolean(),
        fc.record({ u1: outcome, u2: outcome, u3: outcome }),
        fc.option(fc.integer({ min: 0, max: 100 }), { nil: undefined }),
        (strategy, toBox, outcomes, hangup) => {
          const cfg = input({
            ...ringGroup(strategy as 'simultaneous' | 'sequential', toBox ? { type: 'queue', id: 'q1' } : null),
            queues: [{ id: 'q1', name: 'Help desk', members: ['u1', 'u2'], maxWaitSeconds: 30, timeoutTarget: { type: 'voicemail_box', id: 'box1' } }],
            ...numberTo({ type: 'ring_group', id: 'rg1' }),
          })
          cfg.users = cfg.users.map((u) => ({ ...u, presence: outcomes[u.id as 'u1'] === 'dnd' ? 'dnd' : 'available' }))
          const r = play(plan(cfg), { outcomes, hangup_after_seconds: hangup })
          // A call that reaches the queue goes on in the queue actor; any other ends in its script.
          expect(r.types.filter((t) => t === 'call.end')).toHaveLength(r.sim.queue ? 0 : 1)
          const rung = r.emitted.filter((e) => e.type === 'call.ringing').map((e) => (e.data as { user_id: string }).user_id)
          expect(new Set(rung).size).toBe(rung.length)
          for (const u of rung) expect(outcomes[u as 'u1']).not.toBe('dnd')
          if (!r.sim.queue) expect(r.end!.status).toBe(r.sim.outcome.status)
        },
      ),
      { numRuns: 60 },
    )
  })
})
