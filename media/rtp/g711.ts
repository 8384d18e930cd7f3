/**
 * G.711 (ITU-T G.711): µ-law (PCMU, RTP payload type 0) and A-law (PCMA, type 8).
 * Everything is a table lookup, built once at load: 256 entries to decode, 65536 to
 * encode (indexed by the 16-bit sample itself, so encoding is one read per sample),
 * and 256 to transcode one law to the other without going through code per sample.
 */

export const PCMU = 0
export const PCMA = 8
export type G711PayloadType = typeof PCMU | typeof PCMA

export function isG711(payloadType: number): payloadType is G711PayloadType {
  return payloadType === PCMU || payloadType === PCMA
}

/** The reference algorithm (as in the ITU's and Sun's g711.c), used only to fill the tables. */
function ulawFromLinear(sample: number): number {
  let v = sample >> 2 // µ-law works on 14 bits
  let mask = 0xff
  if (v < 0) {
    v = -v
    mask = 0x7f
  }
  if (v > 8159) v = 8159
  v += 33 // bias, so that every segment starts at a power of two
  let seg = 0
  while (seg < 8 && v > (0x40 << seg) - 1) seg++
  if (seg >= 8) return 0x7f ^ mask
  return ((seg << 4) | ((v >> (seg + 1)) & 0x0f)) ^ mask
}

function ulawToLinear(code: number): number {
  const u = ~code & 0xff
  const t = (((u & 0x0f) << 3) + 0x84) << ((u & 0x70) >> 4)
  return u & 0x80 ? 0x84 - t : t - 0x84
}

function alawFromLinear(sample: number): number {
  let v = sample >> 3 // A-law works on 13 bits
  let mask = 0xd5 // sign bit set for non-negative, then even bits inverted (G.711 §3)
  if (v < 0) {
    v = -v - 1
    mask = 0x55
  }
  let seg = 0
  while (seg < 8 && v > (0x20 << seg) - 1) seg++
  if (seg >= 8) return 0x7f ^ mask
  const mantissa = seg < 2 ? (v >> 1) & 0x0f : (v >> seg) & 0x0f
  return ((seg << 4) | mantissa) ^ mask
}

function alawToLinear(code: number): number {
  const a = code ^ 0x55
  const seg = (a & 0x70) >> 4
  let t = (a & 0x0f) << 4
  if (seg === 0) t += 8
  else t = (t + 0x108) << (seg - 1)
  return a & 0x80 ? t : -t
}

function table<T extends Int16Array | Uint8Array>(out: T, f: (i: number) => number): T {
  for (let i = 0; i < out.length; i++) out[i] = f(i)
  return out
}

/** Code → 16-bit linear sample. */
export const ULAW_DECODE = table(new Int16Array(256), ulawToLinear)
export const ALAW_DECODE = table(new Int16Array(256), alawToLinear)
/** (sample & 0xffff) → code. */
export const ULAW_ENCODE = table(new Uint8Array(65536), (i) => ulawFromLinear((i << 16) >> 16))
export const ALAW_ENCODE = table(new Uint8Array(65536), (i) => alawFromLinear((i << 16) >> 16))
/** Through the linear value: what a decoder of one law hears is what the other law encodes. */
export const ULAW_TO_ALAW = table(new Uint8Array(256), (u) => ALAW_ENCODE[ULAW_DECODE[u]! & 0xffff]!)
export const ALAW_TO_ULAW = table(new Uint8Array(256), (a) => ULAW_ENCODE[ALAW_DECODE[a]! & 0xffff]!)

export function decodeTable(payloadType: G711PayloadType): Int16Array {
  return payloadType === PCMU ? ULAW_DECODE : ALAW_DECODE
}

export function encodeTable(payloadType: G711PayloadType): Uint8Array {
  return payloadType === PCMU ? ULAW_ENCODE : ALAW_ENCODE
}

/** The byte map from one law to the other, or undefined when no change is needed. */
export function transcodeTable(from: G711PayloadType, to: G711PayloadType): Uint8Array | undefined {
  if (from === to) return undefined
  return from === PCMU ? ULAW_TO_ALAW : ALAW_TO_ULAW
}

/** Encode PCM into `out` (allocated when absent); returns `out`. */
export function encodeG711(payloadType: G711PayloadType, samples: Int16Array, out = new Uint8Array(samples.length), outOffset = 0): Uint8Array {
  const t = encodeTable(payloadType)
  for (let i = 0; i < samples.length; i++) out[outOffset + i] = t[samples[i]! & 0xffff]!
  return out
}

/** Decode codes to PCM into `out` (allocated when absent); returns `out`. */
export function decodeG711(payloadType: G711PayloadType, codes: Uint8Array, out = new Int16Array(codes.length)): Int16Array {
  const t = decodeTable(payloadType)
  for (let i = 0; i < codes.length; i++) out[i] = t[codes[i]!]!
  return out
}

/** Map bytes [start, end) of `bytes` through a 256-entry table, in place: G.711 transcoding is one byte for one byte. */
export function transcodeInPlace(bytes: Uint8Array, map: Uint8Array, start = 0, end = bytes.length): void {
  for (let i = start; i < end; i++) bytes[i] = map[bytes[i]!]!
}

export function ulawToAlaw(codes: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(codes)
  transcodeInPlace(out, ULAW_TO_ALAW)
  return out
}

export function alawToUlaw(codes: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(codes)
  transcodeInPlace(out, ALAW_TO_ULAW)
  return out
}
