import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { AudioRejected } from '../src/services/media/telephony-audio'
import { pcmWav } from '../test/fixtures/pcm-wav'
import { resample, sniffAudioFormat, toTelephonyAudio } from './audio-convert'
import { decodeWavHeader, decodeWavSamples, encodeWav } from './wav'

const rejection = async (bytes: Uint8Array) => {
  try {
    await toTelephonyAudio(bytes)
  } catch (err) {
    if (err instanceof AudioRejected) return err.reason
    throw err
  }
  return undefined
}

describe('toTelephonyAudio', () => {
  test('a 44.1 kHz stereo 16-bit WAV becomes 8 kHz mono 16-bit with the same duration', async () => {
    const out = await toTelephonyAudio(pcmWav({ sampleRate: 44_100, channels: 2, bits: 16, seconds: 1.25 }))
    const info = decodeWavHeader(out.wav)
    expect([info.sampleRate, info.channels, info.bitsPerSample, info.format]).toEqual([8000, 1, 16, 1])
    expect(out.durationMs).toBe(1250)
    expect(Math.abs(info.durationMs - 1250)).toBeLessThan(1)
    expect(out.source).toEqual({ format: 'wav', sampleRate: 44_100, channels: 2 })
  })

  test('8-bit unsigned WAV is read around its midpoint, and the tone survives resampling', async () => {
    const out = await toTelephonyAudio(pcmWav({ sampleRate: 11_025, channels: 1, bits: 8, seconds: 0.5, hz: 400 }))
    const samples = decodeWavSamples(out.wav)
    const peak = samples.reduce((m, s) => Math.max(m, Math.abs(s)), 0)
    const mean = samples.reduce((m, s) => m + s, 0) / samples.length
    expect(peak).toBeGreaterThan(14_000) // 0.5 of full scale
    expect(Math.abs(mean)).toBeLessThan(300)
  })

  test('an MP3 (22 kHz stereo, made with a real encoder) decodes to 8 kHz mono', async () => {
    const mp3 = new Uint8Array(readFileSync(join(import.meta.dir, '../test/fixtures/tone-1500ms-22khz-stereo.mp3')))
    expect(sniffAudioFormat(mp3)).toBe('mp3')
    const out = await toTelephonyAudio(mp3)
    const info = decodeWavHeader(out.wav)
    expect([info.sampleRate, info.channels]).toEqual([8000, 1])
    expect(out.durationMs).toBeGreaterThan(1400)
    expect(out.durationMs).toBeLessThan(1700)
    expect(out.source.format).toBe('mp3')
  })

  test('a tone above 4 kHz is filtered out rather than folded into the phone band', () => {
    const rate = 48_000
    const x = new Float32Array(rate / 2).map((_, i) => Math.sin((2 * Math.PI * 6000 * i) / rate))
    const y = resample(x, rate, 8000)
    const rms = Math.sqrt(y.slice(100, -100).reduce((m, s) => m + s * s, 0) / (y.length - 200))
    expect(rms).toBeLessThan(0.05)
  })

  test('refusals name the reason', async () => {
    expect(await rejection(new Uint8Array())).toBe('empty')
    expect(await rejection(new TextEncoder().encode('%PDF-1.7 not audio'))).toBe('not_audio')
    expect(await rejection(pcmWav({ sampleRate: 8000, channels: 1, bits: 16, seconds: 0 }))).toBe('empty')
    const aLaw = encodeWav(new Int16Array(800))
    new DataView(aLaw.buffer).setUint16(20, 6, true)
    expect(await rejection(aLaw)).toBe('unsupported_encoding')
    expect(await rejection(encodeWav(new Int16Array(800)).subarray(0, 30))).toBe('corrupt')
    expect(await rejection(new Uint8Array([0xff, 0xfb, 0x90, 0x00, ...new Uint8Array(200)]))).toBe('corrupt')
    expect(await rejection(encodeWav(new Int16Array(8000 * 601)))).toBe('too_long')
  })
})
