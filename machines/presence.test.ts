import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createActor } from 'xstate'
import {
  admitPresenceCommand,
  effectivePresence,
  idleDeadline,
  MANUAL_PRESENCE,
  type ManualPresence,
  type PresenceInput,
  type PresenceMachineEvent,
  type PresenceStatusRecord,
  presenceMachine,
  presenceRecord,
} from './presence'

const T0 = Date.parse('2026-03-01T09:00:00.000Z')
const at = (s: number) => new Date(T0 + s * 1000).toISOString()
const IDLE = 300

function run(events: PresenceMachineEvent[], over: Partial<PresenceInput> = {}) {
  const emitted: PresenceStatusRecord[] = []
  const actor = createActor(presenceMachine.provide({ actions: { emit: (_, p) => void emitted.push(p) } }), {
    input: { user_id: 'usr_1', idle_timeout_seconds: IDLE, at: at(0), ...over },
  }).start()
  for (const e of events) actor.send(e)
  return { actor, emitted, snapshot: actor.getSnapshot(), statuses: emitted.map((e) => e.status) }
}

describe('effectivePresence', () => {
  test('precedence: on_call, then offline, then the manual choice, then idle away, then available', () => {
    const base = { manual: 'available' as ManualPresence, live_calls: [], registered_devices: ['dev_1'], idle: false }
    expect(effectivePresence(base)).toBe('available')
    expect(effectivePresence({ ...base, idle: true })).toBe('away')
    expect(effectivePresence({ ...base, manual: 'dnd', idle: true })).toBe('dnd')
    expect(effectivePresence({ ...base, manual: 'away' })).toBe('away')
    expect(effectivePresence({ ...base, registered_devices: [] })).toBe('offline')
    expect(effectivePresence({ ...base, registered_devices: [], manual: 'dnd' })).toBe('offline')
    // a user on a call is on_call even without a registered device (sandbox calls, WebRTC)
    expect(effectivePresence({ ...base, registered_devices: [], live_calls: ['call_1'], manual: 'dnd' })).toBe('on_call')
  })

  test('as a property: each status holds exactly when its condition does', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...MANUAL_PRESENCE),
        fc.array(fc.string(), { maxLength: 3 }),
        fc.array(fc.string(), { maxLength: 3 }),
        fc.boolean(),
        (manual, live_calls, registered_devices, idle) => {
          const s = effectivePresence({ manual, live_calls, registered_devices, idle })
          expect(s === 'on_call').toBe(live_calls.length > 0)
          expect(s === 'offline').toBe(live_calls.length === 0 && registered_devices.length === 0)
          if (live_calls.length === 0 && registered_devices.length > 0) {
            expect(s).toBe(manual === 'available' ? (idle ? 'away' : 'available') : manual)
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})

describe('presence.v1', () => {
  test('machine id carries its version', () => expect(presenceMachine.id).toBe('presence.v1'))

  test('a user with no registered device is offline; registering makes them available', () => {
    const r = run([{ type: 'DEVICE_REGISTERED', device_id: 'dev_1', at: at(1) }])
    expect(r.statuses).toEqual(['available'])
    expect(presenceRecord(r.snapshot)).toEqual({ user: 'usr_1', status: 'available', status_text: null, updated_at: at(1) })
    r.actor.send({ type: 'DEVICE_UNREGISTERED', device_id: 'dev_1', at: at(2) })
    expect(r.actor.getSnapshot().value).toBe('offline')
  })

  test('on_call during a call and back, counting calls by id', () => {
    const r = run([
      { type: 'DEVICE_REGISTERED', device_id: 'dev_1', at: at(1) },
      { type: 'CALL_STARTED', call_id: 'call_1', at: at(2) },
      { type: 'CALL_STARTED', call_id: 'call_2', at: at(3) },
      { type: 'CALL_STARTED', call_id: 'call_1', at: at(4) }, // repeated: harmless
      { type: 'CALL_ENDED', call_id: 'call_1', at: at(5) },
      { type: 'CALL_ENDED', call_id: 'call_3', at: at(6) }, // never started: harmless
    ])
    expect(r.snapshot.value).toBe('on_call')
    r.actor.send({ type: 'CALL_ENDED', call_id: 'call_2', at: at(7) })
    expect(r.actor.getSnapshot().value).toBe('available')
    expect(r.emitted.map((e) => e.status)).toEqual(['available', 'on_call', 'available'])
  })

  test('a manual choice is kept under on_call and shows again after the call', () => {
    const r = run(
      [
        { type: 'SET_MANUAL', status: 'dnd', status_text: 'In a meeting', at: at(1) },
        { type: 'CALL_STARTED', call_id: 'call_1', at: at(2) },
        { type: 'CALL_ENDED', call_id: 'call_1', at: at(3) },
      ],
      { registered_devices: ['dev_1'] },
    )
    expect(r.statuses).toEqual(['dnd', 'on_call', 'dnd'])
    expect(r.emitted.at(-1)).toEqual({ user: 'usr_1', status: 'dnd', status_text: 'In a meeting', updated_at: at(3) })
  })

  test('a changed status_text alone is published', () => {
    const r = run([{ type: 'SET_MANUAL', status: 'available', status_text: 'Back at 3', at: at(1) }], { registered_devices: ['dev_1'] })
    expect(r.emitted).toEqual([{ user: 'usr_1', status: 'available', status_text: 'Back at 3', updated_at: at(1) }])
  })

  test('idle timeout gives away; a stale timer fire is dropped; activity brings the user back', () => {
    const r = run([{ type: 'ACTIVITY', at: at(100) }], { registered_devices: ['dev_1'] })
    expect(idleDeadline(r.snapshot.context)).toBe(at(100 + IDLE))
    r.actor.send({ type: 'TIMER', timer: 'idle_timeout', at: at(IDLE) }) // scheduled before the activity
    expect(r.actor.getSnapshot().value).toBe('available')
    r.actor.send({ type: 'TIMER', timer: 'idle_timeout', at: at(100 + IDLE) })
    expect(r.actor.getSnapshot().value).toBe('away')
    expect(idleDeadline(r.actor.getSnapshot().context)).toBeNull()
    r.actor.send({ type: 'ACTIVITY', at: at(1000) })
    expect(r.actor.getSnapshot().value).toBe('available')
  })

  test('an activity report carries the timeout: it starts, changes or (0) stops it; an invalid one is refused', () => {
    const r = run([], { registered_devices: ['dev_1'], idle_timeout_seconds: 0 })
    expect(idleDeadline(r.actor.getSnapshot().context)).toBeNull()
    r.actor.send({ type: 'ACTIVITY', idle_timeout_seconds: 60, at: at(10) })
    expect(idleDeadline(r.actor.getSnapshot().context)).toBe(at(70))
    r.actor.send({ type: 'ACTIVITY', idle_timeout_seconds: -1, at: at(20) })
    r.actor.send({ type: 'ACTIVITY', idle_timeout_seconds: 1.5, at: at(20) })
    expect(idleDeadline(r.actor.getSnapshot().context)).toBe(at(70))
    r.actor.send({ type: 'TIMER', timer: 'idle_timeout', at: at(70) })
    expect(r.actor.getSnapshot().value).toBe('away')
    // A manual away is the user's: activity leaves it; dnd likewise.
    r.actor.send({ type: 'SET_MANUAL', status: 'away', at: at(80) })
    r.actor.send({ type: 'ACTIVITY', idle_timeout_seconds: 60, at: at(90) })
    expect(r.actor.getSnapshot().value).toBe('away')
    r.actor.send({ type: 'SET_MANUAL', status: 'available', at: at(100) })
    r.actor.send({ type: 'ACTIVITY', idle_timeout_seconds: 0, at: at(110) })
    expect(idleDeadline(r.actor.getSnapshot().context)).toBeNull()
    r.actor.send({ type: 'TIMER', timer: 'idle_timeout', at: at(100_000) })
    expect(r.actor.getSnapshot().value).toBe('available')
  })

  test('idle_timeout_seconds 0 disables the idle timeout', () => {
    const r = run([{ type: 'TIMER', timer: 'idle_timeout', at: at(100_000) }], { registered_devices: ['dev_1'], idle_timeout_seconds: 0 })
    expect(r.snapshot.value).toBe('available')
  })
})

describe('presence.v1 admission (PUT /v1/me/presence)', () => {
  const snap = () => run([], { registered_devices: ['dev_1'] }).snapshot

  test('available, dnd and away are taken, with status_text up to 100 characters', () => {
    for (const status of MANUAL_PRESENCE) {
      expect(admitPresenceCommand(snap(), { status, status_text: 'x'.repeat(100) }, at(1))).toEqual({
        event: { type: 'SET_MANUAL', status, status_text: 'x'.repeat(100), at: at(1) },
      })
    }
  })

  test('on_call and offline are set by the service and cannot be set manually', () => {
    for (const status of ['on_call', 'offline']) {
      const r = admitPresenceCommand(snap(), { status }, at(1))
      expect(r).toEqual({ refused: { code: 'presence_status_not_settable', field: 'status', reason: expect.stringContaining(status) } })
    }
  })

  test('an unknown status or a status_text over 100 characters is a validation error naming the field', () => {
    expect(admitPresenceCommand(snap(), { status: 'busy' }, at(1))).toMatchObject({ refused: { code: 'validation_error', field: 'status' } })
    expect(admitPresenceCommand(snap(), { status: 'away', status_text: 'x'.repeat(101) }, at(1))).toMatchObject({
      refused: { code: 'validation_error', field: 'status_text' },
    })
  })
})

// ---------------------------------------------------------------- property: the state is always the function of its inputs

const CALLS = ['call_1', 'call_2']
const DEVICES = ['dev_1', 'dev_2']
type Raw = { dt: number; kind: number; pick: number; status: string; text: string | null | undefined }
const rawArb: fc.Arbitrary<Raw> = fc.record({
  dt: fc.integer({ min: 0, max: 400 }),
  kind: fc.integer({ min: 0, max: 8 }),
  pick: fc.integer({ min: 0, max: 1 }),
  status: fc.constantFrom('available', 'dnd', 'away', 'on_call', 'offline'),
  text: fc.option(fc.constantFrom('lunch', 'x'.repeat(101)), { nil: undefined }),
})

function toEvent(r: Raw, t: number): PresenceMachineEvent {
  const a = at(t)
  switch (r.kind) {
    case 0:
      return { type: 'SET_MANUAL', status: r.status as ManualPresence, status_text: r.text, at: a }
    case 1:
      return { type: 'CALL_STARTED', call_id: CALLS[r.pick]!, at: a }
    case 2:
      return { type: 'CALL_ENDED', call_id: CALLS[r.pick]!, at: a }
    case 3:
      return { type: 'DEVICE_REGISTERED', device_id: DEVICES[r.pick]!, at: a }
    case 4:
      return { type: 'DEVICE_UNREGISTERED', device_id: DEVICES[r.pick]!, at: a }
    case 5:
      return { type: 'ACTIVITY', at: a }
    default:
      return { type: 'TIMER', timer: 'idle_timeout', at: a }
  }
}

describe('presence.v1 properties', () => {
  test('after every event the state is effectivePresence of an independent model of the inputs, and every change is published once', () => {
    fc.assert(
      fc.property(fc.array(rawArb, { maxLength: 40 }), (raws) => {
        const r = run([])
        let manual: ManualPresence = 'available'
        let text: string | null = null
        const calls = new Set<string>()
        const devices = new Set<string>()
        let lastActivity = 0
        let idle = false
        let shown = { status: r.snapshot.value as string, text: null as string | null }
        let t = 0
        for (const raw of raws) {
          t += raw.dt
          const ev = toEvent(raw, t)
          const before = r.emitted.length
          const admitted =
            ev.type !== 'SET_MANUAL' || 'event' in admitPresenceCommand(r.actor.getSnapshot(), { status: ev.status, status_text: ev.status_text }, ev.at)
          r.actor.send(ev)
          switch (ev.type) {
            case 'SET_MANUAL':
              if (admitted) {
                manual = ev.status
                if (ev.status_text !== undefined) text = ev.status_text
                lastActivity = t
                idle = false
              }
              break
            case 'CALL_STARTED':
              calls.add(ev.call_id)
              lastActivity = t
              idle = false
              break
            case 'CALL_ENDED':
              calls.delete(ev.call_id)
              lastActivity = t
              idle = false
              break
            case 'DEVICE_REGISTERED':
              devices.add(ev.device_id)
              break
            case 'DEVICE_UNREGISTERED':
              devices.delete(ev.device_id)
              break
            case 'ACTIVITY':
              lastActivity = t
              idle = false
              break
            case 'TIMER':
              if (!idle && t - lastActivity >= IDLE) idle = true
              break
          }
          const s = r.actor.getSnapshot()
          const expected = effectivePresence({ manual, live_calls: [...calls], registered_devices: [...devices], idle })
          expect(s.value).toBe(expected)
          expect(s.context.status).toBe(expected)
          expect(s.context.manual).toBe(manual)
          expect(s.context.status_text).toBe(text)
          const published = r.emitted.slice(before)
          const changed = expected !== shown.status || text !== shown.text
          expect(published.length).toBe(changed ? 1 : 0)
          if (changed) {
            expect(published[0]).toEqual({ user: 'usr_1', status: expected, status_text: text, updated_at: ev.at })
            shown = { status: expected, text }
          }
          expect(s.value === 'on_call' || s.value === 'offline').toBe(calls.size > 0 || devices.size === 0)
        }
      }),
      { numRuns: 300, seed: Number(process.env.FC_SEED ?? 4242) },
    )
  })
})
