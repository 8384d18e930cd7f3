/**
 * GET /v1/quality/summary and GET /v1/quality/worst-calls end to end: calls made with
 * the simulator (so the call log holds them) get media figures as the media role
 * keeps them (storeCallQuality), and the two reports read them over HTTP; bad
 * periods, granularities and limits are 400 validation_error with the field's reason.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { storeCallQuality, type LegMediaFigures } from '../src/services/quality/call-quality'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { type CallSandbox, callSandboxes } from './support/call-sandbox'

const t = await startTestService({ VOICE_CLOCK_SPEED: '200', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const { sandbox, simulate } = callSandboxes(t)

const DAY = 86_400_000
const leg = (o: Partial<LegMediaFigures> = {}): LegMediaFigures => ({
  packetsReceived: 1500,
  packetsSent: 1490,
  packetsLost: 0,
  lossFraction: 0,
  jitterMs: 2,
  mos: 4.4,
  ...o,
})

let c: CallSandbox
let other: CallSandbox
/** Midnight UTC two days ago: the calls ended on that day and the next. */
const day0 = new Date(Math.floor(Date.now() / DAY) * DAY - 2 * DAY)
const at = (hours: number) => new Date(day0.getTime() + hours * 3_600_000).toISOString()
const ids: Record<string, string> = {}

/** A simulated call in the call log, then its media figures as the B2BUA would report them. */
async function callWith(name: string, endedAt: string, caller: LegMediaFigures, callee: LegMediaFigures) {
  const id = await simulate(c, { outcome: 'answered', ring_seconds: 1, talk_seconds: 2 })
  // wait for the call's end: the report shows the call log's answer time and duration
  await until(`call ${name} ended in the log`, async () => (await t.call('GET', `/v1/calls/${id}`, c)).body?.ended_at != null)
  await storeCallQuality(t.service.database.db, { call_id: id, caller, callee, owner: { accountId: c.account }, ended_at: endedAt })
  ids[name] = id
}

beforeAll(async () => {
  c = await sandbox()
  other = await sandbox()
  await callWith('good', at(10), leg({ mos: 4.4, jitterMs: 2 }), leg({ mos: 4.3, jitterMs: 4 }))
  await callWith('poor', at(10.5), leg({ mos: 3.1, lossFraction: 0.05, packetsLost: 79, jitterMs: 20 }), leg({ mos: 4.2 }))
  await callWith('fair', at(27), leg({ mos: 3.8, lossFraction: 0.01 }), leg({ mos: 4.1, jitterMs: 9 }))
  await callWith('silent', at(28), leg({ packetsReceived: 0, mos: 4.41, jitterMs: 0 }), leg({ packetsReceived: 0, mos: 4.41, jitterMs: 0 }))
}, 60_000)

const get = (path: string, who: CallSandbox = c) => t.call('GET', path, who)
const range = `from=${day0.toISOString()}&to=${new Date(day0.getTime() + 2 * DAY).toISOString()}`

describe('GET /v1/quality/summary', () => {
  test('by default the last 7 days by UTC day: every day listed, the calls in theirs, totals', async () => {
    const r = await get('/v1/quality/summary')
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ object: 'quality_summary', granularity: 'day', poor_mos_threshold: 3.5 })
    expect(Date.parse(r.body.to) - Date.parse(r.body.from)).toBe(7 * DAY)
    // 7 days from a time that is not midnight span 8 UTC days
    expect(r.body.buckets.length).toBe(Date.parse(r.body.to) % DAY === 0 ? 7 : 8)
    expect(r.body.totals).toMatchObject({ calls: 4, calls_missing_audio: 1, poor_calls: 1, min_mos: 3.1 })
    expect(r.body.buckets.reduce((n: number, b: { calls: number }) => n + b.calls, 0)).toBe(4)
  })

  test('a period by day: averages, p95 jitter and loss of each day', async () => {
    const r = await get(`/v1/quality/summary?${range}&granularity=day`)
    expect(r.status).toBe(200)
    expect(r.body.buckets).toHaveLength(2)
    expect(r.body.buckets[0]).toMatchObject({
      start: day0.toISOString(),
      calls: 2,
      calls_missing_audio: 0,
      poor_calls: 1,
      average_mos: 3.7,
      min_mos: 3.1,
      average_jitter_ms: 12,
      average_packet_loss_percent: 2.5,
    })
    expect(r.body.buckets[0].p95_jitter_ms).toBeCloseTo(19.2, 5)
    expect(r.body.buckets[1]).toMatchObject({ calls: 2, calls_missing_audio: 1, poor_calls: 0, average_mos: 3.8, min_mos: 3.8, average_jitter_ms: 9 })
    expect(r.body.totals).toMatchObject({ calls: 4, average_mos: 3.73 })
  })

  test('by hour: empty hours are listed with zero calls and null figures', async () => {
    const r = await get(`/v1/quality/summary?from=${at(9)}&to=${at(12)}&granularity=hour`)
    expect(r.status).toBe(200)
    expect(r.body.buckets.map((b: { start: string; calls: number }) => [b.start, b.calls])).toEqual([
      [at(9), 0],
      [at(10), 2],
      [at(11), 0],
    ])
    expect(r.body.buckets[0]).toMatchObject({ average_mos: null, min_mos: null, p95_jitter_ms: null, average_packet_loss_percent: null })
  })

  test('another account sees none of these calls', async () => {
    const r = await get(`/v1/quality/summary?${range}`, other)
    expect(r.status).toBe(200)
    expect(r.body.totals.calls).toBe(0)
  })
})

