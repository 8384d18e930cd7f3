/**
 * The `data` of every event type of src/events/catalog.ts, as the code emits it:
 * the call machine (machines/call.ts), the queue machine (machines/queue-events.ts,
 * with the deprecated aliases the outbox adds), the call follow-ups
 * (actors/calls/follow-up-actor.ts), call commands (actors/calls/call-actor.ts),
 * faxes (machines/fax.ts, src/services/faxes), devices (machines/device.ts),
 * billable counts (src/services/accounts, src/services/numbers) and port orders
 * (actors/port-orders). Field notes follow the spec's Events tables.
 *
 * Data objects admit further fields: the spec lets events gain fields, and
 * receivers ignore what they do not know.
 */
import type { TSchema } from '@sinclair/typebox'
import { EVENT_TYPES, type EventType } from '../../src/events/catalog'
import { CallStatus } from '../../src/schemas/calls'
import { DateTime, Nullable, T } from '../../src/schemas/common'
import { FaxTransport } from '../../src/schemas/faxes'
import { PortOrderStatus } from '../../src/schemas/porting'

const Str = (description?: string) => T.String(description ? { description } : {})
const Int = (description?: string) => T.Integer(description ? { description } : {})
const At = (description: string) => T.String({ format: 'date-time', description })
const Data = (props: Record<string, TSchema>, description: string) => T.Object(props, { description })

const Direction = T.Union([T.Literal('inbound'), T.Literal('outbound'), T.Literal('internal')])
const callId = Str('the call (GET /v1/calls/{call_id})')
const fromName = Nullable(Str('caller-ID name'))

const ringingFields = {
  call_id: callId,
  user_id: T.Optional(Str('the user whose phones ring, never the caller; absent when the far end rings')),
  direction: Direction,
  from_number: Str(),
  from_name: fromName,
  to_number: Str(),
  ringing_at: At('when ringing began'),
}

const answeredFields = {
  call_id: callId,
  direction: Direction,
  from_number: Str(),
  from_name: fromName,
  to_number: Str(),
  user_id: T.Optional(Str('outbound: the caller; inbound and internal: the answering user, or the single user rung')),
  to_user_id: T.Optional(Str('omitted when the called side is not a user of the account')),
  started_at: DateTime(),
  answered_at: Nullable(At('the signalling answer')),
  connected_at: Nullable(At('when the winning leg answered; null when voicemail answered or the caller hung up before')),
}

const queueCommon = {
  call_id: callId,
  queue: Str('the queue'),
  queue_id: Str('deprecated alias of queue'),
  queue_name: Str(),
  from_number: Str(),
  from_name: fromName,
  to_number: Str(),
  position_at_admit: T.Optional(Int('1-based place the caller took on arrival')),
  wait_seconds: Int('whole seconds waited'),
}
const agent = {
  agent_user: Str('the agent who took the call'),
  agent_user_id: Str('deprecated alias of agent_user'),
  agent_endpoint: Nullable(Str('the device that answered')),
  agent_endpoint_id: Nullable(Str('deprecated alias of agent_endpoint')),
}
const callbackCommon = {
  queue: Str('the queue'),
  queue_id: Str('deprecated alias of queue'),
  from_number: Str('the caller to call back'),
  to_number: Str(),
  callback: Str('the callback request'),
  callback_id: Str('deprecated alias of callback'),
}

const faxCommon = {
  fax_id: Str('the fax (GET /v1/faxes)'),
  from_number: Str(),
  to_number: Str(),
  transport: Nullable(FaxTransport),
}

const deviceCommon = {
  device: Str('the device'),
  device_type: T.Union([T.Literal('deskphone'), T.Literal('dect_base')]),
  mac_address: Str(),
  vendor: Str('lowercase vendor name'),
}

const billableUsers = (what: string) =>
  Data(
    {
      user: Str('the user'),
      previous_billable_users: Int(),
      current_billable_users: Int(),
      request: T.Optional(Str('correlation id of the request that caused it (GET /v1/audit-logs?request_id=…)')),
      changed_at: DateTime(),
    },
    `${what} Live accounts only; counts are not invoice amounts.`,
  )
const billableDids = (what: string) =>
  Data(
    {
      phone_number: Str('the phone number resource'),
      number: Str('E.164'),
      order: T.Optional(Str('the number order, when it came from one')),
      previous_billable_dids: Int(),
      current_billable_dids: Int(),
      request: T.Optional(Str('correlation id of the request, when a direct API call caused it')),
      changed_at: DateTime(),
    },
    `${what} Live accounts only; counts are not invoice amounts.`,
  )

