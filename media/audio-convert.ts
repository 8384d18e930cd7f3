/**
 * Uploaded audio (clips, greetings) to what telephony plays: 8 kHz mono 16-bit PCM
 * WAV. WAV is read, downmixed and resampled here; MP3 frames are decoded by
 * mpg123-decoder (mpg123 compiled to WASM), then go the same way.
 */
import { MPEGDecoder } from 'mpg123-decoder'
import { AudioRejected, MAX_AUDIO_SECONDS, type TelephonyAudio } from '../src/services/media/telephony-audio'
import { decodeWavHeader, encodeWav, TELEPHONY_SAMPLE_RATE, WavFormatError } from './wav'

/** Decoded audio: one Float32Array per channel, samples in [-1, 1]. */
export interface PcmAudio {
  sampleRate: number
  channels: Float32Array[]
}

export type AudioFormat = 'wav' | 'mp3'

/** Recognise the container by its first bytes; the declared content type is not trusted. */
export function sniffAudioFormat(bytes: Uint8Array): AudioFormat | undefined {
  const ascii = (at: number, n: number) => String.fromCharCode(...bytes.subarray(at, at + n))
  if (bytes.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 4) === 'WAVE') return 'wav'
  if (bytes.length >= 3 && ascii(0, 3) === 'ID3') return 'mp3'
  // An MPEG audio frame header: 11 sync bits, then a layer other than "reserved".
  if (bytes.length >= 4 && bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0 && (bytes[1]! & 0x06) !== 0) return 'mp3'
  return undefined
}

const PCM = 1
const IEEE_FLOAT = 3

/** WAV as PCM: integer PCM of 8 (unsigned), 16, 24 or 32 bits, or 32-bit float, any rate and channel count. */
export function decodeWav(bytes: Uint8Array): PcmAudio {
  let info: ReturnType<typeof decodeWavHeader>
  try {
    info = decodeWavHeader(bytes)
  } catch (err) {
    if (err instanceof WavFormatError) throw new AudioRejected('corrupt', `The WAV file cannot be read: ${err.message}.`)
    throw err
  }
  const { format, bitsPerSample: bits, channels: count, sampleRate } = info
  const intPcm = format === PCM && [8, 16, 24, 32].includes(bits)
  const floatPcm = format === IEEE_FLOAT && bits === 32
  if (!intPcm && !floatPcm) {
    throw new AudioRejected(
      'unsupported_encoding',
      `WAV encoding ${format} with ${bits}-bit samples is not supported: use PCM (8, 16, 24 or 32-bit) or 32-bit float.`,
    )
  }
  if (count < 1 || count > 8 || sampleRate < 1000 || sampleRate > 384_000) {
    throw new AudioRejected('unsupported_encoding', `A WAV file of ${count} channels at ${sampleRate} Hz is not supported.`)
  }
  const width = bits / 8
  const frames = Math.floor(info.dataBytes / (width * count))
  const v = new DataView(bytes.buffer, bytes.byteOffset + info.dataOffset, frames * width * count)
  const channels = Array.from({ length: count }, () => new Float32Array(frames))
  for (let f = 0; f < frames; f++) {
    for (let c = 0; c < count; c++) {
      const at = (f * count + c) * width
      let s: number
      if (floatPcm) s = v.getFloat32(at, true)
      else if (bits === 8)
        s = (v.getUint8(at) - 128) / 128 // 8-bit WAV is unsigned
      else if (bits === 16) s = v.getInt16(at, true) / 32768
      else if (bits === 24) s = (((v.getUint8(at + 2) << 24) | (v.getUint8(at + 1) << 16) | (v.getUint8(at) << 8)) >> 8) / 8_388_608
      else s = v.getInt32(at, true) / 2_147_483_648
      channels[c]![f] = s
    }
  }
  return { sampleRate, channels }
}

