/**
 * A real SIP peer registers a line through the running service's media role: sipp
 * (Debian `sip-tester`) sends REGISTER over UDP to SIP_PORT, answers the 401 digest
 * challenge with the line's credentials as the platform reads them, and gets its 200.
 * The device actor then holds the binding: the user goes from offline to available
 * and GET /v1/quality/device-registrations lists the binding; `Contact: *` with
 * Expires 0 removes it and the user is offline again. A wrong password is refused.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { deviceFixtures } from './device-fixtures'
import { until } from './support/polling'
import { freePort } from './support/scratch-postgres'
import { sipTemporaryFolder } from './support/sip-phones'
import { startTestService } from './support/service'

const sipp = Bun.which('sipp')
const t = await startTestService()
const f = deviceFixtures(t)
const work = sipTemporaryFolder('sip-registration-')
const REGISTER = join(import.meta.dir, 'sip', 'register.xml')
const UNREGISTER = join(work, 'unregister.xml')
writeFileSync(UNREGISTER, readFileSync(REGISTER, 'utf8').replaceAll('Contact: <sip:[field0]@[local_ip]:[local_port]>', 'Contact: *'))

interface SipAccount {
  username: string
  password: string
  domain: string
}

/**
 * One REGISTER exchange by sipp over UDP: bounded by its own timeout, loopback only,
 * a free local port. `-auth_uri` makes sipp's digest-uri the Request-URI, as a phone's
 * is (sipp's default is the server's address and port, which the registrar refuses).
 */
async function sippRegister(scenario: string, account: SipAccount, expires: number) {
  const csv = join(work, `${account.username}-${expires}.csv`)
  writeFileSync(
    csv,
    `SEQUENTIAL\n${account.username};${account.domain};[authentication username=${account.username} password=${account.password}];${expires};\n`,
  )
  const port = t.service.sip!.udpPort
  const child = Bun.spawn(
    [
      sipp!,
      `127.0.0.1:${port}`,
      '-sf',
      scenario,
      '-inf',
      csv,
      '-t',
      'u1',
      '-i',
      '127.0.0.1',
      '-p',
      String(await freePort()),
      '-m',
      '1',
      '-timeout',
      '15s',
      '-timeout_error',
      '-nostdin',
      '-trace_msg',
      '-auth_uri',
      account.domain,
    ],
    { cwd: work, stdout: 'pipe', stderr: 'pipe' },
  )
  const [exitCode, out, err] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  return { exitCode, output: `${out}\n${err}` }
}

if (!sipp) test.skip('registration with a real SIP peer (skipped: sipp is not installed; Debian package sip-tester)', () => {})

describe.skipIf(!sipp)('a line registers over UDP with sipp', () => {
  test('register with digest: available and listed; Contact * unregisters: offline', async () => {
    const c = await f.ctx()
    const user = await f.user(c)
    const extension = await f.extension(c, user)
    const phone = await f.deskphone(c, { lines: [{ user, extension }] })
    const lines = await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)
    const account: SipAccount = lines.body.data[0].sip_credentials
    const presence = async () => (await t.call('GET', `/v1/users/${user}/presence`, c)).body.status as string
    expect(await presence()).toBe('offline')

    const registered = await sippRegister(REGISTER, account, 600)
    expect(registered.output).toContain('Successful call')
    if (registered.exitCode !== 0) console.log(registered.output)
    expect(registered.exitCode).toBe(0)
    await until('the user available', async () => (await presence()) === 'available')
    const list = await t.call('GET', '/v1/quality/device-registrations', c)
    expect(list.body.data).toHaveLength(1)
    expect(list.body.data[0].device).toBe(phone.id)
    expect(list.body.data[0].bindings[0]).toMatchObject({ username: account.username, transport: 'udp', source_address: '127.0.0.1', user_agent: 'SIPp' })

    const removed = await sippRegister(UNREGISTER, account, 0)
    expect(removed.exitCode).toBe(0)
    await until('the user offline', async () => (await presence()) === 'offline')
    expect((await t.call('GET', '/v1/quality/device-registrations', c)).body.data).toEqual([])
  }, 60_000)

  test('a wrong password is refused (sipp sees no 200)', async () => {
    const c = await f.ctx()
    const user = await f.user(c)
    const extension = await f.extension(c, user)
    const phone = await f.deskphone(c, { lines: [{ user, extension }] })
    const account: SipAccount = (await t.call('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data[0].sip_credentials
    const refused = await sippRegister(REGISTER, { ...account, password: `${account.password}x` }, 600)
    expect(refused.exitCode).not.toBe(0)
    expect(await t.call('GET', `/v1/users/${user}/presence`, c).then((r) => r.body.status)).toBe('offline')
  }, 60_000)
})
