/**
 * POST /v1/test_helpers/events createTestEvent (spec "Calls"), for every supported
 * type: the response echoes the event, its payload has exactly the fields of the
 * spec's tables ("Events": Queue, Fax, Device, Billable-count, Voicemail/recording,
 * Call events), and it arrives signed at a real receiver on 127.0.0.1 ("Sandbox:
 * simulated events are fabricated and flow through the same signed, retried,
 * ordered path; every one carries the sandbox account_id").
 */
import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { events } from '../src/db/schema'
import { startTestService } from './support/service'
import { startWebhookReceiver } from './support/webhook-receiver'

const t = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })

/** The spec's supported list, as written under createTestEvent. */
const SUPPORTED = [
  'fax.delivered',
  'fax.failed',
  'fax.received',
  'queue.call.queued',
  'queue.call.dispatched',
  'queue.call.answered',
  'queue.call.abandoned',
  'queue.call.timed_out',
  'queue.call.completed',
  'queue.call.callback_requested',
  'queue.call.callback_attempted',
  'queue.call.callback_failed',
  'device.provisioned',
  'device.config_fetched',
  'device.provisioning_failed',
  'user.created',
  'user.deleted',
  'phone_number.activated',
  'phone_number.disconnected',
  'recording.failed',
  'call.mobile_push_wakeup',
]

/**
 * Each type's data fields, from the spec's tables: `required` must all be present,
 * `optional` may be ("may be omitted", "may be absent", "optional", "when ..."),
 * and nothing else may appear.
 */
interface Shape {
  required: string[]
  optional?: string[]
}

// Queue events. "Common fields: call_id, queue, queue_name, from_number, from_name, to_number,
// position_at_admit (number, may be omitted), wait_seconds (number)." "queue, agent_user,
// agent_endpoint and callback are also sent under deprecated aliases queue_id, agent_user_id,
// agent_endpoint_id, callback_id."
const queueCommon = ['call_id', 'queue', 'queue_id', 'queue_name', 'from_number', 'from_name', 'to_number', 'wait_seconds']
const queueShape = (...extra: string[]): Shape => ({ required: [...queueCommon, ...extra], optional: ['position_at_admit'] })
// "The three callback events carry queue and the caller's number but not call_id, from_name,
// position_at_admit or wait_seconds; only callback_requested carries queue_name."
const callbackCommon = ['queue', 'queue_id', 'from_number', 'to_number', 'callback', 'callback_id']
// Fax events: "Fields: fax_id, from_number, to_number, pages (number or null), transport".
const faxCommon = ['fax_id', 'from_number', 'to_number', 'pages', 'transport']
// Device events: "Common: device (ID), device_type, mac_address, vendor, model, ip_address."
const deviceIdentity = ['device', 'device_type', 'mac_address', 'vendor']

