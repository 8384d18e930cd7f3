/**
 * Recording: the decoded audio of one or more inbound streams, mixed into one mono
 * 8 kHz track.
 *
 * Placement: the track's time is the clock's time since `start`, so a pause leaves
 * silence as long as the pause and so do stretches where nothing arrived. Within a
 * stream, packets are placed by their RTP timestamp relative to an anchor packet
 * (network jitter would otherwise smear the audio); the anchor is the stream's first
 * packet, placed at its arrival time, and is set again after a pause, on a new SSRC,
 * or when timestamp placement drifts more than 100 ms from arrival time (a sender
 * whose clock runs off, or a jump in timestamps).
 *
 * Mixing adds samples and clips to the 16-bit range.
 */
import type { MediaClock } from './clock'
import { encodeWav, TELEPHONY_SAMPLE_RATE } from '../wav'

export type RecordingState = 'recording' | 'paused' | 'stopped'

export interface Recording {
  readonly state: RecordingState
  /** Drop what arrives until `resume`; the paused time stays in the track as silence. */
  pause(): void
  resume(): void
  /** End the recording; returns the whole track. Later calls return the same track. */
  stop(): Int16Array
}

/** One inbound stream's way into the mix. */
export interface RecorderTap {
  /** `codes[start, end)` are G.711 codes, decoded through `decode`. */
  write(ssrc: number, timestamp: number, codes: Uint8Array, start: number, end: number, decode: Int16Array): void
}

export interface Recorder extends Recording {
  tap(): RecorderTap
}

export interface RecorderOptions {
  /** Audio beyond this is dropped, to bound memory (2 bytes a sample: one hour is 57.6 MB). Default 4 hours. */
  maxDurationMs?: number
  /** Called once, when stopped (the owner detaches its taps). */
  onStop?: () => void
}

const RATE = TELEPHONY_SAMPLE_RATE
const SAMPLES_PER_MS = RATE / 1000
const MAX_DRIFT_SAMPLES = 100 * SAMPLES_PER_MS
const INITIAL_SAMPLES = 30 * RATE

export function createRecorder(clock: MediaClock, options: RecorderOptions = {}): Recorder {
  const maxSamples = Math.round((options.maxDurationMs ?? 4 * 3600_000) * SAMPLES_PER_MS)
  const startedAt = clock.now()
  let state: RecordingState = 'recording'
  let track = new Int16Array(Math.min(INITIAL_SAMPLES, maxSamples))
  let result: Int16Array | undefined
  // Taps compare this with their own to know that a pause happened since they anchored.
  let generation = 0

  const ensure = (samples: number) => {
    if (samples <= track.length) return
    const grown = new Int16Array(Math.min(maxSamples, Math.max(samples, track.length * 2)))
    grown.set(track)
    track = grown
  }

  return {
    get state() {
      return state
    },
    pause() {
      if (state === 'recording') state = 'paused'
    },
    resume() {
      if (state !== 'paused') return
      state = 'recording'
      generation++
    },
    stop() {
      if (result) return result
      const length = Math.min(maxSamples, Math.max(0, Math.round((clock.now() - startedAt) * SAMPLES_PER_MS)))
      state = 'stopped'
      result = new Int16Array(length)
      result.set(track.subarray(0, Math.min(length, track.length)))
      track = new Int16Array(0)
      options.onStop?.()
      return result
    },
    tap() {
      let anchored = -1 // the generation the anchor belongs to
      let anchorSsrc = 0
      let anchorTs = 0
      let anchorAt = 0
      let lastTs = -1
      return {
        write(ssrc, timestamp, codes, start, end, decode) {
          if (state !== 'recording') return
          if (timestamp === lastTs && anchorSsrc === ssrc) return // a duplicate would play twice as loud
          lastTs = timestamp
          const arrivalAt = Math.round((clock.now() - startedAt) * SAMPLES_PER_MS)
          let at = anchorAt + ((timestamp - anchorTs) | 0)
          if (anchored !== generation || ssrc !== anchorSsrc || Math.abs(at - arrivalAt) > MAX_DRIFT_SAMPLES) {
            anchored = generation
            anchorSsrc = ssrc
            anchorTs = timestamp
            anchorAt = at = arrivalAt
          }
          const from = Math.max(at, 0)
          const to = Math.min(at + end - start, maxSamples)
          if (to <= from) return
          ensure(to)
          for (let i = from, j = start + from - at; i < to; i++, j++) {
            const v = track[i]! + decode[codes[j]!]!
            track[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v
          }
        },
      }
    },
  }
}

/** A recorded track as a WAV file (8 kHz, 16-bit mono), the format recordings are stored in. */
export function recordingToWav(samples: Int16Array): Uint8Array {
  return encodeWav(samples, RATE)
}
