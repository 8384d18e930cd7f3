/**
 * What the services need from audio conversion, stated here because src/ may not
 * import media/: the composition root hands in media/audio-convert.ts's converter.
 */

/** Uploaded audio as telephony plays it: 8 kHz mono 16-bit PCM WAV. */
export interface TelephonyAudio {
  wav: Uint8Array
  /** Measured from the decoded samples, not taken from a header. */
  durationMs: number
  source: { format: 'wav' | 'mp3'; sampleRate: number; channels: number }
}

/** Why an upload is not playable audio; each maps to a field-level 400. */
export type AudioRejection = 'empty' | 'not_audio' | 'unsupported_encoding' | 'corrupt' | 'too_long'

export class AudioRejected extends Error {
  constructor(
    readonly reason: AudioRejection,
    message: string,
  ) {
    super(message)
  }
}

/** Decodes, downmixes and resamples; throws AudioRejected for anything it cannot play. */
export type AudioConverter = (bytes: Uint8Array) => Promise<TelephonyAudio>

/** The longest clip or greeting accepted (after decoding): longer ones are refused as too_long. */
export const MAX_AUDIO_SECONDS = 600
