/**
 * `npm run cli -- listen --forward-to <url>` (issue 14, "A developer CLI"): the CLI
 * runs as a real process against a started service and forwards the account's
 * events to a local receiver on 127.0.0.1, "signed exactly as a webhook would be"
 * (X-Service-Signature: t=<unix>,v1=<HMAC-SHA256 of "<t>.<body>">, the scheme
 * stripe's verifier accepts), one line printed per event, in commit order; Ctrl-C
 * (SIGINT) stops it cleanly.
 *
 * "The CLI listen test: a local receiver gets every event of a simulated call, with
 * a signature that stripe's verifier accepts, in commit order."
 */
import { describe, expect, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import { events } from '../src/db/schema'
import { isStreamEvent } from '../src/events/catalog'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { startWebhookReceiver } from './support/webhook-receiver'

const t = await startTestService({ VOICE_CLOCK_SPEED: '200', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const ROOT = new URL('..', import.meta.url).pathname

/** The CLI as a subprocess with a bounded life: killed after `lifetimeMs` whatever happens. */
function spawnCli(args: string[], lifetimeMs = 60_000) {
  const proc = Bun.spawn([process.execPath, 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const killer = setTimeout(() => proc.kill('SIGKILL'), lifetimeMs)
  const output = { stdout: '', stderr: '' }
  const pump = async (stream: ReadableStream<Uint8Array>, key: 'stdout' | 'stderr') => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) output[key] += decoder.decode(chunk, { stream: true })
  }
  const pumped = Promise.all([pump(proc.stdout, 'stdout'), pump(proc.stderr, 'stderr')])
  return {
    proc,
    output,
    /** Waits (bounded) until stdout matches. */
    waitFor: (re: RegExp, timeoutMs = 20_000) =>
      until(`CLI output matching ${re}`, () => output.stdout.match(re) ?? (proc.exitCode !== null ? failEarly(output) : undefined), timeoutMs),
    async exited() {
      const code = await proc.exited
      clearTimeout(killer)
      await pumped
      return code
    },
  }
}

function failEarly(output: { stdout: string; stderr: string }): never {
  throw new Error(`the CLI exited early\nstdout:\n${output.stdout}\nstderr:\n${output.stderr}`)
}

/** A sandbox account with a user and a phone number (what a simulated call needs). */
async function sandbox() {
  const a = await t.account()
  const c = { key: a.key, account: a.id }
  t.beforeStop(() => t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key }))
  const u = await t.call('POST', '/v1/users', { ...c, body: { email: 'agent@example.com', name: 'Agent' } })
  expect(u.status).toBe(200)
  const avail = await t.call('GET', '/v1/available-phone-numbers?quantity=1', c)
  expect((await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [avail.body.data[0].phone_number] } })).status).toBe(200)
  return { ...c, user: u.body.id as string }
}

/** The account's events of one call, in commit (seq) order, from the outbox. */
async function committed(account: string, callId: string) {
  const rows = await t.service.database.db
    .select({ id: events.id, type: events.type, body: events.body })
    .from(events)
    .where(eq(events.accountId, account))
    .orderBy(asc(events.seq))
  return rows.filter((r) => JSON.parse(r.body).data?.call_id === callId).map((r) => ({ id: r.id, type: r.type }))
}

const connectionArgs = (c: { key: string; account: string }) => ['--url', t.baseUrl, '--key', c.key, '--account', c.account]

