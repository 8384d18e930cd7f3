import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createActor } from 'xstate'
import {
  admitDeviceCommand,
  type CheckSyncNotify,
  type DeviceEmitted,
  type DeviceInput,
  type DeviceMachineEvent,
  deviceMachine,
  isRegistered,
  nextExpiry,
  PROVISIONING_ERROR_CODES,
  provisioningStatus,
  type RegistrationChange,
} from './device'

const T0 = Date.parse('2026-03-01T09:00:00.000Z')
const at = (s: number) => new Date(T0 + s * 1000).toISOString()

const phone: DeviceInput = { device_id: 'dev_1', device_type: 'deskphone', mac_address: '805ec0aabbcc', vendor: 'yealink', model: 'T54W' }

function run(events: DeviceMachineEvent[], input: DeviceInput = phone) {
  const emitted: DeviceEmitted[] = []
  const changes: RegistrationChange[] = []
  const notified: CheckSyncNotify[] = []
  const actor = createActor(
    deviceMachine.provide({
      actions: {
        emit: (_, p) => void emitted.push(p),
        registrationChanged: (_, p) => void changes.push(p),
        notifyCheckSync: (_, p) => void notified.push(p),
      },
    }),
    { input },
  ).start()
  for (const e of events) actor.send(e)
  return { actor, emitted, changes, notified, types: emitted.map((e) => e.type), snapshot: actor.getSnapshot() }
}

const COMMON = ['device', 'device_type', 'mac_address', 'vendor']
const KEYS: Record<DeviceEmitted['type'], string[]> = {
  'device.provisioned': [...COMMON, 'model', 'ip_address', 'provisioned_at'],
  'device.config_fetched': [...COMMON, 'model', 'ip_address', 'fetched_at'],
  'device.provisioning_failed': [...COMMON, 'error_code', 'failed_at'],
}
const checkShape = (e: DeviceEmitted) => expect(Object.keys(e.data).sort()).toEqual([...KEYS[e.type]].sort())

describe('device.v1 provisioning', () => {
  test('machine id carries its version', () => expect(deviceMachine.id).toBe('device.v1'))

  test('a new device is pending-sync until the phone fetches its configuration', () => {
    const r = run([])
    expect(provisioningStatus(r.snapshot)).toBe('pending-sync')
    expect(r.snapshot.context.pending_reason).toBe('created')
  })

  test('the first successful fetch emits device.provisioned then device.config_fetched; later fetches only config_fetched', () => {
    const r = run([
      { type: 'CONFIG_FETCHED', ip_address: '127.0.0.1', at: at(1) },
      { type: 'CONFIG_FETCHED', at: at(2) },
    ])
    expect(r.types).toEqual(['device.provisioned', 'device.config_fetched', 'device.config_fetched'])
    r.emitted.forEach(checkShape)
    expect(r.emitted[0]!.data).toEqual({
      device: 'dev_1',
      device_type: 'deskphone',
      mac_address: '805ec0aabbcc',
      vendor: 'yealink',
      model: 'T54W',
      ip_address: '127.0.0.1',
      provisioned_at: at(1),
    })
    // a fetch that does not say where it came from keeps the last address known
    expect(r.emitted[2]!.data).toMatchObject({ ip_address: '127.0.0.1', fetched_at: at(2) })
    expect(provisioningStatus(r.snapshot)).toBe('synced')
  })

  test('a device set back to pending-sync (update or check-sync) emits device.provisioned again', () => {
    const r = run([
      { type: 'CONFIG_FETCHED', at: at(1) },
      { type: 'UPDATE', model: 'T57W', at: at(2) },
      { type: 'CONFIG_FETCHED', at: at(3) },
      { type: 'CHECK_SYNC', at: at(4) },
      { type: 'CONFIG_FETCHED', at: at(5) },
    ])
    expect(r.types.filter((t) => t === 'device.provisioned')).toHaveLength(3)
    expect(r.emitted[2]).toMatchObject({ type: 'device.provisioned', data: { model: 'T57W', provisioned_at: at(3) } })
  })

  test('a provisioning failure is recorded and emitted without model and ip_address, and does not move the state', () => {
    const pending = run([{ type: 'PROVISIONING_FAILED', error_code: 'unsupported_vendor', at: at(1) }])
    expect(pending.types).toEqual(['device.provisioning_failed'])
    pending.emitted.forEach(checkShape)
    expect(pending.emitted[0]!.data).toMatchObject({ error_code: 'unsupported_vendor', failed_at: at(1) })
    expect(provisioningStatus(pending.snapshot)).toBe('pending-sync')

    const synced = run([
      { type: 'CONFIG_FETCHED', at: at(1) },
      { type: 'PROVISIONING_FAILED', error_code: 'generation_failed', at: at(2) },
    ])
    expect(provisioningStatus(synced.snapshot)).toBe('synced')
    expect(synced.snapshot.context.last_failure).toEqual({ error_code: 'generation_failed', failed_at: at(2) })
  })

  test('an unknown error code or a bad timestamp is refused', () => {
    const r = run([
      { type: 'PROVISIONING_FAILED', error_code: 'credentials_not_found' as never, at: at(1) },
      { type: 'CONFIG_FETCHED', at: 'yesterday' },
    ])
    expect(r.types).toEqual([])
  })

  test('a device restored as synced starts synced', () => {
    expect(provisioningStatus(run([], { ...phone, synced: true }).snapshot)).toBe('synced')
  })
})

