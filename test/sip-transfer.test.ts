/**
 * Transfers and hold of real calls, with sipp (Debian `sip-tester`) as every phone
 * over UDP on loopback (the harness: test/support/sip-phones.ts). Alice's phone calls
 * Bob's extension through the B2BUA; then:
 *  - Bob's phone transfers Alice blind to Carol's extension (REFER, RFC 3515: 202, a
 *    NOTIFY with "100 Trying" and one with "200 OK", then the BYE that releases Bob);
 *  - or the API transfers the call blind to Carol (POST /v1/calls/{id}): Alice, the
 *    call's user, is released and Bob is handed over;
 *  - or the API holds and resumes it: re-INVITEs, sendonly to Bob (who hears the hold
 *    music), inactive to Alice, then sendrecv to both.
 *  - or Alice's phone makes an attended transfer (RFC 5589 §7): holds Bob, calls
 *    Carol, then REFERs with Replaces (test/support/sip-ua.ts plays Alice: sipp holds
 *    one dialog per scenario); Carol's leg is moved onto the first call.
 * Carol's phone answers, talks two seconds and hangs up. A transfer's events are the
 * simulator's for a blind transfer from the same machine: call.transfer and call.end
 * (completed) on the original call, and a new call with its own full set.
 */
import { describe, expect, test } from 'bun:test'
import dgram from 'node:dgram'
import fc from 'fast-check'
import { parseReferTo } from '../media/sip/refer'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { expectAllPassed, sipAccount, sipWorkFolder, sipp, sox, withSipp } from './support/sip-phones'
import { startUa, type UaMessage } from './support/sip-ua'

const t = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const work = sipWorkFolder('sip-transfer-')

const types = (events: any[]) => events.filter((e) => e.type.startsWith('call.') && !e.type.startsWith('call.command_')).map((e) => e.type)

/** Three lines (Alice calls, Bob answers, Carol is the target), Bob and Carol registered. */
async function threePhones() {
  const a = await sipAccount(t, work, 3)
  const [alice, bob, carol] = a.lines as [(typeof a.lines)[0], (typeof a.lines)[0], (typeof a.lines)[0]]
  const bobPhone = await bob.register()
  const carolPhone = await carol.register()
  /** The call Alice placed to Bob, once answered. */
  const answeredCall = () =>
    until('the call to Bob answered', async () => (await a.calls()).find((c) => c.to_number === bob.extension && c.answered_at)?.id as string | undefined)
  /** The call Carol took, once it has ended. */
  const carolsCall = () => until('the call to Carol ended', async () => (await a.calls()).find((c) => c.to_number === carol.extension && c.status), 30_000)
  return { a, alice, bob, carol, bobPhone, carolPhone, answeredCall, carolsCall }
}

if (!sipp || !sox)
  test.skip(`transfers of real calls (skipped: ${!sipp ? 'sipp is not installed; Debian package sip-tester' : 'sox is not installed'})`, () => {})

