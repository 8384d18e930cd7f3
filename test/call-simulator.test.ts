/**
 * POST /v1/test_helpers/calls end to end: the real server with VOICE_CLOCK_SPEED=200
 * (a 30 s call takes about 0.15 s), a real webhook receiver with verified
 * signatures, and the call log afterwards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { until } from './support/polling'
import { callActors, quiescence } from './support/quiescence'
import { startTestService } from './support/service'
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver'

// Registered before the service's own afterAll (which stops it), so it runs first.
afterAll(async () => {
  for (const rx of receivers) await rx.stop()
  // Deleting the accounts frees their numbers for the next run against the same database.
  for (const c of created) await t.call('DELETE', `/v1/accounts/${c.account}`, { key: c.key })
})

const t = await startTestService({ VOICE_CLOCK_SPEED: '200', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })

const receivers: WebhookReceiver[] = []
type Ctx = { key: string; account: string; user: string; number: string; rx: WebhookReceiver; secret: string }
const created: { key: string; account: string }[] = []

async function sandbox(opts: { number?: boolean } = {}): Promise<Ctx> {
  const a = await t.account()
  const c = { key: a.key, account: a.id }
  created.push(c)
  const u = await t.call('POST', '/v1/users', { ...c, body: { email: 'agent@example.com', name: 'Agent' } })
  expect(u.status).toBe(200)
  let number = ''
  if (opts.number !== false) {
    const avail = await t.call('GET', '/v1/available-phone-numbers?quantity=1', c)
    expect(avail.status).toBe(200)
    number = avail.body.data[0].phone_number
    const o = await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [number] } })
    expect(o.status).toBe(200)
  }
  const rx = await startWebhookReceiver({ autoStop: false })
  receivers.push(rx)
  const ep = await t.call('POST', '/v1/webhook_endpoints', { ...c, body: { url: rx.url, enabled_events: ['*'] } })
  expect(ep.status).toBe(200)
  return { ...c, user: u.body.id, number, rx, secret: ep.body.secret }
}

const simulate = (c: Ctx, body: Record<string, unknown>) => t.call('POST', '/v1/test_helpers/calls', { key: c.key, account: c.account, body })

/** Waits for `n` events of this call (or any event mentioning it), verifies each signature, returns them in order. */
/**
 * The first `n` distinct events of the call, verified, in arrival order. Delivery is
 * at least once: at clock speed 200 the webhook timeout is 50 ms of real time, so a
 * loaded machine sees retries, and a retried event may arrive twice.
 */
async function eventsOf(c: Ctx, callId: string, n: number, timeoutMs = 10_000) {
  const distinct = () => {
    const byId = new Map<string, (typeof c.rx.requests)[number]>()
    for (const r of c.rx.requests) if (r.body?.data?.call_id === callId && !byId.has(r.body.id)) byId.set(r.body.id, r)
    return [...byId.values()]
  }
  await until(`${n} events of ${callId}`, async () => distinct().length >= n, timeoutMs)
  const out = []
  for (const h of distinct().slice(0, n)) out.push(await c.rx.verify(h, c.secret))
  return out
}