describe('device.v1 registrations', () => {
  test('REGISTER binds a contact until it expires; registered flips are reported', () => {
    const r = run([
      { type: 'REGISTER', contact: 'sip:a@127.0.0.1:5062', expires_at: at(60), at: at(0) },
      { type: 'REGISTER', contact: 'sip:b@127.0.0.1:5064', expires_at: at(120), at: at(1) },
      { type: 'EXPIRE', at: at(60) },
    ])
    expect(isRegistered(r.snapshot.context)).toBe(true)
    expect(r.snapshot.context.registrations.map((x) => x.contact)).toEqual(['sip:b@127.0.0.1:5064'])
    expect(nextExpiry(r.snapshot.context)).toBe(at(120))
    r.actor.send({ type: 'EXPIRE', at: at(120) })
    expect(r.changes).toEqual([
      { device_id: 'dev_1', registered: true, at: at(0) },
      { device_id: 'dev_1', registered: false, at: at(120) },
    ])
  })

  test('a refresh moves the expiry; Expires 0 and UNREGISTER remove; * removes all', () => {
    const r = run([
      { type: 'REGISTER', contact: 'sip:a@h', expires_at: at(60), at: at(0) },
      { type: 'REGISTER', contact: 'sip:a@h', expires_at: at(200), at: at(50) },
      { type: 'EXPIRE', at: at(100) },
    ])
    expect(isRegistered(r.snapshot.context)).toBe(true)
    r.actor.send({ type: 'REGISTER', contact: 'sip:a@h', expires_at: at(101), at: at(101) })
    expect(isRegistered(r.actor.getSnapshot().context)).toBe(false)
    r.actor.send({ type: 'REGISTER', contact: 'sip:a@h', expires_at: at(300), at: at(102) })
    r.actor.send({ type: 'REGISTER', contact: 'sip:b@h', expires_at: at(300), at: at(102) })
    r.actor.send({ type: 'UNREGISTER', contact: '*', at: at(103) })
    expect(r.actor.getSnapshot().context.registrations).toEqual([])
    expect(r.changes.map((c) => c.registered)).toEqual([true, false, true, false])
  })

  test('removing a registered device reports it unregistered and ends the actor', () => {
    const r = run([
      { type: 'REGISTER', contact: 'sip:a@h', expires_at: at(60), at: at(0) },
      { type: 'REMOVE', at: at(1) },
    ])
    expect(r.snapshot.status).toBe('done')
    expect(r.changes.at(-1)).toEqual({ device_id: 'dev_1', registered: false, at: at(1) })
  })
})

