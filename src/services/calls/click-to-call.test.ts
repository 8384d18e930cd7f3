import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { classifyDialString, directoryKeys, planClickToCall, type DialableDestination, type Directory } from './click-to-call'
import { noRegisteredDevices } from './registered-devices'

const ALICE = 'usr_01alice'
const BOB = 'usr_01bob'
const dir: Directory = {
  extensions: new Map([
    ['101', BOB],
    ['911', BOB], // an extension may not shadow emergency dialling
    ['555', 'rg_01ringgroup'], // a target that is not (yet) callable
  ]),
  users: new Set([ALICE, BOB]),
}
const phone = [{ id: 'dev_1', kind: 'deskphone' as const }]
const internalBob: DialableDestination = { kind: 'internal', to_user_id: BOB, extension: '101' }
const publicNumber: DialableDestination = { kind: 'public', number: '+15551234567', emergency: false }

describe('classifyDialString', () => {
  test('an extension of the account is internal, to its user', () => {
    expect(classifyDialString('101', dir)).toEqual({ kind: 'internal', to_user_id: BOB, extension: '101' })
    expect(classifyDialString(' 1-0-1 ', dir)).toEqual({ kind: 'internal', to_user_id: BOB, extension: '101' })
  })

  test('a user id of the account is internal; an unknown id is not dialable', () => {
    expect(classifyDialString(BOB, dir)).toEqual({ kind: 'internal', to_user_id: BOB, extension: null })
    expect(classifyDialString('usr_01stranger', dir)).toEqual({ kind: 'invalid', reason: 'is not a user of this account' })
  })

  test('E.164 is public, formatting ignored', () => {
    expect(classifyDialString('+15551234567', dir)).toEqual({ kind: 'public', number: '+15551234567', emergency: false })
    expect(classifyDialString('+1 (555) 123-4567', dir)).toEqual({ kind: 'public', number: '+15551234567', emergency: false })
    expect(classifyDialString('+442071234567', dir)).toEqual({ kind: 'public', number: '+442071234567', emergency: false })
    expect(classifyDialString('+0123', dir).kind).toBe('invalid')
    expect(classifyDialString('+1234567890123456', dir).kind).toBe('invalid')
  })

  test('NANP digits become E.164', () => {
    expect(classifyDialString('5551234567', dir)).toEqual({ kind: 'public', number: '+15551234567', emergency: false })
    expect(classifyDialString('1 555 123 4567', dir)).toEqual({ kind: 'public', number: '+15551234567', emergency: false })
    expect(classifyDialString('0551234567', dir).kind).toBe('invalid') // area code cannot start with 0
  })

  test('emergency codes are public and flagged, even where an extension has the same digits', () => {
    expect(classifyDialString('911', dir)).toEqual({ kind: 'public', number: '911', emergency: true })
    expect(classifyDialString('933', dir)).toEqual({ kind: 'public', number: '933', emergency: true })
    expect(classifyDialString('411', dir)).toEqual({ kind: 'public', number: '411', emergency: false })
  })

  test('an extension whose target is not a user, unknown short digits, letters and blanks are not dialable', () => {
    expect(classifyDialString('555', dir).kind).toBe('invalid')
    expect(classifyDialString('102', dir).kind).toBe('invalid')
    expect(classifyDialString('12345', dir).kind).toBe('invalid')
    expect(classifyDialString('1-800-FLOWERS', dir).kind).toBe('invalid')
    expect(classifyDialString('   ', dir).kind).toBe('invalid')
    expect(classifyDialString('sip:bob@example.com', dir).kind).toBe('invalid')
  })

  test('directoryKeys names what the route must look up', () => {
    expect(directoryKeys(' (101) ')).toEqual({ userId: '(101)', extension: '101' })
    expect(directoryKeys(BOB)).toEqual({ userId: BOB, extension: null })
    expect(directoryKeys('  ')).toEqual({ userId: null, extension: null })
  })
})

