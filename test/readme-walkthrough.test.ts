/**
 * The README's "First request" walkthrough, run as written: every ```sh block of
 * that section, in order, in one bash session (as a reader pasting them into one
 * terminal), against a started service, each answer checked. Only the reader's
 * settings in the first block (`BASE=`, `KEY=`, `HOOK_PORT=`) are given by the test:
 * this service, a sandbox key of a platform of its own, a free port. Edit a command
 * in the README and this test runs the edited one.
 *
 * The same run checks the call lifecycle log: the service logs at info into a sink
 * here, and the walkthrough's call must show one `call transition` line per call.*
 * event, with the call id, the account and the worker holding the call.
 *
 * Loopback only. Skips, saying why, when bash, curl or node is missing.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import Stripe from 'stripe'
import { until } from './support/polling'
import { freePort } from './support/scratch-postgres'
import { startTestService } from './support/service'
import { type ShellSession, shellBlocks, startShellSession } from './support/shell-session'

const README = readFileSync(join(import.meta.dir, '..', 'README.md'), 'utf8')
const blocks = shellBlocks(README, 'First request')
const missing = ['bash', 'curl', 'node'].filter((tool) => !Bun.which(tool))
if (missing.length > 0) console.log(`[readme-walkthrough] skipped: ${missing.join(', ')} not on PATH`)

/** Every log line of the service, parsed. */
const logged: any[] = []
const sink = new Writable({
  write(chunk, _enc, cb) {
    for (const line of String(chunk).split('\n').filter(Boolean)) logged.push(JSON.parse(line))
    cb()
  },
})

// Registered before the service's own afterAll (which stops it), so it runs first.
let shell: ShellSession | undefined
const dir = mkdtempSync(join(tmpdir(), 'readme-walkthrough-'))
afterAll(async () => {
  await shell?.stop()
  rmSync(dir, { recursive: true, force: true })
})

// Clock speed 10: the walkthrough's call (2 s ringing, 5 s talking, follow-ups 6 s later) takes about 1.3 s.
const t =
  missing.length > 0
    ? undefined
    : await startTestService({ VOICE_CLOCK_SPEED: '10', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' }, { log: pino({ level: 'info', base: undefined }, sink) })

const SETTINGS = ['BASE', 'KEY', 'HOOK_PORT'] as const
type Run = { stdout: string; stderr: string }
/** The JSON answers a block showed (one per line: curl -w '\n' on stdout, the json helper on stderr). */
const answers = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))

/** Each block, recognised by a command it must contain, and what its answers must be. */
interface Step {
  name: string
  has: string
  timeoutMs?: number
  check(r: Run, v: (name: string) => Promise<string>): Promise<void>
}

let key = ''
let hookPort = 0
const ids: Record<string, string> = {}
const stripe = new Stripe('sk_test_x')
const ID = (prefix: string) => new RegExp(`^${prefix}_[0-9a-z]{26}$`)
const CALL_EVENTS = ['call.incoming', 'call.ringing', 'call.answered', 'call.end']
const FOLLOW_UPS = ['recording.available', 'recording.transcription.complete', 'recording.summary.complete']