/** MP3 frames to PCM; a file whose frames all fail to decode is not MP3 at all. */
export async function decodeMp3(bytes: Uint8Array): Promise<PcmAudio> {
  const decoder = new MPEGDecoder()
  await decoder.ready
  try {
    const out = decoder.decode(bytes)
    if (out.samplesDecoded === 0 || out.channelData.length === 0) {
      throw new AudioRejected('corrupt', 'No MP3 frame in the file could be decoded.')
    }
    return { sampleRate: out.sampleRate, channels: out.channelData.map((c) => c.subarray(0, out.samplesDecoded)) }
  } finally {
    decoder.free()
  }
}

/** The average of the channels: what a mono phone line should hear of a stereo file. */
export function downmix(channels: Float32Array[]): Float32Array {
  if (channels.length === 1) return channels[0]!
  const out = new Float32Array(channels[0]!.length)
  for (const ch of channels) for (let i = 0; i < out.length; i++) out[i]! += ch[i]! / channels.length
  return out
}

/** Zero crossings of the sinc kept on each side: enough stop-band for speech on a phone line. */
const SINC_ZEROS = 8

/**
 * Band-limited resampling: each output sample is a Blackman-windowed sinc over the
 * input around it, the cutoff below the lower of the two Nyquist rates so that
 * downsampling does not fold high frequencies back as audible aliasing.
 */
export function resample(input: Float32Array, from: number, to: number): Float32Array {
  if (from === to) return input
  const ratio = to / from
  const cutoff = Math.min(1, ratio) * 0.95
  const half = Math.ceil(SINC_ZEROS / cutoff)
  const out = new Float32Array(Math.floor(input.length * ratio))
  for (let i = 0; i < out.length; i++) {
    const t = i / ratio
    const centre = Math.floor(t)
    let acc = 0
    let norm = 0
    for (let k = centre - half + 1; k <= centre + half; k++) {
      const d = t - k
      const x = Math.PI * cutoff * d
      const sinc = d === 0 ? 1 : Math.sin(x) / x
      const window = 0.42 + 0.5 * Math.cos((Math.PI * d) / half) + 0.08 * Math.cos((2 * Math.PI * d) / half)
      const w = sinc * window
      norm += w
      if (k >= 0 && k < input.length) acc += input[k]! * w
    }
    // Dividing by the weights' sum keeps a constant signal constant (unity gain at DC).
    out[i] = norm === 0 ? 0 : acc / norm
  }
  return out
}

function toInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length)
  for (let i = 0; i < samples.length; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round(samples[i]! * 32768)))
  return out
}

/** Any supported upload to telephony WAV; AudioRejected says why not. */
export async function toTelephonyAudio(bytes: Uint8Array): Promise<TelephonyAudio> {
  if (bytes.length === 0) throw new AudioRejected('empty', 'The file is empty.')
  const format = sniffAudioFormat(bytes)
  if (!format) throw new AudioRejected('not_audio', 'The file is not audio: upload WAV or MP3.')
  const pcm = format === 'wav' ? decodeWav(bytes) : await decodeMp3(bytes)
  const frames = pcm.channels[0]?.length ?? 0
  if (frames === 0) throw new AudioRejected('empty', 'The file holds no audio samples.')
  const durationMs = Math.round((frames / pcm.sampleRate) * 1000)
  if (durationMs > MAX_AUDIO_SECONDS * 1000) {
    throw new AudioRejected('too_long', `The audio lasts ${Math.round(durationMs / 1000)} s; at most ${MAX_AUDIO_SECONDS} s is accepted.`)
  }
  const mono = resample(downmix(pcm.channels), pcm.sampleRate, TELEPHONY_SAMPLE_RATE)
  return {
    wav: encodeWav(toInt16(mono), TELEPHONY_SAMPLE_RATE),
    durationMs,
    source: { format, sampleRate: pcm.sampleRate, channels: pcm.channels.length },
  }
}
