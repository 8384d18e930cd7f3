/**
 * Registration with the carrier trunk (SIP_TRUNK_REGISTER), with sipp as the
 * carrier's registrar over UDP on loopback (test/sip/carrier-registrar.xml): the
 * media role registers `sip:<username>@<trunk>`, answers the registrar's digest
 * challenge with the trunk's credentials (sipp checks each answer), refreshes before
 * the granted interval runs out, and removes its registration (Expires: 0) when the
 * service stops. The trunk's address then counts as a trunk source: its INVITEs to
 * the accounts' numbers are inbound calls (test/sip-routing.test.ts covers those).
 */
import { describe, expect, test } from 'bun:test'
import { until } from './support/polling'
import { freePort } from './support/scratch-postgres'
import { startTestService } from './support/service'
import { expectAllPassed, runSipp, sipWorkFolder, sipp, trunkInviteStatus, withSipp } from './support/sip-phones'

const TRUNK = { username: 'trunk-reg-user', password: 'trunk-reg-pass-0123' }
const work = sipWorkFolder('sip-trunk-reg-')

if (!sipp) test.skip('registration with the carrier trunk (skipped: sipp is not installed; Debian package sip-tester)', () => {})

describe.skipIf(!sipp)('registration with the carrier trunk', () => {
  test(
    'the media role registers with the trunk’s credentials, refreshes before the granted interval ends, and removes the registration when it stops',
    async () => {
      const carrierPort = await freePort()
      const t = await startTestService({
        SIP_TRUNK_OUTBOUND: `127.0.0.1:${carrierPort}`,
        SIP_TRUNK_USERNAME: TRUNK.username,
        SIP_TRUNK_PASSWORD: TRUNK.password,
        SIP_TRUNK_REGISTER: '1',
      })
      // The first REGISTER may go out before the registrar listens: the client transaction sends it again (Timer E).
      const registrar = runSipp(
        t,
        work,
        'carrier-registrar.xml',
        [TRUNK.username, TRUNK.password],
        ['-p', String(carrierPort), '-mi', '127.0.0.1', '-mp', String(await freePort())],
      )
      const registration = t.service.media!.trunkRegistration!
      // Granted 2 s first, so the refresh follows at once; the second grant is 600 s.
      await until('registered and refreshed', async () => registration.state.grantedS === 600, 30_000)
      expect(registration.state).toMatchObject({ registered: true, last: 200, failures: 0 })
      // The trunk's own address is where its inbound calls come from: an INVITE from there to a number no account holds
      // is a carrier's call (404), not a phone's that must authenticate (407).
      expect(await trunkInviteStatus(t, '+15550001111')).toBe('SIP/2.0 404 No Such Number')
      await t.stop()
      expectAllPassed(await registrar)
      expect(registration.state.registered).toBe(false)
    },
    withSipp(90_000),
  )
})
