/**
 * GET /v1/voicemails/{voicemail_id}/transcript end to end: a sandbox inbound call
 * with scenario outcome voicemail deposits the voicemail (voicemail.new), then
 * voicemail.transcription.complete and voicemail.summary.complete a few simulated
 * seconds later (VOICE_CLOCK_SPEED=200). Before transcription completes the answer
 * is 200 with status processing; another account's voicemail is 404. The calls go
 * through the typed client (client/).
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { voicemails } from '../src/db/schema'
import { newId } from '../src/ids'
import { apiClient } from './support/api-client'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { callSandboxes, type CallSandbox } from './support/call-sandbox'

const t = await startTestService({ VOICE_CLOCK_SPEED: '200', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
type Ctx = CallSandbox
const { sandbox } = callSandboxes(t)

let c: Ctx
let other: Ctx
let callId: string
let api: ReturnType<typeof apiClient>
const transcriptOf = (voicemail_id: string) => ({ params: { path: { voicemail_id } } })

beforeAll(async () => {
  c = await sandbox()
  other = await sandbox()
  api = apiClient(t, { key: c.key, account: c.account })
  const r = await api.POST('/v1/test_helpers/calls', {
    body: { user: c.user, from_number: '+15557654321', from_name: 'Vic', scenario: { outcome: 'voicemail', ring_seconds: 2, voicemail_seconds: 9 } },
  })
  expect(r.response.status).toBe(200)
  callId = r.data!.id
})

describe('GET /v1/voicemails/{voicemail_id}/transcript', () => {
  test('a simulated voicemail: transcript text, then summary and sentiment', async () => {
    const vm = await until('the voicemail', async () => (await api.GET('/v1/voicemails', { params: { query: { owner: c.user } } })).data?.data?.[0])
    expect(vm).toMatchObject({ call_id: callId, duration_seconds: 9 })
    const done = await until('the summary', async () => {
      const r = await api.GET('/v1/voicemails/{voicemail_id}/transcript', transcriptOf(vm.id))
      return r.response.status === 200 && r.data && r.data.summary !== null ? { body: r.data } : undefined
    })
    expect(done.body).toEqual({
      object: 'voicemail_transcript',
      voicemail_id: vm.id,
      call_id: callId,
      status: 'completed',
      text: expect.any(String),
      segments: [{ speaker: 'caller', start_seconds: 0, end_seconds: 9, text: done.body.text as string }],
      summary: expect.any(String),
      sentiment: expect.anything(),
    })
    expect(done.body.text?.length).toBeGreaterThan(0)
    // the same summary and sentiment as the voicemail itself
    const got = (await api.GET('/v1/voicemails/{voicemail_id}', { params: { path: { voicemail_id: vm.id } } })).data!
    expect({ summary: got.summary, sentiment: got.sentiment }).toEqual({ summary: done.body.summary, sentiment: done.body.sentiment })
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
    const r = await api.GET('/v1/voicemails/{voicemail_id}/transcript', transcriptOf(id))
    expect(r.response.status).toBe(200)
    expect(r.data).toEqual({
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
    const missing = await api.GET('/v1/voicemails/{voicemail_id}/transcript', transcriptOf('vm_nope'))
    expect(missing.response.status).toBe(404)
    expect(missing.error).toMatchObject({ code: 'voicemail_not_found', error: expect.any(String) })
    const vm = (await api.GET('/v1/voicemails', { params: { query: { owner: c.user } } })).data!.data[0]!
    const foreign = await apiClient(t, { key: other.key, account: other.account }).GET('/v1/voicemails/{voicemail_id}/transcript', transcriptOf(vm.id))
    expect(foreign.response.status).toBe(404)
    expect(foreign.error?.code).toBe('voicemail_not_found')
  })

  test('needs credentials', async () => {
    const r = await apiClient(t, { account: c.account }).GET('/v1/voicemails/{voicemail_id}/transcript', transcriptOf('vm_nope'))
    expect(r.response.status).toBe(401)
  })
})
