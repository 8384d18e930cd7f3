/**
 * Call control end to end: updateCall (hangup, hold, resume, blind transfer), recording
 * pause/resume and listeners on simulated calls. The real server at VOICE_CLOCK_SPEED=50
 * (120 s of talk take 2.4 s real: slow enough to act mid-call), a real webhook receiver
 * with verified signatures.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { decodeWavSamples } from '../media/wav'
import { startTestService } from './support/service'
import { callSandboxes, type CallSandbox } from './support/call-sandbox'
import { callActors, quiescence } from './support/quiescence'
import { untilClockPasses } from './support/simulated-time'

const SPEED = 50
const t = await startTestService({ VOICE_CLOCK_SPEED: String(SPEED), WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })

type Ctx = CallSandbox
const { sandbox, simulate, command, eventOf } = callSandboxes(t)
const typesOf = (c: Ctx, callId: string) =>
  c.rx
    .events()
    .filter((e) => e.data?.call_id === callId)
    .map((e) => e.type as string)

describe('POST /v1/calls/{call_id} (updateCall)', () => {
  let c: Ctx
  beforeAll(async () => {
    c = await sandbox()
  })

  test('hangup ends the call now: call.end completed with the honest duration, call.command_succeeded, and the planned steps are dropped', async () => {
    const id = await simulate(c, { ring_seconds: 2, talk_seconds: 120 })
    const answered = await eventOf(c, id, 'call.answered')
    await untilClockPasses(t, answered.data.answered_at, 10) // about 10 simulated seconds of talk
    const r = await command(c, id, { action: 'hangup' })
    expect(r.status).toBe(202)
    // (values are read before toMatchObject: bun's asymmetric matchers can replace them in the received object)
    const commandId = r.body.id as string
    expect(commandId).toMatch(/^cmd_/)
    expect(r.body).toEqual({ object: 'call_command', call_id: id, command: 'hangup', id: commandId })
    const end = await eventOf(c, id, 'call.end')
    const ok = await eventOf(c, id, 'call.command_succeeded')
    expect(ok.data).toEqual({ call_id: id, command: 'hangup', command_id: commandId })
    expect(end.data.status).toBe('completed')
    const talked = Math.floor((Date.parse(end.data.ended_at) - Date.parse(answered.data.answered_at)) / 1000)
    expect(end.data.duration_seconds).toBe(talked)
    expect(talked).toBeGreaterThanOrEqual(5)
    expect(talked).toBeLessThan(100)
    // the recording follows the real end, with the real length
    const rec = await eventOf(c, id, 'recording.available')
    expect(rec.data).toEqual({ call_id: id, duration_seconds: talked })
    await eventOf(c, id, 'recording.summary.complete')
    // past the planned end (answered + 120 s) and its follow-ups (+6 s), with the call and its
    // follow-up done and no timer of theirs left: nothing more arrives
    await untilClockPasses(t, answered.data.answered_at, 120 + 6)
    await quiescence(t, c.account, callActors(id))
    expect(typesOf(c, id)).toEqual([
      'call.incoming',
      'call.ringing',
      'call.answered',
      'call.end',
      'call.command_succeeded',
      'recording.available',
      'recording.transcription.complete',
      'recording.summary.complete',
    ])
    const log = await t.call('GET', `/v1/calls/${id}`, c)
    expect(log.body).toMatchObject({ status: 'completed', duration_seconds: talked, recording: { duration_seconds: talked, status: 'available' } })
    // the call has ended: 409 call_not_active
    const again = await command(c, id, { action: 'hangup' })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe('call_not_active')
  }, 20_000)

  test('a retried hangup (same Idempotency-Key) after the call ended replays the 202 and runs nothing twice', async () => {
    const id = await simulate(c, { ring_seconds: 2, talk_seconds: 120 })
    await eventOf(c, id, 'call.answered')
    const headers = { 'idempotency-key': `hangup-${id}` }
    const first = await t.call('POST', `/v1/calls/${id}`, { key: c.key, account: c.account, headers, body: { action: 'hangup' } })
    expect(first.status).toBe(202)
    await eventOf(c, id, 'call.end')
    await eventOf(c, id, 'call.command_succeeded')
    const again = await t.call('POST', `/v1/calls/${id}`, { key: c.key, account: c.account, headers, body: { action: 'hangup' } })
    expect(again.status).toBe(202)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.body).toEqual(first.body)
    // without the key the call is over: 409
    const fresh = await command(c, id, { action: 'hangup' })
    expect(fresh.status).toBe(409)
    await quiescence(t, c.account, callActors(id))
    expect(typesOf(c, id).filter((x) => x === 'call.command_succeeded' || x === 'call.command_failed')).toEqual(['call.command_succeeded'])
  })

  test('404 call_not_found for a call not in the account; 400 for an unknown action', async () => {
    const r = await command(c, 'call_nope', { action: 'hangup' })
    expect(r.status).toBe(404)
    expect(r.body.code).toBe('call_not_found')
    const other = await sandbox()
    const id = await simulate(other, { ring_seconds: 1, talk_seconds: 5, recording: false })
    const foreign = await command(c, id, { action: 'hangup' })
    expect(foreign.status).toBe(404)
    const bad = await command(other, id, { action: 'explode' })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('validation_error')
  })

  test('hold and resume change the state; resume when not held and hold when held are 409 call_not_active', async () => {
    const id = await simulate(c, { ring_seconds: 20, talk_seconds: 120, recording: false })
    const notYet = await command(c, id, { action: 'hold' })
    expect(notYet.status).toBe(409) // still ringing
    expect(notYet.body.code).toBe('call_not_active')
    await eventOf(c, id, 'call.answered')
    const resume0 = await command(c, id, { action: 'resume' })
    expect(resume0.status).toBe(409)
    expect(resume0.body.code).toBe('call_not_active')
    const hold = await command(c, id, { action: 'hold' })
    expect(hold.status).toBe(202)
    const held = await eventOf(c, id, 'call.command_succeeded')
    expect(held.data).toEqual({ call_id: id, command: 'hold', command_id: hold.body.id })
    const hold2 = await command(c, id, { action: 'hold' })
    expect(hold2.status).toBe(409)
    const resume = await command(c, id, { action: 'resume' })
    expect(resume.status).toBe(202)
    const resumed = await eventOf(c, id, 'call.command_succeeded', 2)
    expect(resumed.data).toMatchObject({ command: 'resume', command_id: resume.body.id })
    const hang = await command(c, id, { action: 'hangup' })
    expect(hang.status).toBe(202)
    const end = await eventOf(c, id, 'call.end')
    expect(end.data.status).toBe('completed')
  }, 15_000)

  test('blind transfer (rule 6): call.transfer on the original, which ends; the new leg has its own full event set', async () => {
    const id = await simulate(c, { ring_seconds: 20, talk_seconds: 120, recording: false })
    const ringing = await command(c, id, { action: 'transfer', to: '+15551110000' })
    expect(ringing.status).toBe(409)
    await eventOf(c, id, 'call.answered')
    const badTo = await command(c, id, { action: 'transfer', to: 'usr_nobody' })
    expect(badTo.status).toBe(400)
    const r = await command(c, id, { action: 'transfer', to: '+15551110000', mode: 'blind' })
    expect(r.status).toBe(202)
    const tr = await eventOf(c, id, 'call.transfer')
    const leg = tr.data.related_call as string
    expect(leg).toMatch(/^call_/)
    expect(tr.data).toMatchObject({ call_id: id, transferred_to: '+15551110000', transferred_by: c.user, related_call: leg })
    const end = await eventOf(c, id, 'call.end')
    expect(end.data.status).toBe('completed')
    expect((await eventOf(c, id, 'call.command_succeeded')).data).toEqual({ call_id: id, command: 'transfer', command_id: r.body.id })
    const legEnd = await eventOf(c, leg, 'call.end')
    expect(legEnd.data.status).toBe('completed')
    expect(typesOf(c, leg)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
    const legLog = await t.call('GET', `/v1/calls/${leg}`, c)
    expect(legLog.body.related_call).toBe(id)
    // a transfer to a user of the account is accepted too
    const id2 = await simulate(c, { ring_seconds: 1, talk_seconds: 120, recording: false })
    await eventOf(c, id2, 'call.answered')
    const toUser = await command(c, id2, { action: 'transfer', to: c.user })
    expect(toUser.status).toBe(202)
    expect((await eventOf(c, id2, 'call.transfer')).data.transferred_to).toBe(c.user)
  }, 15_000)
})

describe('recording pause and resume', () => {
  let c: Ctx
  beforeAll(async () => {
    c = await sandbox()
  })

  test('pause and resume keep a single file with a silent gap: exact zero samples in the paused range', async () => {
    const id = await simulate(c, { ring_seconds: 20, talk_seconds: 120 })
    const early = await t.call('POST', `/v1/calls/${id}/recording/pause`, c)
    expect(early.status).toBe(409) // ringing
    expect(early.body.code).toBe('call_not_active')
    const answered = await eventOf(c, id, 'call.answered')
    await untilClockPasses(t, answered.data.answered_at, 5) // about 5 simulated seconds of talk before the pause
    const resume0 = await t.call('POST', `/v1/calls/${id}/recording/resume`, c)
    expect(resume0.status).toBe(409)
    expect(resume0.body.code).toBe('recording_not_paused')
    const pause = await t.call('POST', `/v1/calls/${id}/recording/pause`, c)
    expect(pause.status).toBe(200)
    expect(pause.body).toMatchObject({ object: 'call_recording', call_id: id, status: 'paused' })
    expect(pause.body.pauses).toHaveLength(1)
    expect(pause.body.pauses[0].to_ms).toBeNull()
    const pause2 = await t.call('POST', `/v1/calls/${id}/recording/pause`, c)
    expect(pause2.status).toBe(409)
    expect(pause2.body.code).toBe('recording_not_active')
    await untilClockPasses(t, Date.parse(answered.data.answered_at) + pause.body.pauses[0].from_ms, 7.5) // about 7.5 simulated seconds paused
    const resume = await t.call('POST', `/v1/calls/${id}/recording/resume`, c)
    expect(resume.status).toBe(200)
    expect(resume.body.status).toBe('recording')
    const [{ from_ms, to_ms }] = resume.body.pauses
    expect(to_ms - from_ms).toBeGreaterThan(2000)
    await untilClockPasses(t, Date.parse(answered.data.answered_at) + to_ms, 5) // about 5 simulated seconds of talk after the gap
    expect((await command(c, id, { action: 'hangup' })).status).toBe(202)
    const rec = await eventOf(c, id, 'recording.available')
    const recording = await t.call('GET', `/v1/calls/${id}/recording`, c)
    expect(recording.status).toBe(200)
    const audio = await fetch(recording.body.url)
    const samples = decodeWavSamples(new Uint8Array(await audio.arrayBuffer()))
    expect(samples.length).toBe(rec.data.duration_seconds * 8000)
    const [a, b] = [from_ms * 8, to_ms * 8]
    expect(b).toBeLessThanOrEqual(samples.length)
    expect(samples.slice(a, b).every((s) => s === 0)).toBe(true)
    // the talk around the gap is not silence
    expect(samples.slice(Math.max(0, a - 800), a).some((s) => s !== 0)).toBe(true)
    expect(samples.slice(b, b + 800).some((s) => s !== 0)).toBe(true)
    expect(samples.slice(0, a).filter((s) => s === 0).length).toBeLessThan(a / 10)
    // after the end: 409 call_not_active
    const late = await t.call('POST', `/v1/calls/${id}/recording/pause`, c)
    expect(late.status).toBe(409)
    expect(late.body.code).toBe('call_not_active')
  }, 15_000)

  test('409 recording_not_active on a call that is not recorded; 404 for an unknown call', async () => {
    const id = await simulate(c, { ring_seconds: 1, talk_seconds: 120, recording: false })
    await eventOf(c, id, 'call.answered')
    const r = await t.call('POST', `/v1/calls/${id}/recording/pause`, c)
    expect(r.status).toBe(409)
    expect(r.body.code).toBe('recording_not_active')
    expect((await command(c, id, { action: 'hangup' })).status).toBe(202)
    const missing = await t.call('POST', '/v1/calls/call_nope/recording/resume', c)
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe('call_not_found')
  })
})

describe('listeners', () => {
  let c: Ctx
  beforeAll(async () => {
    c = await sandbox()
  })

  test('refused while ringing and after the end (call_not_active); created, listed, fetched, deleted on an answered call; ended when the call ends', async () => {
    const id = await simulate(c, { ring_seconds: 20, talk_seconds: 120, recording: false })
    const ringing = await t.call('POST', `/v1/calls/${id}/listeners`, { ...c, body: {} })
    expect(ringing.status).toBe(409)
    expect(ringing.body.code).toBe('call_not_active')
    await eventOf(c, id, 'call.answered')
    const l1 = await t.call('POST', `/v1/calls/${id}/listeners`, { ...c, body: {} })
    expect(l1.status).toBe(200)
    expect(l1.body.id).toMatch(/^lst_/)
    expect(l1.body).toMatchObject({ object: 'call_listener', call_id: id, user: null, mode: 'listen', status: 'active' })
    const l2 = await t.call('POST', `/v1/calls/${id}/listeners`, { ...c, body: { user: c.user, mode: 'whisper' } })
    expect(l2.status).toBe(200)
    expect(l2.body).toMatchObject({ user: c.user, mode: 'whisper', status: 'active' })
    const badUser = await t.call('POST', `/v1/calls/${id}/listeners`, { ...c, body: { user: 'usr_nobody', mode: 'barge' } })
    expect(badUser.status).toBe(400)
    const badMode = await t.call('POST', `/v1/calls/${id}/listeners`, { ...c, body: { mode: 'shout' } })
    expect(badMode.status).toBe(400)

    const list = await t.call('GET', `/v1/calls/${id}/listeners?limit=1`, c)
    expect(list.status).toBe(200)
    expect(list.body.data.map((l: any) => l.id)).toEqual([l2.body.id])
    expect(list.body.next_page_url).toEqual(expect.any(String))
    const got = await t.call('GET', `/v1/calls/${id}/listeners/${l1.body.id}`, c)
    expect(got.body).toMatchObject({ id: l1.body.id, status: 'active' })
    const del = await t.call('DELETE', `/v1/calls/${id}/listeners/${l1.body.id}`, c)
    expect(del.status).toBe(200)
    expect(del.body).toMatchObject({ id: l1.body.id, status: 'ended' })
    const missing = await t.call('GET', `/v1/calls/${id}/listeners/lst_nope`, c)
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe('listener_not_found')

    expect((await command(c, id, { action: 'hangup' })).status).toBe(202)
    await eventOf(c, id, 'call.end')
    await quiescence(t, c.account, callActors(id))
    const after = await t.call('GET', `/v1/calls/${id}/listeners`, c)
    expect(after.body.data.map((l: any) => l.status)).toEqual(['ended', 'ended'])
    const late = await t.call('POST', `/v1/calls/${id}/listeners`, { ...c, body: { mode: 'listen' } })
    expect(late.status).toBe(409)
    expect(late.body.code).toBe('call_not_active')
    const unknown = await t.call('GET', '/v1/calls/call_nope/listeners', c)
    expect(unknown.status).toBe(404)
    expect(unknown.body.code).toBe('call_not_found')
  }, 15_000)
})
