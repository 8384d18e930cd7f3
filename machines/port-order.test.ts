/**
 * The port order machine against the spec's "Port order (status)" table: every
 * trigger in every state gives the table's answer (a fast-check property over
 * random walks through the machine), plus the rules the table's "Also" column names.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { getInitialSnapshot, transition } from 'xstate'
import {
  admitPortOrderCommand,
  type PortOrderCommand,
  type PortOrderDetails,
  type PortOrderEvent,
  type PortOrderSnapshot,
  type PortOrderStatus,
  portOrderMachine,
  REJECTION_CODES,
  statusOf,
} from './port-order'

const details = (): PortOrderDetails => ({
  phone_numbers: ['+12125550100'],
  subscriber: { btn: '+12125550100', business_name: 'Acme', approver_name: 'Ada', account_number: null, pin: null, address: null },
  approval: null,
  requested_foc_date: '2026-02-02',
  requested_foc_time: null,
  rejection: null,
})
const start = () => getInitialSnapshot(portOrderMachine, { order_id: 'po_1', details: details(), at: '2026-01-15T12:00:00.000Z' })

type Trigger =
  | { kind: 'command'; command: PortOrderCommand }
  | { kind: 'carrier'; event: Extract<PortOrderEvent, { type: 'CARRIER_FOC' | 'CARRIER_REJECTED' | 'CARRIER_PORTED' }> }

/** What the table says: the next status, or the refusal's status code. */
type Expected = { to: PortOrderStatus } | { refused: 409 | 422 } | { ignored: true }

/**
 * The spec's table, written out on its own (not by asking the machine): `corrected` is
 * whether the order was updated since it went to exception; `changes` whether an
 * update alters a detail.
 */
function table(from: PortOrderStatus, t: Trigger, facts: { corrected: boolean; changes: boolean }): Expected {
  const terminal = from === 'complete' || from === 'cancelled'
  if (t.kind === 'carrier') {
    if (t.event.type === 'CARRIER_FOC' && from === 'submitted') return { to: 'foc' }
    if (t.event.type === 'CARRIER_REJECTED' && from === 'submitted') return { to: 'exception' }
    if (t.event.type === 'CARRIER_PORTED' && from === 'foc') return { to: 'complete' }
    return { ignored: true }
  }
  const c = t.command
  switch (c.type) {
    case 'approve':
      return from === 'draft' ? { to: 'approved' } : { refused: 409 }
    case 'submit':
      if (from === 'approved') return { to: 'submitted' }
      if (from === 'exception' && facts.corrected) return { to: 'submitted' }
      return from === 'draft' ? { refused: 422 } : { refused: 409 }
    case 'cancel':
      return terminal ? { refused: 409 } : { to: 'cancelled' }
    case 'add_document':
      return from === 'draft' || from === 'exception' ? { to: from } : { refused: 409 }
    case 'update': {
      if (terminal) return { refused: 409 }
      if (from === 'submitted' || from === 'foc') {
        const onlyDates = Object.keys(c.changes).every((k) => k === 'requested_foc_date' || k === 'requested_foc_time')
        return onlyDates ? { to: from } : { refused: 409 }
      }
      if (from === 'approved') return { to: facts.changes ? 'draft' : 'approved' }
      return { to: from }
    }
  }
}

const at = '2026-01-16T12:00:00.000Z'
const changesArb = fc.oneof(
  fc.constant({}),
  fc.record({ requested_foc_date: fc.constantFrom('2026-02-02', '2026-02-03') }),
  fc.record({ requested_foc_date: fc.constantFrom('2026-02-02', '2026-02-03'), requested_foc_time: fc.constantFrom('09:00', null) }),
  fc.record({ phone_numbers: fc.constantFrom<string[]>(['+12125550100'], ['+12125550100', '+12125550101']) }),
  fc.record({ subscriber: fc.record({ pin: fc.constantFrom('1234', null) }) }),
)
const triggerArb: fc.Arbitrary<Trigger> = fc.oneof(
  changesArb.map((changes) => ({ kind: 'command' as const, command: { type: 'update' as const, changes } })),
  fc.constant({ kind: 'command' as const, command: { type: 'approve' as const, signature: 'Ada Owner', ip: '203.0.113.7' } }),
  fc.constant({ kind: 'command' as const, command: { type: 'submit' as const } }),
  fc.constant({ kind: 'command' as const, command: { type: 'cancel' as const } }),
  fc.constantFrom('bill_copy' as const, 'csr' as const).map((document) => ({ kind: 'command' as const, command: { type: 'add_document' as const, document } })),
  fc.constant({ kind: 'carrier' as const, event: { type: 'CARRIER_FOC' as const, foc_date: '2026-02-02', foc_time: '10:00', at } }),
  fc.constantFrom(...REJECTION_CODES).map((code) => ({ kind: 'carrier' as const, event: { type: 'CARRIER_REJECTED' as const, code, message: 'no', at } })),
  fc.constant({ kind: 'carrier' as const, event: { type: 'CARRIER_PORTED' as const, at } }),
)

/** Applies a trigger as the actor would: commands through the admission, carrier events only when the machine takes them. */
function apply(s: PortOrderSnapshot, t: Trigger): { next: PortOrderSnapshot; refused?: 409 | 422; actions: string[] } {
  if (t.kind === 'command') {
    const a = admitPortOrderCommand(s, t.command, at)
    if ('refused' in a) return { next: s, refused: a.refused.status, actions: [] }
    const [next, actions] = transition(portOrderMachine, s, a.event)
    return { next, actions: actions.map((x) => x.type) }
  }
  if (s.status !== 'active' || !s.can(t.event)) return { next: s, actions: [] }
  const [next, actions] = transition(portOrderMachine, s, t.event)
  return { next, actions: actions.map((x) => x.type) }
}

