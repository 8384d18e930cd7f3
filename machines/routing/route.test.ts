import { describe, expect, test } from 'bun:test'
import { buildRoutingConfig, type DialPlan, type RoutingInput, type Schedule } from './config'
import { FINAL_KINDS, type Step } from './plan'
import { route } from './route'

// Monday 23 November 2026, 10:00 in New York (15:00Z); 22:00 the same day is after hours.
const OPEN = Date.parse('2026-11-23T15:00:00Z')
const CLOSED = Date.parse('2026-11-24T03:00:00Z')

const office: Schedule = {
  id: 'sch_office',
  timeZone: 'America/New_York',
  hours: ['mon', 'tue', 'wed', 'thu', 'fri'].map((day) => ({ day: day as 'mon', open: '09:00', close: '17:00' })),
  holidays: ['2026-12-25'],
  hold: null,
}

const mainMenu: DialPlan = {
  id: 'dp_main',
  entry: 'hours',
  nodes: {
    hours: { kind: 'schedule', schedule: 'sch_office', open: 'greet', closed: 'after' },
    greet: { kind: 'voice_app', app: 'va_crm', mode: 'notify', next: 'menu' },
    menu: {
      kind: 'menu',
      prompt: 'clip_menu',
      options: [
        { digit: '1', next: 'sales' },
        { digit: '2', next: 'support' },
        { digit: '3', next: 'bot' },
        { digit: '9', next: 'bye' },
      ],
      default: 'sales',
    },
    sales: { kind: 'route', target: { type: 'ring_group', id: 'rg_sales' } },
    support: { kind: 'route', target: { type: 'queue', id: 'q_support' } },
    bot: { kind: 'voice_app', app: 'va_bot', mode: 'control' },
    bye: { kind: 'hangup' },
    after: { kind: 'play', clip: 'clip_closed', next: 'box' },
    box: { kind: 'route', target: { type: 'voicemail_box', id: 'vm_main' } },
  },
}

const input: RoutingInput = {
  users: [
    { id: 'u_ann', presence: 'available', voicemail: true },
    { id: 'u_bob', presence: 'dnd', voicemail: true },
    { id: 'u_cat', presence: 'offline', voicemail: false, ringSeconds: 15 },
    { id: 'u_dan', presence: 'on_call', voicemail: false },
  ],
  ringGroups: [
    {
      id: 'rg_sales',
      strategy: 'simultaneous',
      members: [{ user: 'u_ann' }, { user: 'u_bob' }, { user: 'u_cat' }],
      ringSeconds: 20,
      noAnswerTarget: { type: 'queue', id: 'q_support' },
    },
    {
      id: 'rg_line',
      strategy: 'sequential',
      members: [{ user: 'u_cat', ringSeconds: 10 }, { user: 'u_bob' }, { user: 'u_ann' }],
      ringSeconds: 25,
      noAnswerTarget: { type: 'voicemail_box', id: 'vm_main' },
    },
    { id: 'rg_dnd', strategy: 'simultaneous', members: [{ user: 'u_bob' }], ringSeconds: 20 },
  ],
  queues: [{ id: 'q_support', members: ['u_dan', 'u_bob', 'u_ann'], maxWaitSeconds: 120, timeoutTarget: { type: 'voicemail_box', id: 'vm_main' } }],
  dialPlans: [mainMenu],
  schedules: [office],
  voicemailBoxes: [{ id: 'vm_main' }],
  voiceApps: [
    { id: 'va_crm', kind: 'webhook' },
    { id: 'va_bot', kind: 'ai_agent', agent: 'ai_front' },
  ],
  aiAgents: [{ id: 'ai_front' }],
  extensions: [
    { number: '100', target: { type: 'user', id: 'u_ann' }, status: 'active' },
    { number: '101', target: { type: 'user', id: 'u_bob' }, status: 'active' },
    { number: '102', target: { type: 'user', id: 'u_cat' }, status: 'active' },
    { number: '200', target: { type: 'ring_group', id: 'rg_line' }, status: 'active' },
    { number: '300', target: { type: 'dial_plan', id: 'dp_main' }, status: 'inactive' },
    { number: '400', target: { type: 'voice_app', id: 'va_crm' }, status: 'active' },
  ],
  phoneNumbers: [
    { id: 'pn_main', number: '+15550000001', routing: { mode: 'target', target: { type: 'dial_plan', id: 'dp_main' } } },
    { id: 'pn_all', number: '+15550000002', routing: { mode: 'ring_all' } },
    { id: 'pn_off', number: '+15550000003', routing: { mode: 'drop' } },
    { id: 'pn_ext', number: '+15550000004', routing: { mode: 'target', target: { type: 'extension', id: '200' } } },
  ],
}
const config = buildRoutingConfig(input)