describe('cli listen', () => {
  test('--source stream: every streamed event of a simulated call reaches the local URL, signed as a webhook (stripe verifies it), in commit order', async () => {
    const c = await sandbox()
    const rx = await startWebhookReceiver()
    const cli = spawnCli(['listen', '--forward-to', rx.url, ...connectionArgs(c)])
    const secret = (await cli.waitFor(/signing secret is (whsec_\S+)/))[1]!

    const call = await t.call('POST', '/v1/test_helpers/calls', {
      ...c,
      body: { user: c.user, from_number: '+15551234567', scenario: { outcome: 'answered', ring_seconds: 2, talk_seconds: 5 } },
    })
    expect(call.status).toBe(200)
    const callId = call.body.id as string
    await rx.waitFor(1, { where: (r) => r.body?.type === 'call.end', timeoutMs: 20_000 })

    // Every event of the call that the stream carries (call.ringing and call.emergency are webhook-only), in commit order.
    const expected = (await committed(c.account, callId)).filter((e) => isStreamEvent(e.type))
    expect(expected.map((e) => e.type)).toEqual(['call.incoming', 'call.answered', 'call.end'])
    const got = rx.requests.filter((r) => r.body?.data?.call_id === callId)
    expect(got.map((r) => ({ id: r.body.id, type: r.body.type }))).toEqual(expected)

    for (const r of got) {
      // The delivery's headers, and the envelope {id, type, created_at, account_id, data}.
      expect(r.method).toBe('POST')
      expect(r.headers['content-type']).toBe('application/json')
      expect(r.headers['user-agent']).toBe('Service-Webhook/1.0')
      expect(r.headers['x-service-account-id']).toBe(c.account)
      expect(r.headers['x-service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
      const event = await rx.verify(r, secret)
      expect(Object.keys(event)).toEqual(['id', 'type', 'created_at', 'account_id', 'data'])
      expect(event.account_id).toBe(c.account)
      expect(event.data.call_id).toBe(callId)
      expect(event.data.event).toBeUndefined()
      await expect(rx.verify(r, 'whsec_not_the_secret')).rejects.toThrow()
    }
    // One line per event: time, type, id and the local answer's status.
    await cli.waitFor(new RegExp(`call\\.end\\s+${expected[2]!.id}\\s+\\[200\\] POST`))
    for (const e of expected)
      expect(cli.output.stdout).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+Z\\s+${e.type.replace('.', '\\.')}\\s+${e.id}\\s+\\[200\\] POST ${rx.url}$`, 'm'))

    // Ctrl-C stops it cleanly.
    cli.proc.kill('SIGINT')
    expect(await cli.exited()).toBe(0)
  })

  test('the local answer is printed as it is: a 500 and a refused connection are reported, and listen carries on', async () => {
    const c = await sandbox()
    const rx = await startWebhookReceiver()
    rx.respond(500)
    const cli = spawnCli([
      'listen',
      '--forward-to',
      rx.url,
      '--secret',
      'whsec_chosen_by_the_developer',
      '--events',
      'call.answered,call.end',
      ...connectionArgs(c),
    ])
    await cli.waitFor(/signing secret is whsec_chosen_by_the_developer/)
    const call = await t.call('POST', '/v1/test_helpers/calls', { ...c, body: { user: c.user, scenario: { ring_seconds: 1, talk_seconds: 2 } } })
    expect(call.status).toBe(200)
    const [end] = await rx.waitFor(1, { where: (r) => r.body?.type === 'call.end' })
    // --events: only those types.
    expect(rx.requests.map((r) => r.body.type)).toEqual(['call.answered', 'call.end'])
    await rx.verify(end!, 'whsec_chosen_by_the_developer')
    await cli.waitFor(/call\.end\s+evt_\S+\s+\[500\] POST/)
    await rx.stop()
    // A receiver that is gone: the next event is reported as an error.
    const next = await t.call('POST', '/v1/test_helpers/calls', { ...c, body: { user: c.user, scenario: { ring_seconds: 1, talk_seconds: 2 } } })
    expect(next.status).toBe(200)
    await cli.waitFor(/call\.answered\s+evt_\S+\s+\[error\] POST \S+: /)
    cli.proc.kill('SIGINT')
    expect(await cli.exited()).toBe(0)
  })

  test('--source webhook: every event of a simulated call (call.ringing and recording.* too) arrives exactly as delivered, verified by stripe, in commit order; the temporary endpoint is removed on Ctrl-C', async () => {
    const c = await sandbox()
    const rx = await startWebhookReceiver()
    const cli = spawnCli(['listen', '--source', 'webhook', '--forward-to', rx.url, ...connectionArgs(c)])
    const secret = (await cli.waitFor(/signing secret is (whsec_\S+)/))[1]!
    const endpoints = await t.call('GET', '/v1/webhook_endpoints', c)
    expect(endpoints.body.data).toHaveLength(1)

    const call = await t.call('POST', '/v1/test_helpers/calls', {
      ...c,
      body: { user: c.user, from_number: '+15551234567', scenario: { outcome: 'answered', ring_seconds: 2, talk_seconds: 5 } },
    })
    expect(call.status).toBe(200)
    const callId = call.body.id as string
    await rx.waitFor(1, { where: (r) => r.body?.type === 'recording.summary.complete', timeoutMs: 25_000 })

    const expected = await committed(c.account, callId)
    expect(expected.map((e) => e.type)).toEqual([
      'call.incoming',
      'call.ringing',
      'call.answered',
      'call.end',
      'recording.available',
      'recording.transcription.complete',
      'recording.summary.complete',
    ])
    const got = rx.requests.filter((r) => r.body?.data?.call_id === callId)
    expect(got.map((r) => ({ id: r.body.id, type: r.body.type }))).toEqual(expected)
    const stored = await t.service.database.db.select({ id: events.id, body: events.body }).from(events).where(eq(events.accountId, c.account))
    const bodies = new Map(stored.map((s) => [s.id, s.body]))
    for (const r of got) {
      // The exact bytes the service sent, with its headers and signature.
      expect(r.rawBody).toBe(bodies.get(r.body.id)!)
      expect(r.headers['user-agent']).toBe('Service-Webhook/1.0')
      expect(r.headers['x-service-account-id']).toBe(c.account)
      expect((await rx.verify(r, secret)).id).toBe(r.body.id)
    }
    // The CLI prints a line once the forward's answer is back, which can be after the receiver counted it.
    for (const e of expected) {
      await cli.waitFor(new RegExp(`${e.id}\\s+\\[200\\] POST`))
      expect(cli.output.stdout).toContain(`${e.id}  [200] POST ${rx.url}`)
    }

    cli.proc.kill('SIGINT')
    expect(await cli.exited()).toBe(0)
    expect(cli.output.stderr).toContain('deleted the temporary webhook endpoint')
    expect((await t.call('GET', '/v1/webhook_endpoints', c)).body.data).toHaveLength(0)
  })

  test('a key the service refuses: listen exits 1 with the service error', async () => {
    const rx = await startWebhookReceiver()
    const cli = spawnCli(['listen', '--forward-to', rx.url, '--url', t.baseUrl, '--key', 'sk_test_wrong', '--account', 'acct_x'])
    expect(await cli.exited()).toBe(1)
    expect(cli.output.stderr).toMatch(/error: .*\(401/)
  })
})
