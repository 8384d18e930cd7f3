/**
 * The device actor holding SIP bindings, with the presence actor beside it on a real
 * actor host (PGlite, or PostgreSQL when DATABASE_URL is set): presence follows the
 * bindings, and a binding expires on the injected clock through the durable
 * scheduler. Time is driven by hand; the host's poller is off and the test delivers
 * due messages itself, a bounded number of rounds.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { inArray } from 'drizzle-orm'
import { manualClock } from '../../src/clock'
import { type Database, openDatabase } from '../../src/db/client'
import { durableTimers } from '../../src/db/schema'
import { newId } from '../../src/ids'
import { type BindingDetails, bindingKey, deviceBindings } from '../../src/services/devices/registrations'
import { PRESENCE_KIND, presenceStatusOf } from '../presence/messages'
import { createPresenceKind } from '../presence/presence-actor'
import { ActorHost } from '../runtime/host'
import { createDeviceKind } from './device-actor'
import { DEVICE_KIND, type DeviceActorInput } from './messages'
import { EXPIRY_TIMER } from './registrations'

let database: Database
const clock = manualClock('2026-03-01T10:00:00.000Z')
const touched: string[] = []

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
})

afterAll(async () => {
  if (touched.length > 0) await database?.db.delete(durableTimers).where(inArray(durableTimers.actorId, touched))
  await database?.close()
})

const newHost = () =>
  new ActorHost({ db: database.db, clock, kinds: [createDeviceKind({ clock }).kind, createPresenceKind().kind] as never, pollTimers: false })

/** Delivers due messages until none is left (bounded: a loop of messages would fail the test, not hang it). */
async function settle(host: ActorHost) {
  for (let round = 0; round < 20; round++) if ((await host.timers.tick()) === 0) return
  throw new Error('messages kept coming')
}

async function newDevice(host: ActorHost) {
  const id = newId('device')
  touched.push(id)
  const input: DeviceActorInput = {
    device_id: id,
    device_type: 'deskphone',
    mac_address: '001565AABBCC',
    vendor: 'yealink',
    model: 'T54W',
    owner: { platformId: 'plat_x', accountId: 'acct_x', mode: 'test' },
  }
  await host.spawn(DEVICE_KIND, id, input)
  return id
}

function binding(deviceId: string, users: string[], contact = 'sip:u1@192.0.2.10:5062'): BindingDetails {
  return {
    line: 'dln_1',
    line_device: deviceId,
    username: 'u1',
    user_ids: users,
    contact,
    transport: 'udp',
    source_address: '192.0.2.10',
    source_port: 5062,
    user_agent: 'Yealink SIP-T54W',
  }
}

const register = (deviceId: string, users: string[], seconds: number, contact?: string) => {
  const b = binding(deviceId, users, contact)
  const at = clock.now().toISOString()
  return {
    type: 'REGISTER',
    contact: bindingKey(b.username, b.contact),
    expires_at: new Date(clock.now().getTime() + seconds * 1000).toISOString(),
    at,
    binding: b,
  }
}

async function presenceOf(host: ActorHost, userId: string) {
  return presenceStatusOf(await host.inspect(PRESENCE_KIND, userId), userId, '2026-01-01T00:00:00.000Z').status
}

