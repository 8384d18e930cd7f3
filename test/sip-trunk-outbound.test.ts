/**
 * Live calls to the PSTN over the carrier trunk (SIP_TRUNK_OUTBOUND), with sipp as
 * the phone and as the carrier, over UDP on loopback (test/support/sip-phones.ts):
 *  - a live account's phone dials an E.164 number: the B2BUA sends the INVITE to the
 *    trunk, answers the carrier's digest challenge (401) with the trunk's credentials
 *    (SIP_TRUNK_USERNAME/PASSWORD; sipp checks the answer), the carrier rings and
 *    answers, audio flows, the phone hangs up: an outbound call's events;
 *  - the carrier answers 486: the phone gets 486 and the call ends busy; it answers
 *    480 or 408: the phone gets 480 and the call ends no-answer;
 *  - the carrier plays early media (183 with SDP, audio): the phone gets our 183
 *    (no 180), the relay open to the carrier's audio before the answer;
 *  - click-to-call (POST /v1/calls) to a public number from a live account: the
 *    user's phone rings and answers, then the call goes out on the trunk.
 * Sandbox calls never reach the trunk: the simulator is their far end
 * (test/sip-calls.test.ts).
 */
import { describe, expect, test } from 'bun:test'
import { phoneNumbers } from '../src/db/schema'
import { until } from './support/polling'
import { freePort } from './support/scratch-postgres'
import { startTestService } from './support/service'
import { carrierNumbers, expectAllPassed, runSipp, sipAccount, sipWorkFolder, sipp, sox, withSipp } from './support/sip-phones'

const carrierPort = await freePort()
const TRUNK = { username: 'trunk-user', password: 'trunk-pass-0123' }
const t = await startTestService({
  SIP_TRUNK_OUTBOUND: `127.0.0.1:${carrierPort}`,
  SIP_TRUNK_USERNAME: TRUNK.username,
  SIP_TRUNK_PASSWORD: TRUNK.password,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
})
const work = sipWorkFolder('sip-trunk-out-')
const { endedCallTo } = carrierNumbers(t)
const types = (events: any[]) => events.filter((e) => e.type.startsWith('call.') && !e.type.startsWith('call.command_')).map((e) => e.type)

/** A live account with one phone line and a number of its own (the caller ID a carrier takes). */
async function livePhone() {
  const platform = await t.platform({ live_enabled: true })
  const a = await sipAccount(t, work, 1, { key: platform.live_key })
  // Live numbers come from a carrier's order; the row is what the B2BUA reads.
  const callerId = `+1415${String(Date.now()).slice(-7)}`
  const now = new Date()
  await t.service.database.db.insert(phoneNumbers).values({
    id: `pn_trunk${callerId.slice(1)}`,
    accountId: a.c.account,
    mode: 'live',
    number: callerId,
    space: 'live',
    status: 'active',
    orderId: null,
    createdAt: now,
    updatedAt: now,
  })
  return { a, alice: a.lines[0]!, callerId }
}

/** The carrier: a sipp UAS on the trunk's port (wrapped: an async function returning the run would wait for its end). */
async function carrier(scenario: string, fields: string[]) {
  const run = runSipp(t, work, scenario, fields, ['-p', String(carrierPort), '-mi', '127.0.0.1', '-mp', String(await freePort())])
  await Bun.sleep(300) // the UAS binds its port before the call reaches it
  return { run }
}

if (!sipp || !sox)
  test.skip(`live calls over the carrier trunk (skipped: ${!sipp ? 'sipp is not installed; Debian package sip-tester' : 'sox is not installed'})`, () => {})

describe.skipIf(!sipp || !sox)('live calls to the PSTN go out on the carrier trunk', () => {
  test(
    'a live phone dials a number: the carrier’s digest challenge is answered with the trunk’s credentials, it rings, answers, and the call is an outbound one',
    async () => {
      const { a, alice, callerId } = await livePhone()
      const number = '+15557654321'
      const trunk = (await carrier('carrier-answer-auth.xml', [TRUNK.username, TRUNK.password])).run
      const aliceCalls = alice.dial('call-extension.xml', number)
      expectAllPassed(await aliceCalls, await trunk)

      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ direction: 'outbound', status: 'completed', from_number: callerId, from_user_id: alice.user, simulated: false })
      expect(call.connected_at).toBeString()
      expect(types(await a.eventsOf(call.id))).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      await a.stop()
    },
    withSipp(90_000),
  )

  test(
    'the carrier answers 486: the phone gets 486 and the call ends busy',
    async () => {
      const { a, alice } = await livePhone()
      const number = '+15557654322'
      const trunk = (await carrier('carrier-busy.xml', ['unused'])).run
      const aliceCalls = alice.dial('call-extension-busy.xml', number)
      expectAllPassed(await aliceCalls, await trunk)
      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ direction: 'outbound', status: 'busy' })
      await a.stop()
    },
    withSipp(90_000),
  )

  for (const [status, scenario, number] of [
    [480, 'carrier-unavailable.xml', '+15557654325'],
    [408, 'carrier-timeout.xml', '+15557654326'],
  ] as const)
    test(
      `the carrier answers ${status}: the phone gets 480 and the call ends no-answer`,
      async () => {
        const { a, alice } = await livePhone()
        const trunk = (await carrier(scenario, ['unused'])).run
        const aliceCalls = alice.dial('call-extension-unavailable.xml', number)
        expectAllPassed(await aliceCalls, await trunk)
        const call = await endedCallTo(a, number)
        expect(call).toMatchObject({ direction: 'outbound', status: 'no-answer' })
        expect(call.answered_at).toBeNull()
        await a.stop()
      },
      withSipp(90_000),
    )

  test(
    'the carrier plays early media: the phone gets a 183 with our SDP instead of a 180, then the answer',
    async () => {
      const { a, alice } = await livePhone()
      const number = '+15557654324'
      const trunk = (await carrier('carrier-early-media.xml', ['unused'])).run
      // The phone's scenario needs the 183 before the 200 (a 180 instead fails it).
      const aliceCalls = alice.dial('call-extension-early.xml', number)
      expectAllPassed(await aliceCalls, await trunk)
      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ direction: 'outbound', status: 'completed' })
      const events = types(await a.eventsOf(call.id))
      expect(events).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      await a.stop()
    },
    withSipp(90_000),
  )

  test(
    'click-to-call to a public number from a live account: the user’s phone answers, then the trunk carries the call; an API hang-up ends both',
    async () => {
      const { a, alice, callerId } = await livePhone()
      const number = '+15557654323'
      const alicePhone = await alice.register()
      const aliceAnswers = alicePhone('answer.xml')
      const trunk = (await carrier('carrier-answer-auth.xml', [TRUNK.username, TRUNK.password])).run
      const placed = await t.call('POST', '/v1/calls', { ...a.c, body: { user: alice.user, dial_string: number } })
      expect(placed.status).toBe(202)
      const id = await until(
        'the carrier answered',
        async () => (await a.calls()).find((c) => c.to_number === number && c.answered_at)?.id as string | undefined,
      )
      expect((await t.call('POST', `/v1/calls/${id}`, { ...a.c, body: { action: 'hangup' } })).status).toBe(202)
      expectAllPassed(await aliceAnswers, await trunk)
      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ id, direction: 'outbound', status: 'completed', from_number: callerId, user_id: alice.user })
      expect(types(await a.eventsOf(id))).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      await a.stop()
    },
    withSipp(90_000),
  )
})
