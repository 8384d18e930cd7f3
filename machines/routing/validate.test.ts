import { describe, expect, test } from 'bun:test'
import { buildRoutingConfig, type RoutingInput } from './config'
import { validateChange, validateRouting } from './validate'

const users: RoutingInput['users'] = [
  { id: 'u1', presence: 'available', voicemail: true },
  { id: 'u2', presence: 'available', voicemail: false },
]
const problemsOf = (input: RoutingInput) => validateRouting(buildRoutingConfig({ users, ...input }))

describe('validateRouting: refused before storing', () => {
  test('a valid config has no problem', () => {
    expect(
      problemsOf({
        ringGroups: [
          {
            id: 'rg',
            strategy: 'sequential',
            members: [{ user: 'u1', ringSeconds: 10 }, { user: 'u2' }],
            ringSeconds: 20,
            noAnswerTarget: { type: 'queue', id: 'q' },
          },
        ],
        queues: [{ id: 'q', members: ['u1'], maxWaitSeconds: 0, timeoutTarget: { type: 'user', id: 'u1' } }],
        schedules: [{ id: 's', timeZone: 'Europe/Paris', hours: [{ day: 'mon', open: '09:00', close: '24:00' }], holidays: ['2026-12-25'] }],
        dialPlans: [
          {
            id: 'd',
            entry: 'n',
            nodes: {
              n: { kind: 'schedule', schedule: 's', open: 'r', closed: 'h' },
              r: { kind: 'route', target: { type: 'ring_group', id: 'rg' } },
              h: { kind: 'hangup' },
            },
          },
        ],
        extensions: [{ number: '10', target: { type: 'dial_plan', id: 'd' }, status: 'active' }],
      }),
    ).toEqual([])
  })

  test('a loop through a ring group, a queue and a dial plan names its whole path', () => {
    const problems = problemsOf({
      ringGroups: [{ id: 'rg', strategy: 'simultaneous', members: [{ user: 'u1' }], ringSeconds: 20, noAnswerTarget: { type: 'queue', id: 'q' } }],
      queues: [{ id: 'q', members: ['u1'], maxWaitSeconds: 60, timeoutTarget: { type: 'dial_plan', id: 'd' } }],
      dialPlans: [{ id: 'd', entry: 'back', nodes: { back: { kind: 'route', target: { type: 'ring_group', id: 'rg' } } } }],
    })
    expect(problems).toHaveLength(1)
    expect(problems[0]!.code).toBe('routing_loop')
    expect(problems[0]!.cycle).toEqual(['ring_group:rg', 'queue:q', 'dial_plan:d', 'dial_plan:d#back', 'ring_group:rg'])
    expect(problems[0]!.path).toEqual(['dialPlans', 'd', 'nodes', 'back', 'target'])
  })

  test('a loop inside one dial plan, a dial plan entering itself, and an extension pointing at itself', () => {
    const problems = problemsOf({
      dialPlans: [
        {
          id: 'd',
          entry: 'm',
          nodes: { m: { kind: 'menu', options: [{ digit: '1', next: 'p' }], default: null }, p: { kind: 'play', clip: 'c', next: 'm' } },
        },
        { id: 'self', entry: 'x', nodes: { x: { kind: 'route', target: { type: 'dial_plan', id: 'self' } } } },
      ],
      extensions: [{ number: '7', target: { type: 'extension', id: '7' }, status: 'active' }],
    })
    expect(problems.map((p) => [p.code, p.path.join('.')]).sort()).toEqual([
      ['routing_loop', 'dialPlans.d.nodes.p.next'],
      ['routing_loop', 'dialPlans.self.nodes.x.target'],
      ['routing_loop', 'extensions.7.target'],
    ])
  })

  test('a target outside the account (an id this account does not have) is an unknown reference at its field', () => {
    const problems = problemsOf({
      queues: [{ id: 'q', members: ['u1', 'u_other'], maxWaitSeconds: 60, timeoutTarget: { type: 'voicemail_box', id: 'vm_other' } }],
      ringGroups: [{ id: 'rg', strategy: 'simultaneous', members: [], ringSeconds: 20, noAnswerTarget: { type: 'dial_plan', id: 'nope' } }],
      extensions: [{ number: '1', target: { type: 'user', id: 'u9' }, status: 'active' }],
      phoneNumbers: [{ id: 'pn', number: '+15550000000', routing: { mode: 'target', target: { type: 'queue', id: 'q9' } } }],
      voiceApps: [{ id: 'va', kind: 'ai_agent', agent: 'ai9' }],
    })
    expect(problems.map((p) => [p.code, p.path.join('.')]).sort()).toEqual(
      [
        ['unknown_reference', 'queues.q.members.1'],
        ['unknown_reference', 'queues.q.timeoutTarget'],
        ['unknown_reference', 'ringGroups.rg.noAnswerTarget'],
        ['unknown_reference', 'extensions.1.target'],
        ['unknown_reference', 'phoneNumbers.pn.routing.target'],
        ['unknown_reference', 'voiceApps.va.agent'],
      ].sort(),
    )
  })

  test('a notify-mode voice_app node pointing at an AI-agent voice app is refused; control mode is fine', () => {
    const problems = problemsOf({
      aiAgents: [{ id: 'ai' }],
      voiceApps: [{ id: 'bot', kind: 'ai_agent', agent: 'ai' }],
      dialPlans: [
        {
          id: 'd',
          entry: 'n',
          nodes: { n: { kind: 'voice_app', app: 'bot', mode: 'notify', next: 'c' }, c: { kind: 'voice_app', app: 'bot', mode: 'control' } },
        },
      ],
    })
    expect(problems.map((p) => [p.code, p.path.join('.')])).toEqual([['notify_ai_agent', 'dialPlans.d.nodes.n.app']])
  })

  test('bad values: time zone, hours, holidays, menu digits, ring times, missing nodes, duplicate members', () => {
    const problems = problemsOf({
      schedules: [
        {
          id: 's',
          timeZone: 'Nowhere/City',
          hours: [
            { day: 'mon', open: '17:00', close: '09:00' },
            { day: 'xyz' as 'mon', open: '25:00', close: '26:00' },
          ],
          holidays: ['2026-13-45'],
        },
      ],
      ringGroups: [{ id: 'rg', strategy: 'sequential', members: [{ user: 'u1', ringSeconds: 0 }, { user: 'u1' }], ringSeconds: -1 }],
      dialPlans: [{ id: 'd', entry: 'gone', nodes: { m: { kind: 'menu', options: [{ digit: '12', next: 'm2' }], default: 'm3' } } }],
    })
    expect(problems.map((p) => p.path.join('.')).sort()).toEqual(
      [
        'schedules.s.timeZone',
        'schedules.s.hours.0.close',
        'schedules.s.hours.1.day',
        'schedules.s.hours.1.open',
        'schedules.s.holidays.0',
        'ringGroups.rg.ringSeconds',
        'ringGroups.rg.members.0.ringSeconds',
        'ringGroups.rg.members.1.user',
        'dialPlans.d.entry',
        'dialPlans.d.nodes.m.options.0.digit',
        'dialPlans.d.nodes.m.options.0.next',
        'dialPlans.d.nodes.m.default',
      ].sort(),
    )
  })

  test('validateChange reports what the change brings, not an older dangling reference elsewhere', () => {
    const before = buildRoutingConfig({
      users,
      queues: [{ id: 'q', members: ['u1', 'u_deleted'], maxWaitSeconds: 60 }],
      ringGroups: [{ id: 'rg', strategy: 'simultaneous', members: [{ user: 'u1' }], ringSeconds: 20 }],
    })
    const fine = buildRoutingConfig({
      users,
      queues: [{ id: 'q', members: ['u1', 'u_deleted'], maxWaitSeconds: 60 }],
      ringGroups: [{ id: 'rg', strategy: 'simultaneous', members: [{ user: 'u1' }], ringSeconds: 20, noAnswerTarget: { type: 'queue', id: 'q' } }],
    })
    expect(validateRouting(fine).map((p) => p.path.join('.'))).toEqual(['queues.q.members.1'])
    expect(validateChange(before, fine)).toEqual([])
    const looping = buildRoutingConfig({
      users,
      queues: [{ id: 'q', members: ['u1', 'u_deleted'], maxWaitSeconds: 60, timeoutTarget: { type: 'ring_group', id: 'rg' } }],
      ringGroups: [{ id: 'rg', strategy: 'simultaneous', members: [{ user: 'u1' }], ringSeconds: 20, noAnswerTarget: { type: 'queue', id: 'q' } }],
    })
    expect(validateChange(before, looping).map((p) => p.code)).toEqual(['routing_loop'])
  })
})
