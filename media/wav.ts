/**
 * WAV (RIFF) encoding of 16-bit PCM, the format recordings are served in. Written by
 * hand: the canonical header is 44 bytes, and a library would add more than it saves.
 */

/** Telephony narrowband: what G.711 carries, so a recording is no richer than the call. */
export const TELEPHONY_SAMPLE_RATE = 8000
export const WAV_HEADER_BYTES = 44
export const WAV_CONTENT_TYPE = 'audio/wav'

/** Encode mono 16-bit PCM samples as a WAV file (little-endian, as RIFF requires). */
export function encodeWav(samples: Int16Array, sampleRate = TELEPHONY_SAMPLE_RATE): Uint8Array {
  const dataBytes = samples.length * 2
  // RIFF sizes are unsigned 32-bit: about 74 hours of 8 kHz audio.
  if (WAV_HEADER_BYTES - 8 + dataBytes > 0xffff_ffff) throw new RangeError('audio too long for a WAV file')
  const out = new Uint8Array(WAV_HEADER_BYTES + dataBytes)
  const v = new DataView(out.buffer)
  const ascii = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i)
  }
  ascii(0, 'RIFF')
  v.setUint32(4, WAV_HEADER_BYTES - 8 + dataBytes, true)
  ascii(8, 'WAVE')
  ascii(12, 'fmt ')
  v.setUint32(16, 16, true) // fmt chunk size for plain PCM
  v.setUint16(20, 1, true) // format 1 = PCM
  v.setUint16(22, 1, true) // mono
  v.setUint32(24, sampleRate, true)
  v.setUint32(28, sampleRate * 2, true) // byte rate = rate * channels * 2
  v.setUint16(32, 2, true) // block align = channels * 2
  v.setUint16(34, 16, true) // bits per sample
  ascii(36, 'data')
  v.setUint32(40, dataBytes, true)
  // DataView rather than copying the Int16Array's buffer: correct on any host byte order.
  for (let i = 0; i < samples.length; i++) v.setInt16(WAV_HEADER_BYTES + i * 2, samples[i]!, true)
  return out
}

export interface WavInfo {
  format: number
  channels: number
  sampleRate: number
  bitsPerSample: number
  /** Offset of the first sample byte. */
  dataOffset: number
  dataBytes: number
  durationMs: number
}

export class WavFormatError extends Error {}

/**
 * Read a WAV header, walking chunks rather than assuming 44 bytes so that files from
 * other tools (with LIST or fact chunks) read too.
 */
export function decodeWavHeader(bytes: Uint8Array): WavInfo {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const tag = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 4))
  if (bytes.length < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new WavFormatError('not a RIFF/WAVE file')
  if (v.getUint32(4, true) + 8 !== bytes.length) throw new WavFormatError('RIFF size does not match the file length')
  let fmt: Omit<WavInfo, 'dataOffset' | 'dataBytes' | 'durationMs'> | undefined
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = tag(at)
    const size = v.getUint32(at + 4, true)
    const body = at + 8
    if (body + size > bytes.length) throw new WavFormatError(`chunk "${id}" runs past the end`)
    if (id === 'fmt ') {
      if (size < 16) throw new WavFormatError('fmt chunk too short')
      fmt = {
        format: v.getUint16(body, true),
        channels: v.getUint16(body + 2, true),
        sampleRate: v.getUint32(body + 4, true),
        bitsPerSample: v.getUint16(body + 14, true),
      }
    } else if (id === 'data') {
      if (!fmt) throw new WavFormatError('data chunk before fmt chunk')
      const bytesPerSecond = fmt.sampleRate * fmt.channels * (fmt.bitsPerSample / 8)
      return { ...fmt, dataOffset: body, dataBytes: size, durationMs: (size / bytesPerSecond) * 1000 }
    }
    at = body + size + (size & 1) // chunks are padded to even length
  }
  throw new WavFormatError('no data chunk')
}

/** The samples of a 16-bit PCM mono WAV (for tests and for playback/transcoding). */
export function decodeWavSamples(bytes: Uint8Array): Int16Array {
  const info = decodeWavHeader(bytes)
  if (info.format !== 1 || info.bitsPerSample !== 16 || info.channels !== 1) throw new WavFormatError('not 16-bit PCM mono')
  const v = new DataView(bytes.buffer, bytes.byteOffset + info.dataOffset, info.dataBytes)
  const out = new Int16Array(info.dataBytes >> 1)
  for (let i = 0; i < out.length; i++) out[i] = v.getInt16(i * 2, true)
  return out
}