describe('planClickToCall', () => {
  test('no registered device: nothing happens, whatever the destination or mode', () => {
    for (const destination of [internalBob, publicNumber])
      for (const mode of ['test', 'live'] as const)
        expect(planClickToCall({ user_id: ALICE, devices: [], destination, mode, default_caller_id: '+15005550006' })).toEqual({
          kind: 'nothing',
          reason: 'no_registered_device',
        })
  })

  test('the no-device driver answers none, so the plan is nothing', async () => {
    const devices = await noRegisteredDevices().ofUser('acct_1', ALICE)
    expect(devices).toEqual([])
    expect(planClickToCall({ user_id: ALICE, devices, destination: internalBob, mode: 'live', default_caller_id: null }).kind).toBe('nothing')
  })

  test('a public destination from a sandbox account is refused with an announcement', () => {
    expect(planClickToCall({ user_id: ALICE, devices: phone, destination: publicNumber, mode: 'test', did: '+15005550006', default_caller_id: null })).toEqual({
      kind: 'refused_public_in_sandbox',
      from_user_id: ALICE,
      ring_devices: phone,
      to_number: '+15551234567',
      announcement: 'sandbox_public_destination',
    })
    // emergency codes too: the sandbox never reaches the public network
    expect(
      planClickToCall({
        user_id: ALICE,
        devices: phone,
        destination: { kind: 'public', number: '911', emergency: true },
        mode: 'test',
        default_caller_id: null,
      }).kind,
    ).toBe('refused_public_in_sandbox')
  })

  test('an internal destination connects, in sandbox and live', () => {
    for (const mode of ['test', 'live'] as const) {
      expect(planClickToCall({ user_id: ALICE, devices: phone, destination: internalBob, mode, default_caller_id: '+15005550006' })).toEqual({
        kind: 'connect_internal',
        from_user_id: ALICE,
        ring_devices: phone,
        to_user_id: BOB,
        extension: '101',
        caller_id: null,
      })
    }
    expect(
      planClickToCall({ user_id: ALICE, devices: phone, destination: internalBob, mode: 'live', did: '+15005550007', default_caller_id: null }),
    ).toMatchObject({
      kind: 'connect_internal',
      caller_id: '+15005550007',
    })
  })

  test('a public destination from a live account dials out; did wins over the account default', () => {
    expect(planClickToCall({ user_id: ALICE, devices: phone, destination: publicNumber, mode: 'live', default_caller_id: '+15005550006' })).toEqual({
      kind: 'dial_public',
      from_user_id: ALICE,
      ring_devices: phone,
      to_number: '+15551234567',
      emergency: false,
      caller_id: '+15005550006',
    })
    expect(
      planClickToCall({ user_id: ALICE, devices: phone, destination: publicNumber, mode: 'live', did: '+15005550007', default_caller_id: '+15005550006' }),
    ).toMatchObject({
      caller_id: '+15005550007',
    })
    expect(
      planClickToCall({
        user_id: ALICE,
        devices: phone,
        destination: { kind: 'public', number: '933', emergency: true },
        mode: 'live',
        default_caller_id: null,
      }),
    ).toMatchObject({
      kind: 'dial_public',
      emergency: true,
    })
  })
})

describe('properties', () => {
  const device = fc.record({ id: fc.string({ minLength: 1, maxLength: 8 }) })
  const destination: fc.Arbitrary<DialableDestination> = fc.oneof(
    fc.record({
      kind: fc.constant('internal' as const),
      to_user_id: fc.constantFrom(ALICE, BOB),
      extension: fc.option(fc.constantFrom('101', '102'), { nil: null }),
    }),
    fc.record({ kind: fc.constant('public' as const), number: fc.constantFrom('+15551234567', '911', '+442071234567'), emergency: fc.boolean() }),
  )
  const input = fc.record({
    user_id: fc.constantFrom(ALICE, BOB),
    devices: fc.array(device, { maxLength: 3 }),
    destination,
    mode: fc.constantFrom('test' as const, 'live' as const),
    did: fc.option(fc.constant('+15005550007'), { nil: undefined }),
    default_caller_id: fc.option(fc.constant('+15005550006'), { nil: null }),
  })

  test('the sandbox never dials the public network; no device means nothing; a did is always the caller ID', () => {
    fc.assert(
      fc.property(input, (i) => {
        const plan = planClickToCall(i)
        if (i.devices.length === 0) return plan.kind === 'nothing'
        if (plan.kind === 'nothing') return false
        if (i.mode === 'test' && plan.kind === 'dial_public') return false
        if (i.destination.kind === 'internal' && plan.kind !== 'connect_internal') return false
        if (i.destination.kind === 'public' && plan.kind === 'connect_internal') return false
        if (i.did && 'caller_id' in plan && plan.caller_id !== i.did) return false
        return plan.from_user_id === i.user_id && plan.ring_devices === i.devices
      }),
    )
  })

  test('classification never throws, and formatting a NANP number does not change where it leads', () => {
    fc.assert(fc.property(fc.string({ maxLength: 70 }), (s) => ['internal', 'public', 'invalid'].includes(classifyDialString(s, dir).kind)))
    const digit = (from: number) => fc.integer({ min: from, max: 9 }).map(String)
    const nanp = fc
      .tuple(digit(2), digit(0), digit(0), digit(2), fc.array(digit(0), { minLength: 6, maxLength: 6 }))
      .map(([a, b, c, d, rest]) => a + b + c + d + rest.join(''))
    fc.assert(
      fc.property(nanp, (n) => {
        const want = { kind: 'public', number: `+1${n}`, emergency: false }
        const forms = [n, `1${n}`, `+1${n}`, `(${n.slice(0, 3)}) ${n.slice(3, 6)}-${n.slice(6)}`, `+1.${n.slice(0, 3)}.${n.slice(3, 6)}.${n.slice(6)}`]
        return forms.every((f) => JSON.stringify(classifyDialString(f, dir)) === JSON.stringify(want))
      }),
    )
  })
})