const commandOutcome = (failed: boolean) =>
  Data(
    {
      call_id: callId,
      command: T.Union(
        ['hangup', 'hold', 'resume', 'transfer', 'complete_transfer', 'recording_pause', 'recording_resume'].map((c) => T.Literal(c)),
        { description: 'the command of POST /v1/calls/{call_id}' },
      ),
      command_id: Str('the command id of the 202 answer'),
      consultation_call_id: T.Optional(Str('a warm transfer: the consultation call')),
      ...(failed
        ? { reason: Str('why the call refused it: a stable code (call_not_active, call_transfer_not_allowed, recording_not_active, recording_not_paused)') }
        : {}),
    },
    failed ? 'The call refused a command it had accepted (202).' : 'The call carried out a command it had accepted (202).',
  )

/** `data` of each event type. */
export const EVENT_DATA: Record<EventType, TSchema> = {
  'call.initiated': Data(
    {
      call_id: callId,
      direction: Direction,
      from_number: Str(),
      to_number: Str(),
      user_id: Nullable(Str('the calling user')),
      from_user_id: T.Optional(Str('omitted when the caller is not a user of the account')),
      started_at: DateTime(),
    },
    'An outbound or internal call was placed.',
  ),
  'call.incoming': Data(
    {
      call_id: callId,
      direction: Direction,
      from_number: Str(),
      from_name: fromName,
      to_number: Str(),
      user_id: Nullable(Str('only when the number targets a single user directly')),
      from_user_id: T.Optional(Str('omitted when the caller is not a user of the account')),
      to_user_id: T.Optional(Str('omitted when the called side is not a user of the account')),
      started_at: DateTime(),
    },
    'A call arrived.',
  ),
  'call.ringing': Data(ringingFields, "A user's phones ring: once per (call, user). Webhook only."),
  'call.mobile_push_wakeup': Data(ringingFields, "The user's own app session is rung (mobile_push_wakeup enabled); ringing_at is when delivery began."),
  'call.answered': Data(answeredFields, 'The call was answered.'),
  'call.end': Data(
    {
      ...answeredFields,
      ended_at: DateTime(),
      duration_seconds: Int('whole seconds'),
      status: CallStatus,
    },
    'The call ended; its call log is final.',
  ),
  'call.transfer': Data(
    {
      call_id: callId,
      direction: Direction,
      from_number: Str(),
      to_number: Str(),
      transferred_to: Str('the destination'),
      transferred_by: Str('the user who transferred'),
      related_call: Nullable(Str('the new call (blind) or the other call of a warm transfer')),
      transferred_at: DateTime(),
    },
    'The call was transferred (blind, or the last event of a warm transfer’s consultation call).',
  ),
  'call.emergency': Data(
    {
      call_id: callId,
      to_number: Str(),
      user_id: Nullable(Str()),
      device_id: Nullable(Str()),
      extension: Nullable(Str()),
      location_id: T.Optional(Nullable(Str('omitted when e911_provisioned is false'))),
      location_name: T.Optional(Nullable(Str('omitted when e911_provisioned is false'))),
      location_address: Nullable(Str()),
      e911_provisioned: T.Boolean(),
      placed_at: DateTime(),
    },
    'An emergency number (or a carrier test number such as 933) was dialled. Webhook only.',
  ),
  'call.command_succeeded': commandOutcome(false),
  'call.command_failed': commandOutcome(true),
  'queue.call.queued': Data({ ...queueCommon, queued_at: DateTime() }, 'A caller entered the queue.'),
  'queue.call.dispatched': Data(
    {
      ...queueCommon,
      agents_claimed: Int('agents this dispatch rang'),
      targets_dispatched: Int('endpoints rung for them'),
      dispatched_at: DateTime(),
    },
    'The queue offered the caller to agents.',
  ),
  'queue.call.answered': Data({ ...queueCommon, ...agent, answered_at: DateTime() }, 'An agent answered the queued caller.'),
  'queue.call.abandoned': Data({ ...queueCommon, abandoned_at: DateTime() }, 'The caller hung up while waiting.'),
  'queue.call.timed_out': Data({ ...queueCommon, timed_out_at: DateTime() }, 'The timeout behaviour ran (max wait, or leave-when-empty).'),
  'queue.call.completed': Data({ ...queueCommon, ...agent, completed_at: DateTime() }, 'The call an agent took has ended.'),
  'queue.call.callback_requested': Data(
    {
      ...callbackCommon,
      queue_name: Str(),
      original_priority: Int(),
      original_entered_at: DateTime(),
      requested_at: DateTime(),
    },
    'A waiting caller asked to be called back, keeping the place.',
  ),
  'queue.call.callback_attempted': Data(
    {
      ...callbackCommon,
      attempt_number: Int(),
      result: T.Union([T.Literal('answered'), T.Literal('no_answer'), T.Literal('busy'), T.Literal('failed')]),
      next_attempt_at: Nullable(At('null when no further attempt will be made')),
    },
    'An agent called the caller back.',
  ),
  'queue.call.callback_failed': Data(
    {
      ...callbackCommon,
      attempts: Int(),
      reason: Str('max_attempts_exceeded (as fax.failed says it), the one reason today; treat unknown reasons as a generic failure'),
    },
    'The callback gave up.',
  ),
  'fax.received': Data({ ...faxCommon, pages: Nullable(Int()) }, 'A fax arrived; pages and transport are present.'),
  'fax.delivered': Data({ ...faxCommon, pages: Nullable(Int('pages confirmed delivered')) }, 'An outbound fax was delivered (final).'),
  'fax.failed': Data(
    {
      ...faxCommon,
      pages: Nullable(Int('null if it never transmitted, 0 if it failed before the first page, N if N pages were sent')),
      error_code: Nullable(Str('dial_busy, dial_no_answer, max_attempts_exceeded, fax_failed, cancelled')),
    },
    'An outbound fax failed (final).',
  ),
  'voicemail.new': Data(
    {
      voicemail_id: Str('the voicemail (GET /v1/voicemails/{voicemail_id})'),
      user_id: T.Optional(Str('omitted for a shared voicemail box')),
      call_id: T.Optional(Nullable(Str('omitted when unresolved'))),
      from_number: Str(),
      from_name: fromName,
      duration_seconds: Int(),
      created_at: DateTime(),
    },
    'A voicemail was stored.',
  ),
  'recording.available': Data({ call_id: callId, duration_seconds: Int() }, 'The call recording can be fetched (GET /v1/calls/{call_id}/recording).'),
  'recording.failed': Data(
    {
      call_id: callId,
      error_code: Str('audio_redaction_failed, transcription_failed, internal_error; treat unknown codes as a generic failure'),
      reason: T.Optional(Str()),
    },
    'The recording (or its processing) failed.',
  ),
  'recording.transcription.complete': Data({ call_id: callId, status: T.Literal('completed') }, 'GET /v1/calls/{call_id}/transcript has the transcript.'),
  'recording.summary.complete': Data({ call_id: callId }, 'The summary and sentiment of the call are ready (either may be absent).'),
  'voicemail.transcription.complete': Data(
    {
      voicemail_id: Str(),
      user_id: T.Optional(Nullable(Str('absent or null for a shared voicemail box'))),
      call_id: T.Optional(Nullable(Str())),
      status: Str('completed'),
    },
    'GET /v1/voicemails/{voicemail_id}/transcript has the transcript.',
  ),
  'voicemail.summary.complete': Data(
    {
      voicemail_id: Str(),
      user_id: T.Optional(Nullable(Str('absent or null for a shared voicemail box'))),
      call_id: T.Optional(Nullable(Str())),
    },
    'The voicemail summary is ready.',
  ),
  'device.provisioned': Data(
    { ...deviceCommon, model: Nullable(Str()), ip_address: Nullable(Str()), provisioned_at: DateTime() },
    'The device left pending-sync by fetching its configuration.',
  ),
  'device.config_fetched': Data(
    { ...deviceCommon, model: Nullable(Str()), ip_address: Nullable(Str()), fetched_at: DateTime() },
    'The device fetched its configuration.',
  ),
  'device.provisioning_failed': Data(
    {
      ...deviceCommon,
      error_code: T.Union([T.Literal('unsupported_vendor'), T.Literal('invalid_configuration'), T.Literal('generation_failed')]),
      failed_at: DateTime(),
    },
    'The device could not be given a configuration.',
  ),
  'user.created': billableUsers('A user was created: the billable user count rose.'),
  'user.deleted': billableUsers('A user was deleted: the billable user count fell.'),
  'phone_number.activated': billableDids('A number went live on the account: the billable DID count rose.'),
  'phone_number.disconnected': billableDids('A number left the account: the billable DID count fell.'),
  'port_order.status_changed': Data(
    {
      port_order: Str('the port order'),
      status: PortOrderStatus,
      previous_status: PortOrderStatus,
      rejection: T.Optional(
        Nullable(
          T.Object(
            { code: Str('address_mismatch, account_number_invalid, name_mismatch, …'), message: Str() },
            { description: 'only when status is exception' },
          ),
        ),
      ),
      foc_date: T.Optional(T.String({ format: 'date', description: 'only when status is foc' })),
      foc_time: T.Optional(Nullable(Str('HH:MM Eastern Time; only when status is foc'))),
      changed_at: DateTime(),
    },
    'The status of a port order changed (as GET /v1/port-orders/{order_id}/events lists it).',
  ),
}

/** Event types beyond the spec's list. */
export const EXTENSION_EVENTS: ReadonlySet<EventType> = new Set(['port_order.status_changed'])

// A catalog type without a payload schema is a compile error above; this keeps the reverse true at run time.
for (const type of Object.keys(EVENT_DATA))
  if (!(EVENT_TYPES as readonly string[]).includes(type)) throw new Error(`EVENT_DATA has an unknown event type ${type}`)
