import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createActor } from 'xstate'
import {
  admitCallCommand,
  CALL_STATUSES,
  type CallCommand,
  type CallEmitted,
  type CallInput,
  type CallMachineEvent,
  callMachine,
  commandEvent,
  type ConsultationRequest,
  isConnected,
  type SpawnCallRequest,
} from './call'

const T0 = Date.parse('2024-05-01T12:00:00.000Z')
const at = (s: number) => new Date(T0 + s * 1000).toISOString()

function run(input: CallInput, events: CallMachineEvent[]) {
  const emitted: CallEmitted[] = []
  const spawned: SpawnCallRequest[] = []
  const consultations: ConsultationRequest[] = []
  const actor = createActor(
    callMachine.provide({
      actions: {
        emit: (_, p) => void emitted.push(p),
        spawnCall: (_, p) => void spawned.push(p),
        placeConsultation: (_, p) => void consultations.push(p),
      },
    }),
    { input },
  )
  actor.start()
  for (const e of events) actor.send(e)
  return { actor, emitted, spawned, consultations, snapshot: actor.getSnapshot(), types: emitted.map((e) => e.type) }
}

const inbound = (over: Partial<CallInput> = {}): CallInput => ({
  call_id: 'call_1',
  direction: 'inbound',
  from_number: '+15551230000',
  from_name: 'Caller',
  to_number: '+15559870000',
  started_at: at(0),
  user_id: 'u1',
  to_user_id: 'u1',
  ...over,
})
const outbound = (over: Partial<CallInput> = {}): CallInput => ({
  call_id: 'call_2',
  direction: 'outbound',
  from_number: '+15559870000',
  to_number: '+15551230000',
  started_at: at(0),
  user_id: 'me',
  from_user_id: 'me',
  ...over,
})

const ANSWERED_KEYS = ['call_id', 'direction', 'from_number', 'from_name', 'to_number', 'user_id', 'to_user_id', 'started_at', 'answered_at', 'connected_at']
const ALLOWED_KEYS: Record<CallEmitted['type'], string[]> = {
  'call.initiated': ['call_id', 'direction', 'from_number', 'to_number', 'user_id', 'from_user_id', 'started_at'],
  'call.incoming': ['call_id', 'direction', 'from_number', 'from_name', 'to_number', 'user_id', 'from_user_id', 'to_user_id', 'started_at'],
  'call.ringing': ['call_id', 'user_id', 'direction', 'from_number', 'from_name', 'to_number', 'ringing_at'],
  'call.answered': ANSWERED_KEYS,
  'call.end': [...ANSWERED_KEYS, 'ended_at', 'duration_seconds', 'status'],
  'call.transfer': ['call_id', 'direction', 'from_number', 'to_number', 'transferred_to', 'transferred_by', 'related_call', 'transferred_at'],
  'call.emergency': [
    'call_id',
    'to_number',
    'user_id',
    'device_id',
    'extension',
    'location_id',
    'location_name',
    'location_address',
    'e911_provisioned',
    'placed_at',
  ],
}
/** keys that may be omitted (rules 4, 5, 7). Every other allowed key must be present. */
const OPTIONAL = new Set(['from_user_id', 'to_user_id', 'location_id', 'location_name'])
const optionalFor = (type: CallEmitted['type'], key: string) =>
  OPTIONAL.has(key) || (key === 'user_id' && (type === 'call.answered' || type === 'call.end' || type === 'call.ringing'))

function checkShape(e: CallEmitted) {
  const allowed = ALLOWED_KEYS[e.type]
  const keys = Object.keys(e.data)
  for (const k of keys) expect(allowed).toContain(k)
  for (const k of allowed) if (!optionalFor(e.type, k)) expect(keys).toContain(k)
  for (const k of ['from_user_id', 'to_user_id']) {
    if (k in e.data) expect(typeof (e.data as unknown as Record<string, unknown>)[k]).toBe('string')
  }
  if (e.type === 'call.answered' || e.type === 'call.end' || e.type === 'call.ringing') {
    if ('user_id' in e.data) expect(typeof e.data.user_id).toBe('string')
  }
}

function endOf(r: ReturnType<typeof run>) {
  const last = r.emitted[r.emitted.length - 1]
  if (last?.type !== 'call.end') throw new Error(`last event is ${last?.type}`)
  return last.data
}