describe('device.v1 check-sync on a registered phone', () => {
  test('check-sync on a registered phone asks for a NOTIFY to each binding live at that time, and still waits for the fetch', () => {
    const r = run([
      { type: 'CONFIG_FETCHED', at: at(1) },
      { type: 'REGISTER', contact: 'u1|sip:u1@192.0.2.10:5062', expires_at: at(600), at: at(2) },
      { type: 'REGISTER', contact: 'u2|sip:u2@192.0.2.10:5062', expires_at: at(30), at: at(3) },
      // u2's binding ran out at 30 s; no EXPIRE has dropped it yet.
      { type: 'CHECK_SYNC', at: at(40) },
    ])
    expect(r.notified).toEqual([{ device_id: 'dev_1', bindings: [{ contact: 'u1|sip:u1@192.0.2.10:5062', expires_at: at(600) }], at: at(40) }])
    expect(provisioningStatus(r.snapshot)).toBe('pending-sync')
    expect(r.snapshot.context.pending_reason).toBe('check_sync')
    // The machine keeps its bindings as they were: only registration events drop expired ones.
    expect(r.snapshot.context.registrations).toHaveLength(2)
  })

  test('check-sync on a phone with no live binding notifies nothing (it fetches at its next periodic check)', () => {
    const never = run([{ type: 'CHECK_SYNC', at: at(1) }])
    const expired = run([
      { type: 'REGISTER', contact: 'u1|sip:u1@h', expires_at: at(60), at: at(0) },
      { type: 'CHECK_SYNC', at: at(60) },
    ])
    const unregistered = run([
      { type: 'REGISTER', contact: 'u1|sip:u1@h', expires_at: at(600), at: at(0) },
      { type: 'UNREGISTER', contact: '*', at: at(1) },
      { type: 'CHECK_SYNC', at: at(2) },
    ])
    for (const r of [never, expired, unregistered]) {
      expect(r.notified).toEqual([])
      expect(provisioningStatus(r.snapshot)).toBe('pending-sync')
    }
  })

  test('an update (the configuration changed) sends no NOTIFY; neither does a removed device', () => {
    const r = run([
      { type: 'REGISTER', contact: 'u1|sip:u1@h', expires_at: at(600), at: at(0) },
      { type: 'UPDATE', model: 'T57W', at: at(1) },
      { type: 'REMOVE', at: at(2) },
      { type: 'CHECK_SYNC', at: at(3) },
    ])
    expect(r.notified).toEqual([])
  })
})

describe('device.v1 command admission', () => {
  test('update and check-sync are taken in either provisioning state', () => {
    for (const events of [[], [{ type: 'CONFIG_FETCHED', at: at(1) } as DeviceMachineEvent]]) {
      const s = run(events).snapshot
      expect(admitDeviceCommand(s, { command: 'check_sync' }, at(2))).toEqual({ event: { type: 'CHECK_SYNC', at: at(2) } })
      expect(admitDeviceCommand(s, { command: 'update', model: null }, at(2))).toEqual({ event: { type: 'UPDATE', model: null, at: at(2) } })
    }
  })

  test('a removed device takes no command', () => {
    const s = run([{ type: 'REMOVE', at: at(1) }]).snapshot
    expect(admitDeviceCommand(s, { command: 'check_sync' }, at(2))).toEqual({ refused: { code: 'device_removed', reason: 'has been removed' } })
  })
})

// ---------------------------------------------------------------- properties

type Step = { dt: number; ev: DeviceMachineEvent | { type: 'BOGUS' } }
const CONTACTS = ['sip:a@h', 'sip:b@h', 'sip:c@h']
const evArb = (t: number): fc.Arbitrary<DeviceMachineEvent> =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .option(fc.constantFrom('127.0.0.1', '127.0.0.2'), { nil: undefined })
        .map((ip) => ({ type: 'CONFIG_FETCHED' as const, ip_address: ip, at: at(t) })),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom(...PROVISIONING_ERROR_CODES).map((error_code) => ({ type: 'PROVISIONING_FAILED' as const, error_code, at: at(t) })),
    },
    { weight: 1, arbitrary: fc.constant({ type: 'UPDATE' as const, at: at(t) }) },
    { weight: 1, arbitrary: fc.constant({ type: 'CHECK_SYNC' as const, at: at(t) }) },
    {
      weight: 3,
      arbitrary: fc
        .record({ contact: fc.constantFrom(...CONTACTS), ttl: fc.integer({ min: -5, max: 120 }) })
        .map(({ contact, ttl }) => ({ type: 'REGISTER' as const, contact, expires_at: at(t + ttl), at: at(t) })),
    },
    { weight: 1, arbitrary: fc.constantFrom(...CONTACTS, '*').map((contact) => ({ type: 'UNREGISTER' as const, contact, at: at(t) })) },
    { weight: 2, arbitrary: fc.constant({ type: 'EXPIRE' as const, at: at(t) }) },
    { weight: 1, arbitrary: fc.constant({ type: 'REMOVE' as const, at: at(t) }) },
  )

