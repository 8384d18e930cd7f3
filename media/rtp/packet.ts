/**
 * RTP packets (RFC 3550 §5.1). Two ways in: `parseRtp` returns a full, freshly
 * allocated packet for code that wants one; `readRtpHeader` fills a caller-owned view
 * so the relay's hot path allocates nothing per packet.
 */

export const RTP_VERSION = 2
export const RTP_HEADER_BYTES = 12

export interface RtpExtension {
  /** The 16-bit "defined by profile" field (0xBEDE for RFC 8285 one-byte headers). */
  profile: number
  /** Extension data; its length is a multiple of 4 bytes on the wire. */
  data: Uint8Array
}

export interface RtpPacket {
  marker: boolean
  payloadType: number
  sequence: number
  timestamp: number
  ssrc: number
  csrc: number[]
  extension?: RtpExtension
  payload: Uint8Array
  /** Padding bytes after the payload, counting the final count byte; 0 = no P bit. */
  padding: number
}

/** What the relay needs of a header: offsets into the packet rather than copies. */
export interface RtpHeaderView {
  marker: boolean
  payloadType: number
  sequence: number
  timestamp: number
  ssrc: number
  payloadOffset: number
  /** Exclusive end of the payload (padding excluded). */
  payloadEnd: number
}

export function createHeaderView(): RtpHeaderView {
  return { marker: false, payloadType: 0, sequence: 0, timestamp: 0, ssrc: 0, payloadOffset: 0, payloadEnd: 0 }
}

/**
 * RTCP multiplexed on the RTP port (RFC 5761 §4): its packet types 192..223 land in
 * the marker+payload-type byte where RTP would have payload types 64..95.
 */
export function isRtcp(bytes: Uint8Array): boolean {
  if (bytes.length < 2) return false
  const pt = bytes[1]!
  return pt >= 192 && pt <= 223
}

/** Fill `view` from `bytes`; false (view unspecified) when the bytes are not a valid RTP packet. */
export function readRtpHeader(bytes: Uint8Array, view: RtpHeaderView): boolean {
  const n = bytes.length
  if (n < RTP_HEADER_BYTES) return false
  const b0 = bytes[0]!
  if (b0 >> 6 !== RTP_VERSION) return false
  let offset = RTP_HEADER_BYTES + (b0 & 0x0f) * 4
  if (offset > n) return false
  if (b0 & 0x10) {
    if (offset + 4 > n) return false
    offset += 4 + ((bytes[offset + 2]! << 8) | bytes[offset + 3]!) * 4
    if (offset > n) return false
  }
  let end = n
  if (b0 & 0x20) {
    const pad = bytes[n - 1]!
    // The count includes itself, so 0 is malformed, as is padding that eats the header.
    if (pad === 0 || offset + pad > n) return false
    end = n - pad
  }
  const b1 = bytes[1]!
  view.marker = (b1 & 0x80) !== 0
  view.payloadType = b1 & 0x7f
  view.sequence = (bytes[2]! << 8) | bytes[3]!
  view.timestamp = readUint32(bytes, 4)
  view.ssrc = readUint32(bytes, 8)
  view.payloadOffset = offset
  view.payloadEnd = end
  return true
}

/** A whole packet, or undefined for anything that is not valid RTP. Never throws. */
export function parseRtp(bytes: Uint8Array): RtpPacket | undefined {
  const view = createHeaderView()
  if (!readRtpHeader(bytes, view)) return undefined
  const b0 = bytes[0]!
  const csrc: number[] = []
  for (let i = 0; i < (b0 & 0x0f); i++) csrc.push(readUint32(bytes, RTP_HEADER_BYTES + i * 4))
  const packet: RtpPacket = {
    marker: view.marker,
    payloadType: view.payloadType,
    sequence: view.sequence,
    timestamp: view.timestamp,
    ssrc: view.ssrc,
    csrc,
    payload: bytes.slice(view.payloadOffset, view.payloadEnd),
    padding: bytes.length - view.payloadEnd,
  }
  if (b0 & 0x10) {
    const at = RTP_HEADER_BYTES + csrc.length * 4
    const words = (bytes[at + 2]! << 8) | bytes[at + 3]!
    packet.extension = { profile: (bytes[at]! << 8) | bytes[at + 1]!, data: bytes.slice(at + 4, at + 4 + words * 4) }
  }
  return packet
}

export type RtpPacketInit = Pick<RtpPacket, 'payloadType' | 'sequence' | 'timestamp' | 'ssrc' | 'payload'> & Partial<RtpPacket>

/** Serialise a packet. Throws RangeError for fields that do not fit the header. */
export function buildRtp(p: RtpPacketInit): Uint8Array {
  const csrc = p.csrc ?? []
  const padding = p.padding ?? 0
  const ext = p.extension
  if (csrc.length > 15) throw new RangeError('at most 15 CSRCs')
  if (!isUint(p.payloadType, 0x7f) || !isUint(p.sequence, 0xffff) || !isUint(p.timestamp, 0xffff_ffff) || !isUint(p.ssrc, 0xffff_ffff)) {
    throw new RangeError('payload type, sequence, timestamp or SSRC out of range')
  }
  if (!isUint(padding, 0xff)) throw new RangeError('padding must be 0..255 bytes')
  if (ext && (ext.data.length % 4 !== 0 || ext.data.length / 4 > 0xffff || !isUint(ext.profile, 0xffff))) {
    throw new RangeError('extension data must be whole 32-bit words, at most 65535 of them')
  }
  const extBytes = ext ? 4 + ext.data.length : 0
  const headerBytes = RTP_HEADER_BYTES + csrc.length * 4 + extBytes
  const out = new Uint8Array(headerBytes + p.payload.length + padding)
  out[0] = (RTP_VERSION << 6) | (padding ? 0x20 : 0) | (ext ? 0x10 : 0) | csrc.length
  out[1] = (p.marker ? 0x80 : 0) | p.payloadType
  out[2] = p.sequence >> 8
  out[3] = p.sequence & 0xff
  writeUint32(out, 4, p.timestamp)
  writeUint32(out, 8, p.ssrc)
  for (let i = 0; i < csrc.length; i++) writeUint32(out, RTP_HEADER_BYTES + i * 4, csrc[i]!)
  if (ext) {
    const at = RTP_HEADER_BYTES + csrc.length * 4
    out[at] = ext.profile >> 8
    out[at + 1] = ext.profile & 0xff
    out[at + 2] = ext.data.length >> 10
    out[at + 3] = (ext.data.length >> 2) & 0xff
    out.set(ext.data, at + 4)
  }
  out.set(p.payload, headerBytes)
  if (padding) out[out.length - 1] = padding
  return out
}

export function readUint32(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0
}

export function writeUint32(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value >>> 24
  bytes[at + 1] = (value >>> 16) & 0xff
  bytes[at + 2] = (value >>> 8) & 0xff
  bytes[at + 3] = value & 0xff
}

/** Rewrite the marker, payload type, sequence, timestamp and SSRC of a packet in place. */
export function writeRtpHeader(bytes: Uint8Array, marker: boolean, payloadType: number, sequence: number, timestamp: number, ssrc: number): void {
  bytes[1] = (marker ? 0x80 : 0) | payloadType
  bytes[2] = (sequence >> 8) & 0xff
  bytes[3] = sequence & 0xff
  writeUint32(bytes, 4, timestamp)
  writeUint32(bytes, 8, ssrc)
}

function isUint(n: number, max: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= max
}
