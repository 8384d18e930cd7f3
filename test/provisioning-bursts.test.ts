/**
 * Phones first, over the running service: while phones fetch in a burst, the
 * provisioning server defers its messages to the device actors
 * (media/provisioning/deferred-tells), and the devices are provisioned once the
 * burst ends, or at the deadline if it never does. The API's messages to a device
 * (an update, a removal) are taken after the fetches deferred before them, and a
 * deferred fetch taken after a later one (two gateways) does not roll the device
 * back to it.
 *
 * The provisioning directory is built here on the service's database, with a
 * threshold and a time source the test sets, as the service builds its own; the
 * service's device actors take the messages. The fetches are recorded as the
 * HTTP handler records them once a phone has its file (test/provisioning.test.ts
 * covers the phone's side).
 */
import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { deviceTellWriter } from '../actors/devices/registrar-messages'
import { provisioningDirectory } from '../media/provisioning/directory'
import { manualClock } from '../src/clock'
import { DEFERRED_PREFIX } from '../src/scheduler/deferred-messages'
import { queryRows } from '../src/db/client'
import { pgArray } from '../src/db/statements'
import { type Ctx, deviceFixtures } from './device-fixtures'
import { until } from './support/polling'
import { startTestService } from './support/service'

const clock = manualClock('2026-11-29T10:00:00.000Z')
const t = await startTestService({}, { clock })
const f = deviceFixtures(t)
const db = t.service.database.db
const MAX_DELAY_MS = 60_000

/** A provisioning server busy from 5 fetches a second, its rate measured on `time.ms` (frozen: busy until the test moves it). */
function provisioningServer() {
  const time = { ms: 1_000_000 }
  const directory = provisioningDirectory({
    db,
    clock,
    config: { sipPort: 5060 },
    writeTells: deviceTellWriter(clock),
    deferral: { busyPerSecond: 5, maxDelayMs: MAX_DELAY_MS },
    nowMs: () => time.ms,
  })
  const fetched = (deviceId: string, ipAddress = '192.0.2.7') =>
    directory.recordFetch({
      deviceId,
      mac: '',
      vendor: 'yealink',
      model: 'T54W',
      ipAddress,
      file: 'device.cfg',
      kind: 'device',
      fetchedAt: clock.now(),
    })
  return {
    directory,
    fetched,
    /** Fetches by every phone at once: a burst. */
    burst: (ids: string[]) => Promise.all(ids.map((id) => fetched(id))),
    /** The burst is over (a second without a fetch). */
    quiet: () => {
      time.ms += 1_000
    },
  }
}

const phones = async (c: Ctx, n: number) => Promise.all(Array.from({ length: n }, async () => (await f.deskphone(c)).id as string))
const status = async (c: Ctx, id: string) => (await t.call('GET', `/v1/deskphones/${id}`, c)).body.status as string
const history = async (c: Ctx, id: string) =>
  ((await t.call('GET', `/v1/deskphones/${id}/provisioning-events`, c)).body.data as { type: string }[]).map((e) => e.type)
const deferredRows = async (ids: string[]) =>
  (
    await queryRows<{ n: number }>(
      db,
      sql`select count(*)::int as n from durable_timers where actor_kind = 'device' and name like ${`${DEFERRED_PREFIX}%`} and due_at > ${clock.now().toISOString()}::timestamptz and actor_id = any(${pgArray(ids)}::text[])`,
    )
  )[0]!.n
/** The device.provisioned events of a device, from the outbox (a removed device has no history left to read). */
const provisionedEvents = async (account: string, device: string) =>
  (await queryRows<{ body: string }>(db, sql`select body from events where account_id = ${account} and type = 'device.provisioned' order by seq`)).filter(
    (e) => JSON.parse(e.body).data.device === device,
  ).length

describe('provisioning bursts', () => {
  test("a burst's fetches wait, and the devices are provisioned once it ends", async () => {
    const c = await f.ctx()
    const ids = await phones(c, 6)
    const server = provisioningServer()
    await server.burst(ids)
    expect(server.directory.deferring()).toBe(true)
    // Not due: no actor can have taken them.
    expect(await deferredRows(ids)).toBe(ids.length)
    for (const id of ids) expect(await status(c, id)).toBe('pending_sync')

    server.quiet()
    for (const id of ids) {
      await until(`${id} synced`, async () => (await status(c, id)) === 'synced')
      expect((await history(c, id)).filter((type) => type === 'provisioned')).toHaveLength(1)
    }
    server.directory.stop()
  })

  test("an update or a removal is taken after the device's deferred fetches", async () => {
    const c = await f.ctx()
    const [updated, removed, ...others] = await phones(c, 6)
    const server = provisioningServer()
    await server.burst([updated!, removed!, ...others])
    expect(await deferredRows([updated!, removed!])).toBe(2)

    // Both requests come a second later, while the fetches are deferred (the server is still busy).
    clock.advance(1_000)
    f.ok('update', await t.call('POST', `/v1/devices/${updated}`, { ...c, body: { name: 'Front desk' } }))
    f.ok('delete', await t.call('DELETE', `/v1/deskphones/${removed}`, c))

    // The fetch before the update provisioned the old file; the update sends the device back to pending_sync.
    await until('the fetch before the update taken', async () => (await history(c, updated!)).includes('provisioned'))
    await until('the update taken after it', async () => (await status(c, updated!)) === 'pending_sync')
    // The removed device's fetch is reported: it happened before the removal.
    await until("the removed device's fetch reported", async () => (await provisionedEvents(c.account, removed!)) === 1)

    // The phone fetches the new file once the burst is over: that is the update's provisioning.
    server.quiet()
    await server.fetched(updated!)
    await until('the updated device synced', async () => (await status(c, updated!)) === 'synced')
    expect((await history(c, updated!)).filter((type) => type === 'provisioned')).toHaveLength(2)
    expect(await provisionedEvents(c.account, updated!)).toBe(2)
    server.directory.stop()
  })

  test('a fetch deferred by a busy gateway and taken after a later one through a quiet gateway leaves the later one on the device', async () => {
    const c = await f.ctx()
    const [phone, ...others] = await phones(c, 6)
    const busy = provisioningServer()
    await busy.burst([phone!, ...others])
    clock.advance(1_000)
    const later = clock.now().toISOString()
    const quiet = provisioningServer()
    await quiet.fetched(phone!, '192.0.2.8')
    const device = async () => (await t.call('GET', `/v1/deskphones/${phone}`, c)).body
    await until('the later fetch taken', async () => (await device()).last_fetched_at === later)

    busy.quiet()
    // provisioned and config_fetched for the later fetch, then config_fetched for the earlier one
    await until('the earlier fetch taken', async () => (await history(c, phone!)).length === 3)
    expect(await device()).toMatchObject({ status: 'synced', last_fetched_at: later, ip_address: '192.0.2.8', provisioned_at: later })
    busy.directory.stop()
    quiet.directory.stop()
  })

  test('a burst that never ends delays the devices by the deadline, no more', async () => {
    const c = await f.ctx()
    const ids = await phones(c, 6)
    const server = provisioningServer()
    await server.burst(ids)
    server.directory.stop()
    expect(await deferredRows(ids)).toBe(ids.length)

    clock.advance(MAX_DELAY_MS)
    for (const id of ids) await until(`${id} synced at the deadline`, async () => (await status(c, id)) === 'synced')
  })
})
