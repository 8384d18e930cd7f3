import { describe, expect, test } from 'bun:test'
import { type Bus, inProcessBus } from '../../src/bus/bus'
import { natsBus } from '../../src/bus/nats-bus'
import { createLogger } from '../../src/logger'
import { createAuthFailures, DEFAULT_AUTH_FAILURE_LIMITS } from './auth-failures'
import { sharedAuthFailures } from './shared-auth-failures'

const SCANNER = '203.0.113.9'
const { perLine, perSource } = DEFAULT_AUTH_FAILURE_LIMITS
const NATS_URL = process.env.NATS_URL
if (!NATS_URL) console.log('[shared-auth-failures] the NATS case skipped: NATS_URL is not set')

/** Two media processes' tallies, telling each other over `busA` and `busB` (one bus, or two connections to one NATS). */
function twoProcesses(busA: Bus, busB: Bus) {
  const now = () => 0
  const a = sharedAuthFailures(createAuthFailures({ now }), busA)
  const b = sharedAuthFailures(createAuthFailures({ now }), busB)
  const stop = () => {
    a.stop()
    b.stop()
  }
  return { a, b, stop }
}

/** Lets the bus hand over what was published (the in-process bus delivers after the publisher's turn; NATS after a round trip). */
const settle = (overNats: boolean) => Bun.sleep(overNats ? 100 : 0)

async function guessesSpreadOverProcesses(busA: Bus, busB: Bus, overNats = false) {
  const { a, b, stop } = twoProcesses(busA, busB)
  try {
    await settle(overNats) // NATS has the subscriptions before anything is published
    // One guess short of the limit, spread over both: neither blocks yet, and neither counted its own notice twice.
    for (let i = 1; i < perLine; i++) (i % 2 ? a : b).failed(SCANNER, '1001')
    await settle(overNats)
    expect([a.lineBlocked(SCANNER, '1001'), b.lineBlocked(SCANNER, '1001')]).toEqual([false, false])
    // The last guess goes to A: B blocks the line as well.
    a.failed(SCANNER, '1001')
    await settle(overNats)
    expect([a.lineBlocked(SCANNER, '1001'), b.lineBlocked(SCANNER, '1001')]).toEqual([true, true])

    // A right answer at B clears what A counted for another line.
    for (let i = 1; i < perLine; i++) a.failed(SCANNER, '1002')
    await settle(overNats)
    expect(b.succeeded(SCANNER, '1002')).toBe(true)
    await settle(overNats)
    a.failed(SCANNER, '1002')
    expect(a.lineBlocked(SCANNER, '1002')).toBe(false)

    // A scanner trying many users, half of them at each process: both drop it.
    for (let u = 0; u < perSource; u++) (u % 2 ? a : b).failed(SCANNER, `20${u}`)
    await settle(overNats)
    expect([a.sourceBlocked(SCANNER), b.sourceBlocked(SCANNER)]).toEqual([true, true])
    // A right answer that clears nothing is not told (every REGISTER would be).
    expect(a.succeeded('192.0.2.1', '1003')).toBe(false)
  } finally {
    stop()
  }
}

describe('password guessing counted across media processes', () => {
  test('on one in-process bus: guesses at either process count at both, as does a right answer that clears a count', async () => {
    const bus = inProcessBus()
    await guessesSpreadOverProcesses(bus, bus)
  })

  test('a process alone blocks after the same guesses as without the bus (its own notices are not counted again)', async () => {
    const bus = inProcessBus()
    const alone = sharedAuthFailures(createAuthFailures({ now: () => 0 }), bus)
    for (let i = 1; i < perLine; i++) alone.failed(SCANNER, '1001')
    await Bun.sleep(0)
    expect(alone.lineBlocked(SCANNER, '1001')).toBe(false)
    alone.failed(SCANNER, '1001')
    expect(alone.lineBlocked(SCANNER, '1001')).toBe(true)
    alone.stop()
  })

  test.skipIf(!NATS_URL)('over NATS: two processes, each with its own connection', async () => {
    const log = createLogger('silent')
    const cluster = `auth${Date.now().toString(36)}`
    const buses = [await natsBus(NATS_URL!, log, { cluster }), await natsBus(NATS_URL!, log, { cluster })] as const
    try {
      await guessesSpreadOverProcesses(buses[0], buses[1], true)
    } finally {
      for (const b of buses) await b.close()
    }
  })
})
