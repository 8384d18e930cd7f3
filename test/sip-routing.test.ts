/**
 * Real calls that follow the account's routing, with sipp (Debian `sip-tester`) as
 * every phone and as the carrier, over UDP on loopback (the harness:
 * test/support/sip-phones.ts):
 *  - a carrier trunk (SIP_TRUNK_SOURCES=127.0.0.1) delivers a call to one of the
 *    account's numbers, routed to a ring group: both members' phones ring at once,
 *    one answers, the other gets CANCEL; the events are an inbound call's;
 *  - a phone dials the extension of a sequential ring group whose first member is
 *    busy: the second member's phone rings next and answers;
 *  - a member who set dnd is passed over;
 *  - an AI agent and a webhook voice app take the carrier's call (the app hangs it up);
 *  - the trunk calls a number no account holds: 404, and no call.
 */
import { describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { callRouter } from '../actors/calls/call-router'
import { pcmWav } from './fixtures/pcm-wav'
import { upload } from './fixtures/upload'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { CARRIER_CALLER, carrierNumbers, expectAllPassed, sipAccount, sipWorkFolder, sipp, sox, trunkInviteStatus, withSipp } from './support/sip-phones'
import { startWebhookReceiver } from './support/webhook-receiver'

const t = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1', SIP_TRUNK_SOURCES: '127.0.0.1' })
const work = sipWorkFolder('sip-routing-')
const { numberRoutedTo, endedCallTo, call: carrierCall } = carrierNumbers(t)
/** The RFC 4733 key "1" that Debian's sip-tester ships, replayed by the carrier into a menu. */
const DTMF_PCAP = '/usr/share/sip-tester/dtmf_2833_1.pcap'

const types = (events: any[]) => events.filter((e) => e.type.startsWith('call.') && !e.type.startsWith('call.command_')).map((e) => e.type)

/** Two of three lines registered (Bob and Carol), and a ring group of theirs. */
async function ringGroupOf(strategy: 'simultaneous' | 'sequential') {
  const a = await sipAccount(t, work, 3)
  const [alice, bob, carol] = a.lines as [(typeof a.lines)[0], (typeof a.lines)[0], (typeof a.lines)[0]]
  const bobPhone = await bob.register()
  const carolPhone = await carol.register()
  const members = [{ user: bob.user }, { user: carol.user }]
  const group = await t.call('POST', '/v1/ring_groups', { ...a.c, body: { name: 'Front desk', strategy, members } })
  expect(group.status).toBe(200)
  return { a, alice, bob, carol, bobPhone, carolPhone, group: group.body.id as string }
}

if (!sipp || !sox)
  test.skip(`real calls through the routing (skipped: ${!sipp ? 'sipp is not installed; Debian package sip-tester' : 'sox is not installed'})`, () => {})

describe.skipIf(!sipp || !sox)('real calls follow the routing', () => {
  test(
    'a carrier calls a number routed to a ring group: both phones ring, one answers, the other is cancelled; an inbound call’s events',
    async () => {
      const p = await ringGroupOf('simultaneous')
      const number = await numberRoutedTo(p.a.c, p.group)
      const bobRings = p.bobPhone('answer-ring.xml')
      const carolAnswers = p.carolPhone('answer.xml')
      const carrier = carrierCall(work, 'trunk-call-did.xml', number)
      expectAllPassed(await carrier, await carolAnswers, await bobRings)

      const call = await endedCallTo(p.a, number)
      expect(call).toMatchObject({ direction: 'inbound', from_number: CARRIER_CALLER, status: 'completed', user_id: p.carol.user })
      const events = await p.a.eventsOf(call.id)
      const seen = types(events)
      expect(seen[0]).toBe('call.incoming')
      expect(seen.slice(-2)).toEqual(['call.answered', 'call.end'])
      const rung = events.filter((e) => e.type === 'call.ringing').map((e) => e.data.user_id)
      expect(rung).toContain(p.carol.user)
      for (const u of rung) expect([p.bob.user, p.carol.user]).toContain(u)
      expect(events.find((e) => e.type === 'call.incoming').data).toMatchObject({ direction: 'inbound', from_number: CARRIER_CALLER, to_number: number })
      expect(events.find((e) => e.type === 'call.end').data).toMatchObject({ status: 'completed', user_id: p.carol.user })
      await p.a.stop()
    },
    withSipp(90_000),
  )

  test(
    'a phone dials a sequential ring group’s extension: the first member is busy, the second one’s phone rings next and answers',
    async () => {
      const p = await ringGroupOf('sequential')
      // A free number of the account's extension length (the lines took three).
      const taken = new Set(p.a.lines.map((l) => l.extension))
      const length = p.a.lines[0]!.extension.length
      const number = [...Array(900).keys()].map((i) => String(10 ** (length - 1) + i)).find((n) => !taken.has(n))!
      const ext = await t.call('POST', '/v1/extensions', { ...p.a.c, body: { number, target: p.group } })
      expect([ext.status, ext.body.details]).toEqual([200, undefined])
      const bobBusy = p.bobPhone('answer-busy.xml')
      const carolAnswers = p.carolPhone('answer.xml')
      const aliceCalls = p.alice.dial('call-extension.xml', number)
      expectAllPassed(await aliceCalls, await bobBusy, await carolAnswers)

      const call = await endedCallTo(p.a, number)
      expect(call).toMatchObject({ direction: 'internal', from_user_id: p.alice.user, status: 'completed', to_user_id: p.carol.user })
      const events = await p.a.eventsOf(call.id)
      expect(types(events)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      expect(events.find((e) => e.type === 'call.ringing').data.user_id).toBe(p.carol.user)
      await p.a.stop()
    },
    withSipp(90_000),
  )

  test(
    'a member who set dnd is passed over: the sequential group rings the next member at once',
    async () => {
      const p = await ringGroupOf('sequential')
      const session = await t.call('POST', '/v1/user_sessions', { key: p.a.c.key, body: { user: p.bob.user } })
      const dnd = await t.call('PUT', '/v1/me/presence', { key: session.body.client_secret, body: { status: 'dnd' } })
      expect(dnd.status).toBe(200)
      const number = await numberRoutedTo(p.a.c, p.group)
      // Bob's phone is registered but nobody answers it.
      const carolAnswers = p.carolPhone('answer.xml')
      const carrier = carrierCall(work, 'trunk-call-did.xml', number)
      expectAllPassed(await carrier, await carolAnswers)
      const call = await endedCallTo(p.a, number)
      expect(call).toMatchObject({ status: 'completed', user_id: p.carol.user })
      const events = await p.a.eventsOf(call.id)
      expect(events.filter((e) => e.type === 'call.ringing').map((e) => e.data.user_id)).toEqual([p.carol.user])
      // The plan the B2BUA played never had Bob in it.
      const played = await callRouter(t.service.database.db)(p.a.c.account, number, new Date())
      expect(played?.steps.flatMap((x) => (x.kind === 'ring' ? [x.users] : []))).toEqual([[p.carol.user]])
      await p.a.stop()
    },
    withSipp(90_000),
  )

  test(
    'an AI agent takes a carrier’s call: answered with no connected_at, completed when the caller hangs up, a summary naming the agent',
    async () => {
      const a = await sipAccount(t, work, 0)
      const agent = await t.call('POST', '/v1/ai-agents', { ...a.c, body: { name: 'Ava', instructions: 'Book appointments.' } })
      const app = await t.call('POST', '/v1/voice-apps', { ...a.c, body: { name: 'Reception', kind: 'ai_agent', ai_agent: agent.body.id } })
      const number = await numberRoutedTo(a.c, app.body.id)
      expectAllPassed(await carrierCall(work, 'trunk-call-did.xml', number))
      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ direction: 'inbound', status: 'completed', connected_at: null })
      expect(call.answered_at).toBeString()
      expect(call.summary).toContain('AI agent Ava')
      expect(types(await a.eventsOf(call.id))).toEqual(['call.incoming', 'call.answered', 'call.end'])
      await a.stop()
    },
    withSipp(90_000),
  )

  test(
    'a webhook voice app takes a carrier’s call and hangs it up from its webhook: the caller gets a BYE',
    async () => {
      const a = await sipAccount(t, work, 0)
      const rx = await startWebhookReceiver()
      rx.respond(async (req) => {
        if (req.body?.type === 'call.answered') await t.call('POST', `/v1/calls/${req.body.data.call_id}`, { ...a.c, body: { action: 'hangup' } })
        return 200
      })
      const app = await t.call('POST', '/v1/voice-apps', { ...a.c, body: { name: 'IVR', kind: 'webhook', url: rx.url } })
      const number = await numberRoutedTo(a.c, app.body.id)
      expectAllPassed(await carrierCall(work, 'trunk-call-wait-bye.xml', number))
      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ status: 'completed', connected_at: null })
      await until('the app told how its hangup went', async () =>
        rx.requests.some((r) => r.body?.type === 'call.command_succeeded' && r.body.data.call_id === call.id),
      )
      const toApp = []
      for (const r of rx.requests.filter((r) => r.body?.data?.call_id === call.id)) toApp.push((await rx.verify(r, app.body.secret)).type)
      expect([...new Set(toApp)]).toEqual(['call.answered', 'call.end', 'call.command_succeeded'])
      await a.stop()
    },
    withSipp(90_000),
  )

  test(
    'a dial plan that plays a clip first: the carrier hears it as early media (183, no answer), then the phone rings and answers',
    async () => {
      const a = await sipAccount(t, work, 1)
      const [carol] = a.lines as [(typeof a.lines)[0]]
      const carolPhone = await carol.register()
      const clip = await upload(t, '/v1/audio_clips', a.c, {
        form: { name: 'Welcome', file: { bytes: pcmWav({ sampleRate: 8000, channels: 1, bits: 16, seconds: 2 }), name: 'welcome.wav', type: 'audio/wav' } },
      })
      expect(clip.status).toBe(200)
      const plan = await t.call('POST', '/v1/dialplans', {
        ...a.c,
        body: {
          name: 'Welcome',
          entry: 'hello',
          nodes: { hello: { kind: 'play', clip: clip.body.id, next: 'desk' }, desk: { kind: 'route', target: carol.user } },
        },
      })
      expect([plan.status, plan.body.details]).toEqual([200, undefined])
      const number = await numberRoutedTo(a.c, plan.body.id)
      const carolAnswers = carolPhone('answer.xml')
      const carrier = carrierCall(work, 'trunk-call-prompt.xml', number)
      expectAllPassed(await carrier, await carolAnswers)
      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ status: 'completed', user_id: carol.user })
      await a.stop()
    },
    withSipp(90_000),
  )

  test.skipIf(!existsSync(DTMF_PCAP))(
    'a menu: the caller presses 1 (RFC 4733) during the early media and the plan goes on from the menu to the phone the key leads to',
    async () => {
      copyFileSync(DTMF_PCAP, join(work, 'dtmf1.pcap'))
      const a = await sipAccount(t, work, 1)
      const [carol] = a.lines as [(typeof a.lines)[0]]
      const carolPhone = await carol.register()
      const plan = await t.call('POST', '/v1/dialplans', {
        ...a.c,
        body: {
          name: 'Menu',
          entry: 'menu',
          nodes: {
            menu: { kind: 'menu', prompt: null, options: [{ digit: '1', next: 'desk' }], default: 'bye' },
            desk: { kind: 'route', target: carol.user },
            bye: { kind: 'hangup' },
          },
        },
      })
      expect([plan.status, plan.body.details]).toEqual([200, undefined])
      const number = await numberRoutedTo(a.c, plan.body.id)
      const carolAnswers = carolPhone('answer.xml')
      // Without the key the menu's default hangs up (480), which this scenario does not accept.
      const carrier = carrierCall(work, 'trunk-call-menu.xml', number)
      expectAllPassed(await carrier, await carolAnswers)
      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ status: 'completed', user_id: carol.user })
      await a.stop()
    },
    withSipp(90_000),
  )

  test('a carrier calling a number nobody holds gets 404 and no call starts', async () => {
    expect(await trunkInviteStatus(t, '+15550199999')).toBe('SIP/2.0 404 No Such Number')
  })
})
