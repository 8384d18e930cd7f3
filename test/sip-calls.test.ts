/**
 * Real calls through the B2BUA, with sipp (Debian `sip-tester`) as both phones over
 * UDP on loopback. The callee's line registers (digest), then a sipp UAS on that
 * same port answers what rings it, playing an A-law tone (made by sox). The caller's
 * line dials the callee's extension: 407 proxy challenge, INVITE with the digest
 * answer, 180, 200 with the B2BUA's SDP, ACK, RTP (echoed back by the caller), BYE.
 * The call actor gets what SIP did, so the call log and the webhooks are those of any
 * call; the media figures show RTP relayed both ways (µ-law on one leg, A-law on the
 * other: transcoded), and the recording the service made carries the callee's tone.
 * Then the other endings: a busy callee (486), a caller who gives up while it rings
 * (CANCEL), and a hang-up through the API (BYE to both phones). Last, baresip (Debian)
 * as the callee's phone: registered with the credentials the API gave, it answers by
 * itself and plays a WAV; the recording holds that audio.
 */
import { describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { decodeWavHeader, decodeWavSamples } from '../media/wav'
import { deviceFixtures } from './device-fixtures'
import { until } from './support/polling'
import { freePort } from './support/scratch-postgres'
import { startTestService } from './support/service'
import { recordClickToCall } from '../src/services/calls/click-to-call-requests'
import { accounts } from '../src/db/schema'
import { eq } from 'drizzle-orm'
import { startWebhookReceiver } from './support/webhook-receiver'
import { authOf as auth, expectAllPassed, runSipp as sippAgainst, type SipAccount, sipp, sipWorkFolder, sox, withSipp } from './support/sip-phones'

const baresip = Bun.which('baresip')
const t = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const f = deviceFixtures(t)
// What the phones play: the callee 1 kHz (A-law), the caller 400 Hz (µ-law), 4 s each.
const work = sipWorkFolder('sip-calls-')

/** One sipp run against this file's service (test/support/sip-phones.ts). */
const runSipp = (scenario: string, fields: string[], args: string[]) => sippAgainst(t, work, scenario, fields, args)

async function phoneOf(c: { key: string; account: string }, user: string) {
  const extensionId = await f.extension(c, user)
  const list = await t.call('GET', '/v1/extensions?limit=100', c)
  const extension = list.body.data.find((e: any) => e.id === extensionId).number as string
  const phone = await f.deskphone(c, { lines: [{ user, extension: extensionId }] })
  const lines = await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)
  return { extension, device: phone.id as string, account: lines.body.data[0].sip_credentials as SipAccount }
}

/**
 * An account with two users, each with a desk phone line and an extension, and a
 * webhook endpoint receiving every event; `record`: the account records its calls.
 */
