import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { manualClock } from '../../src/clock'
import { composeHandlers } from './handlers'
import { type SipServer, startSipServer } from './server'
import { T4, TRANSACTION_TIMEOUT } from './transactions'
import { until } from './test-fixtures'

/** sipp (Debian `sip-tester`) as a real peer; `.ci/run` installs it. */
const sipp = Bun.which('sipp')
const SCENARIOS = join(import.meta.dir, 'scenarios')

let server: SipServer
let invites = 0
const clock = manualClock()

beforeAll(async () => {
  if (!sipp) return
  const handler = composeHandlers({
    INVITE: () => {
      invites++
      return { status: 486 }
    },
  })
  server = await startSipServer({ host: '127.0.0.1', port: 0, clock, handler })
})
afterAll(async () => {
  await server?.stop()
})

/** Runs one scenario to completion: one call, bounded by sipp's own global timeout, loopback only, ephemeral local port. */
async function runScenario(scenario: string, transport: 'u1' | 't1', port: number): Promise<{ exitCode: number; output: string }> {
  const child = Bun.spawn(
    [
      sipp!,
      `127.0.0.1:${port}`,
      '-sf',
      join(SCENARIOS, scenario),
      '-t',
      transport,
      '-i',
      '127.0.0.1',
      '-p',
      '0',
      '-m',
      '1',
      '-timeout',
      '10s',
      '-timeout_error',
      '-nostdin',
    ],
    { cwd: tmpdir(), stdout: 'pipe', stderr: 'pipe' },
  )
  const [exitCode, out, err] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  return { exitCode, output: `${out}\n${err}` }
}

if (!sipp) test.skip('sipp scenarios (skipped: sipp is not installed; Debian package sip-tester)', () => {})

describe.skipIf(!sipp)('sipp as a real peer', () => {
  test('an OPTIONS probe over UDP gets 200 with Allow', async () => {
    const { exitCode, output } = await runScenario('options.xml', 'u1', server.udpPort)
    expect(exitCode, output).toBe(0)
  }, 20_000)

  test('an OPTIONS probe over TCP gets 200 with Allow', async () => {
    const { exitCode, output } = await runScenario('options.xml', 't1', server.tcpPort)
    expect(exitCode, output).toBe(0)
  }, 20_000)

  test('a refused INVITE: 100, 486, and the ACK ends the transaction (Timer I, long before Timer H)', async () => {
    // Forget the transactions of the tests before (Timer J of the UDP OPTIONS).
    clock.advance(TRANSACTION_TIMEOUT)
    server.tick()
    const { exitCode, output } = await runScenario('invite-busy.xml', 'u1', server.udpPort)
    expect(exitCode, output).toBe(0)
    expect(invites).toBe(1)
    // Once the ACK is in, Timers G and H are cancelled and only Timer I is left.
    await until(() => server.pendingTimers === 1, 'the ACK')
    clock.advance(T4)
    server.tick()
    expect(server.openTransactions).toBe(0)
  }, 20_000)
})
