import { Body, DateTime, E164, E164_PATTERN, Expanded, Id, Nullable, T, Text } from './common'

const Direction = T.Union([T.Literal('inbound'), T.Literal('outbound'), T.Literal('internal')])
/** The direction filter of call lists. */
export const DirectionFilter = T.Optional(Direction)
export const CallStatus = T.Union([T.Literal('completed'), T.Literal('no-answer'), T.Literal('busy'), T.Literal('failed'), T.Literal('voicemail')])

export const Recording = T.Object({
  id: T.String(),
  object: T.Literal('recording'),
  call_id: T.String(),
  status: T.Union([T.Literal('recording'), T.Literal('processing'), T.Literal('available'), T.Literal('failed')]),
  duration_seconds: Nullable(T.Integer()),
  created_at: DateTime(),
})

export const CallLog = T.Object(
  {
    id: T.String(),
    object: T.Literal('call'),
    account: T.String(),
    direction: Direction,
    from_number: Nullable(T.String()),
    from_label: Nullable(T.String({ description: 'caller-ID name' })),
    to_number: Nullable(T.String()),
    user_id: Nullable(T.String()),
    from_user_id: Nullable(T.String()),
    to_user_id: Nullable(T.String()),
    status: Nullable(CallStatus),
    started_at: DateTime(),
    ringing_at: Nullable(DateTime()),
    answered_at: Nullable(DateTime()),
    connected_at: Nullable(DateTime()),
    related_call: Nullable(T.String()),
    simulated: T.Boolean(),
    ended_at: T.Optional(Nullable(DateTime())),
    duration_seconds: T.Optional(Nullable(T.Integer())),
    recording: T.Optional(Nullable(Recording)),
    summary: T.Optional(Nullable(T.String())),
    sentiment: T.Optional(T.Unknown()),
  },
  {
    description:
      'While the call is in flight status is null and fields known only after the end (ended_at, duration_seconds, recording, summary, sentiment) are absent.',
  },
)

export const Voicemail = T.Object({
  id: T.String(),
  object: T.Literal('voicemail'),
  account: T.String(),
  owner: Nullable(T.String({ description: 'the owning user; null for a shared box' })),
  shared_voicemail_box_id: Nullable(
    T.String({ description: 'the shared voicemail box the message was left in; null for a user’s own voicemail, or once the box is deleted' }),
  ),
  call_id: Nullable(T.String()),
  from_number: Nullable(T.String()),
  from_name: Nullable(T.String()),
  duration_seconds: T.Integer(),
  is_read: T.Boolean(),
  summary: Nullable(T.String()),
  sentiment: T.Unknown(),
  created_at: DateTime(),
  updated_at: DateTime(),
  call: T.Optional(Nullable(CallLog)),
})

export const RecordingDownload = T.Composite([
  Recording,
  T.Object({
    url: T.String({ description: 'signed download URL serving the audio (audio/wav); no API key needed until it expires' }),
    expires_at: DateTime(),
  }),
])

export const Transcript = T.Object({
  object: T.Literal('transcript'),
  call_id: T.String(),
  recording: T.String(),
  status: T.Union([T.Literal('processing'), T.Literal('completed')]),
  segments: T.Array(T.Object({ speaker: T.String(), start_seconds: T.Number(), end_seconds: T.Number(), text: T.String() })),
  summary: Nullable(T.String()),
  sentiment: T.Unknown(),
})

/** GET /v1/voicemails/{voicemail_id}/transcript: the call Transcript's shape, keyed by the voicemail. */
export const VoicemailTranscript = T.Object({
  object: T.Literal('voicemail_transcript'),
  voicemail_id: T.String(),
  call_id: Nullable(T.String()),
  status: T.Union([T.Literal('processing'), T.Literal('completed')], {
    description: 'processing until voicemail.transcription.complete; text is null and segments empty meanwhile',
  }),
  text: Nullable(T.String({ description: 'the whole message as text' })),
  segments: T.Array(T.Object({ speaker: T.String(), start_seconds: T.Number(), end_seconds: T.Number(), text: T.String() })),
  summary: Nullable(T.String({ description: 'null until voicemail.summary.complete' })),
  sentiment: T.Unknown(),
})

const Seconds = (what: string) => T.Optional(T.Integer({ minimum: 0, maximum: 100_000, description: `${what}; clamped to 120` }))
export const Outcome = T.Union([T.Literal('answered'), T.Literal('no-answer'), T.Literal('busy'), T.Literal('voicemail')])

