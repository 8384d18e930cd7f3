/**
 * The fax machine against its table (machines/fax.ts header), written out on its own,
 * and the spec's rule: an outbound fax produces exactly one of fax.delivered or
 * fax.failed, and none before it is final (a fast-check property over random walks
 * of carrier answers and cancels, in any order, repeated or late).
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { getInitialSnapshot, transition } from 'xstate'
import { admitFaxCommand, type FaxEvent, type FaxOutcome, type FaxSnapshot, type FaxStatus, faxMachine, faxStatusOf } from './fax'

const start = () =>
  getInitialSnapshot(faxMachine, { fax_id: 'fax_1', from_number: '+15005550006', to_number: '+15005550199', pages: 3, at: '2026-01-15T12:00:00.000Z' })
const at = '2026-01-15T12:00:05.000Z'

const eventArb: fc.Arbitrary<FaxEvent> = fc.oneof(
  fc.record({ type: fc.constant('DIALLED' as const), transport: fc.constantFrom('t38' as const, 'g711' as const), at: fc.constant(at) }),
  fc.record({ type: fc.constant('DELIVERED' as const), at: fc.constant(at) }),
  fc.record({
    type: fc.constant('FAILED' as const),
    error_code: fc.constantFrom('dial_busy' as const, 'dial_no_answer' as const, 'max_attempts_exceeded' as const, 'fax_failed' as const),
    pages_sent: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
    transport: fc.constantFrom('t38' as const, 'g711' as const, null),
    at: fc.constant(at),
  }),
  fc.record({ type: fc.constant('CANCEL' as const), at: fc.constant(at) }),
)

/** The table. */
function table(from: FaxStatus, e: FaxEvent): FaxStatus | 'ignored' {
  if (from === 'queued') {
    if (e.type === 'DIALLED') return 'sending'
    if (e.type === 'FAILED' || e.type === 'CANCEL') return 'failed'
  }
  if (from === 'sending') {
    if (e.type === 'DELIVERED') return 'delivered'
    if (e.type === 'FAILED' || e.type === 'CANCEL') return 'failed'
  }
  return 'ignored'
}

type Step = { snapshot: FaxSnapshot; finished: FaxOutcome[] }
function step(s: FaxSnapshot, e: FaxEvent): Step {
  const [next, actions] = transition(faxMachine, s, e as never)
  const finished = actions.filter((a) => a.type === 'finished').map((a) => a.params as FaxOutcome)
  return { snapshot: next as FaxSnapshot, finished }
}

describe('fax.v1', () => {
  test('starts queued and hands the fax to the carrier once', () => {
    const s = start()
    expect(faxStatusOf(s)).toBe('queued')
  })

  test('every event in every reachable state gives the table’s answer; exactly one final event per fax', () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 12 }), (events) => {
        let s = start()
        const outcomes: FaxOutcome[] = []
        for (const e of events) {
          const from = faxStatusOf(s)
          const expected = table(from, e)
          const r = step(s, e)
          outcomes.push(...r.finished)
          if (expected === 'ignored') expect(faxStatusOf(r.snapshot)).toBe(from)
          else expect(faxStatusOf(r.snapshot)).toBe(expected)
          s = r.snapshot
          const final = s.status === 'done'
          expect(outcomes.length).toBe(final ? 1 : 0)
        }
        // Driven to the end (cancel if nothing else), every fax has its one final event, of the status it ended in.
        if (s.status !== 'done') {
          const r = step(s, { type: 'CANCEL', at })
          outcomes.push(...r.finished)
          s = r.snapshot
        }
        expect(outcomes).toHaveLength(1)
        const o = outcomes[0]!
        expect(o.type).toBe(faxStatusOf(s) === 'delivered' ? 'fax.delivered' : 'fax.failed')
        if (o.type === 'fax.delivered') expect(o.pages).toBe(3)
        else expect(o.error_code).not.toBeNull()
      }),
      { numRuns: 500 },
    )
  })

  test('fax.failed pages: null if never transmitting, 0 if cancelled before the first page', () => {
    const queuedCancel = step(start(), { type: 'CANCEL', at })
    expect(queuedCancel.finished[0]).toMatchObject({ type: 'fax.failed', pages: null, error_code: 'cancelled', transport: null })
    const sending = step(start(), { type: 'DIALLED', transport: 'g711', at }).snapshot
    expect(step(sending, { type: 'CANCEL', at }).finished[0]).toMatchObject({ pages: 0, transport: 'g711' })
  })

  test('cancel is refused once final (the machine decides)', () => {
    const done = step(step(start(), { type: 'DIALLED', transport: 't38', at }).snapshot, { type: 'DELIVERED', at }).snapshot
    expect(admitFaxCommand(done, { type: 'cancel' }, at)).toMatchObject({ refused: { code: 'fax_invalid_state' } })
    expect(admitFaxCommand(start(), { type: 'cancel' }, at)).toEqual({ event: { type: 'CANCEL', at } })
  })
})