describe('POST /v1/test_helpers/calls', () => {
  let c: Ctx
  beforeAll(async () => {
    c = await sandbox()
  })

  test('a scenario of zero seconds (every event due at the start): the whole call in its first step, each event once, in order', async () => {
    const cases = [
      {
        scenario: { outcome: 'answered', ring_seconds: 0, talk_seconds: 0, recording: false },
        types: ['call.incoming', 'call.ringing', 'call.answered', 'call.end'],
        status: 'completed',
      },
      { scenario: { outcome: 'busy', ring_seconds: 0 }, types: ['call.incoming', 'call.ringing', 'call.end'], status: 'busy' },
      { scenario: { outcome: 'no-answer', ring_seconds: 0 }, types: ['call.incoming', 'call.ringing', 'call.end'], status: 'no-answer' },
    ]
    for (const k of cases) {
      const r = await simulate(c, { user: c.user, scenario: k.scenario })
      expect(r.status).toBe(200)
      const evs = await eventsOf(c, r.body.id, k.types.length)
      expect(evs.map((e) => e.type)).toEqual(k.types)
      await until(`call ${r.body.id} in the log as ${k.status}`, async () => (await t.call('GET', `/v1/calls/${r.body.id}`, c)).body?.status === k.status)
      const log = await t.call('GET', `/v1/calls/${r.body.id}`, c)
      expect(log.body).toMatchObject({ id: r.body.id, status: k.status, user_id: c.user })
    }
  })

  test('an inbound answered call: incoming, ringing, answered, end, then recording events; honest durations', async () => {
    const r = await simulate(c, { user: c.user, from_number: '+15551234567', from_name: 'Pat Caller', scenario: { ring_seconds: 4, talk_seconds: 30 } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ object: 'test_call', scenario: { outcome: 'answered', ring_seconds: 4, talk_seconds: 30, recording: true } })
    const id = r.body.id
    expect(r.body.call).toMatchObject({
      id,
      object: 'call',
      status: null,
      direction: 'inbound',
      from_number: '+15551234567',
      to_number: c.number,
      from_label: 'Pat Caller',
    })
    expect(r.body.call.duration_seconds).toBeUndefined()

    const realStart = Date.now()
    const evs = await eventsOf(c, id, 7)
    expect(evs.map((e) => e.type)).toEqual([
      'call.incoming',
      'call.ringing',
      'call.answered',
      'call.end',
      'recording.available',
      'recording.transcription.complete',
      'recording.summary.complete',
    ])
    for (const e of evs) expect(e.account_id).toBe(c.account)
    const [incoming, ringing, answered, end, rec] = evs
    expect(incoming.data).toMatchObject({
      call_id: id,
      direction: 'inbound',
      from_number: '+15551234567',
      from_name: 'Pat Caller',
      to_number: c.number,
      user_id: c.user,
      to_user_id: c.user,
    })
    expect(ringing.data).toMatchObject({ call_id: id, user_id: c.user })
    expect(answered.data).toMatchObject({ call_id: id, user_id: c.user })
    expect(end.data).toMatchObject({ call_id: id, status: 'completed', duration_seconds: 30, user_id: c.user })
    // simulated timestamps: answered 4 s after start, ended 30 s after answering
    expect(Date.parse(end.data.answered_at) - Date.parse(incoming.data.started_at)).toBe(4000)
    expect(Date.parse(end.data.ended_at) - Date.parse(end.data.answered_at)).toBe(30_000)
    expect(rec.data).toEqual({ call_id: id, duration_seconds: 30 })
    // 40 simulated seconds at speed 200 take well under the real 40 s
    expect(Date.now() - realStart).toBeLessThan(10_000)

    const log = await t.call('GET', `/v1/calls/${id}`, c)
    expect(log.status).toBe(200)
    expect(log.body).toMatchObject({
      id,
      status: 'completed',
      duration_seconds: 30,
      direction: 'inbound',
      user_id: c.user,
      from_label: 'Pat Caller',
      simulated: true,
    })
    expect(log.body.recording).toMatchObject({ object: 'recording', status: 'available', duration_seconds: 30 })
    expect(log.body.summary).toEqual(expect.any(String))
    const tr = await t.call('GET', `/v1/calls/${id}/transcript`, c)
    expect(tr.status).toBe(200)
    expect(tr.body).toMatchObject({ object: 'transcript', call_id: id, status: 'completed' })
    expect(tr.body.segments.length).toBeGreaterThan(0)

    // the recording: a signed URL serving a WAV of exactly the talk time
    const recording = await t.call('GET', `/v1/calls/${id}/recording`, c)
    expect(recording.status).toBe(200)
    const url: string = recording.body.url
    expect(url).toContain('/downloads/')
    expect(recording.body).toMatchObject({ object: 'recording', call_id: id, status: 'available', duration_seconds: 30 })
    // A link's lifetime is real time (VOICE_CLOCK_SPEED compresses the call, not the link), so it is compared with the wall clock.
    expect(Date.parse(recording.body.expires_at)).toBeGreaterThan(Date.now())
    const audio = await fetch(url)
    expect(audio.status).toBe(200)
    expect(audio.headers.get('content-type')).toBe('audio/wav')
    const bytes = new Uint8Array(await audio.arrayBuffer())
    expect(new TextDecoder().decode(bytes.slice(0, 4))).toBe('RIFF')
    expect(bytes.byteLength).toBe(44 + 30 * 8000 * 2)
    const tampered = url.slice(0, -3) + (url.endsWith('AAA') ? 'BBB' : 'AAA')
    expect((await fetch(tampered)).status).toBe(404)
  })

  test('outbound to +1 (500) 555-0100: initiated, answered after 5 s, 30 s talk, recorded', async () => {
    const r = await simulate(c, { user: c.user, direction: 'outbound', to_number: '+1 (500) 555-0100', scenario: { talk_seconds: 3 } })
    expect(r.status).toBe(200)
    expect(r.body.scenario).toEqual({ outcome: 'answered', ring_seconds: 5, talk_seconds: 30, voicemail_seconds: 15, recording: true })
    const evs = await eventsOf(c, r.body.id, 7)
    expect(evs.map((e) => e.type)).toEqual([
      'call.initiated',
      'call.ringing',
      'call.answered',
      'call.end',
      'recording.available',
      'recording.transcription.complete',
      'recording.summary.complete',
    ])
    expect(evs[0].data).toMatchObject({ direction: 'outbound', from_number: c.number, user_id: c.user, from_user_id: c.user })
    // the far end rings: no user's phone, so no user_id (never the caller's)
    expect(evs[1].data).toEqual({
      call_id: r.body.id,
      direction: 'outbound',
      from_number: c.number,
      from_name: null,
      to_number: evs[0].data.to_number,
      ringing_at: evs[0].data.started_at,
    })
    expect(evs[3].data).toMatchObject({ status: 'completed', duration_seconds: 30, user_id: c.user })
  })

  test('+15005550101 rings 20 s, no answer; +15005550102 busy; neither recorded', async () => {
    const na = await simulate(c, { user: c.user, direction: 'outbound', to_number: '+15005550101' })
    const busy = await simulate(c, { user: c.user, direction: 'outbound', to_number: '15005550102' })
    expect(na.body.scenario).toMatchObject({ outcome: 'no-answer', ring_seconds: 20, recording: false })
    expect(busy.body.scenario).toMatchObject({ outcome: 'busy', recording: false })
    const [ni, nr, ne] = await eventsOf(c, na.body.id, 3)
    expect(nr.type).toBe('call.ringing')
    expect(ne.type).toBe('call.end')
    expect(ne.data).toMatchObject({ status: 'no-answer', duration_seconds: 20, answered_at: null, connected_at: null })
    expect(Date.parse(ne.data.ended_at) - Date.parse(ni.data.started_at)).toBe(20_000)
    const [, br, be] = await eventsOf(c, busy.body.id, 3)
    expect(br.type).toBe('call.ringing')
    expect(be.data).toMatchObject({ status: 'busy' })
    await quiescence(t, c.account, callActors(na.body.id, busy.body.id))
    expect(c.rx.events().filter((e) => e.data?.call_id === na.body.id || e.data?.call_id === busy.body.id)).toHaveLength(6)
    const log = await t.call('GET', `/v1/calls/${busy.body.id}`, c)
    expect(log.body).toMatchObject({ status: 'busy', recording: null })
    const rec = await t.call('GET', `/v1/calls/${busy.body.id}/recording`, c)
    expect(rec.status).toBe(404)
    expect(rec.body.code).toBe('recording_not_found')
  })

  test('+15005550103 (answering machine) is a normal answered call; 933 also emits call.emergency', async () => {
    const am = await simulate(c, { user: c.user, direction: 'outbound', to_number: '+15005550103', scenario: { recording: false, talk_seconds: 2 } })
    const [, , , end] = await eventsOf(c, am.body.id, 4)
    expect(end.data).toMatchObject({ status: 'completed', duration_seconds: 2 })

    const em = await simulate(c, { user: c.user, direction: 'outbound', to_number: '933', scenario: { recording: false, talk_seconds: 1 } })
    expect(em.status).toBe(200)
    const evs = await eventsOf(c, em.body.id, 5)
    expect(evs.map((e) => e.type)).toEqual(['call.initiated', 'call.emergency', 'call.ringing', 'call.answered', 'call.end'])
    expect(evs[1].data).toMatchObject({ call_id: em.body.id, to_number: '933', user_id: c.user, e911_provisioned: false })
    expect(evs[1].data.location_id).toBeUndefined()
  })

  test('+15005550104 is answered then transferred: call.transfer on the original, and the new leg runs its own events', async () => {
    const r = await simulate(c, { user: c.user, direction: 'outbound', to_number: '+15005550104', scenario: { recording: false, talk_seconds: 2 } })
    const evs = await eventsOf(c, r.body.id, 5)
    expect(evs.map((e) => e.type)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.transfer', 'call.end'])
    const newCall = evs[3].data.related_call
    expect(evs[3].data).toMatchObject({ transferred_by: c.user, transferred_to: expect.any(String) })
    expect(newCall).toEqual(expect.any(String))
    const leg = await eventsOf(c, newCall, 4)
    expect(leg.map((e) => e.type)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
    await quiescence(t, c.account, callActors(r.body.id, newCall))
    const log = await t.call('GET', `/v1/calls/${newCall}`, c)
    expect(log.body).toMatchObject({ related_call: r.body.id, status: 'completed' })
  })

  test('an inbound voicemail deposits a voicemail: voicemail.new, then transcription and summary', async () => {
    const r = await simulate(c, {
      user: c.user,
      from_number: '+15557654321',
      from_name: 'Vic',
      scenario: { outcome: 'voicemail', ring_seconds: 10, voicemail_seconds: 12 },
    })
    expect(r.body.scenario).toMatchObject({ outcome: 'voicemail', voicemail_seconds: 12 })
    const evs = await eventsOf(c, r.body.id, 7)
    expect(evs.map((e) => e.type)).toEqual([
      'call.incoming',
      'call.ringing',
      'call.answered',
      'call.end',
      'voicemail.new',
      'voicemail.transcription.complete',
      'voicemail.summary.complete',
    ])
    expect(evs[2].data).toMatchObject({ connected_at: null })
    expect(evs[3].data).toMatchObject({ status: 'voicemail', duration_seconds: 12, connected_at: null })
    const vm = evs[4].data
    expect(vm).toMatchObject({ user_id: c.user, call_id: r.body.id, from_number: '+15557654321', from_name: 'Vic', duration_seconds: 12 })
    expect(evs[5].data).toMatchObject({ voicemail_id: vm.voicemail_id, status: 'completed' })
    const got = await t.call('GET', `/v1/voicemails/${vm.voicemail_id}?expand[]=call`, c)
    expect(got.status).toBe(200)
    expect(got.body).toMatchObject({
      id: vm.voicemail_id,
      object: 'voicemail',
      owner: c.user,
      call_id: r.body.id,
      duration_seconds: 12,
      is_read: false,
      call: { id: r.body.id, status: 'voicemail' },
    })
    const list = await t.call('GET', `/v1/voicemails?owner=${c.user}`, c)
    expect(list.body.data.map((v: any) => v.id)).toContain(vm.voicemail_id)
  })

  test('outbound voicemail collapses to answered; durations are clamped to 120', async () => {
    const r = await simulate(c, {
      user: c.user,
      direction: 'outbound',
      to_number: '+15551112222',
      scenario: { outcome: 'voicemail', ring_seconds: 500, talk_seconds: 121, recording: false },
    })
    expect(r.status).toBe(200)
    expect(r.body.scenario).toEqual({ outcome: 'answered', ring_seconds: 120, talk_seconds: 120, voicemail_seconds: 15, recording: false })
    const [, , , end] = await eventsOf(c, r.body.id, 4)
    expect(end.data).toMatchObject({ status: 'completed', duration_seconds: 120 })
  })

  test('in flight, GET /v1/calls/{id} is the sparse live view', async () => {
    const r = await simulate(c, { user: c.user, scenario: { ring_seconds: 100, outcome: 'no-answer' } })
    const log = await t.call('GET', `/v1/calls/${r.body.id}`, c)
    expect(log.status).toBe(200)
    expect(log.body).toMatchObject({ id: r.body.id, status: null })
    expect('duration_seconds' in log.body).toBe(false)
    expect('recording' in log.body).toBe(false)
    await eventsOf(c, r.body.id, 3)
  })
})

describe('the event stream', () => {
  test('GET /v1/events carries the simulated call’s events flat (call.ringing is webhook-only)', async () => {
    const c = await sandbox()
    const abort = new AbortController()
    const res = await fetch(`${t.baseUrl}/v1/events`, {
      headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account, accept: 'text/event-stream' },
      signal: abort.signal,
    })
    expect(res.status).toBe(200)
    const payloads: any[] = []
    const reading = (async () => {
      const reader = res.body!.getReader()
      const decoder = new TextDecoder()
      let buffer = ''
      try {
        for (;;) {
          const { value, done } = await reader.read()
          if (done) return
          buffer += decoder.decode(value, { stream: true })
          let i: number
          while ((i = buffer.indexOf('\n\n')) !== -1) {
            const data = buffer
              .slice(0, i)
              .split('\n')
              .filter((l) => l.startsWith('data:'))
              .map((l) => l.slice(5).trim())
              .join('\n')
            buffer = buffer.slice(i + 2)
            if (data) payloads.push(JSON.parse(data))
          }
        }
      } catch {}
    })()
    const r = await simulate(c, { user: c.user, from_number: '+15550009999', scenario: { ring_seconds: 2, talk_seconds: 7, recording: false } })
    try {
      await until('call.end of the call on the stream', () => payloads.some((p) => p.event === 'call.end' && p.call_id === r.body.id), 10_000)
    } finally {
      abort.abort()
      await reading
    }
    const mine = payloads.filter((p) => p.call_id === r.body.id)
    expect(mine.map((p) => p.event)).toEqual(['call.incoming', 'call.answered', 'call.end'])
    expect(mine[2]).toMatchObject({ event: 'call.end', call_id: r.body.id, status: 'completed', duration_seconds: 7 })
    expect(mine[2].id).toBeUndefined()
    expect(mine[2].data).toBeUndefined()
  })
})

describe('createTestCall errors', () => {
  test('400 no_phone_number, validation errors, sandbox_only for a live key', async () => {
    const c = await sandbox({ number: false })
    const none = await simulate(c, { user: c.user })
    expect(none.status).toBe(400)
    expect(none.body.code).toBe('no_phone_number')

    const bad = await simulate(c, { user: c.user, scenario: { outcome: 'hung-up' } })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('validation_error')
    const noUser = await simulate(c, {})
    expect(noUser.status).toBe(400)

    const p = await t.platform({ live_enabled: true })
    const live = await t.account({ key: p.live_key })
    created.push({ key: live.key, account: live.id })
    const u = await t.call('POST', '/v1/users', { key: live.key, account: live.id, body: { email: 'l@example.com' } })
    const r = await t.call('POST', '/v1/test_helpers/calls', { key: live.key, account: live.id, body: { user: u.body.id } })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('sandbox_only')
  })

  test('a user of another account is refused', async () => {
    const c = await sandbox()
    const other = await sandbox({ number: false })
    const r = await simulate(c, { user: other.user })
    expect(r.status).toBe(400)
    expect(r.body.details).toMatchObject({ user: expect.any(String) })
  })
})