describe('port order machine: the state table', () => {
  test('every trigger in every reachable state gives the table’s answer', () => {
    fc.assert(
      fc.property(fc.array(triggerArb, { minLength: 1, maxLength: 30 }), (walk) => {
        let s = start()
        let corrected = false
        for (const t of walk) {
          const from = statusOf(s)
          const changes =
            t.kind === 'command' && t.command.type === 'update'
              ? JSON.stringify({
                  ...s.context.details,
                  ...t.command.changes,
                  subscriber: { ...s.context.details.subscriber, ...t.command.changes.subscriber },
                }) !== JSON.stringify(s.context.details)
              : false
          const expected = table(from, t, { corrected, changes })
          const r = apply(s, t)
          if ('refused' in expected) {
            expect(r.refused).toBe(expected.refused)
            expect(statusOf(r.next)).toBe(from)
          } else if ('ignored' in expected) {
            expect(statusOf(r.next)).toBe(from)
            expect(r.actions).toEqual([])
          } else {
            expect(r.refused).toBeUndefined()
            expect(statusOf(r.next)).toBe(expected.to)
            // Every status change is recorded (the `changed` effect), and nothing else is.
            expect(r.actions.includes('changed')).toBe(expected.to !== from)
          }
          const to = statusOf(r.next)
          if (to === 'exception' && from !== 'exception') corrected = false
          if (from === 'exception' && to === 'exception' && t.kind === 'command' && t.command.type === 'update') corrected = true
          s = r.next
        }
      }),
      { numRuns: 500 },
    )
  })

  test('terminal states are final: the actor finishes there', () => {
    let s = start()
    s = transition(portOrderMachine, s, { type: 'CANCEL', at })[0]
    expect(s.status).toBe('done')
    expect(statusOf(s)).toBe('cancelled')
  })
})

describe('port order machine: the table’s "Also" column', () => {
  const run = (events: PortOrderEvent[]) => {
    let s = start()
    const all: { type: string; params?: unknown }[] = []
    for (const e of events) {
      const [n, actions] = transition(portOrderMachine, s, e)
      s = n
      all.push(...actions.map((a) => ({ type: a.type, params: a.params })))
    }
    return { s, actions: all }
  }

  test('created as draft with submitted_at null; approval sets details.approval with its timestamp', () => {
    const { s } = run([{ type: 'APPROVE', signature: 'Ada Owner', ip: '203.0.113.7', at }])
    expect(start().context.submitted_at).toBeNull()
    expect(statusOf(s)).toBe('approved')
    expect(s.context.details.approval).toEqual({ signature: 'Ada Owner', ip: '203.0.113.7', timestamp: at })
  })

  test('submit sets submitted_at and hands the order to the carrier', () => {
    const { s, actions } = run([
      { type: 'APPROVE', signature: 'A', ip: '1.2.3.4', at },
      { type: 'SUBMIT', at: '2026-01-16T13:00:00.000Z' },
    ])
    expect(s.context.submitted_at).toBe('2026-01-16T13:00:00.000Z')
    const submit = actions.find((a) => a.type === 'carrierSubmit')?.params as { submission: number }
    expect(submit.submission).toBe(1)
  })

  test('a details update of an approved order clears the approval and returns it to draft', () => {
    const { s } = run([
      { type: 'APPROVE', signature: 'A', ip: '1.2.3.4', at },
      { type: 'UPDATE', changes: { subscriber: { pin: '9999' } }, at },
    ])
    expect(statusOf(s)).toBe('draft')
    expect(s.context.details.approval).toBeNull()
    expect(s.context.details.subscriber.pin).toBe('9999')
  })

  test('a rejection holds code and message; a corrected resubmission clears it', () => {
    const base: PortOrderEvent[] = [
      { type: 'APPROVE', signature: 'A', ip: '1.2.3.4', at },
      { type: 'SUBMIT', at },
      { type: 'CARRIER_REJECTED', code: 'pin_invalid', message: 'The PIN does not match.', at },
    ]
    const { s } = run(base)
    expect(statusOf(s)).toBe('exception')
    expect(s.context.details.rejection).toEqual({ code: 'pin_invalid', message: 'The PIN does not match.' })
    const again = run([...base, { type: 'UPDATE', changes: { subscriber: { pin: '1234' } }, at }, { type: 'SUBMIT', at }])
    expect(statusOf(again.s)).toBe('submitted')
    expect(again.s.context.details.rejection).toBeNull()
    expect(again.s.context.submissions).toBe(2)
  })

  test('the port done makes the numbers active', () => {
    const { s, actions } = run([
      { type: 'APPROVE', signature: 'A', ip: '1.2.3.4', at },
      { type: 'SUBMIT', at },
      { type: 'CARRIER_FOC', foc_date: '2026-02-02', foc_time: '10:00', at },
      { type: 'CARRIER_PORTED', at },
    ])
    expect(statusOf(s)).toBe('complete')
    expect(actions.find((a) => a.type === 'activateNumbers')?.params).toEqual({ order_id: 'po_1', phone_numbers: ['+12125550100'], at })
  })

  test('refusals name the status and the action', () => {
    const a = admitPortOrderCommand(start(), { type: 'submit' }, at)
    expect(a).toEqual({ refused: { status: 422, code: 'port_order_approval_required', reason: expect.stringContaining('draft') } })
    const approved = transition(portOrderMachine, start(), { type: 'APPROVE', signature: 'A', ip: '1.2.3.4', at })[0]
    const b = admitPortOrderCommand(approved, { type: 'approve', signature: 'A', ip: '1.2.3.4' }, at)
    expect(b).toEqual({ refused: { status: 409, code: 'port_order_invalid_state', reason: 'The port order is approved: it cannot be approved.' } })
  })
})
