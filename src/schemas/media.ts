/** Files, audio clips and voicemail greetings: response and request schemas (uploads are described in gateway/uploads.ts). */
import { Body, DateTime, Nullable, T } from './common'

const AUDIO_NOTE =
  'Stored as telephony plays it: 8 kHz mono 16-bit PCM WAV, converted from the upload (WAV: PCM 8, 16, 24 or 32-bit or 32-bit float, any rate, any channel count; MP3). At most 600 seconds.'

export const AudioSource = T.Object(
  {
    filename: Nullable(T.String()),
    format: T.Union([T.Literal('wav'), T.Literal('mp3')]),
    sample_rate: T.Integer({ description: 'Hz, as uploaded' }),
    channels: T.Integer({ description: 'as uploaded' }),
  },
  { description: 'What was uploaded, before conversion' },
)

const audioFields = {
  duration_seconds: T.Number({ description: 'measured from the decoded audio, millisecond precision' }),
  content_type: T.Literal('audio/wav'),
  sample_rate: T.Literal(8000),
  channels: T.Literal(1),
  size: T.Integer({ description: 'bytes of the stored WAV' }),
  source: AudioSource,
  url: T.String({ description: 'signed download URL of the stored WAV; no API key needed until it expires' }),
  url_expires_at: DateTime(),
}

export const AudioClip = T.Object(
  {
    id: T.String(),
    object: T.Literal('audio_clip'),
    account: T.String(),
    name: Nullable(T.String()),
    ...audioFields,
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { description: AUDIO_NOTE },
)

export const UpdateAudioClipRequest = Body({ name: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 255 }))) })

export const GREETING_TYPES = ['unavailable', 'busy', 'name'] as const
export const GreetingType = T.Union(
  GREETING_TYPES.map((g) => T.Literal(g)),
  {
    description:
      'unavailable: played when nobody answers; busy: played when the owner is on another call; name: the owner’s recorded name, used by system prompts',
  },
)

export const VoicemailGreeting = T.Object(
  {
    id: T.String(),
    object: T.Literal('voicemail_greeting'),
    account: T.String(),
    owner: T.String({ description: 'a user or a shared voicemail box of the account' }),
    type: GreetingType,
    ...audioFields,
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { description: AUDIO_NOTE },
)

export const DeletedVoicemailGreeting = T.Object({
  object: T.Literal('voicemail_greeting'),
  owner: T.String(),
  type: GreetingType,
  deleted: T.Literal(true),
})

export const FILE_PURPOSES = ['audio', 'fax_document'] as const

export const File = T.Object({
  id: T.String(),
  object: T.Literal('file'),
  account: T.String(),
  purpose: T.Union(
    FILE_PURPOSES.map((p) => T.Literal(p)),
    { description: 'audio: WAV or MP3, checked by decoding it; fax_document: PDF or TIFF' },
  ),
  filename: Nullable(T.String()),
  content_type: T.String({ description: 'detected from the bytes, not taken from the upload' }),
  size: T.Integer({ description: 'bytes' }),
  url: T.String({ description: 'signed download URL; no API key needed until it expires' }),
  url_expires_at: DateTime(),
  created_at: DateTime(),
})

export const UpdateVoicemailRequest = Body({ is_read: T.Optional(T.Boolean({ description: 'mark the voicemail read (true) or unread (false)' })) })
