/**
 * What a phone's request says about it, read from the User-Agent and the file name,
 * before anything is looked up. Yealink sends `Yealink SIP-T54W 96.86.0.100
 * 00:15:65:aa:bb:cc` (model, firmware, MAC); Polycom sends `FileTransport
 * PolycomVVX-VVX_450-UA/6.4.3.5018 Type/Application`, some firmware adding
 * `(SN:0004f2aabbcc)`. File names: Yealink `y0000000000XX.cfg` and `<mac>.cfg`;
 * Polycom `000000000000.cfg`, `<mac>.cfg` and `<mac>-phone.cfg`.
 */
import { normalizeMac, type Vendor } from './config'

export type FileKind =
  /** Yealink's shared file for a hardware family. */
  | 'yealink-common'
  /** Polycom's shared master file. */
  | 'polycom-master'
  /** `<mac>.cfg`: Yealink's device file or Polycom's per-phone master file. */
  | 'mac-cfg'
  /** Polycom's per-phone settings. */
  | 'polycom-phone'

export interface RequestedFile {
  name: string
  kind: FileKind
  /** MAC named by the file, if any. */
  mac?: string
}

export interface UserAgentInfo {
  vendor: Vendor
  model?: string
  firmware?: string
  mac?: string
}

/** The file a path asks for (its last segment); undefined for anything we never serve. */
export function requestedFile(pathname: string): RequestedFile | undefined {
  const name = pathname.slice(pathname.lastIndexOf('/') + 1)
  if (name.length > 64) return undefined
  const lower = name.toLowerCase()
  if (/^y0000000000[0-9a-f]{2}\.cfg$/.test(lower)) return { name, kind: 'yealink-common' }
  if (lower === '000000000000.cfg') return { name, kind: 'polycom-master' }
  const m = /^([0-9a-f]{12})(-phone)?\.cfg$/.exec(lower)
  if (!m) return undefined
  const mac = normalizeMac(m[1]!)
  if (!mac) return undefined
  return { name, kind: m[2] ? 'polycom-phone' : 'mac-cfg', mac }
}

/** Vendor, model, firmware and MAC from a User-Agent; undefined when no supported vendor is recognised. */
export function parseUserAgent(userAgent: string | null | undefined): UserAgentInfo | undefined {
  if (!userAgent || userAgent.length > 512) return undefined
  const yealink = /^Yealink\s+(?:SIP[- ])?([A-Za-z0-9][A-Za-z0-9_.-]*)\s+([0-9][0-9.]*)(?:\s+([0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}))?/.exec(userAgent)
  if (yealink) {
    const info: UserAgentInfo = { vendor: 'yealink', model: yealink[1]!, firmware: yealink[2]! }
    if (yealink[3]) info.mac = normalizeMac(yealink[3]) ?? 'invalid'
    return info
  }
  const polycom = /^FileTransport\s+Polycom[A-Za-z]*-([A-Za-z0-9_]+)-UA\/([0-9][0-9.]*)(?:.*?\(SN:([0-9A-Fa-f]{12})\))?/.exec(userAgent)
  if (polycom) {
    const info: UserAgentInfo = { vendor: 'polycom', model: polycom[1]!.replace(/_/g, ''), firmware: polycom[2]! }
    if (polycom[3]) info.mac = normalizeMac(polycom[3]) ?? 'invalid'
    return info
  }
  return undefined
}

export type Identification =
  | { outcome: 'device'; mac: string; file: RequestedFile; vendor?: Vendor; model?: string }
  /** The path names no file we serve, or a shared file without a MAC to tell whose. */
  | { outcome: 'not_found' }
  /** Path and User-Agent name different phones. */
  | { outcome: 'mac_mismatch' }
  | { outcome: 'unsupported_vendor' }

/**
 * Which device a request is for, from the request alone. `vendor` is what the request
 * claims (undefined when only `<mac>.cfg` and an unknown User-Agent were given): the
 * caller checks it against the device once the phone has authenticated.
 */
export function identifyRequest(pathname: string, userAgent: string | null | undefined): Identification {
  const file = requestedFile(pathname)
  const ua = parseUserAgent(userAgent)
  if (!file) return ua ? { outcome: 'not_found' } : { outcome: 'unsupported_vendor' }
  const byName: Vendor | undefined = file.kind === 'yealink-common' ? 'yealink' : file.kind === 'mac-cfg' ? undefined : 'polycom'
  if (ua && byName && ua.vendor !== byName) return { outcome: 'unsupported_vendor' }
  const vendor = ua?.vendor ?? byName
  if (ua?.mac === 'invalid') return { outcome: 'mac_mismatch' }
  if (file.mac && ua?.mac && file.mac !== ua.mac) return { outcome: 'mac_mismatch' }
  const mac = file.mac ?? ua?.mac
  if (!mac) return vendor ? { outcome: 'not_found' } : { outcome: 'unsupported_vendor' }
  const device: Identification = { outcome: 'device', mac, file }
  if (vendor) device.vendor = vendor
  if (ua?.model) device.model = ua.model
  return device
}
