/** What clips and greetings share: converting an upload (refusals as field errors) and the API view of the stored WAV. */
import type { audioClips } from '../../db/schema'
import { ValidationError } from '../../errors'
import { DEFAULT_DOWNLOAD_TTL_MS, signDownload } from '../../storage/download-urls'
import { AudioRejected, type AudioConverter, type TelephonyAudio } from './telephony-audio'

/** Signs download URLs of stored media: the server's key, the public base URL, and now. */
export interface DownloadSigning {
  key: string
  baseUrl: string
  now: Date
}

export function signedUrl(signing: DownloadSigning, storageKey: string, contentType: string) {
  const expiresAt = new Date(signing.now.getTime() + DEFAULT_DOWNLOAD_TTL_MS)
  return { url: `${signing.baseUrl}${signDownload(signing.key, { key: storageKey, contentType, expiresAt })}`, url_expires_at: expiresAt.toISOString() }
}

/** The upload as telephony audio, or a 400 naming the `file` field and why. */
export async function convertUpload(convert: AudioConverter, bytes: Uint8Array): Promise<TelephonyAudio> {
  try {
    return await convert(bytes)
  } catch (err) {
    if (err instanceof AudioRejected) throw new ValidationError({ file: `${err.reason}: ${err.message}` }, 'The uploaded file is not playable audio.')
    throw err
  }
}

type AudioColumns = Pick<
  typeof audioClips.$inferSelect,
  'storageKey' | 'durationMs' | 'sizeBytes' | 'sourceFilename' | 'sourceFormat' | 'sourceSampleRate' | 'sourceChannels'
>

export function audioColumnsOf(audio: TelephonyAudio, storageKey: string, filename: string | null): AudioColumns {
  return {
    storageKey,
    durationMs: audio.durationMs,
    sizeBytes: audio.wav.length,
    sourceFilename: filename,
    sourceFormat: audio.source.format,
    sourceSampleRate: audio.source.sampleRate,
    sourceChannels: audio.source.channels,
  }
}

export function audioView(row: AudioColumns, signing: DownloadSigning) {
  return {
    duration_seconds: row.durationMs / 1000,
    content_type: 'audio/wav' as const,
    sample_rate: 8000 as const,
    channels: 1 as const,
    size: row.sizeBytes,
    source: { filename: row.sourceFilename, format: row.sourceFormat, sample_rate: row.sourceSampleRate, channels: row.sourceChannels },
    ...signedUrl(signing, row.storageKey, 'audio/wav'),
  }
}