describe('call.v1 lifecycle paths', () => {
  test('machine id carries its version', () => {
    expect(callMachine.id).toBe('call.v1')
  })

  test('inbound answered → completed, with timestamps from events', () => {
    const r = run(inbound(), [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'RING', user_id: 'u1', at: at(1.5) }, // second device of the same user
      { type: 'ANSWER', user_id: 'u1', at: at(4) },
      { type: 'HANGUP', side: 'caller', at: at(64.9) },
    ])
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.end'])
    r.emitted.forEach(checkShape)
    const end = endOf(r)
    expect(end).toMatchObject({
      status: 'completed',
      user_id: 'u1',
      to_user_id: 'u1',
      answered_at: at(4),
      connected_at: at(4),
      ended_at: at(64.9),
      duration_seconds: 60,
      started_at: at(0),
    })
    expect(r.snapshot.status).toBe('done')
    expect(r.snapshot.context.ringing_at).toBe(at(1))
  })

  test('ring group: one call.ringing per user, answering user is user_id', () => {
    const r = run(inbound({ user_id: null, to_user_id: undefined }), [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'RING', user_id: 'u2', at: at(1) },
      { type: 'RING', user_id: 'u1', at: at(2) },
      { type: 'ANSWER', user_id: 'u3', at: at(3) }, // never rung: ignored
      { type: 'ANSWER', user_id: 'u2', at: at(5) },
      { type: 'RING', user_id: 'u4', at: at(6) }, // after answer: ignored
      { type: 'HANGUP', side: 'callee', at: at(10) },
    ])
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.ringing', 'call.answered', 'call.end'])
    expect(r.emitted[0]!.data).toMatchObject({ user_id: null })
    expect(r.emitted[0]!.data).not.toHaveProperty('to_user_id')
    expect(endOf(r)).toMatchObject({ user_id: 'u2', to_user_id: 'u2', duration_seconds: 5 })
  })

  test('no-answer by ring timeout: connected_at null, user_id is the single rung user', () => {
    const r = run(inbound(), [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'TIMER', timer: 'ring_timeout', at: at(21) },
    ])
    const end = endOf(r)
    expect(end).toMatchObject({ status: 'no-answer', user_id: 'u1', answered_at: null, connected_at: null, duration_seconds: 21 })
    expect(r.types).not.toContain('call.answered')
  })

  test('unanswered ring-all with several users: user_id omitted', () => {
    const r = run(inbound({ user_id: null, to_user_id: undefined }), [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'RING', user_id: 'u2', at: at(1) },
      { type: 'HANGUP', side: 'caller', at: at(8) },
    ])
    expect(endOf(r)).not.toHaveProperty('user_id')
    expect(endOf(r).status).toBe('no-answer')
  })

  test('busy and failed', () => {
    expect(endOf(run(outbound(), [{ type: 'BUSY', at: at(2) }]))).toMatchObject({ status: 'busy', duration_seconds: 2, user_id: 'me' })
    expect(
      endOf(
        run(outbound(), [
          { type: 'RING', at: at(1) },
          { type: 'FAIL', at: at(3) },
        ]),
      ),
    ).toMatchObject({
      status: 'failed',
      connected_at: null,
    })
  })

  test('outbound answered by the remote party; click-to-call never rings the initiating user', () => {
    const r = run(outbound(), [
      { type: 'RING', user_id: 'me', at: at(0.5) }, // the initiating user's own phone
      { type: 'RING', at: at(1) }, // remote ringback
      { type: 'ANSWER', at: at(5) },
      { type: 'HANGUP', side: 'callee', at: at(35) },
    ])
    // the far end's ring is one call.ringing without user_id; the initiator's own phone none
    expect(r.types).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
    r.emitted.forEach(checkShape)
    expect(r.emitted[1]!.data).toEqual({
      call_id: 'call_2',
      direction: 'outbound',
      from_number: '+15559870000',
      from_name: null,
      to_number: '+15551230000',
      ringing_at: at(1),
    })
    expect(r.emitted[0]!.data).toEqual({
      call_id: 'call_2',
      direction: 'outbound',
      from_number: '+15559870000',
      to_number: '+15551230000',
      user_id: 'me',
      from_user_id: 'me',
      started_at: at(0),
    })
    expect(endOf(r)).toMatchObject({ status: 'completed', user_id: 'me', duration_seconds: 30, connected_at: at(5) })
    expect(endOf(r)).not.toHaveProperty('to_user_id')
  })

  test('voicemail with a stored message → voicemail; connected_at null', () => {
    const r = run(inbound(), [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'VOICEMAIL', at: at(20) },
      { type: 'HOLD', at: at(21) }, // nobody to hold: ignored
      { type: 'MESSAGE_STORED', at: at(40) },
      { type: 'HANGUP', side: 'caller', at: at(41) },
    ])
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.end'])
    expect(endOf(r)).toMatchObject({ status: 'voicemail', answered_at: at(20), connected_at: null, user_id: 'u1', duration_seconds: 21 })
  })

  test('voicemail reached but no message stored → no-answer', () => {
    const r = run(inbound(), [
      { type: 'VOICEMAIL', at: at(2) },
      { type: 'HANGUP', side: 'caller', at: at(5) },
    ])
    expect(endOf(r)).toMatchObject({ status: 'no-answer', answered_at: at(2), connected_at: null, user_id: 'u1' })
  })

  test('a voice app answers: answered_at without connected_at, completed when the caller hangs up; a notify app only follows', () => {
    const r = run(inbound({ user_id: null, to_user_id: undefined }), [
      { type: 'APP_NOTIFY', app: 'va_watch', at: at(1) },
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'APP_ANSWER', app: 'va_ai', ai_agent: 'aia_1', at: at(31) },
      { type: 'ANSWER', user_id: 'u1', at: at(32) }, // the app has the call: ignored
      { type: 'HOLD', at: at(33) }, // nobody to hold: ignored
      { type: 'HANGUP', side: 'caller', at: at(91) },
    ])
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.end'])
    r.emitted.forEach(checkShape)
    expect(endOf(r)).toMatchObject({ status: 'completed', answered_at: at(31), connected_at: null, duration_seconds: 60, user_id: 'u1' })
    expect(r.snapshot.context.handled_by).toEqual({ app: 'va_ai', ai_agent: 'aia_1' })
    expect(r.snapshot.context.apps).toEqual(['va_watch', 'va_ai'])
  })

  test('the box a voicemail answer names, and an AI agent’s name, are kept for what follows the call', () => {
    const vm = run(inbound(), [{ type: 'VOICEMAIL', box: { type: 'shared', id: 'svb_1' }, at: at(2) }])
    expect(vm.snapshot.context.voicemail_box).toEqual({ type: 'shared', id: 'svb_1' })
    expect(run(inbound(), [{ type: 'VOICEMAIL', at: at(2) }]).snapshot.context.voicemail_box).toBeUndefined()
    const ai = run(inbound(), [{ type: 'APP_ANSWER', app: 'va_1', ai_agent: 'aia_1', ai_agent_name: 'Ava', at: at(2) }])
    expect(ai.snapshot.context.handled_by).toEqual({ app: 'va_1', ai_agent: 'aia_1', ai_agent_name: 'Ava' })
  })

  test('a voice app’s call takes hangup and a blind transfer, and refuses hold with a reason', () => {
    const r = run(inbound(), [{ type: 'APP_ANSWER', app: 'va_1', at: at(2) }])
    expect(admitCallCommand(r.snapshot, { command: 'hold' }, at(3))).toEqual({
      refused: { code: 'call_not_active', reason: 'is handled by a voice app: only hangup and a blind transfer apply' },
    })
    expect('event' in admitCallCommand(r.snapshot, { command: 'hangup' }, at(3))).toBe(true)
    const moved = admitCallCommand(r.snapshot, { command: 'transfer', to: 'u2', mode: 'blind', new_call_id: 'call_x' }, at(3))
    expect('event' in moved).toBe(true)
    if (!('event' in moved)) return
    r.actor.send(moved.event)
    expect(r.emitted.map((e) => e.type).slice(-2)).toEqual(['call.transfer', 'call.end'])
    expect(endOf(r)).toMatchObject({ status: 'completed', connected_at: null })
    expect(r.spawned).toHaveLength(1)
  })

  test('hold/resume and recording flags while answered', () => {
    const actorEvents: CallMachineEvent[] = [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'ANSWER', user_id: 'u1', at: at(2) },
    ]
    const r1 = run(inbound({ record: true }), actorEvents)
    expect(r1.snapshot.context.recording).toEqual({ on: true, paused: false })
    const r2 = run(inbound({ record: true }), [...actorEvents, { type: 'HOLD', at: at(3) }, { type: 'RECORDING_PAUSE', at: at(3) }])
    expect(r2.snapshot.value).toEqual({ answered: { connected: 'held' } })
    expect(r2.snapshot.context.recording).toEqual({ on: true, paused: true })
    const r3 = run(inbound({ record: true }), [
      ...actorEvents,
      { type: 'HOLD', at: at(3) },
      { type: 'RECORDING_PAUSE', at: at(3) },
      { type: 'RESUME', at: at(9) },
      { type: 'RECORDING_RESUME', at: at(9) },
      { type: 'HANGUP', side: 'caller', at: at(12) },
    ])
    expect(r3.types).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.end'])
    expect(endOf(r3)).toMatchObject({ status: 'completed', duration_seconds: 10 })
    const r4 = run(inbound(), [...actorEvents, { type: 'RECORDING_START', at: at(3) }, { type: 'HOLD', at: at(4) }, { type: 'RESUME', at: at(5) }])
    expect(r4.snapshot.value).toEqual({ answered: { connected: 'active' } })
    expect(r4.snapshot.context.recording).toEqual({ on: true, paused: false })
  })

  test('blind transfer: call.transfer then call.end, and a spawnCall request for the new call', () => {
    const r = run(inbound(), [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'ANSWER', user_id: 'u1', at: at(2) },
      { type: 'BLIND_TRANSFER', to: 'u9', by: 'u1', new_call_id: 'call_new', at: at(12) },
      { type: 'HANGUP', side: 'caller', at: at(20) }, // after the end: ignored
    ])
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.transfer', 'call.end'])
    r.emitted.forEach(checkShape)
    expect(r.emitted[3]!.data).toEqual({
      call_id: 'call_1',
      direction: 'inbound',
      from_number: '+15551230000',
      to_number: '+15559870000',
      transferred_to: 'u9',
      transferred_by: 'u1',
      related_call: 'call_new',
      transferred_at: at(12),
    })
    expect(endOf(r)).toMatchObject({ status: 'completed', ended_at: at(12), duration_seconds: 10 })
    expect(r.spawned).toEqual([
      { call_id: 'call_new', related_call: 'call_1', transferred_to: 'u9', transferred_by: 'u1', from_number: '+15551230000', from_name: 'Caller', at: at(12) },
    ])
  })

  test('a call placed by a transfer emits no call.emergency', () => {
    const e = { device_id: 'd', extension: '100', location_id: 'l', location_name: 'HQ', location_address: '1 Main', e911_provisioned: true }
    const r = run(outbound({ to_number: '911', emergency: e, placed_by_transfer: { related_call: 'call_0' } }), [])
    expect(r.types).toEqual(['call.initiated'])
  })

  test('warm transfer consultation: initiated, answered, call.transfer last, no call.end', () => {
    const r = run(
      outbound({
        to_number: '+15550001111',
        user_id: 'u1',
        from_user_id: 'u1',
        to_user_id: 'u2',
        direction: 'internal',
        consultation: { related_call: 'call_primary' },
      }),
      [
        { type: 'RING', user_id: 'u2', at: at(1) },
        { type: 'ANSWER', user_id: 'u2', at: at(3) },
        { type: 'BLIND_TRANSFER', to: 'x', by: 'u1', new_call_id: 'n', at: at(4) }, // not on a consultation call
        { type: 'COMPLETE_WARM_TRANSFER', to: 'u2', by: 'u1', at: at(9) },
        { type: 'HANGUP', side: 'caller', at: at(10) },
      ],
    )
    expect(r.types).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.transfer'])
    expect(r.emitted[3]!.data).toMatchObject({ related_call: 'call_primary', transferred_to: 'u2', transferred_by: 'u1', transferred_at: at(9) })
    expect(r.snapshot.status).toBe('done')
    expect(r.spawned).toEqual([])
  })

  test('a phone’s call to consult (an attended transfer) completes with the held call named: call.transfer is its last event', () => {
    const r = run(outbound({ to_user_id: 'u2', direction: 'internal', user_id: 'u1', from_user_id: 'u1' }), [
      { type: 'RING', user_id: 'u2', at: at(1) },
      { type: 'ANSWER', user_id: 'u2', at: at(2) },
      // naming itself is no hand-over
      { type: 'COMPLETE_WARM_TRANSFER', to: 'u2', by: 'u1', related_call: 'call_2', at: at(4) },
      { type: 'COMPLETE_WARM_TRANSFER', to: 'u2', by: 'u1', related_call: 'call_held', at: at(5) },
    ])
    expect(r.types).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.transfer'])
    expect(r.emitted[3]!.data).toMatchObject({ related_call: 'call_held', transferred_to: 'u2', transferred_by: 'u1', transferred_at: at(5) })
    expect(r.snapshot.status).toBe('done')
  })

  test('warm transfer is refused on a primary call; consultation abandoned ends normally', () => {
    const primary = run(inbound(), [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'ANSWER', user_id: 'u1', at: at(2) },
      { type: 'COMPLETE_WARM_TRANSFER', to: 'u2', by: 'u1', at: at(5) },
    ])
    expect(primary.types).not.toContain('call.transfer')
    const consult = run(outbound({ consultation: { related_call: null } }), [
      { type: 'ANSWER', at: at(1) },
      { type: 'HANGUP', side: 'caller', at: at(4) },
    ])
    expect(consult.types).toEqual(['call.initiated', 'call.answered', 'call.end'])
  })

  test('emergency with e911 provisioned: all location fields', () => {
    const e = { device_id: 'dev1', extension: '101', location_id: 'loc1', location_name: 'HQ', location_address: '1 Main St', e911_provisioned: true }
    const r = run(outbound({ to_number: '933', emergency: e }), [
      { type: 'ANSWER', at: at(1) },
      { type: 'HANGUP', side: 'caller', at: at(3) },
    ])
    expect(r.types).toEqual(['call.initiated', 'call.emergency', 'call.answered', 'call.end'])
    r.emitted.forEach(checkShape)
    expect(r.emitted[1]!.data).toEqual({
      call_id: 'call_2',
      to_number: '933',
      user_id: 'me',
      device_id: 'dev1',
      extension: '101',
      location_id: 'loc1',
      location_name: 'HQ',
      location_address: '1 Main St',
      e911_provisioned: true,
      placed_at: at(0),
    })
  })

  test('emergency without e911: location_id and location_name omitted', () => {
    const e = { device_id: 'dev1', extension: null, location_id: 'loc1', location_name: 'HQ', location_address: null, e911_provisioned: false }
    const r = run(outbound({ to_number: '911', emergency: e }), [])
    expect(r.types).toEqual(['call.initiated', 'call.emergency'])
    expect(r.emitted[1]!.data).not.toHaveProperty('location_id')
    expect(r.emitted[1]!.data).not.toHaveProperty('location_name')
    expect(r.emitted[1]!.data).toMatchObject({ e911_provisioned: false })
  })

  test('events with an invalid `at` are ignored', () => {
    const r = run(inbound(), [
      { type: 'RING', user_id: 'u1', at: 'not-a-time' },
      { type: 'HANGUP', side: 'caller', at: '' },
    ])
    expect(r.types).toEqual(['call.incoming'])
    expect(r.snapshot.status).toBe('active')
  })

  test('a persisted snapshot resumes without re-emitting', () => {
    const r = run(inbound(), [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'ANSWER', user_id: 'u1', at: at(2) },
    ])
    const persisted = JSON.parse(JSON.stringify(r.actor.getPersistedSnapshot()))
    const emitted: CallEmitted[] = []
    const actor = createActor(callMachine.provide({ actions: { emit: (_, p) => void emitted.push(p) } }), {
      snapshot: persisted,
      input: inbound(),
    })
    actor.start()
    actor.send({ type: 'HANGUP', side: 'caller', at: at(7) })
    expect(emitted.map((e) => e.type)).toEqual(['call.end'])
    expect(emitted[0]!.data).toMatchObject({ duration_seconds: 5, status: 'completed' })
  })
})

