/**
 * Password guessing against the running service (media/sip/auth-failures.ts), over
 * UDP on loopback with the test's own UA (test/support/sip-ua.ts):
 *  - five wrong passwords for one line from one address: the line is refused there
 *    (403), the right password too, for REGISTER and INVITE alike; another line
 *    from the same address still registers;
 *  - failures for ten different users from one address: everything it sends is
 *    dropped unanswered.
 * Its own service: the last test leaves 127.0.0.1 blocked.
 */
import { describe, expect, test } from 'bun:test'
import { DEFAULT_AUTH_FAILURE_LIMITS } from '../media/sip/auth-failures'
import { startTestService } from './support/service'
import { sipAccount, sipWorkFolder } from './support/sip-phones'
import { startUa } from './support/sip-ua'

const t = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const work = sipWorkFolder('sip-auth-failures-')
const server = () => ({ port: t.service.sip!.udpPort })

describe('password guessing over SIP', () => {
  test('a line guessed at from one address is refused there, the right password too, REGISTER and INVITE alike; other lines are not', async () => {
    const a = await sipAccount(t, work, 2)
    const [alice, bob] = a.lines
    const aliceUa = await startUa(alice!.account, server())
    const bobUa = await startUa(bob!.account, server())
    try {
      expect(await aliceUa.register()).toBe(200)
      for (let i = 0; i < DEFAULT_AUTH_FAILURE_LIMITS.perLine; i++) expect(await aliceUa.register('not-the-password')).toBe(403)
      expect(await aliceUa.register()).toBe(403)
      await expect(aliceUa.call(bob!.extension)).rejects.toThrow(/403/)
      expect(await bobUa.register()).toBe(200)
    } finally {
      aliceUa.close()
      bobUa.close()
      await a.stop()
    }
  })

  test('an address failing for many users is dropped: nothing it sends is answered', async () => {
    const a = await sipAccount(t, work, 1)
    const line = a.lines[0]!
    const ua = await startUa(line.account, server())
    try {
      expect(await ua.register()).toBe(200)
      for (let i = 0; i < DEFAULT_AUTH_FAILURE_LIMITS.perSource; i++) {
        const scanner = await startUa({ username: `guess${i}`, password: '1234', domain: line.account.domain }, server())
        // Once the address is dropped the scanner hears nothing more (0).
        expect([403, 0]).toContain(await scanner.register('1234', 2_000))
        scanner.close()
      }
      expect(await ua.register(line.account.password, 2_000)).toBe(0)
    } finally {
      ua.close()
      await a.stop()
    }
  })
})