const SHAPES: Record<string, Shape> = {
  'fax.received': { required: faxCommon },
  'fax.delivered': { required: faxCommon },
  'fax.failed': { required: [...faxCommon, 'error_code'] },
  'queue.call.queued': queueShape('queued_at'),
  'queue.call.dispatched': queueShape('agents_claimed', 'targets_dispatched', 'dispatched_at'),
  'queue.call.answered': queueShape('agent_user', 'agent_user_id', 'agent_endpoint', 'agent_endpoint_id', 'answered_at'),
  'queue.call.abandoned': queueShape('abandoned_at'),
  'queue.call.timed_out': queueShape('timed_out_at'),
  'queue.call.completed': queueShape('agent_user', 'agent_user_id', 'agent_endpoint', 'agent_endpoint_id', 'completed_at'),
  'queue.call.callback_requested': { required: [...callbackCommon, 'queue_name', 'original_priority', 'original_entered_at', 'requested_at'] },
  'queue.call.callback_attempted': { required: [...callbackCommon, 'attempt_number', 'result', 'next_attempt_at'] },
  'queue.call.callback_failed': { required: [...callbackCommon, 'attempts', 'reason'] },
  'device.provisioned': { required: [...deviceIdentity, 'model', 'ip_address', 'provisioned_at'] },
  'device.config_fetched': { required: [...deviceIdentity, 'model', 'ip_address', 'fetched_at'] },
  // "device.provisioning_failed carries error_code ... and failed_at instead of model and ip_address."
  'device.provisioning_failed': { required: [...deviceIdentity, 'error_code', 'failed_at'] },
  // Billable-count: "user.created, user.deleted: data has user, previous_billable_users,
  // current_billable_users (integers), request (correlation ID, when a request caused it), changed_at."
  'user.created': { required: ['user', 'previous_billable_users', 'current_billable_users', 'changed_at'], optional: ['request'] },
  'user.deleted': { required: ['user', 'previous_billable_users', 'current_billable_users', 'changed_at'], optional: ['request'] },
  // "phone_number.activated, phone_number.disconnected: data has phone_number, number (E.164), order
  // (when from an order), previous_billable_dids, current_billable_dids, changed_at, and request when
  // caused by a direct API call."
  'phone_number.activated': {
    required: ['phone_number', 'number', 'previous_billable_dids', 'current_billable_dids', 'changed_at'],
    optional: ['order', 'request'],
  },
  'phone_number.disconnected': {
    required: ['phone_number', 'number', 'previous_billable_dids', 'current_billable_dids', 'changed_at'],
    optional: ['order', 'request'],
  },
  // "recording.failed | call_id, error_code, reason (optional text)"
  'recording.failed': { required: ['call_id', 'error_code'], optional: ['reason'] },
  // "call.mobile_push_wakeup | same fields as call.ringing"; call.ringing: call_id, user_id,
  // direction (may be absent), from_number, from_name, to_number, ringing_at.
  'call.mobile_push_wakeup': { required: ['call_id', 'user_id', 'from_number', 'from_name', 'to_number', 'ringing_at'], optional: ['direction'] },
}

const BILLABLE = new Set(['user.created', 'user.deleted', 'phone_number.activated', 'phone_number.disconnected'])

const isIsoTime = (v: unknown) =>
  typeof v === 'string' && !Number.isNaN(Date.parse(v)) && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v)
const isE164 = (v: unknown) => typeof v === 'string' && /^\+[1-9]\d{1,14}$/.test(v)
const isId = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= 255

/** Value rules the spec states for the fields, checked wherever a field appears. */
function checkValues(type: string, data: Record<string, any>) {
  for (const [k, v] of Object.entries(data)) {
    if (k.endsWith('_at')) expect([type, k, isIsoTime(v)]).toEqual([type, k, true])
    if (['from_number', 'to_number', 'number'].includes(k)) expect([type, k, isE164(v)]).toEqual([type, k, true])
    if (['call_id', 'queue', 'agent_user', 'agent_endpoint', 'callback', 'fax_id', 'device', 'user', 'phone_number', 'order', 'user_id'].includes(k)) {
      expect([type, k, isId(v)]).toEqual([type, k, true])
    }
  }
  // The deprecated aliases carry the same value.
  for (const k of ['queue', 'agent_user', 'agent_endpoint', 'callback']) if (k in data) expect(data[`${k}_id`]).toBe(data[k])
  if (type.startsWith('queue.call.') && !type.includes('callback')) {
    expect(typeof data.wait_seconds).toBe('number')
    if ('position_at_admit' in data) expect(typeof data.position_at_admit).toBe('number')
    expect(data.from_name === null || typeof data.from_name === 'string').toBe(true)
  }
  if (type.startsWith('fax.')) {
    expect(data.pages === null || Number.isInteger(data.pages)).toBe(true)
    expect([null, 't38', 'g711']).toContain(data.transport)
    if (type === 'fax.received') {
      // "fax.received: pages and transport always present" (and a received fax has them).
      expect(Number.isInteger(data.pages)).toBe(true)
      expect(['t38', 'g711']).toContain(data.transport)
    }
    if (type === 'fax.failed') expect(data.error_code === null || typeof data.error_code === 'string').toBe(true)
  }
  if (type.startsWith('device.')) {
    expect(['deskphone', 'dect_base']).toContain(data.device_type)
    expect(data.vendor).toBe(String(data.vendor).toLowerCase())
    if ('model' in data) expect(data.model === null || typeof data.model === 'string').toBe(true)
    if ('ip_address' in data) expect(data.ip_address === null || typeof data.ip_address === 'string').toBe(true)
    if (type === 'device.provisioning_failed') expect(['unsupported_vendor', 'invalid_configuration', 'generation_failed']).toContain(data.error_code)
  }
  if (type === 'user.created' || type === 'user.deleted') {
    expect(Number.isInteger(data.previous_billable_users)).toBe(true)
    expect(Number.isInteger(data.current_billable_users)).toBe(true)
    expect(data.current_billable_users - data.previous_billable_users).toBe(type === 'user.created' ? 1 : -1)
  }
  if (type.startsWith('phone_number.')) {
    expect(Number.isInteger(data.previous_billable_dids)).toBe(true)
    expect(Number.isInteger(data.current_billable_dids)).toBe(true)
    expect(data.current_billable_dids - data.previous_billable_dids).toBe(type === 'phone_number.activated' ? 1 : -1)
  }
  if (type === 'queue.call.callback_attempted') expect(Number.isInteger(data.attempt_number)).toBe(true)
  if (type === 'queue.call.callback_failed') expect(Number.isInteger(data.attempts)).toBe(true)
  if (type === 'queue.call.dispatched') {
    expect(typeof data.agents_claimed).toBe('number')
    expect(typeof data.targets_dispatched).toBe('number')
  }
  if (type === 'recording.failed') {
    // Known codes; "unknown codes are to be treated as generic failure", but a sample uses a known one.
    expect(['audio_redaction_failed', 'transcription_failed', 'internal_error']).toContain(data.error_code)
    if ('reason' in data) expect(typeof data.reason).toBe('string')
  }
  if (type === 'call.mobile_push_wakeup' && 'direction' in data) expect(['inbound', 'outbound']).toContain(data.direction)
}

