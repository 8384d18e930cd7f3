import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createActor } from 'xstate'
import {
  acceptsQueueEvent,
  agentStatusFromPresence,
  findEntry,
  maxWaitDeadline,
  nextDispatch,
  type QueueCancelOffer,
  type QueueContext,
  type QueueInput,
  type QueueMachineEvent,
  type QueueOffer,
  type QueueTimeout,
  queueConfig,
  queueMachine,
  queueOrder,
} from './queue'
import { QUEUE_EVENT_TYPES, type QueueEmitted, withQueueAliases } from './queue-events'

const T0 = Date.parse('2026-03-02T14:00:00.000Z')
const at = (s: number) => new Date(T0 + s * 1000).toISOString()

type Effect =
  | { type: 'emit'; e: QueueEmitted }
  | { type: 'offer'; o: QueueOffer }
  | { type: 'cancel'; c: QueueCancelOffer }
  | { type: 'timeout'; t: QueueTimeout }

function start(over: Partial<QueueInput> = {}) {
  const effects: Effect[] = []
  const actor = createActor(
    queueMachine.provide({
      actions: {
        emit: (_, e) => void effects.push({ type: 'emit', e }),
        offer: (_, o) => void effects.push({ type: 'offer', o }),
        cancelOffer: (_, c) => void effects.push({ type: 'cancel', c }),
        toTimeoutTarget: (_, t) => void effects.push({ type: 'timeout', t }),
      },
    }),
    { input: { queue_id: 'que_1', queue_name: 'Support', strategy: 'ring_all', ...over } },
  ).start()
  const send = (...events: QueueMachineEvent[]) => {
    for (const e of events) actor.send(e)
  }
  const emitted = () => effects.flatMap((f) => (f.type === 'emit' ? [f.e] : []))
  const offers = () => effects.flatMap((f) => (f.type === 'offer' ? [f.o] : []))
  const ctx = () => actor.getSnapshot().context
  const order = () => queueOrder(ctx()).map((e) => e.call_id)
  return { actor, effects, send, emitted, offers, ctx, order, types: () => emitted().map((e) => e.type) }
}

const caller = (call_id: string, t: number, priority?: number): QueueMachineEvent => ({
  type: 'ENQUEUE',
  call_id,
  from_number: '+15551230000',
  from_name: 'Pat',
  to_number: '+15559870000',
  at: at(t),
  ...(priority === undefined ? {} : { priority }),
})
const agent = (user_id: string, t: number, status: 'available' | 'busy' | 'wrapping_up' | 'offline' = 'available'): QueueMachineEvent => ({
  type: 'AGENT_STATUS',
  user_id,
  status,
  endpoint_id: `ep_${user_id}`,
  at: at(t),
})

// the spec's fields, per event ("Queue events"); position_at_admit may be omitted
const COMMON = ['call_id', 'queue', 'queue_name', 'from_number', 'from_name', 'to_number', 'position_at_admit', 'wait_seconds']
const CALLBACK = ['queue', 'from_number', 'to_number', 'callback']
const KEYS: Record<QueueEmitted['type'], string[]> = {
  'queue.call.queued': [...COMMON, 'queued_at'],
  'queue.call.dispatched': [...COMMON, 'agents_claimed', 'targets_dispatched', 'dispatched_at'],
  'queue.call.answered': [...COMMON, 'agent_user', 'agent_endpoint', 'answered_at'],
  'queue.call.abandoned': [...COMMON, 'abandoned_at'],
  'queue.call.timed_out': [...COMMON, 'timed_out_at'],
  'queue.call.completed': [...COMMON, 'agent_user', 'agent_endpoint', 'completed_at'],
  'queue.call.callback_requested': [...CALLBACK, 'queue_name', 'original_priority', 'original_entered_at', 'requested_at'],
  'queue.call.callback_attempted': [...CALLBACK, 'attempt_number', 'result', 'next_attempt_at'],
  'queue.call.callback_failed': [...CALLBACK, 'attempts', 'reason'],
}
const checkShape = (e: QueueEmitted) => expect(Object.keys(e.data).sort()).toEqual([...KEYS[e.type]].sort())

