/**
 * The device actor binds `notifyCheckSync` on a real actor host (PGlite, or
 * PostgreSQL when DATABASE_URL is set): check-sync on a registered phone hands the
 * media role each live binding as the registrar saw it (source address and port,
 * transport), once the step is written; an unregistered phone is handed nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq, inArray } from 'drizzle-orm'
import { manualClock } from '../../src/clock'
import { type Database, openDatabase } from '../../src/db/client'
import { actorSnapshots, durableTimers } from '../../src/db/schema'
import { newId } from '../../src/ids'
import { type BindingDetails, bindingKey } from '../../src/services/devices/registrations'
import { ActorHost } from '../runtime/host'
import type { CheckSyncNotice } from './check-sync'
import { createDeviceKind } from './device-actor'
import { DEVICE_KIND, type DeviceActorInput } from './messages'

let database: Database
const clock = manualClock('2026-03-01T10:00:00.000Z')
const touched: string[] = []
const notices: CheckSyncNotice[] = []

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
})

afterAll(async () => {
  if (touched.length > 0) {
    await database?.db.delete(durableTimers).where(inArray(durableTimers.actorId, touched))
    await database?.db.delete(actorSnapshots).where(and(eq(actorSnapshots.kind, DEVICE_KIND), inArray(actorSnapshots.id, touched)))
  }
  await database?.close()
})

// Only the device kind: the presence actors its bindings tell are dropped as missing, which is not this test's concern.
const newHost = () =>
  new ActorHost({ db: database.db, clock, kinds: [createDeviceKind({ clock, notifyCheckSync: (n) => void notices.push(n) }).kind] as never, pollTimers: false })

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

function binding(deviceId: string, username: string, transport: BindingDetails['transport'], port: number): BindingDetails {
  return {
    line: `dln_${username}`,
    line_device: deviceId,
    username,
    user_ids: [],
    contact: `sip:${username}@192.0.2.10:5062`,
    transport,
    source_address: '198.51.100.7',
    source_port: port,
    user_agent: 'Yealink SIP-T54W',
  }
}

const register = (b: BindingDetails, seconds: number) => ({
  type: 'REGISTER',
  contact: bindingKey(b.username, b.contact),
  expires_at: new Date(clock.now().getTime() + seconds * 1000).toISOString(),
  at: clock.now().toISOString(),
  binding: b,
})
const checkSync = () => ({ type: 'CHECK_SYNC', at: clock.now().toISOString() })
const noticesOf = (device: string) => notices.filter((n) => n.device === device)

describe('device actor: check-sync reaches the media role', () => {
  test('a registered phone: one notice naming each live binding where its REGISTER came from', async () => {
    const host = newHost()
    const device = await newDevice(host)
    await host.send(DEVICE_KIND, device, register(binding(device, 'u1', 'udp', 40001), 600))
    await host.send(DEVICE_KIND, device, register(binding(device, 'u2', 'tcp', 40002), 60))
    clock.advance(61_000)
    // u2's binding has run out (no EXPIRE delivered yet): only u1 is told.
    await host.send(DEVICE_KIND, device, checkSync())
    expect(noticesOf(device)).toEqual([
      {
        device,
        at: clock.now().toISOString(),
        targets: [{ username: 'u1', contact: 'sip:u1@192.0.2.10:5062', transport: 'udp', source_address: '198.51.100.7', source_port: 40001 }],
      },
    ])
    const state = await host.inspect(DEVICE_KIND, device)
    expect((state!.snapshot as { value: unknown }).value).toEqual({ active: 'pending_sync' })
    await host.close()
  })

  test('an unregistered phone, or one whose bindings were removed: check-sync hands nothing over', async () => {
    const host = newHost()
    const never = await newDevice(host)
    await host.send(DEVICE_KIND, never, checkSync())
    const gone = await newDevice(host)
    const b = binding(gone, 'u1', 'udp', 40003)
    await host.send(DEVICE_KIND, gone, register(b, 600))
    await host.send(DEVICE_KIND, gone, { type: 'UNREGISTER', contact: bindingKey(b.username, b.contact), at: clock.now().toISOString() })
    await host.send(DEVICE_KIND, gone, checkSync())
    expect([noticesOf(never), noticesOf(gone)]).toEqual([[], []])
    await host.close()
  })

  test('without a way to the media role, or with a bus that throws, the actor still takes check-sync (it waits for the fetch)', async () => {
    const failing = () => {
      throw new Error('connection closed')
    }
    for (const notifyCheckSync of [undefined, failing]) {
      const host = new ActorHost({ db: database.db, clock, kinds: [createDeviceKind({ clock, notifyCheckSync }).kind] as never, pollTimers: false })
      const device = await newDevice(host)
      await host.send(DEVICE_KIND, device, register(binding(device, 'u1', 'udp', 40004), 600))
      await host.send(DEVICE_KIND, device, checkSync())
      const state = await host.inspect(DEVICE_KIND, device)
      expect((state!.snapshot as { value: unknown }).value).toEqual({ active: 'pending_sync' })
      expect(noticesOf(device)).toEqual([])
      await host.close()
    }
  })
})