// ---------------------------------------------------------------- random scenarios

const USERS = ['me', 'u1', 'u2', 'u3'] as const
type EvNoAt = CallMachineEvent extends infer E ? (E extends CallMachineEvent ? Omit<E, 'at'> : never) : never
type Step = { dt: number; ev: EvNoAt; badAt: boolean }

const userArb = fc.option(fc.constantFrom(...USERS), { nil: undefined })
// weights keep terminating inputs rare enough that answered, voicemail and transfer paths are all reached
const evArb: fc.Arbitrary<EvNoAt> = fc.oneof(
  { weight: 8, arbitrary: userArb.map((user_id) => ({ type: 'RING' as const, user_id })) },
  { weight: 6, arbitrary: userArb.map((user_id) => ({ type: 'ANSWER' as const, user_id })) },
  { weight: 2, arbitrary: fc.constant({ type: 'VOICEMAIL' as const }) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.record({
        type: fc.constant('APP_ANSWER' as const),
        app: fc.constantFrom('va_1', 'va_2'),
        ai_agent: fc.option(fc.constant('aia_1'), { nil: undefined }),
      }),
      fc.record({ type: fc.constant('APP_NOTIFY' as const), app: fc.constantFrom('va_1', 'va_2') }),
    ),
  },
  { weight: 3, arbitrary: fc.constant({ type: 'MESSAGE_STORED' as const }) },
  { weight: 2, arbitrary: fc.constantFrom({ type: 'HOLD' as const }, { type: 'RESUME' as const }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      { type: 'RECORDING_START' as const },
      { type: 'RECORDING_PAUSE' as const },
      { type: 'RECORDING_RESUME' as const },
      { type: 'RECORDING_STOP' as const },
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom({ type: 'BUSY' as const }, { type: 'FAIL' as const }, { type: 'TIMER' as const, timer: 'ring_timeout' as const }) },
  { weight: 1, arbitrary: fc.constantFrom('caller' as const, 'callee' as const).map((side) => ({ type: 'HANGUP' as const, side })) },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('BLIND_TRANSFER' as const),
      to: fc.constantFrom('u2', '+15550009999'),
      by: fc.constantFrom(...USERS),
      new_call_id: fc.constant('call_spawned'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('COMPLETE_WARM_TRANSFER' as const),
      to: fc.constantFrom('u2', 'u3'),
      by: fc.constantFrom(...USERS),
      // a phone's attended transfer names the held call (any call but this one)
      related_call: fc.constantFrom(undefined, 'call_held'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('WARM_TRANSFER' as const),
      to: fc.constantFrom('u2', '+15550009999'),
      by: fc.constantFrom(...USERS),
      consultation_call_id: fc.constant('call_consult'),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ type: 'BOGUS' } as unknown as EvNoAt) },
)
const stepArb: fc.Arbitrary<Step> = fc.record({
  dt: fc.integer({ min: 0, max: 40_000 }),
  ev: evArb,
  badAt: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
})
const inputArb: fc.Arbitrary<CallInput> = fc
  .record({
    direction: fc.constantFrom('inbound' as const, 'outbound' as const, 'internal' as const),
    user_id: fc.option(fc.constantFrom(...USERS), { nil: null }),
    from_user: fc.boolean(),
    to_user_id: fc.option(fc.constantFrom('u1', 'u2'), { nil: undefined }),
    consultation: fc.boolean(),
    via_transfer: fc.boolean(),
    emergency: fc.option(fc.boolean(), { nil: undefined }),
    record: fc.boolean(),
    startMs: fc.integer({ min: 0, max: 10_000_000 }),
  })
  .map((r) => ({
    call_id: 'call_r',
    direction: r.direction,
    from_number: '+15550001',
    from_name: r.direction === 'inbound' ? 'Someone' : null,
    to_number: r.emergency === undefined ? '+15550002' : '933',
    started_at: new Date(T0 + r.startMs).toISOString(),
    user_id: r.user_id,
    ...(r.from_user && r.direction !== 'inbound' && r.user_id ? { from_user_id: r.user_id } : {}),
    ...(r.to_user_id ? { to_user_id: r.to_user_id } : {}),
    ...(r.consultation && r.direction !== 'inbound' ? { consultation: { related_call: 'call_primary' } } : {}),
    ...(r.via_transfer ? { placed_by_transfer: { related_call: 'call_orig' } } : {}),
    ...(r.emergency !== undefined
      ? { emergency: { device_id: 'd', extension: '1', location_id: 'l', location_name: 'n', location_address: 'a', e911_provisioned: r.emergency } }
      : {}),
    record: r.record,
  }))