export const Scenario = T.Object({
  outcome: Outcome,
  ring_seconds: T.Integer(),
  talk_seconds: T.Integer(),
  voicemail_seconds: T.Integer(),
  recording: T.Boolean(),
})

export const CreateTestCallRequest = Body({
  user: Id('a user of the sandbox account'),
  direction: T.Optional(T.Union([T.Literal('inbound'), T.Literal('outbound')], { description: "default 'inbound'" })),
  to_number: T.Optional(
    T.String({
      minLength: 1,
      maxLength: 32,
      pattern: '^[+0-9() .\\-]+$',
      description: 'outbound destination; magic numbers +15005550100..0104 and 933 (digits matched, formatting ignored)',
    }),
  ),
  from_number: T.Optional(E164()),
  from_name: T.Optional(Nullable(Text(100))),
  scenario: T.Optional(
    Body({
      outcome: T.Optional(Outcome),
      ring_seconds: Seconds('seconds of ringing'),
      talk_seconds: Seconds('seconds of talk once answered'),
      voicemail_seconds: Seconds('length of the voicemail message'),
      recording: T.Optional(T.Boolean()),
    }),
  ),
})

export const TestCall = T.Object({
  id: T.String({ description: 'the started call' }),
  object: T.Literal('test_call'),
  call: CallLog,
  scenario: Scenario,
})

/** POST /v1/calls (click-to-call). */
export const CreateCallRequest = Body({
  user: Id('a user of the account whose registered devices ring first'),
  dial_string: T.String({
    minLength: 1,
    maxLength: 64,
    description:
      'what the user dials: an E.164 number, an extension of the account, a user id of the account, or digits (10-digit NANP, 1 + 10 digits, N11 service codes, 933); spaces, dots, dashes and parentheses are ignored',
  }),
  did: T.Optional(
    T.String({
      pattern: E164_PATTERN,
      maxLength: 16,
      description: "E.164; one of the account's active phone numbers, presented as caller ID for this call (takes precedence over user and account settings)",
    }),
  ),
})

export { Expanded }

// ---------------------------------------------------------------- call control

/** POST /v1/calls/{call_id}: one command, discriminated by `action`. */
export const UpdateCallRequest = T.Union(
  [
    Body({ action: T.Literal('hangup') }),
    Body({ action: T.Literal('hold') }),
    Body({ action: T.Literal('resume') }),
    Body({
      action: T.Literal('transfer'),
      to: T.String({ minLength: 1, maxLength: 64, description: 'E.164 number or a user id of the account' }),
      mode: T.Optional(T.Union([T.Literal('blind'), T.Literal('warm')], { description: 'blind (the default) or warm (consult the target first)' })),
    }),
    Body({ action: T.Literal('complete_transfer') }, 'on the consultation call of a warm transfer: hand the held caller over'),
  ],
  { description: 'A command for an active call, discriminated by action.' },
)

export const CallCommand = T.Object({
  id: T.String({ description: 'the command id; call.command_succeeded / call.command_failed carry it as command_id' }),
  object: T.Literal('call_command'),
  call_id: T.String(),
  command: T.Union([T.Literal('hangup'), T.Literal('hold'), T.Literal('resume'), T.Literal('transfer'), T.Literal('complete_transfer')]),
  consultation_call_id: T.Optional(T.String({ description: 'warm transfer: the consultation call placed to the target' })),
})

export const CallRecordingState = T.Object({
  object: T.Literal('call_recording'),
  call_id: T.String(),
  status: T.Union([T.Literal('recording'), T.Literal('paused')]),
  pauses: T.Array(
    T.Object({
      from_ms: T.Integer({ description: 'ms from the start of the recording (the answer)' }),
      to_ms: Nullable(T.Integer({ description: 'null while still paused' })),
    }),
  ),
})

export const ListenerMode = T.Union([T.Literal('listen'), T.Literal('whisper'), T.Literal('barge')])

export const CreateListenerRequest = Body({
  user: T.Optional(Id('a user of the account who listens')),
  mode: T.Optional(T.Union([T.Literal('listen'), T.Literal('whisper'), T.Literal('barge')], { description: "default 'listen'" })),
})

export const CallListener = T.Object({
  id: T.String(),
  object: T.Literal('call_listener'),
  call_id: T.String(),
  user: Nullable(T.String()),
  mode: ListenerMode,
  status: T.Union([T.Literal('active'), T.Literal('ended')]),
  created_at: DateTime(),
  updated_at: DateTime(),
})
