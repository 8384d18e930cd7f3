/**
 * Check-sync on a registered phone sends it a SIP NOTIFY, end to end: a UDP socket
 * plays the phone and registers a deskphone's line with the running service's media
 * role (REGISTER, 401, REGISTER with the digest, 200); POST
 * /v1/devices/{id}/status/check-sync then reaches the device actor, which hands the
 * binding over the bus to the media role, which sends `NOTIFY` with
 * `Event: check-sync;reboot=false` to where the REGISTER came from. A phone that
 * unregistered is sent nothing.
 *
 * With NATS every test process's media role hears every notice (the subject is
 * shared), so only NOTIFYs whose Via names this service's SIP port are counted.
 */
import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { DEVICE_KIND } from '../actors/devices/messages'
import { authorizationFor, type PhoneAccount, registerRequest } from '../media/registrar/sip-phone.testkit'
import { type UdpPeer, udpPeer } from '../media/sip/test-fixtures'
import { actorSnapshots } from '../src/db/schema'
import { type Ctx, deviceFixtures } from './device-fixtures'
import { until } from './support/polling'
import { startTestService } from './support/service'

const t = await startTestService()
const f = deviceFixtures(t)
const sipPort = t.service.sip!.udpPort

/** A deskphone with one line for a new user, and that line's SIP account. */
async function phoneWithLine(c: Ctx) {
  const user = await f.user(c)
  const extension = await f.extension(c, user)
  const phone = await f.deskphone(c, { lines: [{ user, extension }] })
  const lines = await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)
  expect(lines.status).toBe(200)
  return { device: phone.id as string, account: lines.body.data[0].sip_credentials as PhoneAccount }
}

const statusLine = (text: string) => text.slice(0, text.indexOf('\r\n'))
const header = (text: string, name: string) => new RegExp(`\\r\\n${name}: ([^\\r]*)\\r\\n`, 'i').exec(text)?.[1]
/** What this service sent the phone (not another test process's media role). */
const fromUs = (phone: UdpPeer, method: string) => [
  // A retransmission (Timer E, before the phone's 200 arrived) is the same request.
  ...new Set(phone.received.filter((m) => m.startsWith(`${method} `) && header(m, 'Via')?.includes(`:${sipPort};`))),
]

/** A phone's REGISTER over UDP: the challenge, then the digest answer; resolves with the final status line. */
async function register(phone: UdpPeer, account: PhoneAccount, expires: number): Promise<string> {
  const answers = () => phone.received.filter((m) => m.startsWith('SIP/2.0 ') && header(m, 'Call-ID') === `reg-${account.username}@192.0.2.10`)
  const before = answers().length
  phone.send(registerRequest(account, { expires }).data, sipPort)
  const challenge = await until('the 401', () => answers()[before])
  expect(statusLine(challenge)).toBe('SIP/2.0 401 Unauthorized')
  const nonce = /WWW-Authenticate: Digest [^\r]*algorithm=MD5[^\r]*/i.exec(challenge)?.[0].match(/nonce="([^"]+)"/)?.[1]
  expect(nonce).toBeString()
  phone.send(registerRequest(account, { expires, auth: authorizationFor(account, { nonce: nonce!, algorithm: 'MD5' }) }).data, sipPort)
  return statusLine(await until('the final answer', () => answers()[before + 1]))
}

/** The device's bindings as the account sees them (GET /v1/quality/device-registrations?device=). */
async function bindingsOf(c: Ctx, device: string): Promise<unknown[]> {
  const r = await t.call('GET', `/v1/quality/device-registrations?device=${device}`, c)
  expect(r.status).toBe(200)
  return r.body.data[0]?.bindings ?? []
}

async function checkSync(c: Ctx, device: string) {
  const r = await t.call('POST', `/v1/devices/${device}/status/check-sync`, c)
  expect([r.status, r.body.status]).toEqual([200, 'pending_sync'])
  return r.body.check_sync_requested_at as string
}

/** The device actor has taken the check-sync requested at `at` (its step, and whatever it handed over, is done). */
const actorTookCheckSync = (device: string, at: string) =>
  until(`the device actor to take check-sync ${at}`, async () => {
    const [row] = await t.service.database.db
      .select({ snapshot: actorSnapshots.snapshot })
      .from(actorSnapshots)
      .where(and(eq(actorSnapshots.kind, DEVICE_KIND), eq(actorSnapshots.id, device)))
    const context = (row?.snapshot as { context?: { pending_since?: string } } | undefined)?.context
    return context?.pending_since === at
  })

