/**
 * The hardware order machine against the spec's "Hardware order" states, written
 * out as a table on its own (not by asking the machine): every trigger in every
 * reachable state gives the table's answer (a fast-check property over random walks).
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { getInitialSnapshot, transition } from 'xstate'
import {
  admitHardwareOrderCommand,
  type HardwareOrderCommand,
  type HardwareOrderEvent,
  type HardwareOrderItem,
  type HardwareOrderSnapshot,
  type HardwareOrderStatus,
  hardwareOrderMachine,
  statusOf,
} from './hardware-order'

const item = (id: string, user: string | null = null): HardwareOrderItem => ({
  id,
  catalog_item: 'hw_yealink_t54w',
  device_type: 'deskphone',
  user,
  mac_address: null,
  base: null,
  device: null,
})
const start = () =>
  getInitialSnapshot(hardwareOrderMachine, { order_id: 'hwo_1', items: [item('hwi_1')], location: 'loc_1', reference: null, at: '2026-01-15T12:00:00.000Z' })

type Trigger =
  | { kind: 'command'; command: HardwareOrderCommand }
  | { kind: 'reviewer'; event: Extract<HardwareOrderEvent, { type: 'REVIEW_APPROVED' | 'REVIEW_REJECTED' | 'DELIVERED' }> }

type Expected = { to: HardwareOrderStatus } | { refused: 409 } | { ignored: true }

/** The table (machines/hardware-order.ts header). */
function table(from: HardwareOrderStatus, t: Trigger, itemIds: string[]): Expected {
  if (t.kind === 'reviewer') {
    if (t.event.type === 'REVIEW_APPROVED' && from === 'submitted') return { to: 'approved' }
    if (t.event.type === 'REVIEW_REJECTED' && from === 'submitted') return { to: 'rejected' }
    if (t.event.type === 'DELIVERED' && from === 'approved') return { to: 'fulfilled' }
    return { ignored: true }
  }
  const c = t.command
  switch (c.type) {
    case 'update_items':
      return from === 'submitted' ? { to: 'submitted' } : { refused: 409 }
    case 'set_intent':
      return (from === 'submitted' || from === 'approved') && itemIds.includes(c.item_id) ? { to: from } : { refused: 409 }
    case 'cancel':
      return from === 'submitted' || from === 'approved' ? { to: 'cancelled' } : { refused: 409 }
  }
}

const at = '2026-01-16T12:00:00.000Z'
const triggerArb = fc.oneof(
  fc.record({ kind: fc.constant('command' as const), command: fc.constant({ type: 'cancel' as const }) }),
  fc.record({
    kind: fc.constant('command' as const),
    command: fc.record({ type: fc.constant('update_items' as const), items: fc.constantFrom([item('hwi_2')], [item('hwi_3'), item('hwi_4', 'usr_1')]) }),
  }),
  fc.record({
    kind: fc.constant('command' as const),
    command: fc.record({
      type: fc.constant('set_intent' as const),
      item_id: fc.constantFrom('hwi_1', 'hwi_2', 'hwi_3', 'hwi_missing'),
      intent: fc.constantFrom({ user: 'usr_9' }, { user: null }, { mac_address: '0015651234AB' }),
    }),
  }),
  fc.record({
    kind: fc.constant('reviewer' as const),
    event: fc.constantFrom<Extract<HardwareOrderEvent, { type: 'REVIEW_APPROVED' | 'REVIEW_REJECTED' | 'DELIVERED' }>>(
      { type: 'REVIEW_APPROVED', at },
      { type: 'REVIEW_REJECTED', reason: 'no stock', at },
      { type: 'DELIVERED', at },
    ),
  }),
)

function step(s: HardwareOrderSnapshot, t: Trigger): { next: HardwareOrderSnapshot; refused?: number } {
  if (t.kind === 'reviewer') return { next: transition(hardwareOrderMachine, s, t.event)[0] as HardwareOrderSnapshot }
  const a = admitHardwareOrderCommand(s, t.command, at)
  if ('refused' in a) return { next: s, refused: a.refused.status }
  return { next: transition(hardwareOrderMachine, s, a.event)[0] as HardwareOrderSnapshot }
}

describe('hardware order machine', () => {
  test('created submitted, the review handed over once at creation', () => {
    const s = start()
    expect(statusOf(s)).toBe('submitted')
    const [, actions] = transition(hardwareOrderMachine, s, { type: 'REVIEW_APPROVED', at })
    expect(actions.map((a) => a.type)).toContain('project')
    expect(actions.map((a) => a.type)).not.toContain('review')
  })

  test('every trigger in every state gives the table’s answer (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(triggerArb as unknown as fc.Arbitrary<Trigger>, { minLength: 1, maxLength: 12 }), (walk) => {
        let s = start()
        for (const t of walk) {
          const from = statusOf(s)
          const ids = s.context.items.map((i) => i.id)
          const expected = table(from, t, ids)
          const { next, refused } = step(s, t)
          if ('refused' in expected) expect(refused).toBe(expected.refused)
          else if ('ignored' in expected) {
            expect(refused).toBeUndefined()
            expect(statusOf(next)).toBe(from)
          } else {
            expect(refused).toBeUndefined()
            expect(statusOf(next)).toBe(expected.to)
          }
          const final = ['rejected', 'fulfilled', 'cancelled'].includes(statusOf(next))
          expect(next.status === 'done').toBe(final)
          if (statusOf(next) === 'rejected') expect(next.context.rejection_reason).toBe('no stock')
          else expect(next.context.rejection_reason).toBeNull()
          s = next
        }
      }),
      { numRuns: 500 },
    )
  })

  test('no trigger ever reaches draft', () => {
    for (const t of ['REVIEW_APPROVED', 'DELIVERED', 'CANCEL'] as const) {
      const [s] = transition(hardwareOrderMachine, start(), { type: t, at } as HardwareOrderEvent)
      expect(statusOf(s as HardwareOrderSnapshot)).not.toBe('draft')
    }
  })

  test('an intent replaces only the fields given; fulfil carries the items as they are', () => {
    let s = start()
    s = step(s, { kind: 'command', command: { type: 'set_intent', item_id: 'hwi_1', intent: { user: 'usr_1' } } }).next
    s = step(s, { kind: 'command', command: { type: 'set_intent', item_id: 'hwi_1', intent: { mac_address: '0015651234AB' } } }).next
    expect(s.context.items[0]).toMatchObject({ user: 'usr_1', mac_address: '0015651234AB' })
    s = transition(hardwareOrderMachine, s, { type: 'REVIEW_APPROVED', at })[0] as HardwareOrderSnapshot
    const [done, actions] = transition(hardwareOrderMachine, s, { type: 'DELIVERED', at })
    expect(statusOf(done as HardwareOrderSnapshot)).toBe('fulfilled')
    const fulfil = actions.find((a) => a.type === 'fulfil') as unknown as { params: { items: HardwareOrderItem[] } }
    expect(fulfil.params.items[0]).toMatchObject({ user: 'usr_1', mac_address: '0015651234AB' })
  })
})