describe('queue.v1: order and dispatch', () => {
  test('machine id carries its version', () => expect(queueMachine.id).toBe('queue.v1'))

  test('callers wait in arrival order, higher priority first; position_at_admit counts those ahead', () => {
    const q = start()
    q.send(caller('c1', 0), caller('c2', 1), caller('vip', 2, 5), caller('c3', 3))
    expect(q.order()).toEqual(['vip', 'c1', 'c2', 'c3'])
    expect(q.emitted().map((e) => (e.data as { position_at_admit?: number }).position_at_admit)).toEqual([1, 2, 1, 4])
    expect(q.emitted()[0]).toEqual({
      type: 'queue.call.queued',
      data: {
        call_id: 'c1',
        queue: 'que_1',
        queue_name: 'Support',
        from_number: '+15551230000',
        from_name: 'Pat',
        to_number: '+15559870000',
        position_at_admit: 1,
        wait_seconds: 0,
        queued_at: at(0),
      },
    })
  })

  test('ring all: the head caller rings every available agent; the first to answer takes it, the others stop ringing', () => {
    const q = start()
    q.send(agent('a1', 0), agent('a2', 0), agent('a3', 0, 'busy'), caller('c1', 10), caller('c2', 11))
    expect(q.offers()).toEqual([
      {
        call_id: 'c1',
        callback_id: null,
        agents: [
          { user_id: 'a1', endpoint_id: 'ep_a1' },
          { user_id: 'a2', endpoint_id: 'ep_a2' },
        ],
        at: at(10),
      },
    ])
    expect(q.emitted()[1]).toMatchObject({
      type: 'queue.call.dispatched',
      data: { call_id: 'c1', agents_claimed: 2, targets_dispatched: 2, dispatched_at: at(10) },
    })
    q.send({ type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a2', at: at(15) })
    expect(q.effects.filter((f) => f.type === 'cancel')).toEqual([{ type: 'cancel', c: { call_id: 'c1', agents: ['a1'], at: at(15) } }])
    // a1 is free again and c2 is next
    expect(q.offers().at(-1)).toMatchObject({ call_id: 'c2', agents: [{ user_id: 'a1' }] })
    expect(q.emitted().find((e) => e.type === 'queue.call.answered')).toMatchObject({
      data: { call_id: 'c1', agent_user: 'a2', agent_endpoint: 'ep_a2', answered_at: at(15), wait_seconds: 5 },
    })
    q.send({ type: 'CALL_COMPLETED', call_id: 'c1', at: at(75) })
    expect(q.emitted().at(-1)).toMatchObject({
      type: 'queue.call.completed',
      data: { call_id: 'c1', agent_user: 'a2', completed_at: at(75), wait_seconds: 5 },
    })
    q.emitted().forEach(checkShape)
  })

  test('longest idle: the agent available the longest gets the next caller', () => {
    const q = start({ strategy: 'longest_idle' })
    q.send(agent('a1', 5), agent('a2', 1), agent('a3', 3), caller('c1', 10), caller('c2', 11))
    expect(q.offers().map((o) => [o.call_id, o.agents.map((a) => a.user_id)])).toEqual([
      ['c1', ['a2']],
      ['c2', ['a3']],
    ])
  })

  test('longest idle: an agent who lets an offer pass goes to the back, so the caller is offered to the next agent', () => {
    const q = start({ strategy: 'longest_idle' })
    q.send(agent('a1', 1), agent('a2', 2), caller('c1', 10))
    q.send({ type: 'AGENT_DECLINED', call_id: 'c1', user_id: 'a1', at: at(12) })
    q.send({ type: 'OFFER_ENDED', call_id: 'c1', at: at(30) })
    expect(q.offers().map((o) => o.agents[0]!.user_id)).toEqual(['a1', 'a2', 'a1'])
  })

  test('an offer nobody answers puts the caller back in its place, first in line', () => {
    const q = start()
    q.send(caller('c1', 0), caller('c2', 1), agent('a1', 2))
    q.send({ type: 'AGENT_DECLINED', call_id: 'c1', user_id: 'a1', at: at(3) })
    // declined and free again: offered the head again (the runtime reports a busy agent as busy first)
    expect(q.offers().map((o) => o.call_id)).toEqual(['c1', 'c1'])
    q.send(agent('a1', 4, 'busy'), { type: 'OFFER_ENDED', call_id: 'c1', at: at(20) })
    expect(q.order()).toEqual(['c1', 'c2'])
    expect(findEntry(q.ctx(), 'c1')!.phase).toBe('waiting')
  })

  test('an agent reported busy keeps a ringing offer (they may have just picked it up); offline drops it', () => {
    const q = start()
    q.send(caller('c1', 0), agent('a1', 1), agent('a2', 1))
    q.send(agent('a1', 2, 'busy'))
    q.send({ type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', at: at(2) })
    expect(q.types()).toContain('queue.call.answered')
    q.send(caller('c2', 3), agent('a2', 4, 'offline'))
    expect(findEntry(q.ctx(), 'c2')!.phase).toBe('waiting')
  })

  test('the caller hangs up: abandoned, and its agents stop ringing', () => {
    const q = start()
    q.send(caller('c1', 0), agent('a1', 1), { type: 'ABANDON', call_id: 'c1', at: at(40) })
    expect(q.types()).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.abandoned'])
    expect(q.emitted().at(-1)!.data).toMatchObject({ abandoned_at: at(40), wait_seconds: 40 })
    expect(q.effects.filter((f) => f.type === 'cancel')).toEqual([{ type: 'cancel', c: { call_id: 'c1', agents: ['a1'], at: at(40) } }])
    expect(q.ctx().agents.a1!.claimed_by).toBeNull()
  })

  test('wrap-up: after a queue call the agent is wrapping up until its timer, whatever presence says', () => {
    const q = start({ wrap_up_seconds: 30 })
    q.send(agent('a1', 0), caller('c1', 1), { type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', at: at(2) })
    q.send({ type: 'CALL_COMPLETED', call_id: 'c1', at: at(60) }, caller('c2', 61), agent('a1', 62))
    expect(q.ctx().agents.a1).toMatchObject({ status: 'wrapping_up', wrap_until: at(90) })
    expect(q.actor.getSnapshot().can({ type: 'TIMER', timer: 'wrap_up', user_id: 'a1', at: at(89) })).toBe(false)
    q.send({ type: 'TIMER', timer: 'wrap_up', user_id: 'a1', at: at(90) })
    expect(q.offers().at(-1)).toMatchObject({ call_id: 'c2', agents: [{ user_id: 'a1' }] })
  })

  test('agent status from presence', () => {
    expect(['available', 'on_call', 'dnd', 'away', 'offline'].map((p) => agentStatusFromPresence(p as never))).toEqual([
      'available',
      'busy',
      'offline',
      'offline',
      'offline',
    ])
  })
})

describe('queue.v1: timeouts', () => {
  test('max wait sends a waiting caller to the timeout target; a stale or early fire is dropped', () => {
    const q = start({ max_wait_seconds: 120 })
    q.send(caller('c1', 0))
    expect(maxWaitDeadline(q.ctx().config, findEntry(q.ctx(), 'c1')!)).toBe(at(120))
    q.send({ type: 'TIMER', timer: 'max_wait', call_id: 'c1', at: at(119) })
    expect(q.order()).toEqual(['c1'])
    q.send({ type: 'TIMER', timer: 'max_wait', call_id: 'c1', at: at(120) })
    expect(q.types()).toEqual(['queue.call.queued', 'queue.call.timed_out'])
    expect(q.emitted()[1]!.data).toMatchObject({ timed_out_at: at(120), wait_seconds: 120 })
    expect(q.effects.at(-1)).toEqual({ type: 'timeout', t: { call_id: 'c1', reason: 'max_wait', at: at(120) } })
    q.send({ type: 'TIMER', timer: 'max_wait', call_id: 'c1', at: at(121) })
    expect(q.types()).toHaveLength(2)
  })

  test('max wait 0 means the one-hour ceiling', () => {
    expect(maxWaitDeadline(queueConfig({ queue_id: 'q', queue_name: 'Q', strategy: 'ring_all' }), { entered_at: at(0) })).toBe(at(3600))
  })

  test('a ring in progress finishes before the timeout behaviour runs', () => {
    const q = start({ max_wait_seconds: 60 })
    q.send(caller('c1', 0), agent('a1', 50), { type: 'TIMER', timer: 'max_wait', call_id: 'c1', at: at(60) })
    expect(q.types()).not.toContain('queue.call.timed_out')
    q.send({ type: 'OFFER_ENDED', call_id: 'c1', at: at(70) })
    expect(q.types().at(-1)).toBe('queue.call.timed_out')
    // and a ring answered late still counts
    const r = start({ max_wait_seconds: 60 })
    r.send(caller('c1', 0), agent('a1', 50), { type: 'TIMER', timer: 'max_wait', call_id: 'c1', at: at(60) })
    r.send({ type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', at: at(65) })
    expect(r.types().at(-1)).toBe('queue.call.answered')
  })

  test('leave when empty: callers time out when the last agent logs out, and at once when arriving to an empty queue', () => {
    const q = start({ leave_when_empty: true })
    q.send(agent('a1', 0, 'busy'), caller('c1', 1), caller('c2', 2))
    expect(q.order()).toEqual(['c1', 'c2'])
    q.send(agent('a1', 10, 'offline'))
    expect(q.types()).toEqual(['queue.call.queued', 'queue.call.queued', 'queue.call.timed_out', 'queue.call.timed_out'])
    expect(q.effects.filter((f) => f.type === 'timeout').map((f) => (f as { t: QueueTimeout }).t.reason)).toEqual(['leave_when_empty', 'leave_when_empty'])
    q.send(caller('c3', 11))
    expect(q.types().slice(-2)).toEqual(['queue.call.queued', 'queue.call.timed_out'])
  })
})

describe('queue.v1: callbacks keep the caller’s place', () => {
  test('requested, dispatched from its place, attempted until answered', () => {
    const q = start({ callback_retry_seconds: 60 })
    q.send(caller('c1', 0), caller('c2', 1), caller('c3', 2))
    q.send({ type: 'CALLBACK_REQUESTED', call_id: 'c2', callback_id: 'cb_1', at: at(30) })
    expect(q.emitted().at(-1)).toEqual({
      type: 'queue.call.callback_requested',
      data: {
        queue: 'que_1',
        queue_name: 'Support',
        from_number: '+15551230000',
        to_number: '+15559870000',
        callback: 'cb_1',
        original_priority: 0,
        original_entered_at: at(1),
        requested_at: at(30),
      },
    })
    expect(q.order()).toEqual(['c1', 'c2', 'c3'])
    // c1 is served first; then the callback, before c3
    q.send(agent('a1', 40), { type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', at: at(41) }, agent('a2', 42))
    expect(q.offers().at(-1)).toMatchObject({ call_id: 'c2', callback_id: 'cb_1', agents: [{ user_id: 'a2' }] })
    const dispatched = q
      .emitted()
      .filter((e) => e.type === 'queue.call.dispatched')
      .map((e) => (e.data as { call_id: string }).call_id)
    expect(dispatched).toEqual(['c1']) // callbacks are offered without queue.call.dispatched
    q.send({ type: 'AGENT_ANSWERED', call_id: 'c2', user_id: 'a2', at: at(43) })
    expect(findEntry(q.ctx(), 'c2')!.phase).toBe('calling_back')
    q.send({ type: 'CALLBACK_RESULT', callback_id: 'cb_1', result: 'no_answer', at: at(50) })
    expect(q.emitted().find((e) => e.type === 'queue.call.callback_attempted')).toMatchObject({
      type: 'queue.call.callback_attempted',
      data: { callback: 'cb_1', attempt_number: 1, result: 'no_answer', next_attempt_at: at(110) },
    })
    // a2 is free: c3 goes first while the callback waits for its next attempt, which keeps its place
    expect(q.offers().at(-1)).toMatchObject({ call_id: 'c3' })
    expect(q.order()).toEqual(['c2', 'c3'])
    q.send({ type: 'AGENT_ANSWERED', call_id: 'c3', user_id: 'a2', at: at(60) }, { type: 'CALL_COMPLETED', call_id: 'c1', at: at(70) })
    expect(q.offers().at(-1)).toMatchObject({ call_id: 'c3' }) // not before next_attempt_at
    q.send({ type: 'TIMER', timer: 'callback_retry', callback_id: 'cb_1', at: at(110) })
    expect(q.offers().at(-1)).toMatchObject({ call_id: 'c2', callback_id: 'cb_1', agents: [{ user_id: 'a1' }] })
    q.send(
      { type: 'AGENT_ANSWERED', call_id: 'c2', user_id: 'a1', at: at(111) },
      { type: 'CALLBACK_RESULT', callback_id: 'cb_1', result: 'answered', at: at(120) },
    )
    expect(q.emitted().at(-1)).toMatchObject({ type: 'queue.call.callback_attempted', data: { attempt_number: 2, result: 'answered', next_attempt_at: null } })
    expect(q.order()).toEqual([])
    expect(q.ctx().agents.a1!.status).toBe('busy')
    q.emitted().forEach(checkShape)
  })

  test('callback_failed after the last attempt', () => {
    const q = start({ callback_max_attempts: 2, callback_retry_seconds: 10 })
    q.send(caller('c1', 0), { type: 'CALLBACK_REQUESTED', call_id: 'c1', callback_id: 'cb_1', at: at(1) }, agent('a1', 2))
    q.send({ type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', at: at(3) }, { type: 'CALLBACK_RESULT', callback_id: 'cb_1', result: 'busy', at: at(4) })
    q.send({ type: 'TIMER', timer: 'callback_retry', callback_id: 'cb_1', at: at(14) })
    q.send({ type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', at: at(15) }, { type: 'CALLBACK_RESULT', callback_id: 'cb_1', result: 'failed', at: at(16) })
    expect(q.types().slice(-2)).toEqual(['queue.call.callback_attempted', 'queue.call.callback_failed'])
    expect(q.emitted().at(-2)!.data).toMatchObject({ attempt_number: 2, next_attempt_at: null })
    expect(q.emitted().at(-1)!.data).toEqual({
      queue: 'que_1',
      from_number: '+15551230000',
      to_number: '+15559870000',
      callback: 'cb_1',
      attempts: 2,
      reason: 'max_attempts_exceeded',
    })
    expect(q.order()).toEqual([])
  })

  test('a callback is not abandoned, has no max wait, and is only requested while waiting', () => {
    const q = start({ max_wait_seconds: 10 })
    q.send(caller('c1', 0), { type: 'CALLBACK_REQUESTED', call_id: 'c1', callback_id: 'cb_1', at: at(1) })
    const snap = q.actor.getSnapshot()
    expect(snap.can({ type: 'ABANDON', call_id: 'c1', at: at(2) })).toBe(false)
    expect(snap.can({ type: 'TIMER', timer: 'max_wait', call_id: 'c1', at: at(100) })).toBe(false)
    q.send(caller('c2', 2), agent('a1', 3))
    expect(q.actor.getSnapshot().can({ type: 'CALLBACK_REQUESTED', call_id: 'c1', callback_id: 'cb_2', at: at(4) })).toBe(false)
  })
})

describe('queue.v1: routed callers (CALLER_ARRIVED, CALL_ENDED) and the runtime effects', () => {
  type Fx = { type: string; params: any }
  function run(input: Partial<QueueInput> = {}) {
    const fx: Fx[] = []
    const record = (type: string) => (_: unknown, params: unknown) => void fx.push({ type, params })
    const actor = createActor(
      queueMachine.provide({
        actions: {
          emit: record('emit'),
          offer: record('offer'),
          cancelOffer: record('cancelOffer'),
          toTimeoutTarget: record('toTimeoutTarget'),
          callBack: record('callBack'),
          wake: record('wake'),
        },
      }),
      { input: { queue_id: 'que_1', queue_name: 'Support', strategy: 'ring_all', ...input } },
    ).start()
    const send = (...events: QueueMachineEvent[]) => {
      for (const e of events) actor.send(e)
    }
    return { actor, send, fx, ctx: () => actor.getSnapshot().context, emitted: () => fx.filter((f) => f.type === 'emit').map((f) => f.params.type) }
  }
  const arrival = (call_id: string, t: number, over: Record<string, unknown> = {}): QueueMachineEvent =>
    ({ type: 'CALLER_ARRIVED', call_id, from_number: '+15551230000', to_number: '+15559870000', at: at(t), ...over }) as QueueMachineEvent

  test('an early arrival comes back by wake at arrives_at; then its agents join and the caller is offered with its attachment', () => {
    const q = run()
    q.send(arrival('c1', 0, { arrives_at: at(20), agents: [{ user_id: 'a1', status: 'available' }], attachment: { script: 1 } }))
    expect(q.emitted()).toEqual([])
    const wake = q.fx.find((f) => f.type === 'wake')!.params
    expect(wake.at).toBe(at(20))
    expect(wake.event).toMatchObject({ type: 'CALLER_ARRIVED', call_id: 'c1', at: at(20) })
    expect('arrives_at' in wake.event).toBe(false)
    q.send(wake.event)
    expect(q.emitted()).toEqual(['queue.call.queued', 'queue.call.dispatched'])
    expect(q.fx.find((f) => f.type === 'offer')!.params).toMatchObject({ call_id: 'c1', agents: [{ user_id: 'a1' }], attachment: { script: 1 } })
    // the same caller again (its spawn and its command both carry it): taken once, even after it left
    q.send(arrival('c1', 21))
    expect(q.emitted()).toEqual(['queue.call.queued', 'queue.call.dispatched'])
    q.send({ type: 'CALL_ENDED', call_id: 'c1', at: at(22) }, arrival('c1', 23))
    expect(q.emitted()).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.abandoned'])
  })

  test('the members an arrival brings: unknown agents join, absent ones leave, a busy or ringing agent keeps the queue’s status', () => {
    const q = run()
    q.send(agent('a1', 0), agent('a2', 0, 'busy'), agent('gone', 0))
    q.send(
      arrival('c1', 1, {
        agents: [
          { user_id: 'a1', status: 'offline' },
          { user_id: 'a2', status: 'available' },
          { user_id: 'a3', status: 'available' },
        ],
      }),
    )
    const agents = q.ctx().agents
    expect(Object.keys(agents).sort()).toEqual(['a1', 'a2', 'a3'])
    expect(agents.a1!.status).toBe('offline')
    expect(agents.a2!.status).toBe('busy')
    expect(agents.a3!.claimed_by).toBe('c1')
  })

  test('an arrival carries the queue’s settings: a changed max wait applies to the callers arriving from then on', () => {
    const q = run({ max_wait_seconds: 60 })
    q.send(arrival('c1', 0, { config: { max_wait_seconds: 10, queue_name: 'Renamed' } }))
    expect(q.ctx().config).toMatchObject({ max_wait_seconds: 10, queue_name: 'Renamed' })
    expect(maxWaitDeadline(q.ctx().config, findEntry(q.ctx(), 'c1')!)).toBe(at(10))
  })

  test('CALL_ENDED: a waiting caller abandons, a connected call completes, a callback (caller off the line) stays', () => {
    const q = run()
    q.send(agent('a1', 0), arrival('c1', 0), arrival('c2', 1))
    q.send({ type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', at: at(3) })
    q.send({ type: 'CALLBACK_REQUESTED', call_id: 'c2', callback_id: 'cb2', at: at(4) })
    q.send({ type: 'CALL_ENDED', call_id: 'c2', at: at(4) })
    expect(findEntry(q.ctx(), 'c2')?.callback?.callback_id).toBe('cb2')
    q.send({ type: 'CALL_ENDED', call_id: 'c1', at: at(10) })
    expect(q.emitted().filter((t) => t === 'queue.call.completed')).toHaveLength(1)
    q.send(arrival('c3', 11), { type: 'CALL_ENDED', call_id: 'c3', at: at(12) })
    // c3 arrived while the callback was being offered to a1, so it waited, and left
    expect(q.emitted().at(-1)).toBe('queue.call.abandoned')
  })

  test('ring events that name their offer: a late one of an earlier offer is dropped', () => {
    const q = run()
    q.send(agent('a1', 0), arrival('c1', 0))
    q.send({ type: 'OFFER_ENDED', call_id: 'c1', offered_at: at(0), at: at(15) })
    expect(findEntry(q.ctx(), 'c1')!.offered_at).toBe(at(15))
    // the first ring's end again (a second delivery): not the current offer
    const stale: QueueMachineEvent = { type: 'OFFER_ENDED', call_id: 'c1', offered_at: at(0), at: at(16) }
    expect(q.actor.getSnapshot().can(stale)).toBe(false)
    expect(q.actor.getSnapshot().can({ type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', offered_at: at(0), at: at(17) })).toBe(false)
    q.send({ type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', offered_at: at(15), at: at(18) })
    expect(q.emitted().at(-1)).toBe('queue.call.answered')
  })

  test('an agent takes a callback: callBack names the agent, the caller and the attachment', () => {
    const q = run()
    q.send(arrival('c1', 0, { attachment: { who: 'c1' } }), { type: 'CALLBACK_REQUESTED', call_id: 'c1', callback_id: 'cb1', at: at(1) })
    q.send(agent('a1', 2), { type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', at: at(5) })
    expect(q.fx.filter((f) => f.type === 'callBack').map((f) => f.params)).toEqual([
      { call_id: 'c1', callback_id: 'cb1', agent: { user_id: 'a1', endpoint_id: 'ep_a1' }, at: at(5), attachment: { who: 'c1' } },
    ])
  })

  test('the input’s events are applied at start, with their effects; the runtime is kept apart from the config', () => {
    const q = run({ runtime: { owner: 'acct_1' }, events: [agent('a1', 0), arrival('c1', 0)] })
    expect(q.emitted()).toEqual(['queue.call.queued', 'queue.call.dispatched'])
    expect(q.ctx().runtime).toEqual({ owner: 'acct_1' })
    expect('runtime' in q.ctx().config).toBe(false)
    expect('events' in q.ctx().config).toBe(false)
    q.send(agent('a2', 1))
    expect(q.ctx().runtime).toEqual({ owner: 'acct_1' })
  })
})

describe('queue events and aliases', () => {
  test('the nine event types', () => {
    expect(QUEUE_EVENT_TYPES).toHaveLength(9)
    expect(Object.keys(KEYS).sort()).toEqual([...QUEUE_EVENT_TYPES].sort())
  })

  test('withQueueAliases adds queue_id, agent_user_id, agent_endpoint_id and callback_id with the same values', () => {
    const q = start()
    q.send(agent('a1', 0), caller('c1', 1), { type: 'AGENT_ANSWERED', call_id: 'c1', user_id: 'a1', at: at(2) })
    const answered = withQueueAliases(q.emitted().find((e) => e.type === 'queue.call.answered')!)
    expect(answered).toMatchObject({
      queue: 'que_1',
      queue_id: 'que_1',
      agent_user: 'a1',
      agent_user_id: 'a1',
      agent_endpoint: 'ep_a1',
      agent_endpoint_id: 'ep_a1',
    })
    expect(answered).not.toHaveProperty('callback_id')
    const cb = withQueueAliases({
      type: 'queue.call.callback_failed',
      data: { queue: 'q', from_number: '+1', to_number: '+2', callback: 'cb', attempts: 3, reason: 'max_attempts_exceeded' },
    })
    expect(cb).toMatchObject({ callback: 'cb', callback_id: 'cb', queue_id: 'q' })
  })
})

// ---------------------------------------------------------------- properties

const CALLS = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5']
const AGENTS = ['a0', 'a1', 'a2']
type Raw = { dt: number; kind: number; call: number; agent: number; priority: number; n: number }
const rawArb: fc.Arbitrary<Raw> = fc.record({
  dt: fc.integer({ min: 0, max: 90 }),
  kind: fc.integer({ min: 0, max: 19 }),
  call: fc.integer({ min: 0, max: CALLS.length - 1 }),
  agent: fc.integer({ min: 0, max: AGENTS.length - 1 }),
  priority: fc.integer({ min: 0, max: 2 }),
  n: fc.integer({ min: 0, max: 3 }),
})

function toEvent(r: Raw, t: number, c: QueueContext, step: number): QueueMachineEvent {
  const a = at(t)
  const call_id = CALLS[r.call]!
  const user_id = AGENTS[r.agent]!
  // aim most events at what is there, so that the interesting transitions happen often
  const order = queueOrder(c)
  const offered = order.filter((e) => e.phase === 'offered')
  const target = offered[r.n % Math.max(1, offered.length)]
  const callingBack = order.filter((e) => e.phase === 'calling_back')
  const cbIds = Object.keys(c.callbacks)
  const present = order[r.n % Math.max(1, order.length)]?.call_id ?? call_id
  switch (r.kind) {
    case 0:
    case 1:
    case 2:
      // mostly new calls, sometimes a known id (already queued, or coming back)
      return { type: 'ENQUEUE', call_id: r.n === 0 ? call_id : `n${step}`, from_number: '+15550000000', to_number: '+15559999999', priority: r.priority, at: a }
    case 3:
      // a routed call, with the members as its router saw them (some statuses, one member less now and then)
      return {
        type: 'CALLER_ARRIVED',
        call_id: r.n === 0 ? call_id : `n${step}`,
        from_number: '+15550000000',
        to_number: '+15559999999',
        priority: r.priority,
        agents: AGENTS.slice(r.n === 3 ? 1 : 0).map((u, i) => ({ user_id: u, status: (['available', 'busy', 'offline'] as const)[(i + r.agent) % 3]! })),
        at: a,
      }
    case 4:
      return r.n < 2
        ? { type: 'ABANDON', call_id: present, at: a }
        : { type: 'CALL_ENDED', call_id: r.n === 2 ? present : (Object.keys(c.connected)[0] ?? present), at: a }
    case 5:
      return { type: 'OFFER_ENDED', call_id: target?.call_id ?? call_id, at: a }
    case 6:
      return {
        type: 'AGENT_DECLINED',
        call_id: target?.call_id ?? call_id,
        user_id: target?.offered_to[r.n % Math.max(1, target.offered_to.length)] ?? user_id,
        at: a,
      }
    case 7:
    case 8:
    case 9:
      return {
        type: 'AGENT_ANSWERED',
        call_id: target?.call_id ?? call_id,
        user_id: target?.offered_to[r.agent % Math.max(1, target.offered_to.length)] ?? user_id,
        at: a,
      }
    case 10:
    case 11:
      return { type: 'CALL_COMPLETED', call_id: Object.keys(c.connected)[r.n % Math.max(1, Object.keys(c.connected).length)] ?? call_id, at: a }
    case 12:
      return {
        type: 'CALLBACK_REQUESTED',
        call_id: order.find((e) => e.phase === 'waiting' && !e.callback)?.call_id ?? present,
        callback_id: `cb_${step}`,
        at: a,
      }
    case 13:
    case 14:
      return {
        type: 'CALLBACK_RESULT',
        callback_id: callingBack[0]?.callback?.callback_id ?? cbIds[0] ?? 'cb_x',
        result: (['answered', 'no_answer', 'busy', 'failed'] as const)[r.n]!,
        at: a,
      }
    case 15:
    case 16:
      return { type: 'AGENT_STATUS', user_id, status: (['available', 'available', 'busy', r.priority === 0 ? 'wrapping_up' : 'offline'] as const)[r.n]!, at: a }
    case 17:
      return r.n === 0 ? { type: 'AGENT_REMOVED', user_id, at: a } : { type: 'AGENT_STATUS', user_id, status: 'available', at: a }
    case 18:
      return { type: 'TIMER', timer: 'max_wait', call_id: present, at: a }
    default:
      return r.n % 2 === 0
        ? { type: 'TIMER', timer: 'wrap_up', user_id, at: a }
        : { type: 'TIMER', timer: 'callback_retry', callback_id: cbIds[r.agent % Math.max(1, cbIds.length)] ?? 'cb_x', at: a }
  }
}

const configArb = fc.record({
  strategy: fc.constantFrom('ring_all' as const, 'longest_idle' as const),
  max_wait_seconds: fc.constantFrom(0, 60, 300),
  leave_when_empty: fc.boolean(),
  wrap_up_seconds: fc.constantFrom(0, 30),
  callback_max_attempts: fc.constantFrom(1, 3),
  callback_retry_seconds: fc.constantFrom(0, 60),
})

describe('queue.v1 properties', () => {
  test('random event sequences keep every queue invariant', () => {
    fc.assert(
      fc.property(configArb, fc.boolean(), fc.array(rawArb, { minLength: 10, maxLength: 50, size: 'max' }), (config, staffed, raws) => {
        const q = start(config)
        // half the runs start with every agent available
        if (staffed) for (const u of AGENTS) q.send(agent(u, 0))
        let t = 0
        let arrivals = 0
        let step = 0
        const arrival = new Map<string, number>() // call id → arrival index, while in the queue
        const ended = new Set<string>() // left the queue for good (answered, abandoned, timed out, callback done)
        for (const raw of raws) {
          t += raw.dt
          const before = q.ctx()
          const frozen = JSON.stringify(before)
          const ev = toEvent(raw, t, before, step++)
          const accepted = acceptsQueueEvent(before, ev)
          expect(q.actor.getSnapshot().can(ev)).toBe(accepted)
          const nEffects = q.effects.length
          q.actor.send(ev)
          const after = q.ctx()
          const effects = q.effects.slice(nEffects)
          // a step never changes the previous snapshot, and a refused event changes nothing
          expect(JSON.stringify(before)).toBe(frozen)
          if (!accepted) {
            expect(effects).toEqual([])
            expect(after).toBe(before)
            continue
          }
          const arrived = ev.type === 'ENQUEUE' || ev.type === 'CALLER_ARRIVED'
          if (arrived) {
            // a call may come back after it left (a new stay); never while it is in the queue
            expect(arrival.has(ev.call_id)).toBe(false)
            ended.delete(ev.call_id)
            arrival.set(ev.call_id, arrivals++)
          }
          // one queue.call.queued per admitted arrival, none otherwise
          expect(effects.filter((f) => f.type === 'emit' && f.e.type === 'queue.call.queued').length).toBe(arrived ? 1 : 0)
          const offeredBefore = new Set(
            queueOrder(before)
              .filter((e) => e.phase !== 'waiting')
              .map((e) => e.call_id),
          )
          const offeredThisStep = new Set<string>()
          for (const f of effects) {
            if (f.type === 'emit') {
              checkShape(f.e)
              const id = 'call_id' in f.e.data ? f.e.data.call_id : undefined
              if (id && ['queue.call.answered', 'queue.call.abandoned', 'queue.call.timed_out'].includes(f.e.type)) {
                // a caller leaves the queue once
                expect(ended.has(id)).toBe(false)
                ended.add(id)
                arrival.delete(id)
              }
              if (f.e.type === 'queue.call.completed') expect(ended.has(id!)).toBe(true)
            }
            if (f.type === 'offer') {
              // never dispatched after leaving, never offered twice at once
              expect(ended.has(f.o.call_id)).toBe(false)
              expect(offeredThisStep.has(f.o.call_id)).toBe(false)
              offeredThisStep.add(f.o.call_id)
              const reoffer = offeredBefore.has(f.o.call_id)
              // only again after its previous offer ended in this very step
              if (reoffer) expect(['AGENT_DECLINED', 'OFFER_ENDED', 'AGENT_STATUS', 'AGENT_REMOVED', 'CALLBACK_RESULT', 'CALLER_ARRIVED']).toContain(ev.type)
            }
          }
          for (const id of Object.keys(before.callbacks)) if (!(id in after.callbacks)) arrival.delete(before.callbacks[id]!)
          for (const id of arrival.keys()) if (!findEntry(after, id)) ended.add(id)
          for (const id of [...arrival.keys()]) if (ended.has(id)) arrival.delete(id)

          // order: priority lanes, each in arrival order; callbacks and ringing callers keep their place
          const order = queueOrder(after)
          for (let i = 1; i < order.length; i++) {
            const a = order[i - 1]!
            const b = order[i]!
            expect(a.priority > b.priority || (a.priority === b.priority && arrival.get(a.call_id)! < arrival.get(b.call_id)!)).toBe(true)
          }
          expect(new Set(order.map((e) => e.call_id))).toEqual(new Set(arrival.keys()))
          // claims agree both ways: an agent rings for at most one caller
          const claims = new Map<string, string>()
          for (const e of order) {
            if (e.phase === 'waiting') expect(e.offered_to).toEqual([])
            else expect(e.offered_to.length).toBeGreaterThan(0)
            for (const u of e.offered_to) {
              expect(claims.has(u)).toBe(false)
              claims.set(u, e.call_id)
              expect(after.agents[u]?.claimed_by).toBe(e.call_id)
            }
          }
          for (const a of Object.values(after.agents)) if (a.claimed_by !== null) expect(claims.get(a.user_id)).toBe(a.claimed_by)
          // answered calls are out of the queue
          for (const id of Object.keys(after.connected)) expect(findEntry(after, id)).toBeUndefined()
          // work-conserving: no free agent while someone could be dispatched
          expect(nextDispatch(after, ev.at)).toBeNull()
          // the next dispatch goes to the head: the first caller in order that is waiting
          // and not a callback due later (probed with one more free agent)
          const probe: QueueContext = {
            ...after,
            agents: { ...after.agents, zz: { user_id: 'zz', endpoint_id: null, status: 'available', idle_since: null, claimed_by: null, wrap_until: null } },
          }
          const head = order.find((e) => e.phase === 'waiting' && (!e.callback?.not_before || Date.parse(e.callback.not_before) <= Date.parse(ev.at)))
          const next = nextDispatch(probe, ev.at)
          expect(next?.entry.call_id).toBe(head?.call_id)
          if (next) expect(next.agents.map((x) => x.user_id)).toEqual(['zz'])
          // callbacks: every callback entry is indexed
          for (const e of order) if (e.callback) expect(after.callbacks[e.callback.callback_id]).toBe(e.call_id)
        }
      }),
      { numRuns: 150, seed: Number(process.env.FC_SEED ?? 4242) },
    )
  })
})
