/**
 * Real SIP phones for end-to-end tests: sipp (Debian `sip-tester`) runs of the
 * scenarios in test/sip/ against a started service over UDP on loopback, and an
 * account whose users each have a desk phone line and an extension, with a webhook
 * endpoint receiving every event. What test/sip-calls.test.ts does inline, for any
 * number of lines (a transfer needs three phones).
 */
import { afterAll, expect } from 'bun:test'
import dgram from 'node:dgram'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deviceFixtures } from '../device-fixtures'
import { until } from './polling'
import { freePort } from './scratch-postgres'
import type { TestService } from './service'
import { startWebhookReceiver } from './webhook-receiver'

export const sipp = Bun.which('sipp')
export const sox = Bun.which('sox')
export const SCENARIOS = join(import.meta.dir, '..', 'sip')

export interface SipAccount {
  username: string
  password: string
  domain: string
}

export interface SippResult {
  exitCode: number
  output: string
}

/**
 * A temporary folder, removed after the test file's last test (call it at the file's
 * top level): sipp's traces in it stay readable while the file runs.
 */
export function sipTemporaryFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix))
  afterAll(() => rmSync(folder, { recursive: true, force: true }))
  return folder
}

/** A working folder with the audio the scenarios play: tone.wav (1 kHz A-law) and caller.wav (400 Hz µ-law), 4 s each. */
export function sipWorkFolder(prefix = 'sip-'): string {
  const work = sipTemporaryFolder(prefix)
  if (sox)
    for (const [file, law, hz] of [
      ['tone.wav', 'a-law', '1000'],
      ['caller.wav', 'u-law', '400'],
    ])
      Bun.spawnSync([sox, '-n', '-r', '8000', '-c', '1', '-e', law!, join(work, file!), 'synth', '4', 'sine', hz!])
  return work
}

/** One sipp run against the service, bounded by its own timeout; loopback only. */
export async function runSipp(t: TestService, work: string, scenario: string, fields: string[], args: string[]): Promise<SippResult> {
  const csv = join(work, `${crypto.randomUUID()}.csv`)
  writeFileSync(csv, `SEQUENTIAL\n${fields.join(';')};\n`)
  const child = Bun.spawn(
    [
      sipp!,
      `127.0.0.1:${t.service.sip!.udpPort}`,
      '-sf',
      join(SCENARIOS, scenario),
      '-inf',
      csv,
      '-t',
      'u1',
      '-i',
      '127.0.0.1',
      '-m',
      '1',
      '-timeout',
      '40s',
      '-timeout_error',
      '-nostdin',
      '-trace_msg',
      ...args,
    ],
    { cwd: work, stdout: 'pipe', stderr: 'pipe' },
  )
  const [exitCode, out, err] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  return { exitCode, output: `${out}\n${err}` }
}

/**
 * The options of a test that runs sipp phones: its timeout, and one more run before
 * it fails. Debian's sipp predates SIPp#619 and can abort mid-call on a clock race
 * between its RTP threads ("wheel_base is N, clock_tick is N-4 - expected wheel_base
 * to be less than or equal to clock_tick"), which is no fault of the service; a
 * fault of ours fails both runs.
 */
export const withSipp = (timeout: number) => ({ timeout, retry: 1 })

export const authOf = (a: SipAccount) => `[authentication username=${a.username} password=${a.password}]`

export const expectAllPassed = (...runs: SippResult[]) => {
  if (runs.some((r) => r.exitCode !== 0)) console.log(...runs.map((r) => r.output))
  expect(runs.map((r) => r.exitCode)).toEqual(runs.map(() => 0))
}

export interface Line {
  user: string
  extension: string
  /** The desk phone the line is on (the call log's endpoint). */
  device: string
  account: SipAccount
  /** Registers the line with sipp (digest) from a port; `answer(scenario, fields, args)` then runs a sipp UAS there (`args`: more sipp options, such as `-m 2` for two calls). */
  register(): Promise<(scenario: string, fields?: string[], args?: string[]) => Promise<SippResult>>
  /** The line dials `to` (default: nothing; give it) with a sipp UAC scenario; `echo`: it sends back the RTP it gets. */
  dial(scenario: string, to: string, o?: { echo?: boolean }): Promise<SippResult>
}