describe('GET /v1/quality/worst-calls', () => {
  test('lowest MOS first with the call log’s details and both legs; a call without audio is not ranked', async () => {
    const r = await get(`/v1/quality/worst-calls?${range}`)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ object: 'quality_worst_calls', from: day0.toISOString(), poor_mos_threshold: 3.5 })
    expect(r.body.data.map((x: { call_id: string }) => x.call_id)).toEqual([ids.poor, ids.fair, ids.good])
    const call = (await get(`/v1/calls/${ids.poor}`)).body
    expect(r.body.data[0]).toEqual({
      object: 'call_quality',
      call_id: ids.poor,
      direction: call.direction,
      from_number: call.from_number,
      to_number: call.to_number,
      user_id: c.user,
      from_user_id: call.from_user_id,
      to_user_id: call.to_user_id,
      started_at: call.started_at,
      answered_at: expect.anything(),
      ended_at: at(10.5),
      duration_seconds: expect.anything(),
      mos: 3.1,
      packet_loss_percent: 5,
      jitter_ms: 20,
      poor: true,
      missing_audio: false,
      caller: { packets_received: 1500, packets_sent: 1490, packets_lost: 79, packet_loss_percent: 5, jitter_ms: 20, mos: 3.1 },
      callee: { packets_received: 1500, packets_sent: 1490, packets_lost: 0, packet_loss_percent: 0, jitter_ms: 2, mos: 4.2 },
    })
    const one = await get(`/v1/quality/worst-calls?${range}&limit=1`)
    expect(one.body.data.map((x: { call_id: string }) => x.call_id)).toEqual([ids.poor])
    expect((await get(`/v1/quality/worst-calls?${range}`, other)).body.data).toEqual([])
  })
})

describe('bad requests', () => {
  const bad = async (path: string) => {
    const r = await get(path)
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    return r.body.details as Record<string, string>
  }

  test('from after to, too long a period, a malformed date', async () => {
    expect(await bad('/v1/quality/summary?from=2026-06-05&to=2026-06-01')).toEqual({ from: 'must be before to' })
    expect((await bad('/v1/quality/summary?from=2026-01-01T00:00:00Z&to=2026-06-01T00:00:00Z')).from).toContain('at most 90 days')
    expect((await bad('/v1/quality/summary?from=2026-04-01&to=2026-06-01&granularity=hour')).from).toContain('at most 31 days')
    expect((await bad('/v1/quality/worst-calls?from=2026-01-01&to=2026-06-01')).from).toContain('at most 90 days')
    expect(Object.keys(await bad('/v1/quality/summary?from=last-week'))).toEqual(['from'])
    expect(Object.keys(await bad('/v1/quality/worst-calls?to=2026-06-01T10:00:00'))).toEqual(['to'])
  })

  test('an unknown granularity, a limit out of range, an unknown parameter', async () => {
    expect(Object.keys(await bad('/v1/quality/summary?granularity=week'))).toEqual(['granularity'])
    expect(await bad('/v1/quality/worst-calls?limit=101')).toEqual({ limit: 'must be an integer from 1 to 100' })
    expect(Object.keys(await bad('/v1/quality/worst-calls?limit=0'))).toEqual(['limit'])
    expect(Object.keys(await bad('/v1/quality/worst-calls?granularity=day'))).toEqual(['granularity'])
  })

  test('no credentials: 401', async () => {
    const r = await t.call('GET', '/v1/quality/summary')
    expect(r.status).toBe(401)
  })
})
