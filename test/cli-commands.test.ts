/**
 * The developer CLI (issue 14): "`npm run cli -- …`, with `--help` on every
 * command", `trigger <event type>` and `simulate-call …` wrapping the test helpers
 * ("an unknown event type in test helpers suggests the closest known one"), and
 * "long operations show progress". Every CLI run is a real process
 * (`bun src/cli.ts …`) with a bounded life, against a service started here.
 */
import { describe, expect, test } from 'bun:test'
import { COMMANDS } from '../src/cli'
import { ADMIN_TOKEN, startTestService } from './support/service'

const t = await startTestService({ VOICE_CLOCK_SPEED: '200' })
const ROOT = new URL('..', import.meta.url).pathname

/** Runs the CLI to its end (killed after `lifetimeMs` if it does not end by itself). */
async function cli(args: string[], env: Record<string, string> = {}, lifetimeMs = 60_000) {
  const proc = Bun.spawn([process.execPath, 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const killer = setTimeout(() => proc.kill('SIGKILL'), lifetimeMs)
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(killer)
  return { code, stdout, stderr }
}

async function sandbox() {
  const a = await t.account()
  const c = { key: a.key, account: a.id }
  t.beforeStop(() => t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key }))
  const u = await t.call('POST', '/v1/users', { ...c, body: { email: 'agent@example.com', name: 'Agent' } })
  expect(u.status).toBe(200)
  const avail = await t.call('GET', '/v1/available-phone-numbers?quantity=1', c)
  const number = avail.body.data[0].phone_number as string
  expect((await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [number] } })).status).toBe(200)
  return { ...c, user: u.body.id as string, number }
}