/** An account with `count` users, each with a desk phone line and an extension, and a webhook endpoint receiving every event (`key`: a platform key of its mode, sandbox by default). */
export async function sipAccount(t: TestService, work: string, count: number, o: { record?: boolean; key?: string } = {}) {
  const f = deviceFixtures(t)
  const c = await f.ctx(o.key)
  if (o.record) expect((await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { config: { recording_enabled: true } } })).status).toBe(200)
  const rx = await startWebhookReceiver()
  const endpoint = await t.call('POST', '/v1/webhook_endpoints', { ...c, body: { url: rx.url, enabled_events: ['*'] } })
  expect(endpoint.status).toBe(200)

  const line = async (): Promise<Line> => {
    const user = await f.user(c)
    const extensionId = await f.extension(c, user)
    const list = await t.call('GET', '/v1/extensions?limit=100', c)
    const extension = list.body.data.find((e: any) => e.id === extensionId).number as string
    const phone = await f.deskphone(c, { lines: [{ user, extension: extensionId }] })
    const lines = await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)
    const account = lines.body.data[0].sip_credentials as SipAccount
    return {
      user,
      extension,
      device: phone.id,
      account,
      async register() {
        const port = await freePort()
        const registered = await runSipp(
          t,
          work,
          'register.xml',
          [account.username, account.domain, authOf(account), '600'],
          ['-p', String(port), '-auth_uri', account.domain],
        )
        if (registered.exitCode !== 0) console.log(registered.output)
        expect(registered.exitCode).toBe(0)
        await until('the user available', async () => (await t.call('GET', `/v1/users/${user}/presence`, c)).body.status === 'available')
        return async (scenario: string, fields: string[] = ['unused'], args: string[] = []) => {
          const run = runSipp(t, work, scenario, fields, ['-p', String(port), '-mi', '127.0.0.1', '-mp', String(await freePort()), ...args])
          await Bun.sleep(300) // the UAS binds its port before the call rings it
          return run
        }
      },
      async dial(scenario, to, o = { echo: true }) {
        return runSipp(
          t,
          work,
          scenario,
          [account.username, account.domain, to, authOf(account)],
          [
            '-p',
            String(await freePort()),
            '-mi',
            '127.0.0.1',
            '-mp',
            String(await freePort()),
            ...(o.echo ? ['-rtp_echo'] : []),
            '-auth_uri',
            `${to}@${account.domain}`,
          ],
        )
      },
    }
  }
  const lines: Line[] = []
  for (let i = 0; i < count; i++) lines.push(await line())

  /** The account's calls (newest first). */
  const calls = async () => ((await t.call('GET', '/v1/calls?limit=100', c)).body.data ?? []) as any[]
  /** The events the endpoint received (verified, each event once however often it was delivered), in the order they were written. */
  const events = async () => {
    const secret = endpoint.body.secret as string
    const byId = new Map<string, any>()
    for (const r of rx.requests) {
      const e = await rx.verify(r, secret)
      byId.set(e.id, e)
    }
    return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : 1))
  }
  /** One call's events, once `last` came. */
  const eventsOf = async (callId: string, last = 'call.end') => {
    const of = async () => (await events()).filter((e) => e.data?.call_id === callId)
    await until(`${last} of ${callId} delivered`, async () => (await of()).some((e) => e.type === last), 30_000)
    return of()
  }
  return { c, lines, calls, events, eventsOf, stop: () => rx.stop() }
}

/** The calling number a carrier trunk (sipp from 127.0.0.1, SIP_TRUNK_SOURCES) presents. */
export const CARRIER_CALLER = '+15551230000'

/** An INVITE from the carrier's address, over plain UDP: the first final answer's status line. */
export async function trunkInviteStatus(t: TestService, to: string): Promise<string> {
  const socket = dgram.createSocket('udp4')
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()))
  const port = socket.address().port
  const sdp = ['v=0', 'o=c 1 1 IN IP4 127.0.0.1', 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', 'm=audio 40000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', ''].join('\r\n')
  const invite = [
    `INVITE sip:${to}@127.0.0.1 SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bK${crypto.randomUUID().slice(0, 8)};rport`,
    `From: <sip:${CARRIER_CALLER}@carrier.example>;tag=c1`,
    `To: <sip:${to}@127.0.0.1>`,
    `Call-ID: ${crypto.randomUUID()}@carrier.example`,
    'CSeq: 1 INVITE',
    `Contact: <sip:${CARRIER_CALLER}@127.0.0.1:${port}>`,
    'Max-Forwards: 70',
    'Content-Type: application/sdp',
    `Content-Length: ${Buffer.byteLength(sdp)}`,
    '',
    sdp,
  ].join('\r\n')
  const final = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no final answer to the INVITE')), 10_000)
    socket.on('message', (m) => {
      const status = m.toString().split('\r\n')[0]!
      if (/^SIP\/2\.0 [2-6]\d\d/.test(status)) {
        clearTimeout(timer)
        resolve(status)
      }
    })
  })
  socket.send(invite, t.service.sip!.udpPort, '127.0.0.1')
  try {
    return await final
  } finally {
    socket.close()
  }
}

/** Numbers a carrier trunk delivers calls to, and the calls it made. */
export function carrierNumbers(t: TestService) {
  /** One of the account's numbers, picked among several so that two test platforms' sandboxes rarely hold the same one. */
  const orderNumber = async (c: { key: string; account: string }) => {
    const avail = await t.call('GET', '/v1/available-phone-numbers?quantity=20', c)
    const pick = avail.body.data[Math.floor(Math.random() * avail.body.data.length)].phone_number as string
    expect((await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [pick] } })).status).toBe(200)
    const numbers = await t.call('GET', '/v1/phone-numbers', c)
    return numbers.body.data.find((n: any) => n.number === pick) as { id: string; number: string }
  }
  return {
    /** One of the account's numbers, routed to `target`. */
    async numberRoutedTo(c: { key: string; account: string }, target: string) {
      const number = await orderNumber(c)
      expect((await t.call('POST', `/v1/phone-numbers/${number.id}/route`, { ...c, body: { target } })).status).toBe(200)
      return number.number
    },
    /** The account's call to `to`, once it has ended. */
    endedCallTo: (a: { calls(): Promise<any[]> }, to: string) =>
      until('the call ended', async () => (await a.calls()).find((c) => c.to_number === to && c.status), 30_000),
    /** Runs a carrier scenario (test/sip/trunk-*.xml) calling `number`. */
    call: (work: string, scenario: string, number: string) => runSipp(t, work, scenario, [number, CARRIER_CALLER], ['-p', '0', '-mi', '127.0.0.1', '-mp', '0']),
  }
}