/** Reference model: what the final status and reported users must be, computed from the inputs alone. */
function model(input: CallInput, events: CallMachineEvent[]) {
  type Phase = 'pre' | 'connected' | 'vm' | 'app' | 'ended' | 'transferred'
  let phase: Phase = 'pre'
  let status: string | null = null
  let answeredBy: string | null = null
  let connected = false
  let stored = false
  let answeredAt: string | null = null
  let endedAt: string | null = null
  let spawned = 0
  let consulted = 0
  const rung: string[] = []
  let remoteRang = false
  let byApp = false
  const initiator = input.direction === 'inbound' ? null : (input.user_id ?? input.from_user_id ?? null)
  const end = (s: string, t: string) => {
    phase = 'ended'
    status = s
    endedAt = t
  }
  for (const e of events) {
    if (Number.isNaN(Date.parse(e.at))) continue
    if (phase === 'pre') {
      if (e.type === 'RING' && e.user_id && e.user_id !== initiator && !rung.includes(e.user_id)) rung.push(e.user_id)
      else if (e.type === 'RING' && !e.user_id && input.direction !== 'inbound' && !input.consultation) remoteRang = true
      else if (e.type === 'ANSWER' && (e.user_id ? rung.includes(e.user_id) : input.direction !== 'inbound')) {
        phase = 'connected'
        connected = true
        answeredBy = e.user_id ?? null
        answeredAt = e.at
      } else if (e.type === 'VOICEMAIL') {
        phase = 'vm'
        answeredAt = e.at
      } else if (e.type === 'APP_ANSWER') {
        phase = 'app'
        byApp = true
        answeredAt = e.at
      } else if (e.type === 'BUSY') end('busy', e.at)
      else if (e.type === 'FAIL') end('failed', e.at)
      else if (e.type === 'TIMER' || e.type === 'HANGUP') end('no-answer', e.at)
    } else if (phase === 'connected') {
      if (e.type === 'HANGUP') end('completed', e.at)
      else if (e.type === 'FAIL') end('failed', e.at)
      else if (e.type === 'BLIND_TRANSFER' && !input.consultation) {
        end('completed', e.at)
        spawned++
      } else if (e.type === 'WARM_TRANSFER' && !input.consultation) consulted++
      else if (e.type === 'COMPLETE_WARM_TRANSFER' && (input.consultation || e.related_call)) phase = 'transferred'
    } else if (phase === 'app') {
      // a voice app's call: done when someone hangs up (completed: the app took it) or it is transferred
      if (e.type === 'HANGUP') end('completed', e.at)
      else if (e.type === 'FAIL') end('failed', e.at)
      else if (e.type === 'BLIND_TRANSFER' && !input.consultation) {
        end('completed', e.at)
        spawned++
      }
    } else if (phase === 'vm') {
      if (e.type === 'MESSAGE_STORED') stored = true
      else if (e.type === 'FAIL') end('failed', e.at)
      else if (e.type === 'HANGUP') end(stored ? 'voicemail' : 'no-answer', e.at)
    }
  }
  let userId: string | undefined
  if (input.direction === 'outbound') userId = input.user_id ?? undefined
  else if (answeredBy) userId = answeredBy
  else if (rung.length === 1) userId = rung[0]
  else if (rung.length === 0 && input.direction === 'inbound' && input.user_id) userId = input.user_id
  return { phase, status, connected, answeredAt, endedAt, userId, rung, remoteRang, spawned, consulted, byApp }
}