describe('cli --help', () => {
  test('the top-level --help lists every command and exits 0', async () => {
    const r = await cli(['--help'])
    expect(r.code).toBe(0)
    for (const c of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^  ${c.name}\\s+\\S`, 'm'))
    expect(COMMANDS.map((c) => c.name)).toEqual(
      expect.arrayContaining(['listen', 'trigger', 'simulate-call', 'platform create', 'dead-letters list', 'mail list']),
    )
    // `npm run cli -- --help` said "unknown command" (issue 14).
    expect(r.stdout).not.toContain('unknown command')
    const group = await cli(['platform', '--help'])
    expect(group.code).toBe(0)
    expect(group.stdout).toContain('usage: cli platform create')
    expect(group.stdout).toContain('usage: cli platform update')
  })

  test.each(COMMANDS.map((c) => [c.name]))('%s --help exits 0 and documents every option', async (name) => {
    const command = COMMANDS.find((c) => c.name === name)!
    const r = await cli([...name.split(' '), '--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain(`usage: ${command.usage.split('\n')[0]}`)
    for (const o of command.options) expect(r.stdout).toMatch(new RegExp(`^  --${o.name}\\b.*\\S{3,}`, 'm'))
    expect(r.stderr).toBe('')
  })

  test('an unknown command or option exits 2 and says what is wrong', async () => {
    const unknown = await cli(['frobnicate'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('unknown command: frobnicate')
    const option = await cli(['trigger', 'fax.received', '--bogus'])
    expect(option.code).toBe(2)
    expect(option.stderr).toContain('unknown option --bogus')
    const missing = await cli(['listen', '--key', 'sk_test_x', '--account', 'acct_x'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('--forward-to is required')
  })
})

describe('cli trigger', () => {
  test('prints the id of the event it created', async () => {
    const c = await sandbox()
    const r = await cli(['trigger', 'fax.received', '--url', t.baseUrl, '--key', c.key, '--account', c.account])
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    const id = r.stdout.trim()
    expect(id).toMatch(/^evt_\S+$/)
    // The key and account may come from the environment too.
    const viaEnv = await cli(['trigger', 'user.created', '--json'], { VOICE_API_URL: t.baseUrl, VOICE_API_KEY: c.key, VOICE_ACCOUNT: c.account })
    expect(viaEnv.code).toBe(0)
    expect(JSON.parse(viaEnv.stdout)).toMatchObject({ type: 'user.created', account: c.account })
  })

  test('an unknown type exits non-zero with the service’s suggestion', async () => {
    const c = await sandbox()
    const r = await cli(['trigger', 'fax.recieved', '--url', t.baseUrl, '--key', c.key, '--account', c.account])
    expect(r.code).toBe(1)
    expect(r.stdout).toBe('')
    expect(r.stderr).toContain('Did you mean fax.received?')
    expect(r.stderr).toContain('(400 unsupported_event_type)')
    expect(r.stderr).toMatch(/supported: .*fax\.delivered/)
  })
})

describe('cli simulate-call', () => {
  test('prints the call id; --follow prints the call’s events until call.end', async () => {
    const c = await sandbox()
    const conn = ['--url', t.baseUrl, '--key', c.key, '--account', c.account]
    const plain = await cli(['simulate-call', '--user', c.user, '--from', '+15551234567', '--outcome', 'busy', ...conn])
    expect(plain.code).toBe(0)
    expect(plain.stdout.trim()).toMatch(/^call_\S+$/)

    const r = await cli(['simulate-call', '--user', c.user, '--from', '+15551234567', '--ring-seconds', '2', '--talk-seconds', '4', '--follow', ...conn])
    expect(r.stderr).not.toContain('error')
    expect(r.code).toBe(0)
    const [callId, ...lines] = r.stdout.trim().split('\n')
    expect(callId).toMatch(/^call_\S+$/)
    expect(lines.map((l) => l.split(/\s+/)[1])).toEqual(['call.incoming', 'call.answered', 'call.end'])
    expect(lines.at(-1)).toContain('status=completed duration=4s')
    const log = await t.call('GET', `/v1/calls/${callId}`, c)
    expect(log.body.status).toBe('completed')
  })

  test('through the account’s routing (--to a number of the account), followed to its end', async () => {
    const c = await sandbox()
    const r = await cli(['simulate-call', '--to', c.number, '--talk-seconds', '3', '--follow', '--url', t.baseUrl, '--key', c.key, '--account', c.account])
    expect(r.code).toBe(0)
    const [callId, ...lines] = r.stdout.trim().split('\n')
    expect(callId).toMatch(/^call_\S+$/)
    expect(lines.at(-1)).toMatch(/call\.end\s+evt_\S+\s+status=\S+/)
  })

  test('the helper’s errors are shown: a user of another account', async () => {
    const c = await sandbox()
    const r = await cli(['simulate-call', '--user', 'usr_nobody', '--url', t.baseUrl, '--key', c.key, '--account', c.account])
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/^error: .*\(4\d\d \w+\)/)
  })
})

describe('cli operator commands over the operator API', () => {
  test('dead-letters list, mail list and dead-letters replay answer as /admin does', async () => {
    const admin = ['--url', t.baseUrl, '--admin-token', ADMIN_TOKEN]
    const letters = await cli(['dead-letters', 'list', '--limit', '5', ...admin])
    expect(letters.code).toBe(0)
    expect(JSON.parse(letters.stdout)).toMatchObject({ object: 'list', data: expect.any(Array) })
    const mail = await cli(['mail', 'list'], { VOICE_API_URL: t.baseUrl, VOICE_ADMIN_TOKEN: ADMIN_TOKEN })
    expect(mail.code).toBe(0)
    expect(JSON.parse(mail.stdout)).toMatchObject({ object: 'list', data: expect.any(Array) })
    const replay = await cli(['dead-letters', 'replay', 'whd_nothing', ...admin])
    expect(replay.code).toBe(1)
    expect(replay.stderr).toContain('(404 dead_letter_not_found)')
    const wrong = await cli(['mail', 'list', '--url', t.baseUrl, '--admin-token', 'not-the-token-0123456789'])
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain('(401')
  })
})
