/**
 * Which network addresses a webhook may be sent to. Loopback, private,
 * link-local, CGNAT, multicast, unique-local and other non-public ranges are
 * refused, in IPv4, IPv6 and IPv4-mapped IPv6 alike. The check is made on the
 * address actually connected to (see webhook-transport.ts), so a name that
 * resolves to a public address once and a private one later gains nothing.
 */
import ipaddr from 'ipaddr.js'

/** ipaddr.js range names that are not the public internet. */
const REFUSED_RANGES = new Set([
  'unspecified',
  'broadcast',
  'multicast',
  'linkLocal',
  'loopback',
  'carrierGradeNat',
  'private',
  'reserved',
  'uniqueLocal',
  'ipv4Mapped',
  'rfc6145',
  'rfc6052',
  '6to4',
  'teredo',
  'benchmarking',
  'amt',
  'as112',
  'deprecated',
  'orchid2',
  'droneRemoteIdProtocolEntityTags',
  'as112v6',
  'deprecatedSiteLocal',
  'discard',
])

export function refusalReason(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(address)
  } catch {
    return 'not an IP address'
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6
    // An IPv4 address dressed as IPv6 is judged as the IPv4 address it reaches.
    if (v6.isIPv4MappedAddress()) return refusalReason(v6.toIPv4Address().toString())
    // ::a.b.c.d, "IPv4-compatible" (deprecated by RFC 4291, ::/96 apart from :: and ::1):
    // no public service lives there, and some hosts tunnel it to the IPv4 address.
    const p = v6.parts
    if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0 && v6.range() === 'unicast') return 'ipv4Compatible address'
  }
  const range = parsed.range()
  return REFUSED_RANGES.has(range) ? `${range} address` : undefined
}