function checkShape(type: string, data: Record<string, unknown>) {
  const shape = SHAPES[type]!
  const keys = Object.keys(data)
  const missing = shape.required.filter((k) => !keys.includes(k))
  const extra = keys.filter((k) => !shape.required.includes(k) && !(shape.optional ?? []).includes(k))
  expect({ type, missing, extra }).toEqual({ type, missing: [], extra: [] })
}

// One sandbox platform, one account, one platform-global endpoint that takes everything.
const p = await t.platform({ live_enabled: true })
const account = (await t.account({ key: p.test_key })).id
const rx = await startWebhookReceiver()
const endpoint = (await t.call('POST', '/v1/webhook_endpoints', { key: p.test_key, body: { url: rx.url } })).body as { id: string; secret: string }

describe('POST /v1/test_helpers/events: every supported type', () => {
  test('every supported type of the spec has its field table here', () => {
    expect(Object.keys(SHAPES).sort()).toEqual([...SUPPORTED].sort())
  })

  for (const type of SUPPORTED) {
    test(`${type}: the response echoes the event; its data has exactly the spec's fields; it arrives signed`, async () => {
      const r = await t.call('POST', '/v1/test_helpers/events', { key: p.test_key, account, body: { event: type } })
      expect(r.status).toBe(200)
      const event = r.body
      // Envelope: {id, type, created_at, account_id, data}; "the four billable-count events carry this as `account`".
      const accountField = BILLABLE.has(type) ? 'account' : 'account_id'
      expect(Object.keys(event).sort()).toEqual([accountField, 'created_at', 'data', 'id', 'type'].sort())
      expect(event.type).toBe(type)
      expect(event[accountField]).toBe(account)
      expect(isId(event.id)).toBe(true)
      expect(isIsoTime(event.created_at)).toBe(true)
      expect(typeof event.data).toBe('object')
      checkShape(type, event.data)
      checkValues(type, event.data)
      if (BILLABLE.has(type) && 'request' in event.data) expect(event.data.request).toBe(r.headers.get('x-request-id'))

      const hit = await rx.waitForEvent(event.id)
      expect(hit.headers['x-service-account-id']).toBe(account)
      expect(hit.headers['content-type']).toBe('application/json')
      expect(hit.headers['user-agent']).toBe('Service-Webhook/1.0')
      expect(hit.body).toEqual(event)
      expect(await rx.verify(hit, endpoint.secret)).toEqual(event)
    })
  }

  test('every event is distinct (its own id) and the sandbox account_id is on every one', async () => {
    const a = await t.call('POST', '/v1/test_helpers/events', { key: p.test_key, account, body: { event: 'fax.received' } })
    const b = await t.call('POST', '/v1/test_helpers/events', { key: p.test_key, account, body: { event: 'fax.received' } })
    expect(a.body.id).not.toBe(b.body.id)
    await rx.waitForEvent(b.body.id)
    for (const e of rx.events()) expect(e.account_id ?? e.account).toBe(account)
  })

  test('events of one account arrive in publication order', async () => {
    const sent: string[] = []
    for (const type of ['queue.call.queued', 'queue.call.dispatched', 'queue.call.answered', 'queue.call.completed']) {
      sent.push((await t.call('POST', '/v1/test_helpers/events', { key: p.test_key, account, body: { event: type } })).body.id)
    }
    await rx.waitForEvent(sent[sent.length - 1]!)
    const order = rx
      .events()
      .map((e) => e.id)
      .filter((id) => sent.includes(id))
    expect(order).toEqual(sent)
  })
})

