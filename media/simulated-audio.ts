/**
 * The simulator's own call audio: two alternating "voices" (pitched, harmonic tones in
 * syllable-like bursts over a faint line hiss) so that a simulated recording sounds
 * like a conversation, is the call's exact length, and is the same every time for the
 * same call. Paused stretches of a recording are digital silence, in the same file.
 */
import type { RecordingPause } from '../src/db/schema'
import { encodeWav, TELEPHONY_SAMPLE_RATE } from './wav'

/** Milliseconds from the start of the recording; `to: null` = paused until the end. */
export type PauseInterval = RecordingPause

export interface SimulatedAudioOptions {
  /** Usually the call id: same seed, same audio. */
  seed: string
  durationMs: number
  pauses?: PauseInterval[]
  sampleRate?: number
}

/** The sample range [start, end) a pause silences, clamped to the recording. */
export function pauseSampleRange(p: PauseInterval, sampleCount: number, sampleRate = TELEPHONY_SAMPLE_RATE): [number, number] {
  const at = (ms: number) => Math.min(sampleCount, Math.max(0, Math.round((ms * sampleRate) / 1000)))
  return [at(p.from), p.to === null ? sampleCount : at(p.to)]
}

export function sampleCountFor(durationMs: number, sampleRate = TELEPHONY_SAMPLE_RATE): number {
  if (!Number.isFinite(durationMs) || durationMs < 0) throw new RangeError(`duration must be a non-negative number of ms, got ${durationMs}`)
  return Math.round((durationMs * sampleRate) / 1000)
}

/** FNV-1a then mulberry32: tiny, seedable, and stable across runs (Math.random is not). */
function rng(seed: string): () => number {
  let h = 0x811c9dc5
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193)
  let a = h >>> 0
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// Caller and callee: a lower and a higher voice, told apart by pitch and timbre.
const VOICES = [
  { f0: 115, harmonics: [1, 0.6, 0.35, 0.2] },
  { f0: 205, harmonics: [1, 0.45, 0.25, 0.1] },
]
const HISS = 60 // line noise amplitude: keeps unpaused audio from ever being digital silence
const PEAK = 9000 // speech level, well below clipping with all harmonics in phase

export function simulateCallAudio(opts: SimulatedAudioOptions): Int16Array {
  const rate = opts.sampleRate ?? TELEPHONY_SAMPLE_RATE
  const n = sampleCountFor(opts.durationMs, rate)
  const out = new Int16Array(n)
  const rand = rng(opts.seed)
  let speaker = rand() < 0.5 ? 0 : 1
  let phase = 0

  // Talk in turns of 1.5 to 4.5 s; within a turn, syllables of 120 to 300 ms whose
  // loudness and pitch wander a little, as speech does.
  for (let turnStart = 0; turnStart < n; ) {
    const turnEnd = Math.min(n, turnStart + Math.round((1.5 + rand() * 3) * rate))
    const voice = VOICES[speaker]!
    for (let s = turnStart; s < turnEnd; ) {
      const sylLen = Math.round((0.12 + rand() * 0.18) * rate)
      const sylEnd = Math.min(turnEnd, s + sylLen)
      const loud = 0.4 + rand() * 0.6
      const pitch = voice.f0 * (0.9 + rand() * 0.2)
      for (let i = s; i < sylEnd; i++) {
        const env = Math.sin((Math.PI * (i - s)) / sylLen) ** 2 * loud
        phase += (2 * Math.PI * pitch) / rate
        let tone = 0
        for (let h = 0; h < voice.harmonics.length; h++) tone += voice.harmonics[h]! * Math.sin(phase * (h + 1))
        const hiss = (rand() * 2 - 1) * HISS
        out[i] = Math.round((tone / 2.2) * PEAK * env + hiss)
      }
      s = sylEnd
    }
    turnStart = turnEnd
    speaker = 1 - speaker
  }

  // Pauses are applied after generation so that pausing never shifts the audio after
  // the pause: the conversation went on, the recording just did not hear it.
  for (const p of opts.pauses ?? []) {
    const [from, to] = pauseSampleRange(p, n, rate)
    if (to > from) out.fill(0, from, to)
  }
  return out
}

/** The recording file of a simulated call: a WAV of exactly the call's length. */
export function simulatedRecordingWav(opts: SimulatedAudioOptions): Uint8Array {
  return encodeWav(simulateCallAudio(opts), opts.sampleRate ?? TELEPHONY_SAMPLE_RATE)
}
