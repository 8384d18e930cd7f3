/** Quality: the registrations of the account's phones (GET /v1/quality/device-registrations). */
import { DateTime, Nullable, T } from './common'

export const RegistrationBinding = T.Object(
  {
    line: T.String({ description: 'the device line (dln_…) whose SIP credentials registered' }),
    line_device: T.String({ description: 'the device of that line: the phone itself, or the DECT handset its base registers for' }),
    username: T.String({ description: 'the line’s SIP username (its address of record)' }),
    users: T.Array(T.String(), { description: 'user IDs this binding makes reachable: the line’s user and the users the phone is assigned to' }),
    contact: T.String({ description: 'the Contact URI the phone registered' }),
    transport: T.Union([T.Literal('udp'), T.Literal('tcp'), T.Literal('tls'), T.Literal('ws'), T.Literal('wss')]),
    source_address: T.String({ description: 'IP address the REGISTER came from (as the media server saw it, behind any NAT)' }),
    source_port: T.Integer({ minimum: 0, maximum: 65535 }),
    user_agent: Nullable(T.String({ description: 'the phone’s User-Agent header' })),
    registered_at: DateTime(),
    refreshed_at: DateTime(),
    expires_at: DateTime(),
    expires_in: T.Integer({ minimum: 0, description: 'seconds until expires_at when the answer was made' }),
  },
  { description: 'one SIP binding (RFC 3261 §10): a contact where a line of the phone can be reached until expires_at' },
)

export const DeviceRegistration = T.Object(
  {
    object: T.Literal('device_registration'),
    device: T.String({ description: 'device ID: a deskphone, or a DECT base (which registers for its handsets)' }),
    device_type: T.Union([T.Literal('deskphone'), T.Literal('dect_base'), T.Literal('dect_handset')]),
    vendor: T.String(),
    model: T.String(),
    mac_address: Nullable(T.String()),
    users: T.Array(T.String(), { description: 'every user its bindings make reachable (their presence is not offline)' }),
    bindings: T.Array(RegistrationBinding, { description: 'live bindings, most recently registered first; never empty' }),
  },
  { description: 'a device with at least one live SIP registration' },
)

// ---------------------------------------------------------------------------------------------
// Call quality (GET /v1/quality/summary, GET /v1/quality/worst-calls)

const Mos = (description: string) =>
  Nullable(T.Number({ minimum: 1, maximum: 4.5, description: `${description}; E-model (ITU-T G.107) estimate for G.711, 1 to 4.5, two decimals` }))
const JitterMs = (description: string) => Nullable(T.Number({ minimum: 0, description: `${description}, in milliseconds (RFC 3550 interarrival jitter)` }))
const LossPercent = (description: string) => Nullable(T.Number({ minimum: 0, maximum: 100, description: `${description}, in percent (0 to 100)` }))

export const QualityFigures = {
  calls: T.Integer({ minimum: 0, description: 'answered calls that ended in the interval with media figures' }),
  calls_missing_audio: T.Integer({
    minimum: 0,
    description: 'of those, calls in which at least one phone sent no audio at all (one-way or no audio); their MOS, if any, is the other leg’s',
  }),
  poor_calls: T.Integer({ minimum: 0, description: 'calls whose MOS is below poor_mos_threshold (3.5)' }),
  average_mos: Mos('the average of the calls’ MOS; null without calls with audio'),
  min_mos: Mos('the lowest MOS of a call'),
  average_jitter_ms: JitterMs('the average of the calls’ jitter (each call’s worse leg)'),
  p95_jitter_ms: JitterMs('the 95th percentile of the calls’ jitter (each call’s worse leg, interpolated)'),
  average_packet_loss_percent: LossPercent('the average of the calls’ packet loss (each call’s worse leg)'),
}

export const QualityBucket = T.Object(
  {
    start: DateTime(),
    end: DateTime(),
    ...QualityFigures,
  },
  {
    description:
      'the calls that ended from start (inclusive) to end (exclusive): a UTC hour or day, cut to the period for the first and last buckets when from or to is not on a boundary',
  },
)

export const QualitySummary = T.Object(
  {
    object: T.Literal('quality_summary'),
    from: DateTime(),
    to: DateTime(),
    granularity: T.Union([T.Literal('hour'), T.Literal('day')]),
    poor_mos_threshold: T.Number({ description: 'a call with a MOS below this counts in poor_calls (3.5)' }),
    totals: T.Object(QualityFigures, { description: 'the whole period' }),
    buckets: T.Array(QualityBucket, { description: 'every UTC hour or day of the period in order, those without calls included (calls 0, figures null)' }),
  },
  { description: 'the media quality of the account’s answered calls that ended in the period [from, to)' },
)

export const LegQuality = T.Object(
  {
    packets_received: T.Integer({ minimum: 0, description: 'RTP packets the platform received from this side’s phone' }),
    packets_sent: T.Integer({ minimum: 0, description: 'RTP packets the platform sent to this side’s phone' }),
    packets_lost: T.Integer({ minimum: 0, description: 'packets of this side’s phone that never arrived (RFC 3550 expected minus received)' }),
    packet_loss_percent: LossPercent('packets_lost of the packets expected; null when nothing was received'),
    jitter_ms: JitterMs('interarrival jitter of this side’s stream; null when nothing was received'),
    mos: Mos('from this leg’s loss and jitter; null when nothing was received'),
  },
  {
    description:
      'one side of the call as the platform received it from that side’s phone: the caller leg is the audio the callee heard, the callee leg what the caller heard (network delay is not measured)',
  },
)

export const CallQuality = T.Object(
  {
    object: T.Literal('call_quality'),
    call_id: T.String({ description: 'the call (GET /v1/calls/{call_id})' }),
    direction: T.Union([T.Literal('inbound'), T.Literal('outbound'), T.Literal('internal')]),
    from_number: Nullable(T.String()),
    to_number: Nullable(T.String()),
    user_id: Nullable(T.String({ description: 'the account’s user of the call (as in the call log)' })),
    from_user_id: Nullable(T.String({ description: 'calling user (internal calls)' })),
    to_user_id: Nullable(T.String({ description: 'called user (internal calls)' })),
    started_at: DateTime(),
    answered_at: Nullable(DateTime()),
    ended_at: DateTime(),
    duration_seconds: Nullable(T.Integer({ minimum: 0 })),
    mos: Mos('the worse leg’s'),
    packet_loss_percent: LossPercent('the worse leg’s packet loss'),
    jitter_ms: JitterMs('the worse leg’s jitter'),
    poor: T.Boolean({ description: 'mos is below poor_mos_threshold (3.5)' }),
    missing_audio: T.Boolean({ description: 'at least one phone sent no audio at all (its leg has packets_received 0)' }),
    caller: LegQuality,
    callee: LegQuality,
  },
  { description: 'the media quality of one answered call' },
)

export const WorstCalls = T.Object(
  {
    object: T.Literal('quality_worst_calls'),
    from: DateTime(),
    to: DateTime(),
    poor_mos_threshold: T.Number({ description: 'a call with a MOS below this is poor (3.5)' }),
    data: T.Array(CallQuality, { description: 'lowest MOS first, then highest packet loss, then the most recent; at most limit' }),
  },
  { description: 'the account’s answered calls that ended in the period [from, to) with the lowest MOS' },
)
