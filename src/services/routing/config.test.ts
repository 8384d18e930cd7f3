/** Problem paths of the routing engine (camelCase config names) as API field names (snake_case). */
import { describe, expect, test } from 'bun:test'
import { apiPath, targetOf } from './config'

describe('apiPath', () => {
  test('a field of the written object is relative to it', () => {
    expect(apiPath(['ringGroups', 'rg_1', 'noAnswerTarget'], { collection: 'ringGroups', id: 'rg_1' })).toBe('no_answer_target')
    expect(apiPath(['ringGroups', 'rg_1', 'members', 2, 'ringSeconds'], { collection: 'ringGroups', id: 'rg_1' })).toBe('members.2.ring_seconds')
    expect(apiPath(['schedules', 'sch_1', 'timeZone'], { collection: 'schedules', id: 'sch_1' })).toBe('time_zone')
    expect(apiPath(['voiceApps', 'va_1', 'agent'], { collection: 'voiceApps', id: 'va_1' })).toBe('ai_agent')
    expect(apiPath(['phoneNumbers', 'pn_1', 'routing', 'target'], { collection: 'phoneNumbers', id: 'pn_1' })).toBe('target')
  })

  test('node ids are kept as they are, even when they look like camelCase field names', () => {
    const plan = { collection: 'dialPlans' as const, id: 'dp_1' }
    expect(apiPath(['dialPlans', 'dp_1', 'nodes', 'mainMenu', 'options', 0, 'next'], plan)).toBe('nodes.mainMenu.options.0.next')
    expect(apiPath(['dialPlans', 'dp_1', 'nodes', 'routing', 'target'], plan)).toBe('nodes.routing.target')
  })

  test('a field of another object is qualified by its collection and id', () => {
    expect(apiPath(['dialPlans', 'dp_1', 'nodes', 'a', 'app'], { collection: 'voiceApps', id: 'va_1' })).toBe('dial_plans.dp_1.nodes.a.app')
    expect(apiPath(['voicemailBoxes', 'svb_1'])).toBe('shared_voicemail_boxes.svb_1')
    expect(apiPath(['extensions', '101', 'target'])).toBe('extensions.101.target')
    expect(apiPath(['queues', 'que_1', 'timeoutTarget'])).toBe('queues.que_1.timeout_target')
  })
})

describe('targetOf', () => {
  test('the id prefix names the target type; other ids are no target', () => {
    expect(targetOf('usr_1')).toEqual({ type: 'user', id: 'usr_1' })
    expect(targetOf('rg_1')).toEqual({ type: 'ring_group', id: 'rg_1' })
    expect(targetOf('que_1')).toEqual({ type: 'queue', id: 'que_1' })
    expect(targetOf('dp_1')).toEqual({ type: 'dial_plan', id: 'dp_1' })
    expect(targetOf('svb_1')).toEqual({ type: 'voicemail_box', id: 'svb_1' })
    expect(targetOf('va_1')).toEqual({ type: 'voice_app', id: 'va_1' })
    for (const id of ['acct_1', 'ext_1', 'aia_1', 'nonsense', '', '_x']) expect(targetOf(id)).toBeUndefined()
  })
})