describe('call.v1 random scenarios obey the Call events rules', () => {
  test('property: event stream invariants + agreement with the reference model', () => {
    fc.assert(
      fc.property(
        inputArb,
        fc.boolean(),
        fc.array(stepArb, { maxLength: 25 }),
        fc.constantFrom('caller' as const, 'callee' as const),
        (input, answeredPrefix, rest, side) => {
          // half the scenarios start with an answer attempt so that in-call paths (hold, transfers, recording) are well covered
          const prefix: Step[] = answeredPrefix
            ? [
                { dt: 1000, ev: { type: 'RING', user_id: 'u1' }, badAt: false },
                { dt: 2000, ev: { type: 'ANSWER', user_id: 'u1' }, badAt: false },
                { dt: 0, ev: { type: 'ANSWER' }, badAt: false },
              ]
            : []
          const steps = [...prefix, ...rest]
          let t = Date.parse(input.started_at)
          const events: CallMachineEvent[] = steps.map((s) => {
            t += s.dt
            return { ...s.ev, at: s.badAt ? 'garbage' : new Date(t).toISOString() } as CallMachineEvent
          })
          // a final hangup so that every call reaches its final event
          events.push({ type: 'HANGUP', side, at: new Date(t + 1000).toISOString() })
          const r = run(input, events)
          const m = model(input, events)
          const types = r.types

          // every event has exactly the spec's fields
          r.emitted.forEach(checkShape)
          // first event: initiated / incoming, direction kept
          expect(types[0]).toBe(input.direction === 'inbound' ? 'call.incoming' : 'call.initiated')
          expect(types.filter((x) => x === 'call.initiated' || x === 'call.incoming').length).toBe(1)

          // final event: call.end exactly once and last; or, for a completed warm transfer's consultation call, call.transfer last and no call.end
          const ends = types.filter((x) => x === 'call.end').length
          const last = r.emitted[r.emitted.length - 1]!
          expect(r.snapshot.status).toBe('done')
          if (m.phase === 'transferred') {
            // a consultation call, or a phone's call to consult naming the held call
            const namesHeld = events.some((e) => e.type === 'COMPLETE_WARM_TRANSFER' && e.related_call !== undefined)
            expect(input.consultation !== undefined || namesHeld).toBe(true)
            expect(ends).toBe(0)
            expect(last.type).toBe('call.transfer')
            expect(types.filter((x) => x === 'call.transfer').length).toBe(1)
          } else {
            expect(m.phase as string).toBe('ended')
            expect(ends).toBe(1)
            expect(last.type).toBe('call.end')
          }

          // call.ringing once per (call, user), never the initiating user, only before the answer
          const ringings = r.emitted.filter((e) => e.type === 'call.ringing')
          const ringUsers = ringings.flatMap((e) => (e.data.user_id === undefined ? [] : [e.data.user_id]))
          // and once for the far end of a call to a number, without user_id
          expect(ringings.length - ringUsers.length).toBe(m.remoteRang ? 1 : 0)
          expect(new Set(ringUsers).size).toBe(ringUsers.length)
          expect(ringUsers).toEqual(m.rung)
          if (input.direction !== 'inbound' && input.user_id) expect(ringUsers).not.toContain(input.user_id)
          const answeredIdx = types.indexOf('call.answered')
          if (answeredIdx >= 0) expect(types.lastIndexOf('call.ringing')).toBeLessThan(answeredIdx)
          expect(types.filter((x) => x === 'call.answered').length).toBeLessThanOrEqual(1)
          expect(answeredIdx >= 0).toBe(m.answeredAt !== null)

          // call.emergency: once right after call.initiated when flagged and not placed via transfer
          const wantsEmergency = !!input.emergency && input.direction !== 'inbound' && !input.placed_by_transfer
          expect(types.filter((x) => x === 'call.emergency').length).toBe(wantsEmergency ? 1 : 0)
          if (wantsEmergency) expect(types[1]).toBe('call.emergency')

          // warm transfer: one consultation call placed per accepted WARM_TRANSFER, no event on this call
          expect(r.consultations.length).toBe(m.consulted)
          for (const c of r.consultations) expect(c).toMatchObject({ call_id: 'call_consult', related_call: input.call_id })

          // blind transfer: call.transfer right before call.end plus one spawnCall request
          expect(r.spawned.length).toBe(m.spawned)
          if (m.spawned) {
            expect(types.slice(-2)).toEqual(['call.transfer', 'call.end'])
            const tr = r.emitted[r.emitted.length - 2]!
            expect(tr.data).toMatchObject({ related_call: 'call_spawned', transferred_to: r.spawned[0]!.transferred_to })
          } else if (m.phase !== 'transferred') {
            expect(types).not.toContain('call.transfer')
          }

          if (last.type === 'call.end') {
            const d = last.data
            // status in the allowed set and as the model predicts
            expect(CALL_STATUSES).toContain(d.status)
            expect(d.status).toBe(m.status as never)
            // connected_at null iff nobody answered (voicemail answer and unanswered calls have none)
            expect(d.connected_at === null).toBe(!m.connected)
            // completed: a person took the call, or a voice app did (answered, nobody connected)
            if (d.status === 'completed' && !m.byApp) expect(d.connected_at).not.toBeNull()
            if (d.status === 'voicemail') expect(d.connected_at).toBeNull()
            expect(d.answered_at).toBe(m.answeredAt)
            expect(d.ended_at).toBe(m.endedAt!)
            // user_id: rule 4
            if (m.userId === undefined) expect(d).not.toHaveProperty('user_id')
            else expect(d.user_id).toBe(m.userId)
            if (input.direction === 'outbound' && input.user_id) expect(d.user_id).toBe(input.user_id)
            // duration: integer seconds from answer (or start) to end, never negative
            const from = Date.parse(d.answered_at ?? d.started_at)
            expect(Number.isInteger(d.duration_seconds)).toBe(true)
            expect(d.duration_seconds).toBeGreaterThanOrEqual(0)
            expect(d.duration_seconds).toBe(Math.floor((Date.parse(d.ended_at) - from) / 1000))
            // call.answered and call.end agree
            if (answeredIdx >= 0) {
              const a = r.emitted[answeredIdx]!.data as unknown as Record<string, unknown>
              for (const k of ANSWERED_KEYS) expect((d as unknown as Record<string, unknown>)[k]).toEqual(a[k])
            }
          }

          // nothing after the final event: replaying more input emits nothing new
          const more = run(input, [
            ...events,
            { type: 'HANGUP', side: 'caller', at: new Date(t + 5000).toISOString() },
            { type: 'RING', user_id: 'u3', at: new Date(t + 6000).toISOString() },
          ])
          expect(more.types).toEqual(types)
        },
      ),
      { numRuns: 800, seed: Number(process.env.FC_SEED ?? 4242) },
    )
  })
})