describe.skipIf(!sipp || !sox)('blind transfer of a real call', () => {
  test(
    'REFER from the called phone: 202, NOTIFY 100 then 200 (sipfrag), the transferor released; the caller talks to the target in a new call',
    async () => {
      const p = await threePhones()
      const bobRefers = p.bobPhone('answer-refer.xml', [p.carol.extension, p.bob.account.domain])
      const carolAnswers = p.carolPhone('answer-talk-bye.xml')
      const aliceCalls = p.alice.dial('call-extension-wait-bye.xml', p.bob.extension)
      expectAllPassed(await aliceCalls, await bobRefers, await carolAnswers)

      const original = await until('the transferred call ended', async () => (await p.a.calls()).find((c) => c.to_number === p.bob.extension && c.status))
      const placed = await p.carolsCall()
      expect(original).toMatchObject({ status: 'completed', direction: 'internal', from_number: p.alice.extension })
      expect(placed).toMatchObject({ status: 'completed', direction: 'internal', from_number: p.alice.extension, related_call: original.id })
      expect(placed.answered_at).toBeTruthy()

      const before = await p.a.eventsOf(original.id)
      expect(types(before)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.transfer', 'call.end'])
      expect(before[3].data).toMatchObject({ transferred_to: p.carol.user, transferred_by: p.bob.user, related_call: placed.id })
      expect(before[4].data).toMatchObject({ status: 'completed' })
      const after = await p.a.eventsOf(placed.id)
      // No call.emergency and a full set of its own (spec rule 6): Carol's phone rang and took it.
      expect(types(after)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      expect(after[0].data).toMatchObject({ direction: 'internal', user_id: p.bob.user, from_user_id: p.bob.user })
      expect(after[1].data.user_id).toBe(p.carol.user)
      expect(after[2].data).toMatchObject({ user_id: p.carol.user })

      // The new call's own media: Carol's tone reached Alice's leg, Alice's echo reached Carol's.
      const media = t.service.media!.b2bua.recentMedia().find((m) => m.call_id === placed.id)
      expect(media).toBeDefined()
      expect(media!.callee.packetsReceived).toBeGreaterThan(20)
      expect(media!.caller.packetsSent).toBeGreaterThan(20)
      expect(media!.callee.packetsSent).toBeGreaterThan(20)
      expect(t.service.media!.b2bua.activeCalls).toBe(0)
    },
    withSipp(120_000),
  )

  test(
    'from the API (POST /v1/calls/{id}): the call’s user (the caller) is released with a BYE, the called phone is connected to the target',
    async () => {
      const p = await threePhones()
      const bobAnswers = p.bobPhone('answer.xml')
      const carolAnswers = p.carolPhone('answer-talk-bye.xml')
      const aliceCalls = p.alice.dial('call-extension-wait-bye.xml', p.bob.extension)
      const id = await p.answeredCall()
      const transfer = await t.call('POST', `/v1/calls/${id}`, { ...p.a.c, body: { action: 'transfer', to: p.carol.user, mode: 'blind' } })
      expect(transfer.status).toBe(202)
      expectAllPassed(await aliceCalls, await bobAnswers, await carolAnswers)

      const placed = await p.carolsCall()
      expect(placed).toMatchObject({ status: 'completed', related_call: id, from_number: p.bob.extension })
      const before = await p.a.eventsOf(id)
      expect(types(before)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.transfer', 'call.end'])
      expect(before.find((e) => e.type === 'call.command_succeeded')?.data).toMatchObject({ command: 'transfer' })
      expect(before.find((e) => e.type === 'call.transfer').data).toMatchObject({
        transferred_to: p.carol.user,
        transferred_by: p.alice.user,
        related_call: placed.id,
      })
      const after = await p.a.eventsOf(placed.id)
      expect(types(after)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      expect(after[1].data.user_id).toBe(p.carol.user)

      // Bob (now the caller of the new call) and Carol heard each other: each one's tone went to the other.
      const media = t.service.media!.b2bua.recentMedia().find((m) => m.call_id === placed.id)
      expect(media).toBeDefined()
      expect(media!.caller.packetsReceived).toBeGreaterThan(20)
      expect(media!.callee.packetsReceived).toBeGreaterThan(20)
      expect(media!.caller.packetsSent).toBeGreaterThan(20)
      expect(media!.callee.packetsSent).toBeGreaterThan(20)
      expect(t.service.media!.b2bua.activeCalls).toBe(0)
    },
    withSipp(120_000),
  )
  test(
    'from the API to a public number in the sandbox: the called phone talks to the simulated far end, a new outbound call',
    async () => {
      const p = await threePhones()
      const bobAnswers = p.bobPhone('answer.xml')
      const aliceCalls = p.alice.dial('call-extension-wait-bye.xml', p.bob.extension)
      const id = await p.answeredCall()
      const to = '+15551230042'
      expect((await t.call('POST', `/v1/calls/${id}`, { ...p.a.c, body: { action: 'transfer', to, mode: 'blind' } })).status).toBe(202)
      // The far end answers after 5 s and hangs up after 10 s of talk (the simulator's default): Bob gets its BYE.
      expectAllPassed(await aliceCalls, await bobAnswers)
      const placed = await until('the call to the number ended', async () => (await p.a.calls()).find((c) => c.to_number === to && c.status), 40_000)
      expect(placed).toMatchObject({ direction: 'outbound', status: 'completed', related_call: id, user_id: p.alice.user })
      const after = await p.a.eventsOf(placed.id)
      expect(types(after)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      expect(after[1].data.user_id).toBeUndefined()
      const media = t.service.media!.b2bua.recentMedia().find((m) => m.call_id === placed.id)
      // The far end's voice went to Bob's phone, and Bob's tone came in.
      expect(media!.caller.packetsSent).toBeGreaterThan(20)
      expect(media!.caller.packetsReceived).toBeGreaterThan(20)
    },
    withSipp(120_000),
  )
})

describe.skipIf(!sipp || !sox)('hold and resume of a real call from the API', () => {
  test(
    'hold: re-INVITE sendonly to the other party and inactive to the user’s phone; resume: sendrecv to both; the call ends normally',
    async () => {
      const p = await threePhones()
      const bobAnswers = p.bobPhone('answer-hold.xml')
      const aliceCalls = p.alice.dial('call-extension-hold.xml', p.bob.extension)
      const id = await p.answeredCall()
      const succeeded = async (command: string) =>
        until(`${command} taken`, async () =>
          (await p.a.events()).some((e) => e.type === 'call.command_succeeded' && e.data.call_id === id && e.data.command === command),
        )
      expect((await t.call('POST', `/v1/calls/${id}`, { ...p.a.c, body: { action: 'hold' } })).status).toBe(202)
      await succeeded('hold')
      // The machine holds it: a second hold is refused, as for a simulated call.
      expect((await t.call('POST', `/v1/calls/${id}`, { ...p.a.c, body: { action: 'hold' } })).status).toBe(409)
      expect((await t.call('POST', `/v1/calls/${id}`, { ...p.a.c, body: { action: 'resume' } })).status).toBe(202)
      await succeeded('resume')
      expect((await t.call('POST', `/v1/calls/${id}`, { ...p.a.c, body: { action: 'hangup' } })).status).toBe(202)
      expectAllPassed(await aliceCalls, await bobAnswers)
      const events = await p.a.eventsOf(id)
      expect(types(events)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      expect(events.filter((e) => e.type === 'call.command_succeeded').map((e) => e.data.command)).toEqual(['hold', 'resume', 'hangup'])
    },
    withSipp(120_000),
  )
})

describe.skipIf(!sipp || !sox)('hold of a real call from a phone', () => {
  test(
    'the phone’s re-INVITE (sendonly) holds the call; the API cannot resume it (409), the phone can; the call ends normally',
    async () => {
      const p = await threePhones()
      const bobAnswers = p.bobPhone('answer.xml')
      const aliceCalls = p.alice.dial('call-extension-phone-hold.xml', p.bob.extension)
      const id = await p.answeredCall()
      // The phone holds 1 s after the answer and for 8 s: the API's resume is refused with the phone named.
      const refused = await until(
        'the API’s resume refused while the phone holds',
        async () => {
          const r = await t.call('POST', `/v1/calls/${id}`, { ...p.a.c, body: { action: 'resume' } })
          expect(r.status).toBe(409)
          return String(r.body.error).includes('from a phone') ? r.body : undefined
        },
        8_000,
      )
      expect(refused.code).toBe('call_not_active')
      expectAllPassed(await aliceCalls, await bobAnswers)
      const events = await p.a.eventsOf(id)
      expect(types(events)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      expect(events.find((e) => e.type === 'call.end')!.data.status).toBe('completed')
      expect(events.filter((e) => e.type.startsWith('call.command_'))).toEqual([])
    },
    withSipp(120_000),
  )
})

describe('REFER with garbage against the running server', () => {
  /** One request over UDP from a socket of our own; the status of the answer. */
  async function statusOf(referTo: string | undefined): Promise<number> {
    const socket = dgram.createSocket('udp4')
    await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()))
    const port = socket.address().port
    const message = [
      `REFER sip:b2bua@127.0.0.1:${t.service.sip!.udpPort} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bK${crypto.randomUUID().replace(/-/g, '')};rport`,
      'From: <sip:bob@127.0.0.1>;tag=f1',
      'To: <sip:alice@127.0.0.1>;tag=t1',
      `Call-ID: ${crypto.randomUUID()}@127.0.0.1`,
      'CSeq: 1 REFER',
      'Max-Forwards: 70',
      ...(referTo === undefined ? [] : [`Refer-To: ${referTo}`]),
      'Content-Length: 0',
      '',
      '',
    ].join('\r\n')
    try {
      const answer = new Promise<number>((resolve) => socket.on('message', (m) => resolve(Number(/^SIP\/2\.0 (\d{3})/.exec(m.toString())?.[1] ?? 0))))
      socket.send(message, t.service.sip!.udpPort, '127.0.0.1')
      return await Promise.race([answer, Bun.sleep(10_000).then(() => -1)])
    } finally {
      socket.close()
    }
  }

  test(
    'a Refer-To naming no SIP target is answered 400; a well-formed one outside any call 481; the server keeps answering',
    async () => {
      expect(await statusOf(undefined)).toBe(400)
      expect(await statusOf('<sip:1002@127.0.0.1>')).toBe(481)
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.string({ maxLength: 60 }).filter((s) => !/[\r\n]/.test(s) && s.trim() === s),
            fc.stringMatching(/^<?(sip|sips|tel):[^\r\n@>]{0,12}@?[^\r\n>]{0,12}>?$/),
          ),
          async (value) => {
            const status = await statusOf(value)
            // A header the SIP parser already refuses is a 400 too; nothing goes unanswered.
            expect(status).toBe(parseReferTo(value) ? 481 : 400)
          },
        ),
        { numRuns: 60 },
      )
    },
    withSipp(120_000),
  )
})

describe.skipIf(!sipp || !sox)('attended transfer of a real call (REFER with Replaces, RFC 5589)', () => {
  test(
    'Alice holds Bob, calls Carol, then refers Bob to Carol replacing that call: Bob and Carol talk on the first call, Alice is released from both',
    async () => {
      const p = await threePhones()
      const bobAnswers = p.bobPhone('answer.xml')
      const carolAnswers = p.carolPhone('answer-moved-talk-bye.xml')
      // Alice's phone holds two dialogs at once: a small UA of the test's (sipp runs one dialog per scenario).
      const alice = await startUa(p.alice.account, { port: t.service.sip!.udpPort })
      try {
        const toBob = await alice.call(p.bob.extension)
        await alice.hold(toBob, p.bob.extension)
        const toCarol = await alice.call(p.carol.extension)
        expect(await alice.referReplacing(toBob, p.bob.extension, p.carol.extension, toCarol)).toBe(202)
        await alice.request(toBob, 'NOTIFY', (m) => m.body.includes('SIP/2.0 200'))
        await alice.request(toBob, 'BYE')
        await alice.request(toCarol, 'BYE')
        // A phone that hangs up itself after the NOTIFY (its BYE crossing ours) gets 200, not 481.
        await alice.hangUp(toCarol, p.carol.extension)
        expectAllPassed(await carolAnswers, await bobAnswers)
      } finally {
        alice.close()
      }

      const primary = await until('the call to Bob ended', async () => (await p.a.calls()).find((c) => c.to_number === p.bob.extension && c.status), 30_000)
      const consult = await p.carolsCall()
      expect(primary).toMatchObject({ status: 'completed', from_user_id: p.alice.user })
      expect(consult).toMatchObject({ status: 'completed', related_call: primary.id, from_user_id: p.alice.user })
      // The call to consult ends with call.transfer (no call.end), as a warm transfer's consultation call does.
      const consulted = await p.a.eventsOf(consult.id, 'call.transfer')
      expect(types(consulted)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.transfer'])
      expect(consulted.find((e) => e.type === 'call.transfer').data).toMatchObject({
        transferred_to: p.carol.user,
        transferred_by: p.alice.user,
        related_call: primary.id,
      })
      // The first call went on with Carol in Alice's place and ended when Carol hung up.
      const first = await p.a.eventsOf(primary.id)
      expect(types(first).slice(-1)).toEqual(['call.end'])
      // Bob and Carol heard each other on the first call's line after the hand-over.
      const media = t.service.media!.b2bua.recentMedia().find((m) => m.call_id === primary.id)
      // Alice's phone sends no audio: what reached the first call's caller leg is Carol's, relayed to Bob.
      expect(media!.caller.packetsReceived).toBeGreaterThan(20)
      expect(media!.callee.packetsSent).toBeGreaterThan(20)
      expect(t.service.media!.b2bua.activeCalls).toBe(0)
      // Nobody is left on a call: Alice released from both calls, Bob and Carol once the first one ended.
      for (const user of [p.alice.user, p.bob.user, p.carol.user])
        await until(`${user} no longer on a call`, async () => (await t.call('GET', `/v1/users/${user}/presence`, p.a.c)).body.status !== 'on_call')
      await p.a.stop()
    },
    withSipp(120_000),
  )

  test(
    'a REFER whose Replaces names no dialog of the phone’s (unknown, or the referring call itself) is refused 481 and the call goes on',
    async () => {
      const p = await threePhones()
      const bobAnswers = p.bobPhone('answer.xml')
      const alice = await startUa(p.alice.account, { port: t.service.sip!.udpPort })
      try {
        const toBob = await alice.call(p.bob.extension)
        const unknown = { ...toBob, callId: 'unknown@127.0.0.1' }
        expect(await alice.referReplacing(toBob, p.bob.extension, p.carol.extension, unknown)).toBe(481)
        expect(await alice.referReplacing(toBob, p.bob.extension, p.carol.extension, toBob)).toBe(481)
        await alice.hangUp(toBob, p.bob.extension)
        expectAllPassed(await bobAnswers)
      } finally {
        alice.close()
      }
      const call = await until('the call to Bob ended', async () => (await p.a.calls()).find((c) => c.to_number === p.bob.extension && c.status), 30_000)
      expect(call).toMatchObject({ status: 'completed', related_call: null })
      expect(types(await p.a.eventsOf(call.id))).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      await p.a.stop()
    },
    withSipp(120_000),
  )
})

/**
 * Alice's phone (a UA of the test's, answering re-INVITEs) calls Bob, who takes every re-INVITE until a BYE;
 * then the API's warm transfer of that call to Carol, whose phone runs `carolScenario`.
 */
async function warmTransferStarted(carolScenario: string) {
  const p = await threePhones()
  const bobWaits = p.bobPhone('answer-reinvites-bye.xml')
  const carolWaits = p.carolPhone(carolScenario)
  const alice = await startUa(p.alice.account, { port: t.service.sip!.udpPort })
  const toBob = await alice.call(p.bob.extension)
  const primary = await p.answeredCall()
  const warm = await t.call('POST', `/v1/calls/${primary}`, { ...p.a.c, body: { action: 'transfer', to: p.carol.user, mode: 'warm' } })
  expect(warm.status).toBe(202)
  return { p, alice, bobWaits, carolWaits, toBob, primary, consultation: warm.body.consultation_call_id as string }
}

describe.skipIf(!sipp || !sox)('warm transfer of a real call from the API', () => {
  test(
    'transfer mode warm: the user’s phone consults the target on a call of its own while the other party holds (its own hold and resume are the consultation’s); complete_transfer hands the held party over',
    async () => {
      const { p, alice, bobWaits, carolWaits, toBob, primary, consultation } = await warmTransferStarted('answer-reinvites-bye.xml')
      try {
        // Alice's phone is moved to the consultation's line (a re-INVITE), Carol's phone rings and answers.
        const moved = await alice.request(toBob, 'INVITE')
        await until('Carol answered the consultation', async () => (await p.a.calls()).find((c) => c.id === consultation && c.answered_at))
        // Alice's phone holds and resumes in its one dialog: answered from the consultation's line, the held call left as it is.
        const port = (m: UaMessage) => /^m=audio (\d+)/m.exec(m.body)?.[1]
        expect(port(moved)).toBeDefined()
        expect(port(await alice.hold(toBob, p.bob.extension, 'sendonly'))).toBe(port(moved))
        expect(port(await alice.hold(toBob, p.bob.extension, 'sendrecv'))).toBe(port(moved))
        expect((await t.call('POST', `/v1/calls/${consultation}`, { ...p.a.c, body: { action: 'complete_transfer' } })).status).toBe(202)
        // Alice is released; Bob and Carol talk on the first call until the API hangs it up.
        await alice.request(toBob, 'BYE')
        // They talk a while (Carol's audio now reaches the first call's line) before the API hangs up.
        await Bun.sleep(3000)
        expect((await t.call('POST', `/v1/calls/${primary}`, { ...p.a.c, body: { action: 'hangup' } })).status).toBe(202)
        expectAllPassed(await bobWaits, await carolWaits)

        const consulted = await p.a.eventsOf(consultation, 'call.transfer')
        expect(types(consulted)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.transfer'])
        expect(consulted.find((e) => e.type === 'call.transfer').data).toMatchObject({
          transferred_to: p.carol.user,
          transferred_by: p.alice.user,
          related_call: primary,
        })
        const log = await until('the first call ended', async () => (await p.a.calls()).find((c) => c.id === primary && c.status), 30_000)
        expect(log).toMatchObject({ status: 'completed' })
        expect((await p.a.calls()).find((c) => c.id === consultation)).toMatchObject({ status: 'completed', related_call: primary })
        // Alice's phone sends no audio: what reached the first call's caller leg is Carol's.
        const media = t.service.media!.b2bua.recentMedia().find((m) => m.call_id === primary)
        expect(media!.caller.packetsReceived).toBeGreaterThan(20)
        expect(t.service.media!.b2bua.activeCalls).toBe(0)
      } finally {
        alice.close()
      }
      await p.a.stop()
    },
    withSipp(120_000),
  )

  test(
    'the consulted target is busy: the consultation ends busy, the user’s phone goes back to the held call, which the API resumes and hangs up',
    async () => {
      const { p, alice, bobWaits, carolWaits: carolBusy, toBob, primary, consultation } = await warmTransferStarted('answer-busy.xml')
      try {
        const ended = await until('the consultation ended', async () => (await p.a.calls()).find((c) => c.id === consultation && c.status), 30_000)
        expect(ended).toMatchObject({ status: 'busy', related_call: primary })
        // Two re-INVITEs to Alice's phone: onto the consultation's line, then back onto the held call's.
        await until('Alice back on the held call', async () => alice.received.filter((m) => m.firstLine.startsWith('INVITE ')).length >= 2)
        expect((await t.call('POST', `/v1/calls/${primary}`, { ...p.a.c, body: { action: 'resume' } })).status).toBe(202)
        expect((await t.call('POST', `/v1/calls/${primary}`, { ...p.a.c, body: { action: 'hangup' } })).status).toBe(202)
        await alice.request(toBob, 'BYE')
        expectAllPassed(await bobWaits, await carolBusy)
        const first = await p.a.eventsOf(primary)
        expect(types(first)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
        expect(first.filter((e) => e.type === 'call.command_succeeded').map((e) => e.data.command)).toEqual(['transfer', 'resume', 'hangup'])
        expect(t.service.media!.b2bua.activeCalls).toBe(0)
      } finally {
        alice.close()
      }
      await p.a.stop()
    },
    withSipp(120_000),
  )
})