describe('device actor: bindings, presence, expiry', () => {
  test('REGISTER makes the device registered and its user available; the binding expires on the clock and the user goes offline', async () => {
    const host = newHost()
    const device = await newDevice(host)
    const user = newId('user')
    touched.push(user)
    expect(await presenceOf(host, user)).toBe('offline')

    await host.send(DEVICE_KIND, device, register(device, [user], 120))
    await settle(host)
    expect(await presenceOf(host, user)).toBe('available')
    const bindings = await deviceBindings(database.db, device, clock.now())
    expect(bindings.map((b) => [b.contact, b.expires_at, b.registered_at])).toEqual([
      ['sip:u1@192.0.2.10:5062', '2026-03-01T10:02:00.000Z', '2026-03-01T10:00:00.000Z'],
    ])

    // Not yet: nothing is due a second before the expiry.
    clock.advance(119_000)
    await settle(host)
    expect(await presenceOf(host, user)).toBe('available')
    clock.advance(1_000)
    await settle(host)
    expect(await presenceOf(host, user)).toBe('offline')
    const state = await host.inspect(DEVICE_KIND, device)
    expect((state!.snapshot as { context: { registrations: unknown[] } }).context.registrations).toEqual([])
    await host.close()
  })

  test('a refresh moves the expiry (the old timer does not end the binding) and keeps the first registration time', async () => {
    const host = newHost()
    const device = await newDevice(host)
    const user = newId('user')
    touched.push(user)
    await host.send(DEVICE_KIND, device, register(device, [user], 120))
    clock.advance(60_000)
    await host.send(DEVICE_KIND, device, register(device, [user], 120))
    clock.advance(90_000)
    await settle(host)
    expect(await presenceOf(host, user)).toBe('available')
    const [b] = await deviceBindings(database.db, device, clock.now())
    expect(b?.registered_at).not.toBe(b?.refreshed_at)
    expect(new Date(b!.expires_at).getTime() - new Date(b!.refreshed_at).getTime()).toBe(120_000)
    await host.send(DEVICE_KIND, device, { type: 'UNREGISTER', contact: bindingKey('u1', 'sip:u1@192.0.2.10:5062'), at: clock.now().toISOString() })
    await settle(host)
    expect(await presenceOf(host, user)).toBe('offline')
    // No binding left: no expiry timer left either.
    const timers = await database.db
      .select()
      .from(durableTimers)
      .where(inArray(durableTimers.actorId, [device]))
    expect(timers.filter((t) => t.name === EXPIRY_TIMER)).toEqual([])
    await host.close()
  })

  test('presence follows the users of the bindings: two contacts stay one registration; a refresh naming another user moves it', async () => {
    const host = newHost()
    const device = await newDevice(host)
    const [a, b] = [newId('user'), newId('user')]
    touched.push(a, b)
    await host.send(DEVICE_KIND, device, register(device, [a], 600))
    await host.send(DEVICE_KIND, device, register(device, [a], 600, 'sip:u1@198.51.100.7:5060'))
    await settle(host)
    expect([await presenceOf(host, a), await presenceOf(host, b)]).toEqual(['available', 'offline'])
    // The line was given to b: the phone's next refreshes name b.
    await host.send(DEVICE_KIND, device, register(device, [b], 600))
    await settle(host)
    expect([await presenceOf(host, a), await presenceOf(host, b)]).toEqual(['available', 'available'])
    await host.send(DEVICE_KIND, device, register(device, [b], 600, 'sip:u1@198.51.100.7:5060'))
    await settle(host)
    expect([await presenceOf(host, a), await presenceOf(host, b)]).toEqual(['offline', 'available'])
    await host.close()
  })

  test('a removed device takes its users offline', async () => {
    const host = newHost()
    const device = await newDevice(host)
    const user = newId('user')
    touched.push(user)
    await host.send(DEVICE_KIND, device, register(device, [user], 600))
    await settle(host)
    expect(await presenceOf(host, user)).toBe('available')
    await host.send(DEVICE_KIND, device, { type: 'REMOVE', at: clock.now().toISOString() })
    await settle(host)
    expect(await presenceOf(host, user)).toBe('offline')
    await host.close()
  })

  test('the actor restarted from its snapshot keeps the bindings and their details', async () => {
    const first = newHost()
    const device = await newDevice(first)
    const user = newId('user')
    touched.push(user)
    await first.send(DEVICE_KIND, device, register(device, [user], 600))
    await settle(first)
    await first.close()
    const second = newHost()
    clock.advance(600_000)
    await settle(second)
    expect(await presenceOf(second, user)).toBe('offline')
    await second.close()
  })
})