// ---------------------------------------------------------------- commands

describe('call control commands: the machine admits them', () => {
  const answered = (over: Partial<CallInput> = {}) =>
    run(inbound(over), [
      { type: 'RING', user_id: 'u1', at: at(1) },
      { type: 'ANSWER', user_id: 'u1', at: at(2) },
    ])

  test('WARM_TRANSFER holds the call (held or not) and asks for the consultation call; refused on a consultation call', () => {
    const r = answered()
    r.actor.send({ type: 'WARM_TRANSFER', to: 'u2', by: 'u1', consultation_call_id: 'call_c', at: at(5) })
    expect(r.actor.getSnapshot().value).toEqual({ answered: { connected: 'held' } })
    expect(r.consultations).toEqual([{ call_id: 'call_c', related_call: 'call_1', to: 'u2', by: 'u1', at: at(5) }])
    r.actor.send({ type: 'WARM_TRANSFER', to: 'u3', by: 'u1', consultation_call_id: 'call_d', at: at(6) })
    expect(r.actor.getSnapshot().value).toEqual({ answered: { connected: 'held' } })
    expect(r.consultations.map((c) => c.call_id)).toEqual(['call_c', 'call_d'])
    expect(r.types).toEqual(['call.incoming', 'call.ringing', 'call.answered'])

    const consultation = run(outbound({ consultation: { related_call: 'call_1' } }), [{ type: 'ANSWER', at: at(1) }])
    consultation.actor.send({ type: 'WARM_TRANSFER', to: 'u2', by: 'me', consultation_call_id: 'call_x', at: at(2) })
    expect(consultation.consultations).toEqual([])
    expect(consultation.actor.getSnapshot().value).toEqual({ answered: { connected: 'active' } })
  })

  const admit = (r: ReturnType<typeof run>, c: CallCommand) => admitCallCommand(r.actor.getSnapshot(), c, at(9))
  const refusal = (r: ReturnType<typeof run>, c: CallCommand) => {
    const a = admit(r, c)
    return 'refused' in a ? a.refused.code : 'admitted'
  }
  const blind: CallCommand = { command: 'transfer', to: 'u2', mode: 'blind', new_call_id: 'call_n' }
  const warm: CallCommand = { command: 'transfer', to: 'u2', mode: 'warm', consultation_call_id: 'call_c' }

  test('which state takes which command, with the refusal the API reports', () => {
    const ringing = run(inbound(), [{ type: 'RING', user_id: 'u1', at: at(1) }])
    expect(refusal(ringing, { command: 'hangup' })).toBe('admitted')
    for (const c of [{ command: 'hold' }, { command: 'resume' }, blind, warm, { command: 'recording_pause' }] as CallCommand[]) {
      expect(admit(ringing, c)).toEqual({ refused: { code: 'call_not_active', reason: 'is not answered' } })
    }
    expect(refusal(ringing, { command: 'complete_transfer' })).toBe('call_transfer_not_allowed')

    const talking = answered({ record: true })
    expect(refusal(talking, { command: 'hold' })).toBe('admitted')
    expect(admit(talking, { command: 'resume' })).toEqual({ refused: { code: 'call_not_active', reason: 'is not on hold' } })
    expect(refusal(talking, blind)).toBe('admitted')
    expect(refusal(talking, warm)).toBe('admitted')
    expect(refusal(talking, { command: 'recording_pause' })).toBe('admitted')
    expect(refusal(talking, { command: 'recording_resume' })).toBe('recording_not_paused')
    expect(refusal(talking, { command: 'complete_transfer' })).toBe('call_transfer_not_allowed')
    talking.actor.send({ type: 'HOLD', at: at(3) })
    expect(admit(talking, { command: 'hold' })).toEqual({ refused: { code: 'call_not_active', reason: 'is already on hold' } })
    expect(refusal(talking, { command: 'resume' })).toBe('admitted')

    const unrecorded = answered()
    expect(refusal(unrecorded, { command: 'recording_pause' })).toBe('recording_not_active')

    // A phone's own hold: only the phone (or a warm transfer's hand-over) takes it off.
    const phoneHeld = answered()
    phoneHeld.actor.send({ type: 'HOLD', by_phone: true, at: at(3) })
    expect(admit(phoneHeld, { command: 'resume' })).toEqual({
      refused: { code: 'call_not_active', reason: 'was put on hold from a phone, which takes it off hold itself' },
    })
    phoneHeld.actor.send({ type: 'RESUME', at: at(4) })
    expect(phoneHeld.actor.getSnapshot().value).toEqual({ answered: { connected: 'held' } })
    phoneHeld.actor.send({ type: 'RESUME', by_phone: true, at: at(5) })
    expect(phoneHeld.actor.getSnapshot().value).toEqual({ answered: { connected: 'active' } })
    // Then an API hold is the API's to take off.
    phoneHeld.actor.send({ type: 'HOLD', at: at(6) })
    expect(refusal(phoneHeld, { command: 'resume' })).toBe('admitted')
    phoneHeld.actor.send({ type: 'RESUME', at: at(7) })
    expect(phoneHeld.actor.getSnapshot().value).toEqual({ answered: { connected: 'active' } })
    const handedOver = answered()
    handedOver.actor.send({ type: 'HOLD', by_phone: true, at: at(3) })
    handedOver.actor.send({ type: 'RESUME', handed_to: 'u2', at: at(4) })
    expect(handedOver.actor.getSnapshot().value).toEqual({ answered: { connected: 'active' } })

    const consultation = run(outbound({ consultation: { related_call: 'call_1' }, to_user_id: 'u2' }), [
      { type: 'RING', user_id: 'u2', at: at(1) },
      { type: 'ANSWER', user_id: 'u2', at: at(2) },
    ])
    expect(refusal(consultation, blind)).toBe('call_transfer_not_allowed')
    expect(refusal(consultation, warm)).toBe('call_transfer_not_allowed')
    expect(admit(consultation, { command: 'complete_transfer' })).toEqual({ event: { type: 'COMPLETE_WARM_TRANSFER', to: 'u2', by: 'me', at: at(9) } })

    const ended = run(inbound(), [{ type: 'HANGUP', side: 'caller', at: at(1) }])
    for (const c of [{ command: 'hangup' }, { command: 'hold' }, blind, { command: 'complete_transfer' }] as CallCommand[]) {
      expect(admit(ended, c)).toEqual({ refused: { code: 'call_not_active', reason: 'has ended' } })
    }
  })

  test('the command events: hangup by the account side, transfers by the call’s user', () => {
    const ctx = answered().actor.getSnapshot().context
    expect(commandEvent({ command: 'hangup' }, ctx, at(9))).toEqual({ type: 'HANGUP', side: 'callee', at: at(9) })
    expect(commandEvent(blind, ctx, at(9))).toEqual({ type: 'BLIND_TRANSFER', to: 'u2', by: 'u1', new_call_id: 'call_n', at: at(9) })
    expect(commandEvent(warm, ctx, at(9))).toEqual({ type: 'WARM_TRANSFER', to: 'u2', by: 'u1', consultation_call_id: 'call_c', at: at(9) })
    const out = run(outbound(), []).actor.getSnapshot().context
    expect(commandEvent({ command: 'hangup' }, out, at(9))).toEqual({ type: 'HANGUP', side: 'caller', at: at(9) })
  })

  const commandArb: fc.Arbitrary<CallCommand> = fc.oneof(
    fc.constantFrom<CallCommand>(
      { command: 'hangup' },
      { command: 'hold' },
      { command: 'resume' },
      { command: 'complete_transfer' },
      { command: 'recording_pause' },
      { command: 'recording_resume' },
    ),
    fc.constantFrom(blind, warm),
  )

  test('property: a command is admitted exactly when the machine takes its event, and an admitted command moves the call', () => {
    fc.assert(
      fc.property(inputArb, fc.array(stepArb, { maxLength: 12 }), commandArb, (input, steps, command) => {
        let t = Date.parse(input.started_at)
        const events = steps.map((s) => {
          t += s.dt
          return { ...s.ev, at: new Date(t).toISOString() } as CallMachineEvent
        })
        const r = run(input, events)
        const snapshot = r.actor.getSnapshot()
        const when = new Date(t + 1000).toISOString()
        const a = admitCallCommand(snapshot, command, when)
        const event = commandEvent(command, snapshot.context, when)
        // one source: the machine's own answer
        expect('event' in a).toBe(snapshot.status === 'active' && snapshot.can(event))
        if ('event' in a) {
          expect(a.event).toEqual(event)
          // taken: the state, the context or the effects move (nothing is admitted that the machine ignores)
          const before = {
            value: JSON.stringify(snapshot.value),
            context: JSON.stringify(snapshot.context),
            n: r.emitted.length + r.spawned.length + r.consultations.length,
          }
          r.actor.send(a.event)
          const after = r.actor.getSnapshot()
          const moved =
            JSON.stringify(after.value) !== before.value ||
            JSON.stringify(after.context) !== before.context ||
            r.emitted.length + r.spawned.length + r.consultations.length !== before.n
          expect(moved).toBe(true)
        } else {
          const code = a.refused.code
          if (snapshot.status !== 'active') expect(code).toBe('call_not_active')
          if (code === 'call_transfer_not_allowed') {
            expect(command.command === 'transfer' || command.command === 'complete_transfer').toBe(true)
            expect(command.command === 'transfer' ? !!input.consultation : !input.consultation).toBe(true)
          }
          if (code === 'recording_not_active' || code === 'recording_not_paused') {
            expect(command.command).toBe(code === 'recording_not_active' ? 'recording_pause' : 'recording_resume')
            expect(isConnected(snapshot)).toBe(true)
          }
        }
      }),
      { numRuns: 600, seed: Number(process.env.FC_SEED ?? 4242) },
    )
  })
})
