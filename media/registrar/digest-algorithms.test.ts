import { describe, expect, test } from 'bun:test'
import { challengeAlgorithms } from './digest-algorithms'

describe('digest algorithms offered in a challenge', () => {
  test('MD5 then SHA-256 to phones in general (and when no User-Agent is given)', () => {
    for (const ua of [undefined, 'Yealink SIP-T54W 96.86.0.100', 'PolycomVVX-VVX_450-UA/6.4.3', 'SIPp', 'baresip v2.9.0 (x86_64/linux)'])
      expect(challengeAlgorithms(ua)).toEqual(['MD5', 'SHA-256'])
  })
  test('MD5 alone to baresip before 2.0, which stops at an algorithm it does not know', () => {
    expect(challengeAlgorithms('baresip v1.0.0 (x86_64/linux)')).toEqual(['MD5'])
    expect(challengeAlgorithms('baresip v0.6.1 (arm/linux)')).toEqual(['MD5'])
  })
})
