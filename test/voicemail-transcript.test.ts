/**
 * GET /v1/voicemails/{voicemail_id}/transcript end to end: a sandbox inbound call
 * with scenario outcome voicemail deposits the voicemail (voicemail.new), then
 * voicemail.transcription.complete and voicemail.summary.complete a few simulated
 * seconds later (VOICE_CLOCK_SPEED=200). Before transcription completes the answer
 * is 200 with status processing; another account's voicemail is 404.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { voicemails } from '../src/db/schema'
import { newId } from '../src/ids'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { callSandboxes, type CallSandbox } from './support/call-sandbox'

const t = await startTestService({ VOICE_CLOCK_SPEED: '200' })
type Ctx = CallSandbox
const { sandbox } = callSandboxes(t)

let c: Ctx
let other: Ctx
let callId: string

beforeAll(async () => {
  c = await sandbox()
  other = await sandbox()
  const r = await t.call('POST', '/v1/test_helpers/calls', {
    key: c.key,
    account: c.account,
    body: { user: c.user, from_number: '+15557654321', from_name: 'Vic', scenario: { outcome: 'voicemail', ring_seconds: 2, voicemail_seconds: 9 } },
  })
  expect(r.status).toBe(200)
  callId = r.body.id
})

describe('GET /v1/voicemails/{voicemail_id}/transcript', () => {
  test('a simulated voicemail: transcript text, then summary and sentiment', async () => {
    const vm = await until('the voicemail', async () => (await t.call('GET', `/v1/voicemails?owner=${c.user}`, c)).body?.data?.[0])
    expect(vm).toMatchObject({ call_id: callId, duration_seconds: 9 })
    const done = await until('the summary', async () => {
      const r = await t.call('GET', `/v1/voicemails/${vm.id}/transcript`, c)
      return r.status === 200 && r.body.summary !== null ? r : undefined
    })
    expect(done.body).toEqual({
      object: 'voicemail_transcript',
      voicemail_id: vm.id,
      call_id: callId,
      status: 'completed',
      text: expect.any(String),
      segments: [{ speaker: 'caller', start_seconds: 0, end_seconds: 9, text: done.body.text }],
      summary: expect.any(String),
      sentiment: expect.anything(),
    })
    expect(done.body.text.length).toBeGreaterThan(0)
    // the same summary and sentiment as the voicemail itself
    const got = await t.call('GET', `/v1/voicemails/${vm.id}`, c)
    expect({ summary: got.body.summary, sentiment: got.body.sentiment }).toEqual({ summary: done.body.summary, sentiment: done.body.sentiment })
  }, 30_000)

  test('before transcription completes: 200 with status processing, text null, no segments', async () => {
    // A voicemail just deposited (as the simulator writes it at voicemail.new): no transcript yet.
    const now = new Date()
    const id = newId('voicemail')
    await t.service.database.db.insert(voicemails).values({
      id,
      accountId: c.account,
      userId: c.user,
      callId: null,
      fromNumber: '+15550001111',
      fromName: null,
      durationSeconds: 4,
      createdAt: now,
      updatedAt: now,
    })
    const r = await t.call('GET', `/v1/voicemails/${id}/transcript`, c)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      object: 'voicemail_transcript',
      voicemail_id: id,
      call_id: null,
      status: 'processing',
      text: null,
      segments: [],
      summary: null,
      sentiment: null,
    })
  })

  test('404 voicemail_not_found: unknown id, and another account’s voicemail', async () => {
    const missing = await t.call('GET', '/v1/voicemails/vm_nope/transcript', c)
    expect(missing.status).toBe(404)
    expect(missing.body).toMatchObject({ code: 'voicemail_not_found', error: expect.any(String) })
    const vm = (await t.call('GET', `/v1/voicemails?owner=${c.user}`, c)).body.data[0]
    const foreign = await t.call('GET', `/v1/voicemails/${vm.id}/transcript`, other)
    expect(foreign.status).toBe(404)
    expect(foreign.body.code).toBe('voicemail_not_found')
  })

  test('needs credentials', async () => {
    const r = await t.call('GET', '/v1/voicemails/vm_nope/transcript', { account: c.account })
    expect(r.status).toBe(401)
  })
})