describe('POST /v1/test_helpers/events: refusals', () => {
  const storedOf = async (acct: string) => (await t.service.database.db.select({ id: events.id }).from(events).where(eq(events.accountId, acct))).length

  test('An unrecognized type gives 400 with the list of supported types', async () => {
    const fresh = (await t.account({ key: p.test_key })).id
    for (const event of ['fax.exploded', 'call.end', 'voicemail.new', 'call.command_failed', 'FAX.RECEIVED', '*']) {
      const r = await t.call('POST', '/v1/test_helpers/events', { key: p.test_key, account: fresh, body: { event } })
      expect([event, r.status]).toEqual([event, 400])
      expect(r.body.code).toBe('unsupported_event_type')
      expect(typeof r.body.error).toBe('string')
      expect([...r.body.details.supported].sort()).toEqual([...SUPPORTED].sort())
    }
    expect(await storedOf(fresh)).toBe(0)
  })

  test('a near miss names the closest supported type; something far from all of them names none', async () => {
    const fresh = (await t.account({ key: p.test_key })).id
    for (const [event, meant] of [
      ['fax.recieved', 'fax.received'],
      ['FAX.RECEIVED', 'fax.received'],
    ] as const) {
      const r = await t.call('POST', '/v1/test_helpers/events', { key: p.test_key, account: fresh, body: { event } })
      expect(r.body.error).toContain(`Did you mean ${meant}?`)
      expect(r.body.details.event).toContain(meant)
    }
    const far = await t.call('POST', '/v1/test_helpers/events', { key: p.test_key, account: fresh, body: { event: 'completely.different.thing' } })
    expect(far.body.error).not.toContain('Did you mean')
  })

  test('the request needs event (a string): validation_error otherwise', async () => {
    for (const body of [{}, { event: 42 }, { event: '' }, { event: 'fax.received', extra: 1 }]) {
      const r = await t.call('POST', '/v1/test_helpers/events', { key: p.test_key, account, body })
      expect([JSON.stringify(body), r.status, r.body.code]).toEqual([JSON.stringify(body), 400, 'validation_error'])
    }
  })

  test('sandbox only: A live key gets 400', async () => {
    const live = (await t.account({ key: p.live_key })).id
    for (const event of ['fax.received', 'user.created', 'nope.nope']) {
      const r = await t.call('POST', '/v1/test_helpers/events', { key: p.live_key, account: live, body: { event } })
      expect([event, r.status]).toEqual([event, 400])
      expect(r.body.code).toBe('sandbox_only')
    }
    expect(await storedOf(live)).toBe(0)
    // A live key on a sandbox account is refused too (keys work on their own mode's accounts only).
    const cross = await t.call('POST', '/v1/test_helpers/events', { key: p.live_key, account, body: { event: 'fax.received' } })
    expect(cross.status).toBe(403)
  })

  test('needs the Service-Account header (an account context)', async () => {
    const r = await t.call('POST', '/v1/test_helpers/events', { key: p.test_key, body: { event: 'fax.received' } })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('account_header_required')
    const other = await t.platform()
    const foreign = await t.call('POST', '/v1/test_helpers/events', { key: other.test_key, account, body: { event: 'fax.received' } })
    expect(foreign.status).toBe(403)
    expect((await t.call('POST', '/v1/test_helpers/events', { body: { event: 'fax.received' } })).status).toBe(401)
    const stored = await t.service.database.db
      .select({ id: events.id })
      .from(events)
      .where(and(eq(events.accountId, account), eq(events.platformId, other.id)))
    expect(stored).toHaveLength(0)
  })
})