async function twoLines(o: { record?: boolean } = {}) {
  const c = await f.ctx()
  if (o.record) expect((await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { config: { recording_enabled: true } } })).status).toBe(200)
  const [alice, bob] = [await f.user(c), await f.user(c)]
  const caller = await phoneOf(c, alice)
  const callee = await phoneOf(c, bob)
  const rx = await startWebhookReceiver()
  const endpoint = await t.call('POST', '/v1/webhook_endpoints', { ...c, body: { url: rx.url, enabled_events: ['*'] } })
  expect(endpoint.status).toBe(200)

  /** The caller's phone dials the callee's extension with `scenario` (sipp UAC); `echo`: it sends back the RTP it gets. */
  const dial = async (scenario: string, o: { echo?: boolean; to?: string } = { echo: true }) =>
    runSipp(
      scenario,
      [caller.account.username, caller.account.domain, o.to ?? callee.extension, auth(caller.account)],
      [
        '-p',
        String(await freePort()),
        '-mi',
        '127.0.0.1',
        '-mp',
        String(await freePort()),
        ...(o.echo ? ['-rtp_echo'] : []),
        '-auth_uri',
        `${o.to ?? callee.extension}@${caller.account.domain}`,
      ],
    )
  /** The one call of the account, once its log has its status. */
  const endedCall = () =>
    until('the call log to show the end', async () => {
      const call = (await t.call('GET', '/v1/calls', c)).body.data?.[0]
      return call?.status ? call : undefined
    })
  /** The call's events as the endpoint received them (verified), once `last` came. */
  const eventsOf = async (callId: string, last = 'call.end') => {
    const secret = endpoint.body.secret as string
    const all = async () => {
      const out: any[] = []
      for (const r of rx.requests) out.push(await rx.verify(r, secret))
      return out.filter((e) => e.data?.call_id === callId).sort((a, b) => (a.id < b.id ? -1 : 1))
    }
    await until(`${last} delivered`, async () => (await all()).some((e) => e.type === last))
    return all()
  }
  /** The call's recording as the API serves it (signed download URL), as 8 kHz samples. */
  const recordingOf = async (callId: string) => {
    const download = await t.call('GET', `/v1/calls/${callId}/recording`, c)
    expect(download.status).toBe(200)
    const wav = new Uint8Array(await (await fetch(download.body.url)).arrayBuffer())
    expect(decodeWavHeader(wav)).toMatchObject({ sampleRate: 8000, channels: 1, bitsPerSample: 16 })
    return decodeWavSamples(wav)
  }
  /** The callee's line registers with sipp (digest) from a port its answering sipp then listens on. */
  /** A line registers with sipp (digest) from a port its answering sipp then listens on. */
  const registerWithSipp = async (line: { account: SipAccount }, user: string) => {
    const port = await freePort()
    const registered = await runSipp(
      'register.xml',
      [line.account.username, line.account.domain, auth(line.account), '600'],
      ['-p', String(port), '-auth_uri', line.account.domain],
    )
    if (registered.exitCode !== 0) console.log(registered.output)
    expect(registered.exitCode).toBe(0)
    await until('the user available', async () => (await t.call('GET', `/v1/users/${user}/presence`, c)).body.status === 'available')
    /** The phone runs `scenario` (sipp UAS) on its registered port. */
    return async (scenario: string) => {
      const run = runSipp(scenario, ['unused'], ['-p', String(port), '-mi', '127.0.0.1', '-mp', String(await freePort())])
      await Bun.sleep(300) // the UAS binds its port before the call rings it
      return run
    }
  }
  const registerCalleeWithSipp = () => registerWithSipp(callee, bob)
  const registerCallerWithSipp = () => registerWithSipp(caller, alice)
  const calleeAvailable = () => until('the callee available', async () => (await t.call('GET', `/v1/users/${bob}/presence`, c)).body.status === 'available')
  return { c, alice, bob, caller, callee, dial, endedCall, eventsOf, recordingOf, registerCalleeWithSipp, registerCallerWithSipp, calleeAvailable }
}

/**
 * For each 100 ms of the track: whether a tone of `hz` carries a good part (30 %) of
 * its energy (Goertzel power at `hz` against the window's energy).
 */
function toneWindows(samples: Int16Array, hz: number): boolean[] {
  const n = 800
  const coeff = 2 * Math.cos((2 * Math.PI * hz) / 8000)
  const out: boolean[] = []
  for (let start = 0; start + n <= samples.length; start += n) {
    let s1 = 0
    let s2 = 0
    let energy = 0
    for (let i = start; i < start + n; i++) {
      const x = samples[i]! / 32768
      const s0 = x + coeff * s1 - s2
      s2 = s1
      s1 = s0
      energy += x * x
    }
    const power = (s1 * s1 + s2 * s2 - coeff * s1 * s2) / (n / 2)
    out.push(energy > 1 && power / energy > 0.3)
  }
  return out
}
const share = (windows: boolean[]) => windows.filter((w) => w).length / Math.max(1, windows.length)

if (!sipp || !sox)
  test.skip(`calls with real SIP peers (skipped: ${!sipp ? 'sipp is not installed; Debian package sip-tester' : 'sox is not installed'})`, () => {})