/** Posts a delivery to the reader's receiver; resolves with its status. */
const deliver = (body: string, signature: string) =>
  fetch(`http://127.0.0.1:${hookPort}/hooks`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-service-signature': signature } })

const steps: Step[] = [
  {
    name: 'the settings and the json helper',
    has: 'json() {',
    async check(r, v) {
      expect(r).toEqual({ stdout: '', stderr: '' })
      expect(await v('BASE')).toBe(t!.baseUrl)
    },
  },
  {
    name: 'a sandbox account',
    has: 'ACCOUNT=$(',
    async check(r, v) {
      ids.account = await v('ACCOUNT')
      expect(ids.account).toMatch(ID('acct'))
      expect(answers(r.stderr)).toEqual([expect.objectContaining({ id: ids.account, object: 'account', livemode: false, name: 'Acme Dental' })])
      // The account exists for the key the reader used.
      expect((await t!.call('GET', `/v1/accounts/${ids.account}`, { key })).status).toBe(200)
    },
  },
  {
    name: 'the users list, then a user',
    has: 'USER_ID=$(',
    async check(r, v) {
      ids.user = await v('USER_ID')
      expect(ids.user).toMatch(ID('usr'))
      expect(answers(r.stdout)).toEqual([{ object: 'list', url: '/v1/users', next_page_url: null, previous_page_url: null, data: [] }])
      expect(answers(r.stderr)).toEqual([expect.objectContaining({ id: ids.user, object: 'user', account: ids.account, name: 'Pat Agent' })])
    },
  },
  {
    name: 'an available number, ordered',
    has: 'phone-number-orders',
    async check(r, v) {
      ids.number = await v('NUMBER')
      expect(ids.number).toMatch(/^\+1500555\d{4}$/)
      expect(answers(r.stderr)[0]).toMatchObject({ object: 'list', data: [{ object: 'available_phone_number', phone_number: ids.number }] })
      expect(answers(r.stdout)).toEqual([expect.objectContaining({ object: 'phone_number_order', status: 'complete', phone_numbers: [ids.number] })])
      const held = await t!.call('GET', '/v1/phone-numbers', { key, account: ids.account })
      expect(held.body.data.map((n: any) => n.number)).toEqual([ids.number])
    },
  },
  {
    name: 'a webhook endpoint',
    has: 'SECRET=$(',
    async check(r, v) {
      ids.secret = await v('SECRET')
      expect(ids.secret).toMatch(/^whsec_/)
      const [ep] = answers(r.stderr)
      expect(ep).toMatchObject({
        object: 'webhook_endpoint',
        account: ids.account,
        url: `http://127.0.0.1:${hookPort}/hooks`,
        enabled_events: ['*'],
        healthy: true,
      })
      ids.endpoint = ep.id
    },
  },
  {
    name: 'the local receiver, which verifies signatures',
    has: 'RECEIVER=$!',
    async check(r, v) {
      expect(r).toEqual({ stdout: '', stderr: '' })
      expect(await v('RECEIVER')).toMatch(/^\d+$/)
      // The receiver's check is Stripe's scheme: a delivery Stripe's helper signs with the secret passes, one signed with another secret does not.
      const payload = JSON.stringify({ id: 'evt_probe', type: 'probe.signed', data: { call_id: 'call_probe_ok' } })
      const signed = await stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: ids.secret! })
      const signedAnswer = await until('the receiver listening', () => deliver(payload, signed).catch(() => undefined), 10_000)
      expect(signedAnswer.status).toBe(200)
      const forged = JSON.stringify({ id: 'evt_probe2', type: 'probe.forged', data: { call_id: 'call_probe_bad' } })
      const forgedSignature = await stripe.webhooks.generateTestHeaderStringAsync({ payload: forged, secret: 'whsec_not_it' })
      expect((await deliver(forged, forgedSignature)).status).toBe(200)
      const log = () => readFileSync(join(dir, 'webhooks.log'), 'utf8')
      await until('both probes logged', () => log().includes('call_probe_bad'), 5_000)
      expect(log()).toContain('probe.signed call_probe_ok signature ok\n')
      expect(log()).toContain('probe.forged call_probe_bad BAD SIGNATURE\n')
    },
  },
  {
    name: 'a simulated call',
    has: 'CALL=$(',
    async check(r, v) {
      ids.call = await v('CALL')
      expect(ids.call).toMatch(ID('call'))
      expect(answers(r.stderr)).toEqual([
        expect.objectContaining({
          id: ids.call,
          object: 'test_call',
          call: expect.objectContaining({ id: ids.call, status: null, user_id: ids.user, to_number: ids.number }),
          scenario: { outcome: 'answered', ring_seconds: 2, talk_seconds: 5, voicemail_seconds: 15, recording: true },
        }),
      ])
    },
  },
  {
    name: 'the signed events, as the receiver logged them',
    has: 'cat webhooks.log',
    timeoutMs: 30_000,
    async check(r) {
      const lines = r.stdout.split('\n').filter((l) => l && !l.startsWith('probe.'))
      // Delivery is at least once: a retried event may show twice.
      const distinct = [...new Set(lines)]
      expect(distinct).toEqual([...CALL_EVENTS, ...FOLLOW_UPS].map((type) => `${type} ${ids.call} signature ok`))
      // Every one of them was acknowledged by the receiver, as the service recorded it.
      const attempts = await t!.call('GET', `/v1/webhook_endpoints/${ids.endpoint}/attempts?limit=100`, { key, account: ids.account })
      expect(attempts.status).toBe(200)
      const succeeded = new Set(attempts.body.data.filter((a: any) => a.status === 'succeeded').map((a: any) => a.event))
      for (const type of [...CALL_EVENTS, ...FOLLOW_UPS]) expect(succeeded.has(type)).toBe(true)
    },
  },
  {
    name: 'the call log, the recording and the transcript',
    has: 'RECORDING_URL=$(',
    async check(r, v) {
      const [log, transcript] = answers(r.stdout)
      expect(log).toMatchObject({
        id: ids.call,
        object: 'call',
        account: ids.account,
        direction: 'inbound',
        status: 'completed',
        duration_seconds: 5,
        user_id: ids.user,
        to_number: ids.number,
        simulated: true,
        recording: { object: 'recording', call_id: ids.call, status: 'available', duration_seconds: 5 },
      })
      expect(transcript).toMatchObject({ object: 'transcript', call_id: ids.call, recording: log.recording.id, status: 'completed' })
      expect(transcript.segments.length).toBeGreaterThan(0)
      const [recording] = answers(r.stderr)
      const url = await v('RECORDING_URL')
      expect(recording).toMatchObject({ id: log.recording.id, object: 'recording', call_id: ids.call, status: 'available', duration_seconds: 5, url })
      expect(new URL(url).pathname).toStartWith('/downloads/')
      // call.wav: a WAV of exactly the talk time (8 kHz, 16-bit mono).
      const wav = readFileSync(join(dir, 'call.wav'))
      expect(wav.subarray(0, 4).toString('latin1')).toBe('RIFF')
      expect(wav.subarray(8, 12).toString('latin1')).toBe('WAVE')
      expect(wav.byteLength).toBe(44 + 5 * 8000 * 2)
    },
  },
  {
    name: 'the receiver stopped',
    has: 'kill $RECEIVER',
    async check(r) {
      expect(r).toEqual({ stdout: '', stderr: '' })
      await until(
        'the receiver gone',
        () =>
          deliver('{}', '').then(
            () => false,
            () => true,
          ),
        5_000,
      )
    },
  },
]