/** The phone's 200 to a request: Via, From, To, Call-ID and CSeq copied. */
const ok = (request: string) =>
  ['SIP/2.0 200 OK', ...request.split('\r\n').filter((l) => /^(Via|From|To|Call-ID|CSeq):/i.test(l)), 'Content-Length: 0', '', ''].join('\r\n')

describe('check-sync on a registered phone sends it a SIP NOTIFY', () => {
  test('registered over UDP: the NOTIFY goes where the REGISTER came from, with Event check-sync and Subscription-State terminated', async () => {
    const c = await f.ctx()
    const { device, account } = await phoneWithLine(c)
    const phone = await udpPeer()
    try {
      expect(await register(phone, account, 600)).toBe('SIP/2.0 200 OK')
      await until('the binding held', async () => (await bindingsOf(c, device)).length === 1)

      await checkSync(c, device)
      const [notify] = await until('the NOTIFY', () => (fromUs(phone, 'NOTIFY').length > 0 ? fromUs(phone, 'NOTIFY') : undefined))
      // The Contact the phone gave (behind "NAT": 192.0.2.10) is the Request-URI; the datagram came to its real socket.
      expect(statusLine(notify!)).toBe(`NOTIFY sip:${account.username}@192.0.2.10:5062 SIP/2.0`)
      expect(header(notify!, 'Event')).toBe('check-sync;reboot=false')
      expect(header(notify!, 'Subscription-State')).toBe('terminated')
      expect(header(notify!, 'To')).toBe(`<sip:${account.username}@192.0.2.10:5062>`)
      expect(header(notify!, 'CSeq')).toBe('1 NOTIFY')
      expect(header(notify!, 'Via')).toStartWith(`SIP/2.0/UDP 127.0.0.1:${sipPort};branch=z9hG4bK`)
      phone.send(ok(notify!), sipPort)

      // The device still waits for the phone's fetch: the NOTIFY only asks for it.
      const r = await t.call('GET', `/v1/devices/${device}`, c)
      expect(r.body.status).toBe('pending_sync')
    } finally {
      phone.close()
    }
  }, 30_000)

  test('a phone that unregistered is sent nothing; a registered one beside it still is', async () => {
    const c = await f.ctx()
    const gone = await phoneWithLine(c)
    const kept = await phoneWithLine(c)
    // One socket registers both lines, so a NOTIFY meant for either would land here.
    const phone = await udpPeer()
    try {
      expect(await register(phone, gone.account, 600)).toBe('SIP/2.0 200 OK')
      expect(await register(phone, kept.account, 600)).toBe('SIP/2.0 200 OK')
      expect(await register(phone, gone.account, 0)).toBe('SIP/2.0 200 OK')
      await until('one binding left', async () => (await bindingsOf(c, gone.device)).length === 0 && (await bindingsOf(c, kept.device)).length === 1)

      // The unregistered device's check-sync is taken first, entirely, then the registered one's.
      await actorTookCheckSync(gone.device, await checkSync(c, gone.device))
      await checkSync(c, kept.device)
      const [notify] = await until('the NOTIFY for the registered line', () =>
        fromUs(phone, 'NOTIFY').some((m) => statusLine(m).includes(`sip:${kept.account.username}@`)) ? fromUs(phone, 'NOTIFY') : undefined,
      )
      phone.send(ok(notify!), sipPort)
      expect(fromUs(phone, 'NOTIFY').map(statusLine)).toEqual([`NOTIFY sip:${kept.account.username}@192.0.2.10:5062 SIP/2.0`])
    } finally {
      phone.close()
    }
  }, 30_000)

  test('a phone that never registered: check-sync is taken as before (pending_sync, recorded) with no binding to notify', async () => {
    const c = await f.ctx()
    const { device } = await phoneWithLine(c)
    await actorTookCheckSync(device, await checkSync(c, device))
    expect(await bindingsOf(c, device)).toEqual([])
    const events = await t.call('GET', `/v1/deskphones/${device}/provisioning-events`, c)
    expect(events.body.data.map((e: { type: string }) => e.type)).toContain('check_sync_requested')
  })
})