/** Steps without their sources, for readable expectations. */
const bare = (steps: Step[]) => steps.map(({ source: _source, ...rest }: Step) => rest)

describe('route(config, call, now)', () => {
  test('business hours, digit 1: notify the CRM app, the menu, the sales group with dnd Bob left out, then the queue, then the shared box', () => {
    const plan = route(config, { entry: { type: 'number', number: '+15550000001' }, digits: ['1'] }, OPEN)
    expect(bare(plan.steps)).toEqual([
      { kind: 'notify', app: 'va_crm' },
      { kind: 'menu', prompt: 'clip_menu', digit: '1' },
      { kind: 'ring', users: ['u_ann', 'u_cat'], timeoutSeconds: 20 },
      { kind: 'enqueue', queue: 'q_support', agents: ['u_dan', 'u_ann'], maxWaitSeconds: 120 },
      { kind: 'voicemail', box: { type: 'shared', id: 'vm_main' } },
    ])
    expect(plan.steps[2]!.source).toEqual({ type: 'ring_group', id: 'rg_sales' })
    expect(plan.steps[0]!.source).toEqual({ type: 'dial_plan', id: 'dp_main', node: 'greet' })
  })

  test('after hours: play the closed clip, then the shared voicemail box', () => {
    const plan = route(config, { entry: { type: 'number', number: '+15550000001' } }, CLOSED)
    expect(bare(plan.steps)).toEqual([
      { kind: 'play', clip: 'clip_closed' },
      { kind: 'voicemail', box: { type: 'shared', id: 'vm_main' } },
    ])
  })

  test('a menu with no input known yet answers gather; routing again from that node with the digit goes on', () => {
    const first = route(config, { entry: { type: 'number', number: '+15550000001' } }, OPEN)
    const gather = first.steps.at(-1)!
    expect(gather).toMatchObject({ kind: 'gather', dialPlan: 'dp_main', node: 'menu', prompt: 'clip_menu', options: ['1', '2', '3', '9'] })
    const resumed = route(config, { entry: { type: 'node', dialPlan: 'dp_main', node: 'menu' }, digits: ['3'] }, OPEN)
    expect(bare(resumed.steps)).toEqual([
      { kind: 'menu', prompt: 'clip_menu', digit: '3' },
      { kind: 'ai_agent', agent: 'ai_front', app: 'va_bot' },
    ])
  })

  test('no input or an unlisted digit takes the default branch; digit 9 hangs up', () => {
    for (const digit of [null, '7']) {
      const steps = route(config, { entry: { type: 'number', number: '+15550000001' }, digits: [digit] }, OPEN).steps
      expect(steps[1]).toMatchObject({ kind: 'menu', digit: null })
      expect(steps[2]).toMatchObject({ kind: 'ring', users: ['u_ann', 'u_cat'] })
    }
    const bye = route(config, { entry: { type: 'number', number: '+15550000001' }, digits: ['9'] }, OPEN).steps
    expect(bye.at(-1)).toMatchObject({ kind: 'hangup', reason: 'hangup_node' })
  })

  test('digit 2: the queue, then voicemail when max wait runs out', () => {
    const steps = route(config, { entry: { type: 'number', number: '+15550000001' }, digits: ['2'] }, OPEN).steps
    expect(bare(steps.slice(2))).toEqual([
      { kind: 'enqueue', queue: 'q_support', agents: ['u_dan', 'u_ann'], maxWaitSeconds: 120 },
      { kind: 'voicemail', box: { type: 'shared', id: 'vm_main' } },
    ])
  })

  test('a sequential ring group rings one member at a time with per-member timeouts, skipping dnd', () => {
    const steps = route(config, { entry: { type: 'number', number: '+15550000004' } }, OPEN).steps
    expect(bare(steps)).toEqual([
      { kind: 'ring', users: ['u_cat'], timeoutSeconds: 10 },
      { kind: 'ring', users: ['u_ann'], timeoutSeconds: 25 },
      { kind: 'voicemail', box: { type: 'shared', id: 'vm_main' } },
    ])
  })

  test('a number with no target rings every user except dnd ones; a number routed to nothing drops', () => {
    expect(bare(route(config, { entry: { type: 'number', number: '+15550000002' } }, OPEN).steps)).toEqual([
      { kind: 'ring', users: ['u_ann', 'u_cat', 'u_dan'], timeoutSeconds: 30 },
      { kind: 'hangup', reason: 'no_answer' },
    ])
    expect(bare(route(config, { entry: { type: 'number', number: '+15550000003' } }, OPEN).steps)).toEqual([{ kind: 'hangup', reason: 'dropped' }])
  })

  test('a user target rings the user, then the personal box; a dnd user goes straight to voicemail', () => {
    expect(bare(route(config, { entry: { type: 'extension', number: '100' } }, OPEN).steps)).toEqual([
      { kind: 'ring', users: ['u_ann'], timeoutSeconds: 30 },
      { kind: 'voicemail', box: { type: 'user', id: 'u_ann' } },
    ])
    expect(bare(route(config, { entry: { type: 'extension', number: '101' } }, OPEN).steps)).toEqual([
      { kind: 'voicemail', box: { type: 'user', id: 'u_bob' } },
    ])
    expect(bare(route(config, { entry: { type: 'extension', number: '102' } }, OPEN).steps)).toEqual([
      { kind: 'ring', users: ['u_cat'], timeoutSeconds: 15 },
      { kind: 'hangup', reason: 'no_answer' },
    ])
  })

  test('a ring group whose members are all dnd rings nobody and ends no-answer', () => {
    expect(bare(route(config, { entry: { type: 'target', target: { type: 'ring_group', id: 'rg_dnd' } } }, OPEN).steps)).toEqual([
      { kind: 'hangup', reason: 'no_answer' },
    ])
  })

  test('a webhook voice app takes the call; an inactive or unknown extension and an unknown number hang up', () => {
    expect(bare(route(config, { entry: { type: 'extension', number: '400' } }, OPEN).steps)).toEqual([{ kind: 'voice_app', app: 'va_crm' }])
    expect(route(config, { entry: { type: 'extension', number: '300' } }, OPEN).steps).toMatchObject([{ kind: 'hangup', reason: 'inactive_extension' }])
    expect(route(config, { entry: { type: 'extension', number: '999' } }, OPEN).steps).toMatchObject([{ kind: 'hangup', reason: 'unknown_destination' }])
    expect(route(config, { entry: { type: 'number', number: '+15559999999' } }, OPEN).steps).toMatchObject([{ kind: 'hangup', reason: 'unknown_destination' }])
  })

  test('a queue with max wait 0 waits up to the one-hour ceiling', () => {
    const c = buildRoutingConfig({ users: [{ id: 'u', presence: 'available', voicemail: false }], queues: [{ id: 'q', members: ['u'], maxWaitSeconds: 0 }] })
    expect(bare(route(c, { entry: { type: 'target', target: { type: 'queue', id: 'q' } } }, OPEN).steps)).toEqual([
      { kind: 'enqueue', queue: 'q', agents: ['u'], maxWaitSeconds: 3600 },
      { kind: 'hangup', reason: 'no_answer' },
    ])
  })

  test('a config that skipped validation and loops still gives a finite plan (hangup loop)', () => {
    const c = buildRoutingConfig({
      users: [{ id: 'u', presence: 'available', voicemail: false }],
      ringGroups: [{ id: 'a', strategy: 'simultaneous', members: [{ user: 'u' }], ringSeconds: 5, noAnswerTarget: { type: 'queue', id: 'q' } }],
      queues: [{ id: 'q', members: ['u'], maxWaitSeconds: 5, timeoutTarget: { type: 'ring_group', id: 'a' } }],
    })
    const steps = route(c, { entry: { type: 'target', target: { type: 'ring_group', id: 'a' } } }, OPEN).steps
    expect(steps.map((s) => s.kind)).toEqual(['ring', 'enqueue', 'hangup'])
    expect(steps.at(-1)).toMatchObject({ reason: 'loop' })
  })

  test('"__proto__" and "constructor" are ordinary ids', () => {
    const c = buildRoutingConfig({
      users: [{ id: '__proto__', presence: 'available', voicemail: false }],
      dialPlans: [
        {
          id: 'constructor',
          entry: 'toString',
          nodes: Object.fromEntries([['toString', { kind: 'route', target: { type: 'user', id: '__proto__' } } as const]]),
        },
      ],
    })
    expect(bare(route(c, { entry: { type: 'target', target: { type: 'dial_plan', id: 'constructor' } } }, OPEN).steps)[0]).toEqual({
      kind: 'ring',
      users: ['__proto__'],
      timeoutSeconds: 30,
    })
    const missing = buildRoutingConfig({ dialPlans: [{ id: 'd', entry: 'constructor', nodes: {} }] })
    expect(route(missing, { entry: { type: 'target', target: { type: 'dial_plan', id: 'd' } } }, OPEN).steps).toMatchObject([{ reason: 'unknown_destination' }])
  })

  test('every plan of the example ends with exactly one final step', () => {
    for (const number of ['+15550000001', '+15550000002', '+15550000003', '+15550000004']) {
      for (const now of [OPEN, CLOSED]) {
        const steps = route(config, { entry: { type: 'number', number } }, now).steps
        expect(steps.filter((s) => FINAL_KINDS.has(s.kind)).length).toBe(1)
        expect(FINAL_KINDS.has(steps.at(-1)!.kind)).toBe(true)
      }
    }
  })
})