const stepsArb: fc.Arbitrary<Step[]> = fc
  .array(fc.record({ dt: fc.integer({ min: 0, max: 90 }), seed: fc.integer({ min: 0, max: 1 << 30 }), bogus: fc.integer({ min: 0, max: 30 }) }), {
    maxLength: 30,
  })
  .chain((raw) => {
    let t = 0
    const times = raw.map((r) => (t += r.dt))
    return fc
      .tuple(...times.map((time, i) => (raw[i]!.bogus === 0 ? fc.constant({ type: 'BOGUS' } as const) : evArb(time))))
      .map((evs) => evs.map((ev, i) => ({ dt: raw[i]!.dt, ev })))
  })

describe('device.v1 properties', () => {
  test('device.provisioned exactly when leaving pending-sync by a fetch; config_fetched on every fetch; registered follows live bindings; check-sync notifies exactly the live bindings', () => {
    fc.assert(
      fc.property(stepsArb, (steps) => {
        const r = run([])
        // an independent model
        let pending = true
        let removed = false
        let bindings = new Map<string, number>()
        let registered = false
        let expectedChanges = 0
        for (const { ev } of steps) {
          const before = r.emitted.length
          const changesBefore = r.changes.length
          const notifiedBefore = r.notified.length
          r.actor.send(ev as DeviceMachineEvent)
          const types = r.emitted.slice(before).map((e) => e.type)
          if (removed || ev.type === 'BOGUS') {
            expect(types).toEqual([])
            expect(r.changes.length).toBe(changesBefore)
            expect(r.notified.length).toBe(notifiedBefore)
            continue
          }
          const now = Date.parse(ev.at)
          // expired bindings go when the machine hears the time from a registration event (EXPIRE among them)
          if (ev.type === 'REGISTER' || ev.type === 'UNREGISTER' || ev.type === 'EXPIRE') for (const [c, exp] of bindings) if (exp <= now) bindings.delete(c)
          switch (ev.type) {
            case 'CONFIG_FETCHED':
              expect(types).toEqual(pending ? ['device.provisioned', 'device.config_fetched'] : ['device.config_fetched'])
              pending = false
              break
            case 'PROVISIONING_FAILED':
              expect(types).toEqual(['device.provisioning_failed'])
              break
            case 'UPDATE':
              pending = true
              expect(types).toEqual([])
              break
            case 'CHECK_SYNC': {
              pending = true
              expect(types).toEqual([])
              // a NOTIFY exactly when bindings are live at that time, naming exactly those
              const live = [...bindings].filter(([, exp]) => exp > now).map(([c]) => c)
              const asked = r.notified.slice(notifiedBefore)
              if (live.length === 0) expect(asked).toEqual([])
              else {
                expect(asked).toHaveLength(1)
                expect(asked[0]!.at).toBe(ev.at)
                expect(new Set(asked[0]!.bindings.map((b) => b.contact))).toEqual(new Set(live))
              }
              break
            }
            case 'REGISTER': {
              const exp = Date.parse(ev.expires_at)
              if (exp > now) bindings.set(ev.contact, exp)
              else bindings.delete(ev.contact)
              break
            }
            case 'UNREGISTER':
              if (ev.contact === '*') bindings = new Map()
              else bindings.delete(ev.contact)
              break
            case 'REMOVE':
              removed = true
              bindings = new Map()
              break
          }
          if (ev.type !== 'CHECK_SYNC') expect(r.notified.length).toBe(notifiedBefore)
          const nowRegistered = bindings.size > 0
          if (nowRegistered !== registered) expectedChanges++
          registered = nowRegistered
          r.emitted.slice(before).forEach(checkShape)
          const s = r.actor.getSnapshot()
          expect(r.changes.length).toBe(expectedChanges)
          expect(r.changes.at(-1)?.registered ?? false).toBe(registered)
          expect(isRegistered(s.context)).toBe(registered)
          expect(new Set(s.context.registrations.map((b) => b.contact))).toEqual(new Set(bindings.keys()))
          expect(provisioningStatus(s)).toBe(removed ? 'removed' : pending ? 'pending-sync' : 'synced')
        }
        // provisioned never outnumbers the moves into pending (creation plus updates and check-syncs)
        const provisioned = r.emitted.filter((e) => e.type === 'device.provisioned').length
        const resets = steps.filter((s) => s.ev.type === 'UPDATE' || s.ev.type === 'CHECK_SYNC').length
        expect(provisioned).toBeLessThanOrEqual(1 + resets)
      }),
      { numRuns: 300, seed: Number(process.env.FC_SEED ?? 4242) },
    )
  })
})