describe.skipIf(!sipp || !sox)('internal calls between two sipp phones through the B2BUA', () => {
  test(
    'call the extension (digest), ring, answer, RTP both ways (transcoded), BYE: a completed, recorded internal call with its events',
    async () => {
      const p = await twoLines({ record: true })
      const answer = await p.registerCalleeWithSipp()
      const answering = answer('answer.xml')
      const calling = await p.dial('call-extension.xml', { echo: false })
      expectAllPassed(calling, await answering)

      const log = await p.endedCall()
      expect(log).toMatchObject({ direction: 'internal', status: 'completed', from_number: p.caller.extension, to_number: p.callee.extension })
      expect(log.answered_at).toBeTruthy()
      expect(log.duration_seconds).toBeGreaterThanOrEqual(1)
      const events = await p.eventsOf(log.id, 'recording.available')
      expect(events.map((e) => e.type)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end', 'recording.available'])
      expect(events[1].data.user_id).toBe(p.bob)
      expect(events[2].data).toMatchObject({ user_id: p.bob })
      expect(events[3].data).toMatchObject({ status: 'completed' })
      // The log knows both phones: the one that placed the call and the one that answered it.
      const byEndpoint = async (id: string) => (await t.call('GET', `/v1/calls?endpoint_id=${id}`, p.c)).body.data.map((c: any) => c.id)
      expect(await byEndpoint(p.caller.device)).toEqual([log.id])
      expect(await byEndpoint(p.callee.device)).toEqual([log.id])
      expect(await byEndpoint((await f.deskphone(p.c, {})).id)).toEqual([])

      const media = t.service.media!.b2bua.recentMedia().find((m) => m.call_id === log.id)
      expect(media).toBeDefined()
      // Each phone played its tone: the callee's A-law relayed to the caller as µ-law, the caller's the other way.
      expect(media!.callee.packetsReceived).toBeGreaterThan(20)
      expect(media!.caller.packetsSent).toBeGreaterThan(20)
      expect(media!.caller.packetsReceived).toBeGreaterThan(20)
      expect(media!.callee.packetsSent).toBeGreaterThan(20)

      // The recording is the call's audio, both directions: both tones in most of it, nothing at 2.5 kHz (not just a file of the right size).
      const samples = await p.recordingOf(log.id)
      expect(samples.length / 8000).toBeGreaterThan(1.5)
      expect(share(toneWindows(samples, 1000))).toBeGreaterThan(0.6)
      expect(share(toneWindows(samples, 400))).toBeGreaterThan(0.6)
      expect(share(toneWindows(samples, 2500))).toBe(0)
    },
    withSipp(90_000),
  )

  test(
    'a busy callee (486): the caller gets 486, the call ends busy',
    async () => {
      const p = await twoLines()
      const answer = await p.registerCalleeWithSipp()
      const answering = answer('answer-busy.xml')
      const calling = await p.dial('call-extension-busy.xml')
      expectAllPassed(calling, await answering)
      expect(await p.endedCall()).toMatchObject({ status: 'busy', answered_at: null })
    },
    withSipp(90_000),
  )

  test(
    'the caller gives up while it rings (CANCEL): the callee is cancelled too, the call ends no-answer',
    async () => {
      const p = await twoLines()
      const answer = await p.registerCalleeWithSipp()
      const answering = answer('answer-ring.xml')
      const calling = await p.dial('call-extension-cancel.xml')
      expectAllPassed(calling, await answering)
      const log = await p.endedCall()
      expect(log).toMatchObject({ status: 'no-answer', answered_at: null })
      expect((await p.eventsOf(log.id)).map((e) => e.type)).toEqual(['call.initiated', 'call.ringing', 'call.end'])
    },
    withSipp(90_000),
  )

  test(
    'hung up through the API (POST /v1/calls/{id}): both phones get a BYE',
    async () => {
      const p = await twoLines()
      const answer = await p.registerCalleeWithSipp()
      const answering = answer('answer.xml')
      const calling = p.dial('call-extension-wait-bye.xml')
      const id = await until('the call answered', async () => {
        const call = (await t.call('GET', '/v1/calls', p.c)).body.data?.[0]
        return call?.answered_at ? (call.id as string) : undefined
      })
      const hangup = await t.call('POST', `/v1/calls/${id}`, { ...p.c, body: { action: 'hangup' } })
      expect(hangup.status).toBe(202)
      expectAllPassed(await calling, await answering)
      expect(await p.endedCall()).toMatchObject({ id, status: 'completed' })
      expect(t.service.media!.b2bua.activeCalls).toBe(0)
    },
    withSipp(90_000),
  )
})

describe.skipIf(!sipp || !sox)('voicemail of a real call', () => {
  test(
    'the callee has no registered phone: voicemail answers, greets, records the message; the call ends voicemail with voicemail.new',
    async () => {
      const p = await twoLines()
      const calling = await p.dial('call-leave-message.xml', { echo: false })
      if (calling.exitCode !== 0) console.log(calling.output)
      expect(calling.exitCode).toBe(0)
      const log = await p.endedCall()
      expect(log).toMatchObject({ direction: 'internal', status: 'voicemail', connected_at: null })
      expect(log.answered_at).toBeTruthy()
      const events = await p.eventsOf(log.id, 'voicemail.new')
      expect(events.map((e) => e.type)).toEqual(['call.initiated', 'call.answered', 'call.end', 'voicemail.new'])
      // The message runs from the beep to the BYE: the 4 s of the call less the default greeting (about 1.3 s).
      const message = events[3].data
      expect(message).toMatchObject({ user_id: p.bob, call_id: log.id, from_number: p.caller.extension })
      expect(message.duration_seconds).toBeGreaterThanOrEqual(2)
      expect(message.duration_seconds).toBeLessThanOrEqual(4)
      const box = await t.call('GET', `/v1/voicemails/${message.voicemail_id}`, p.c)
      expect(box.body).toMatchObject({ owner: p.bob, call_id: log.id, duration_seconds: message.duration_seconds })
    },
    withSipp(60_000),
  )
})

/** Both phones registered and answering; `place` asks for Alice's click-to-call to Bob; once Bob answered, the API hangs up. */
async function clickToCallAnsweredThenHungUp(place: (p: Awaited<ReturnType<typeof twoLines>>) => Promise<void>) {
  const p = await twoLines()
  const callerPhone = await p.registerCallerWithSipp()
  const calleePhone = await p.registerCalleeWithSipp()
  const userAnswers = callerPhone('answer.xml')
  const calleeAnswers = calleePhone('answer.xml')
  await place(p)
  const id = await until('the destination answered', async () => {
    const call = (await t.call('GET', '/v1/calls', p.c)).body.data?.[0]
    return call?.answered_at ? (call.id as string) : undefined
  })
  expect((await t.call('POST', `/v1/calls/${id}`, { ...p.c, body: { action: 'hangup' } })).status).toBe(202)
  expectAllPassed(await userAnswers, await calleeAnswers)
  return { p, id }
}

describe.skipIf(!sipp || !sox)('click-to-call (POST /v1/calls) rings real phones', () => {
  test(
    'the user’s phone rings first (no call.ringing for it), then the extension dialled; a hang-up through the API ends both',
    async () => {
      const { p, id } = await clickToCallAnsweredThenHungUp(async (p) => {
        const placed = await t.call('POST', '/v1/calls', { ...p.c, body: { user: p.alice, dial_string: p.callee.extension } })
        expect(placed.status).toBe(202)
      })
      const log = await p.endedCall()
      expect(log).toMatchObject({
        id,
        direction: 'internal',
        status: 'completed',
        user_id: p.bob,
        from_number: p.caller.extension,
        to_number: p.callee.extension,
      })
      const all = await p.eventsOf(id)
      expect(all.filter((e) => e.type === 'call.command_succeeded').map((e) => e.data.command)).toEqual(['hangup'])
      const events = all.filter((e) => e.type !== 'call.command_succeeded')
      expect(events.map((e) => e.type)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      expect(events[0].data).toMatchObject({ user_id: p.alice })
      expect(events[1].data.user_id).toBe(p.bob)
      // Alice's phone placed it (it rang first), Bob's answered it.
      for (const phone of [p.caller.device, p.callee.device])
        expect((await t.call('GET', `/v1/calls?endpoint_id=${phone}`, p.c)).body.data.map((c: any) => c.id)).toEqual([id])
    },
    withSipp(90_000),
  )

  test(
    'an accepted click-to-call whose bus notice was lost is still placed: a media process takes the recorded request on its poll',
    async () => {
      const { p, id } = await clickToCallAnsweredThenHungUp(async (p) => {
        // What POST /v1/calls commits with its 202, without the notice that normally follows it.
        const [account] = await t.service.database.db.select().from(accounts).where(eq(accounts.id, p.c.account))
        await recordClickToCall(
          t.service.database.db,
          {
            owner: { platformId: account!.platformId, accountId: p.c.account, mode: 'test' },
            plan: { kind: 'connect_internal', from_user_id: p.alice, ring_devices: [], to_user_id: p.bob, extension: p.callee.extension, caller_id: null },
            at: new Date().toISOString(),
          },
          new Date(),
        )
      })
      expect(await p.endedCall()).toMatchObject({ id, direction: 'internal', status: 'completed', user_id: p.bob })
    },
    withSipp(90_000),
  )

  test(
    'a public number from a sandbox account: the user’s phone hears the special information tone and a BYE; no call.* event',
    async () => {
      const p = await twoLines()
      const callerPhone = await p.registerCallerWithSipp()
      const userAnswers = callerPhone('answer.xml')
      const placed = await t.call('POST', '/v1/calls', { ...p.c, body: { user: p.alice, dial_string: '+15551234567' } })
      expect(placed.status).toBe(202)
      const answered = await userAnswers
      if (answered.exitCode !== 0) console.log(answered.output)
      expect(answered.exitCode).toBe(0)
      expect((await t.call('GET', '/v1/calls', p.c)).body.data).toEqual([])
    },
    withSipp(90_000),
  )
})

describe.skipIf(!sipp || !sox)('a phone calling out in the sandbox: the simulator is the far end', () => {
  test(
    'a magic busy number: 486 to the phone, the call ends busy',
    async () => {
      const p = await twoLines()
      const calling = await p.dial('call-extension-busy.xml', { to: '+15005550102' })
      if (calling.exitCode !== 0) console.log(calling.output)
      expect(calling.exitCode).toBe(0)
      expect(await p.endedCall()).toMatchObject({ direction: 'outbound', status: 'busy', to_number: '+15005550102', user_id: p.alice })
    },
    withSipp(60_000),
  )

  test(
    '933: an emergency call, answered by the simulator (its voice relayed to the phone), with call.emergency',
    async () => {
      const p = await twoLines()
      const calling = await p.dial('call-extension.xml', { to: '933', echo: false })
      if (calling.exitCode !== 0) console.log(calling.output)
      expect(calling.exitCode).toBe(0)
      const log = await p.endedCall()
      expect(log).toMatchObject({ direction: 'outbound', status: 'completed', to_number: '933' })
      const events = await p.eventsOf(log.id)
      expect(events.map((e) => e.type)).toEqual(['call.initiated', 'call.emergency', 'call.ringing', 'call.answered', 'call.end'])
      expect(events[1].data).toMatchObject({ call_id: log.id, to_number: '933', user_id: p.alice, e911_provisioned: false })
      expect(events[2].data.user_id).toBeUndefined()
      const media = t.service.media!.b2bua.recentMedia().find((m) => m.call_id === log.id)
      // The far end's voice went to the phone; the phone's tone came in.
      expect(media!.caller.packetsSent).toBeGreaterThan(20)
      expect(media!.caller.packetsReceived).toBeGreaterThan(20)
    },
    withSipp(60_000),
  )
})

if (!sipp || !sox || !baresip)
  test.skip(`a call to baresip (skipped: ${!baresip ? 'baresip is not installed (Debian package baresip)' : !sipp ? 'sipp is not installed' : 'sox is not installed'})`, () => {})

describe.skipIf(!sipp || !sox || !baresip)('baresip as a real phone', () => {
  test(
    'registers with the API credentials, answers by itself, plays a WAV: the recording holds that audio',
    async () => {
      const p = await twoLines({ record: true })
      // A 1 kHz tone, 0.5 s on and 0.5 s off: the recording must show both, not a constant.
      const folder = join(work, `baresip-${crypto.randomUUID()}`)
      mkdirSync(folder)
      const wav = join(folder, 'pulses.wav')
      const made = Bun.spawnSync([sox!, '-n', '-r', '8000', '-c', '1', '-b', '16', wav, 'synth', '0.5', 'sine', '1000', 'pad', '0', '0.5', 'repeat', '5'])
      expect(made.exitCode).toBe(0)
      const a = p.callee.account
      writeFileSync(
        join(folder, 'config'),
        [
          'poll_method epoll',
          `sip_listen 127.0.0.1:${await freePort()}`,
          'audio_player aubridge,nil',
          'audio_alert aubridge,nil',
          `audio_source aufile,${wav}`,
          'module_path /usr/lib/baresip/modules',
          'module g711.so',
          'module aufile.so',
          'module aubridge.so',
          'module_app account.so',
          'module_app menu.so',
          '',
        ].join('\n'),
      )
      writeFileSync(
        join(folder, 'accounts'),
        `<sip:${a.username}@${a.domain}>;auth_pass=${a.password};outbound="sip:127.0.0.1:${t.service.sip!.udpPort}";regint=600;answermode=auto;audio_codecs=PCMU,PCMA\n`,
      )
      const phone = Bun.spawn([baresip!, '-s', '-f', folder, '-t', '60'], { cwd: folder, stdout: 'pipe', stderr: 'pipe' })
      try {
        await p.calleeAvailable()
        const calling = await p.dial('call-extension.xml', { echo: false })
        if (calling.exitCode !== 0) console.log(calling.output)
        expect(calling.exitCode).toBe(0)
        const log = await p.endedCall()
        expect(log).toMatchObject({ status: 'completed', to_number: p.callee.extension })
        await p.eventsOf(log.id, 'recording.available')
        const windows = toneWindows(await p.recordingOf(log.id), 1000)
        // About half the windows carry the pulses and about half do not: they came through as played.
        expect(share(windows)).toBeGreaterThan(0.25)
        expect(share(windows)).toBeLessThan(0.75)
      } catch (e) {
        phone.kill()
        console.log(await new Response(phone.stdout).text(), await new Response(phone.stderr).text())
        throw e
      } finally {
        phone.kill()
        await phone.exited
      }
    },
    withSipp(90_000),
  )
})
