/**
 * Which digest algorithms a challenge offers a phone. MD5 first, SHA-256 second:
 * RFC 8760 would put SHA-256 first, but many SIP clients answer only the first
 * challenge and give up when it is not MD5 (sipp, older phone firmware), and the
 * industry default (Asterisk, FreeSWITCH, Kamailio) is MD5 alone. The gain of
 * SHA-256 here is small: line passwords are 24 random characters, out of reach of an
 * offline guess at an MD5 exchange. A client that prefers SHA-256 still finds it.
 *
 * Some clients fail on a challenge whose algorithm they do not know instead of
 * skipping it: baresip before 2.0 (libre's digest code answers ENOSYS and the
 * registration stops, seen with Debian's baresip 1.0.0). They get MD5 alone, told
 * apart by User-Agent, as SBCs keep such interop quirks.
 */
import type { DigestAlgorithm } from '../../src/auth/digest'

export const SIP_CHALLENGE_ORDER: readonly DigestAlgorithm[] = ['MD5', 'SHA-256']
const MD5_ONLY: readonly DigestAlgorithm[] = ['MD5']

/** User-Agents that stop at an unknown algorithm rather than skip it. */
const FAILS_ON_UNKNOWN_ALGORITHM = [/^baresip v[01]\./i]

export function challengeAlgorithms(userAgent: string | undefined): readonly DigestAlgorithm[] {
  return userAgent && FAILS_ON_UNKNOWN_ALGORITHM.some((re) => re.test(userAgent.trim())) ? MD5_ONLY : SIP_CHALLENGE_ORDER
}
