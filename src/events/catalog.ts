/**
 * Every event type of the spec (and port_order.status_changed, beyond it), and a
 * sample payload for each type the spec lets the sandbox fabricate (POST
 * /v1/test_helpers/events). Sample fields follow the spec's tables exactly.
 */
export const EVENT_TYPES = [
  'call.initiated',
  'call.incoming',
  'call.ringing',
  'call.mobile_push_wakeup',
  'call.answered',
  'call.end',
  'call.transfer',
  'call.emergency',
  'call.command_succeeded',
  'call.command_failed',
  'queue.call.queued',
  'queue.call.dispatched',
  'queue.call.answered',
  'queue.call.abandoned',
  'queue.call.timed_out',
  'queue.call.completed',
  'queue.call.callback_requested',
  'queue.call.callback_attempted',
  'queue.call.callback_failed',
  'fax.received',
  'fax.delivered',
  'fax.failed',
  'voicemail.new',
  'recording.available',
  'recording.failed',
  'recording.transcription.complete',
  'recording.summary.complete',
  'voicemail.transcription.complete',
  'voicemail.summary.complete',
  'device.provisioned',
  'device.config_fetched',
  'device.provisioning_failed',
  'user.created',
  'user.deleted',
  'phone_number.activated',
  'phone_number.disconnected',
  // Beyond the spec's list: every status change of a port order (the spec records them
  // for GET .../events but names no event), so a platform need not poll its orders.
  'port_order.status_changed',
] as const

export type EventType = (typeof EVENT_TYPES)[number]

export const isEventType = (s: string): s is EventType => (EVENT_TYPES as readonly string[]).includes(s)

/** The four billable-count events carry the account as `account` instead of `account_id`. */
export const BILLABLE_COUNT_EVENTS: ReadonlySet<string> = new Set(['user.created', 'user.deleted', 'phone_number.activated', 'phone_number.disconnected'])

/** call.ringing and call.emergency are webhook-only; the event stream carries the other call.* events. */
export const isStreamEvent = (type: string) => type.startsWith('call.') && type !== 'call.ringing' && type !== 'call.emergency'

export interface SampleContext {
  accountId: string
  now: Date
  requestId: string
  /** Fabricates a plausible id of a kind (e.g. 'call', 'fax'). */
  id: (prefix: string) => string
}

type Sample = (c: SampleContext) => Record<string, unknown>

const queueCommon = (c: SampleContext) => ({
  call_id: c.id('call'),
  queue: c.id('queue'),
  queue_name: 'Front desk',
  from_number: '+15005550199',
  from_name: 'Sandbox Caller',
  to_number: '+15005550006',
  position_at_admit: 1,
  wait_seconds: 12,
})

/** queue, agent_user, agent_endpoint and callback also go out under their deprecated *_id aliases. */
function withAliases(data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(data)) {
    if (v === undefined) continue
    out[k] = v
    if (k === 'queue' || k === 'agent_user' || k === 'agent_endpoint' || k === 'callback') out[`${k}_id`] = v
  }
  return out
}

const faxBase = (c: SampleContext) => ({ fax_id: c.id('fax'), from_number: '+15005550199', to_number: '+15005550006' })
const deviceBase = (c: SampleContext) => ({
  device: c.id('dev'),
  device_type: 'deskphone',
  mac_address: '00:04:f2:12:34:56',
  vendor: 'polycom',
})
const ringing = (c: SampleContext) => ({
  call_id: c.id('call'),
  user_id: c.id('usr'),
  direction: 'inbound',
  from_number: '+15005550199',
  from_name: 'Sandbox Caller',
  to_number: '+15005550006',
  ringing_at: c.now.toISOString(),
})

export const SAMPLE_PAYLOADS: Record<string, Sample> = {
  'fax.received': (c) => ({ ...faxBase(c), pages: 2, transport: 't38' }),
  'fax.delivered': (c) => ({ ...faxBase(c), pages: 3, transport: 'g711' }),
  'fax.failed': (c) => ({ ...faxBase(c), pages: 0, transport: null, error_code: 'dial_busy' }),
  'queue.call.queued': (c) => withAliases({ ...queueCommon(c), queued_at: c.now.toISOString() }),
  'queue.call.dispatched': (c) => withAliases({ ...queueCommon(c), agents_claimed: 2, targets_dispatched: 2, dispatched_at: c.now.toISOString() }),
  'queue.call.answered': (c) => withAliases({ ...queueCommon(c), agent_user: c.id('usr'), agent_endpoint: c.id('dev'), answered_at: c.now.toISOString() }),
  'queue.call.abandoned': (c) => withAliases({ ...queueCommon(c), abandoned_at: c.now.toISOString() }),
  'queue.call.timed_out': (c) => withAliases({ ...queueCommon(c), timed_out_at: c.now.toISOString() }),
  'queue.call.completed': (c) => withAliases({ ...queueCommon(c), agent_user: c.id('usr'), agent_endpoint: c.id('dev'), completed_at: c.now.toISOString() }),
  'queue.call.callback_requested': (c) =>
    withAliases({
      queue: c.id('queue'),
      queue_name: 'Front desk',
      from_number: '+15005550199',
      to_number: '+15005550006',
      callback: c.id('cb'),
      original_priority: 0,
      original_entered_at: new Date(c.now.getTime() - 60_000).toISOString(),
      requested_at: c.now.toISOString(),
    }),
  'queue.call.callback_attempted': (c) =>
    withAliases({
      queue: c.id('queue'),
      from_number: '+15005550199',
      to_number: '+15005550006',
      callback: c.id('cb'),
      attempt_number: 1,
      result: 'no_answer',
      next_attempt_at: new Date(c.now.getTime() + 300_000).toISOString(),
    }),
  'queue.call.callback_failed': (c) =>
    withAliases({
      queue: c.id('queue'),
      from_number: '+15005550199',
      to_number: '+15005550006',
      callback: c.id('cb'),
      attempts: 3,
      reason: 'max_attempts_exceeded',
    }),
  'device.provisioned': (c) => ({ ...deviceBase(c), model: 'VVX 450', ip_address: '203.0.113.10', provisioned_at: c.now.toISOString() }),
  'device.config_fetched': (c) => ({ ...deviceBase(c), model: 'VVX 450', ip_address: '203.0.113.10', fetched_at: c.now.toISOString() }),
  'device.provisioning_failed': (c) => ({ ...deviceBase(c), error_code: 'unsupported_vendor', failed_at: c.now.toISOString() }),
  'user.created': (c) => ({ user: c.id('usr'), previous_billable_users: 3, current_billable_users: 4, request: c.requestId, changed_at: c.now.toISOString() }),
  'user.deleted': (c) => ({ user: c.id('usr'), previous_billable_users: 4, current_billable_users: 3, request: c.requestId, changed_at: c.now.toISOString() }),
  'phone_number.activated': (c) => ({
    phone_number: c.id('pn'),
    number: '+15005550006',
    order: c.id('pno'),
    previous_billable_dids: 1,
    current_billable_dids: 2,
    changed_at: c.now.toISOString(),
  }),
  'phone_number.disconnected': (c) => ({
    phone_number: c.id('pn'),
    number: '+15005550006',
    previous_billable_dids: 2,
    current_billable_dids: 1,
    request: c.requestId,
    changed_at: c.now.toISOString(),
  }),
  'recording.failed': (c) => ({ call_id: c.id('call'), error_code: 'transcription_failed', reason: 'Sandbox: simulated transcription failure' }),
  'call.mobile_push_wakeup': ringing,
}

export const SUPPORTED_TEST_EVENTS = Object.keys(SAMPLE_PAYLOADS)
