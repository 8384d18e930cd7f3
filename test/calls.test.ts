/**
 * Call logs and voicemails as read endpoints: GET /v1/calls (filters, pagination),
 * GET /v1/calls/{id}, /transcript, GET /v1/me/calls, GET /v1/voicemails. Calls come
 * from the simulator with VOICE_CLOCK_SPEED=200.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestService } from './support/service'
import { until } from './support/polling'

const created: { key: string; account: string }[] = []
// Registered before the service's own afterAll (which stops it), so it runs first.
afterAll(async () => {
  for (const c of created) await t.call('DELETE', `/v1/accounts/${c.account}`, { key: c.key })
})

const t = await startTestService({ VOICE_CLOCK_SPEED: '200', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })

let c: { key: string; account: string }
let alice: string
let bob: string
let number: string
const ids: Record<string, string> = {}

const waitEnded = (id: string) =>
  until(`call ${id} to end`, async () => {
    const r = await t.call('GET', `/v1/calls/${id}`, c)
    return r.body?.status ? r.body : undefined
  })

const sim = async (body: Record<string, unknown>) => {
  const r = await t.call('POST', '/v1/test_helpers/calls', { ...c, body })
  if (r.status !== 200) throw new Error(`simulate failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.id as string
}

beforeAll(async () => {
  const a = await t.account()
  c = { key: a.key, account: a.id }
  created.push(c)
  alice = (await t.call('POST', '/v1/users', { ...c, body: { email: 'alice@example.com', name: 'Alice' } })).body.id
  bob = (await t.call('POST', '/v1/users', { ...c, body: { email: 'bob@example.com', name: 'Bob' } })).body.id
  number = (await t.call('GET', '/v1/available-phone-numbers?quantity=1', c)).body.data[0].phone_number
  expect((await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [number] } })).status).toBe(200)
  ids.aliceIn = await sim({ user: alice, from_number: '+15550001111', scenario: { ring_seconds: 1, talk_seconds: 2, recording: false } })
  ids.aliceOut = await sim({ user: alice, direction: 'outbound', to_number: '+15005550102' })
  ids.bobIn = await sim({ user: bob, from_number: '+15550002222', scenario: { outcome: 'voicemail', ring_seconds: 1, voicemail_seconds: 3 } })
  ids.bobOut = await sim({ user: bob, direction: 'outbound', to_number: '+15550003333', scenario: { ring_seconds: 1, talk_seconds: 1 } })
  for (const id of Object.values(ids)) await waitEnded(id)
})

describe('GET /v1/calls', () => {
  test('lists the account’s calls newest first, with list envelope and pagination', async () => {
    const all = await t.call('GET', '/v1/calls?limit=100', c)
    expect(all.status).toBe(200)
    expect(all.body).toMatchObject({ object: 'list', url: '/v1/calls', next_page_url: null, previous_page_url: null })
    expect(all.body.data.map((x: any) => x.id)).toEqual([ids.bobOut, ids.bobIn, ids.aliceOut, ids.aliceIn])
    const p1 = await t.call('GET', '/v1/calls?limit=3', c)
    expect(p1.body.data).toHaveLength(3)
    const p2 = await t.call('GET', p1.body.next_page_url, c)
    expect(p2.body.data.map((x: any) => x.id)).toEqual([ids.aliceIn])
    expect(p2.body.next_page_url).toBeNull()
  })

  test('filters: user_id, direction, status, from_number, to_number', async () => {
    const q = async (qs: string) => (await t.call('GET', `/v1/calls?${qs}`, c)).body.data.map((x: any) => x.id).sort()
    expect(await q(`user_id=${alice}`)).toEqual([ids.aliceIn, ids.aliceOut].sort())
    expect(await q('direction=outbound')).toEqual([ids.aliceOut, ids.bobOut].sort())
    expect(await q('status=busy')).toEqual([ids.aliceOut])
    expect(await q('status=voicemail')).toEqual([ids.bobIn])
    expect(await q(`from_number=${encodeURIComponent('+15550001111')}`)).toEqual([ids.aliceIn])
    expect(await q(`to_number=${encodeURIComponent('+15550003333')}`)).toEqual([ids.bobOut])
    expect(await q('status=completed&direction=inbound')).toEqual([ids.aliceIn])
    // no simulated call involves a device endpoint
    expect(await q('endpoint_id=ep_123')).toEqual([])
  })

  test('date filters', async () => {
    const now = t.service.clock.now()
    // The days of the calls themselves: at 200x the service clock may pass midnight UTC during the file.
    const started = ((await t.call('GET', '/v1/calls?limit=100', c)).body.data as { started_at: string }[]).map((x) => x.started_at).sort()
    expect(started).toHaveLength(4)
    const q = async (qs: string) => (await t.call('GET', `/v1/calls?${qs}`, c)).body.data.length
    expect(await q(`from_date=${started[0]!.slice(0, 10)}`)).toBe(4)
    expect(await q(`to_date=${started[3]!.slice(0, 10)}`)).toBe(4)
    expect(await q(`from_date=${encodeURIComponent(new Date(now.getTime() + 86_400_000).toISOString())}`)).toBe(0)
    expect(await q('to_date=2000-01-01')).toBe(0)
    const bad = await t.call('GET', '/v1/calls?from_date=yesterday', c)
    expect(bad.status).toBe(400)
  })

  test('the call log record', async () => {
    const r = await t.call('GET', `/v1/calls/${ids.aliceIn}`, c)
    expect(r.body).toMatchObject({
      id: ids.aliceIn,
      object: 'call',
      account: c.account,
      direction: 'inbound',
      from_number: '+15550001111',
      to_number: number,
      user_id: alice,
      status: 'completed',
      duration_seconds: 2,
      recording: null,
    })
    expect(Date.parse(r.body.ended_at) - Date.parse(r.body.answered_at)).toBe(2000)
    const missing = await t.call('GET', '/v1/calls/call_nope', c)
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe('call_not_found')
  })

  test('transcript: 404 recording_not_found without a recording; the transcript when recorded', async () => {
    const none = await t.call('GET', `/v1/calls/${ids.aliceIn}/transcript`, c)
    expect(none.status).toBe(404)
    expect(none.body.code).toBe('recording_not_found')
    // bobOut is recorded (default scenario); its transcript lands a few simulated seconds after the end
    const r = await until('the transcript of bobOut', async () => {
      const got = await t.call('GET', `/v1/calls/${ids.bobOut}/transcript`, c)
      return got.status === 200 && got.body.status === 'completed' && got
    })
    expect(r.body).toMatchObject({ object: 'transcript', call_id: ids.bobOut, status: 'completed' })
  })

  test('another account sees none of them', async () => {
    const other = await t.account()
    created.push({ key: other.key, account: other.id })
    const r = await t.call('GET', '/v1/calls', { key: other.key, account: other.id })
    expect(r.body.data).toEqual([])
    expect((await t.call('GET', `/v1/calls/${ids.aliceIn}`, { key: other.key, account: other.id })).status).toBe(404)
  })
})

describe('GET /v1/me/calls', () => {
  test('a user token lists that user’s calls only', async () => {
    const s = await t.call('POST', '/v1/user_sessions', { key: c.key, body: { user: bob } })
    expect(s.status).toBe(200)
    const token = s.body.client_secret
    const r = await t.call('GET', '/v1/me/calls', { key: token })
    expect(r.status).toBe(200)
    expect(r.body.data.map((x: any) => x.id).sort()).toEqual([ids.bobIn, ids.bobOut].sort())
    const out = await t.call('GET', '/v1/me/calls?direction=outbound', { key: token })
    expect(out.body.data.map((x: any) => x.id)).toEqual([ids.bobOut])
    expect((await t.call('GET', '/v1/me/calls', c)).status).toBe(403)
  })
})

describe('GET /v1/voicemails', () => {
  test('lists and gets voicemails, filters by owner and is_read', async () => {
    // Once summarised, the voicemail does not change any more: the list and the single read agree.
    const list = await until('a summarised voicemail', async () => {
      const got = await t.call('GET', '/v1/voicemails', c)
      return got.body.data.length > 0 && got.body.data[0].summary !== null && got
    })
    expect(list.status).toBe(200)
    expect(list.body.data).toHaveLength(1)
    const vm = list.body.data[0]
    expect(vm).toMatchObject({ object: 'voicemail', owner: bob, call_id: ids.bobIn, from_number: '+15550002222', duration_seconds: 3, is_read: false })
    expect((await t.call('GET', `/v1/voicemails?owner=${alice}`, c)).body.data).toEqual([])
    expect((await t.call('GET', '/v1/voicemails?is_read=true', c)).body.data).toEqual([])
    expect((await t.call('GET', '/v1/voicemails?is_read=false', c)).body.data).toHaveLength(1)
    const expanded = await t.call('GET', '/v1/voicemails?expand[]=call', c)
    expect(expanded.body.data[0].call).toMatchObject({ id: ids.bobIn, status: 'voicemail' })
    const one = await t.call('GET', `/v1/voicemails/${vm.id}`, c)
    expect(one.body).toEqual(vm)
    const missing = await t.call('GET', '/v1/voicemails/vm_nope', c)
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe('voicemail_not_found')
  })
})