describe.skipIf(missing.length > 0)('the README walkthrough, run as written', () => {
  test('the section has one sh block per step, in order, the reader settings first', () => {
    expect(blocks.map((b, i) => steps[i]?.name ?? `an unchecked block:\n${b}`)).toEqual(steps.map((s) => s.name))
    for (const [i, s] of steps.entries()) expect(blocks[i]).toContain(s.has)
    for (const name of SETTINGS) expect(blocks[0]!.match(new RegExp(`^${name}=`, 'gm'))?.length).toBe(1)
  })

  test('a platform of its own, a free port for the receiver, a shell', async () => {
    key = (await t!.platform()).test_key
    hookPort = await freePort()
    shell = await startShellSession(dir)
    // The sandbox account (and with it its number) goes when the file is done: the number is free for the next run on a shared database.
    t!.beforeStop(async () => ids.account && t!.call('DELETE', `/v1/accounts/${ids.account}`, { key }))
  })

  /** The reader's settings: the test's service, key and port in place of the README's. */
  const given = (block: string) =>
    block
      .replace(/^BASE=\S*/m, `BASE=${t!.baseUrl}`)
      .replace(/^KEY=\S*/m, `KEY=${key}`)
      .replace(/^HOOK_PORT=\S*/m, `HOOK_PORT=${hookPort}`)

  steps.forEach((step, i) => {
    test(
      `${i + 1}. ${step.name}`,
      async () => {
        if (!shell) throw new Error('no shell: an earlier step failed')
        const r = await shell.run(i === 0 ? given(blocks[i]!) : blocks[i]!, step.timeoutMs ?? 15_000)
        await step.check(r, (name) => shell!.variable(name))
      },
      (step.timeoutMs ?? 15_000) + 15_000,
    )
  })

  test('the call lifecycle was logged at info: one line per transition, with the call, account and worker', () => {
    const lines = logged.filter((l) => l.msg === 'call transition' && l.call_id === ids.call)
    expect(lines.map((l) => l.event)).toEqual(CALL_EVENTS)
    // Embedded: the worker is this process; placed (NATS_URL): the worker's shard-lease id.
    const worker = process.env.NATS_URL ? expect.stringMatching(/^w_[0-9a-f]{16}$/) : `${hostname()}:${process.pid}`
    for (const l of lines) {
      expect(l).toEqual({
        level: 30,
        time: expect.any(Number),
        worker,
        call_id: ids.call,
        account: ids.account,
        mode: 'test',
        event: l.event,
        ...(l.event === 'call.end' ? { status: 'completed' } : {}),
        msg: 'call transition',
      })
    }
    // Never a secret, a number or a name in the service's log.
    const text = JSON.stringify(logged)
    for (const secret of [key, ids.secret!]) expect(text).not.toContain(secret)
    expect(JSON.stringify(lines)).not.toMatch(/\+1\d{10}|Pat Agent/)
  })
})
