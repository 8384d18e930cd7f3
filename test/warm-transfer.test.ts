/**
 * Warm transfer end to end (POST /v1/calls/{call_id} with `{action:'transfer', mode:'warm'}`
 * and `{action:'complete_transfer'}`, spec "Call events" rule 6): the answered primary call
 * is held and a consultation call is placed to the target; completing the transfer ends the
 * consultation call with call.transfer as its last event (no call.end) and resumes the
 * primary, which ends normally later; hanging up the consultation call cancels the transfer
 * and leaves the primary held.
 *
 * The real server at VOICE_CLOCK_SPEED=25 (120 s of talk take 4.8 s real: time enough to
 * act mid-call; the consultation is answered 2 simulated seconds, 80 ms real, after it
 * starts), a real webhook receiver with verified signatures.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { startTestService } from './support/service'
import { callSandboxes, type CallSandbox } from './support/call-sandbox'
import { until } from './support/polling'
import { callActors, quiescence } from './support/quiescence'
import { untilClockPasses } from './support/simulated-time'

const SPEED = 25
const t = await startTestService({ VOICE_CLOCK_SPEED: String(SPEED), WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })

type Ctx = CallSandbox
const { sandbox, simulate, command, eventOf } = callSandboxes(t)
/** The call lifecycle events of a call (call.command_* left out), in arrival order. */
const typesOf = (c: Ctx, callId: string) =>
  c.rx
    .events()
    .filter((e) => e.data?.call_id === callId && !String(e.type).startsWith('call.command_'))
    .map((e) => e.type as string)

/**
 * Polls `hold` on a call until it is accepted (202): the call is connected and not held.
 * A completed warm transfer resumes the primary asynchronously (the consultation call's
 * step tells it), so the first tries may still find it held (409 call_not_active).
 */
function holdOnceResumed(c: Ctx, id: string, timeoutMs = 5_000) {
  return until(
    `a hold accepted on ${id} (resumed)`,
    async () => {
      const r = await command(c, id, { action: 'hold' })
      if (r.status === 202) return r
      expect(r.status).toBe(409)
      expect(r.body.code).toBe('call_not_active')
      return undefined
    },
    timeoutMs,
  )
}

/** Starts an answered inbound primary call, then warm-transfers it to `to`; answers the ids and the 202. */
async function warmTransfer(c: Ctx, to: string) {
  const primary = await simulate(c, { ring_seconds: 1, talk_seconds: 120, recording: false })
  await eventOf(c, primary, 'call.answered')
  const r = await command(c, primary, { action: 'transfer', to, mode: 'warm' })
  expect(r.status).toBe(202)
  const consultation = r.body.consultation_call_id as string
  expect(consultation).toMatch(/^call_/)
  expect(consultation).not.toBe(primary)
  return { primary, consultation, reply: r }
}

describe('warm transfer (rule 6)', () => {
  let c: Ctx
  beforeAll(async () => {
    c = await sandbox()
  })

  test('completed to a number: the consultation ends with call.transfer (no call.end), the primary resumes and ends normally', async () => {
    const { primary, consultation, reply } = await warmTransfer(c, '+15557770001')
    const commandId = reply.body.id as string
    expect(commandId).toMatch(/^cmd_/)
    expect(reply.body).toEqual({ object: 'call_command', call_id: primary, command: 'transfer', id: commandId, consultation_call_id: consultation })
    const ok = await eventOf(c, primary, 'call.command_succeeded')
    expect(ok.data).toEqual({ call_id: primary, command: 'transfer', command_id: commandId, consultation_call_id: consultation })

    const initiated = await eventOf(c, consultation, 'call.initiated')
    expect(initiated.data).toMatchObject({
      call_id: consultation,
      direction: 'outbound',
      to_number: '+15557770001',
      from_number: c.number,
      user_id: c.user,
      from_user_id: c.user,
    })
    const answered = await eventOf(c, consultation, 'call.answered')
    expect(answered.data.answered_at).toEqual(expect.any(String))
    // the primary is on hold meanwhile, still in flight
    const live = await t.call('GET', `/v1/calls/${primary}`, c)
    expect(live.status).toBe(200)
    expect(live.body.status).toBeNull()
    const heldNow = await command(c, primary, { action: 'hold' })
    expect(heldNow.status).toBe(409) // already on hold
    expect(heldNow.body.code).toBe('call_not_active')
    // the consultation call's log is there already, related to the primary
    const consultLive = await t.call('GET', `/v1/calls/${consultation}`, c)
    expect(consultLive.status).toBe(200)
    expect(consultLive.body).toMatchObject({ id: consultation, related_call: primary, status: null })

    const done = await command(c, consultation, { action: 'complete_transfer' })
    expect(done.status).toBe(202)
    const doneId = done.body.id as string
    expect(done.body).toEqual({ object: 'call_command', call_id: consultation, command: 'complete_transfer', id: doneId })
    const tr = await eventOf(c, consultation, 'call.transfer')
    expect(tr.data).toMatchObject({
      call_id: consultation,
      transferred_to: '+15557770001',
      transferred_by: c.user,
      related_call: primary,
    })
    expect(Date.parse(tr.data.transferred_at)).toBeGreaterThanOrEqual(Date.parse(answered.data.answered_at))
    const doneOk = await eventOf(c, consultation, 'call.command_succeeded')
    expect(doneOk.data).toEqual({ call_id: consultation, command: 'complete_transfer', command_id: doneId })

    // the primary resumes: a hold is accepted again (then resumed, so that it ends talking)
    const hold = await holdOnceResumed(c, primary)
    expect(hold.status).toBe(202)
    expect((await eventOf(c, primary, 'call.command_succeeded', 2)).data).toMatchObject({ command: 'hold', command_id: hold.body.id })
    const resume = await command(c, primary, { action: 'resume' })
    expect(resume.status).toBe(202)
    expect((await eventOf(c, primary, 'call.command_succeeded', 3)).data).toMatchObject({ command: 'resume', command_id: resume.body.id })

    // the consultation call is over (done, no timer left): no call.end follows
    await quiescence(t, c.account, callActors(consultation))
    expect(typesOf(c, consultation)).toEqual(['call.initiated', 'call.answered', 'call.transfer'])
    const again = await command(c, consultation, { action: 'hangup' })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe('call_not_active')
    const consultLog = await t.call('GET', `/v1/calls/${consultation}`, c)
    expect(consultLog.status).toBe(200)
    expect(consultLog.body).toMatchObject({ id: consultation, related_call: primary, from_user_id: c.user, to_number: '+15557770001' })
    // its log is final at the transfer (its last event): completed, ended when it was handed over
    expect(consultLog.body).toMatchObject({ status: 'completed', ended_at: tr.data.transferred_at })
    expect(consultLog.body.duration_seconds).toBe(Math.floor((Date.parse(tr.data.transferred_at) - Date.parse(answered.data.answered_at)) / 1000))

    // the primary ends normally
    const hang = await command(c, primary, { action: 'hangup' })
    expect(hang.status).toBe(202)
    const end = await eventOf(c, primary, 'call.end')
    expect(end.data.status).toBe('completed')
    expect(typesOf(c, primary)).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.end'])
    const log = await t.call('GET', `/v1/calls/${primary}`, c)
    expect(log.body).toMatchObject({ status: 'completed', duration_seconds: end.data.duration_seconds })
    // past the consultation's planned end (its target hangs up 2 + 120 simulated seconds after it
    // starts unless the transfer was completed): still no call.end for it
    await untilClockPasses(t, initiated.data.started_at, 2 + 120)
    await quiescence(t, c.account, callActors(consultation, primary))
    expect(c.rx.events().some((e) => e.type === 'call.end' && e.data?.call_id === consultation)).toBe(false)
    expect(typesOf(c, consultation)).toEqual(['call.initiated', 'call.answered', 'call.transfer'])
    // (the consultation call's log keeps status null: it never gets call.end, whose projection sets the status)
  }, 20_000)

  test('to a user of the account: the consultation rings that user, who takes the call over (presence on_call) until it ends', async () => {
    const u2 = await t.call('POST', '/v1/users', { key: c.key, account: c.account, body: { email: 'second@example.com', name: 'Second Agent' } })
    expect(u2.status).toBe(200)
    const target = u2.body.id as string
    const { primary, consultation } = await warmTransfer(c, target)
    expect((await eventOf(c, primary, 'call.command_succeeded')).data.consultation_call_id).toBe(consultation)
    const initiated = await eventOf(c, consultation, 'call.initiated')
    expect(initiated.data).toMatchObject({ call_id: consultation, direction: 'internal', user_id: c.user, from_user_id: c.user })
    const ringing = await eventOf(c, consultation, 'call.ringing')
    expect(ringing.data).toMatchObject({ call_id: consultation, user_id: target })
    const answered = await eventOf(c, consultation, 'call.answered')
    expect(answered.data).toMatchObject({ call_id: consultation, user_id: target, to_user_id: target })
    expect(typesOf(c, consultation)).toEqual(['call.initiated', 'call.ringing', 'call.answered'])
    const done = await command(c, consultation, { action: 'complete_transfer' })
    expect(done.status).toBe(202)
    const tr = await eventOf(c, consultation, 'call.transfer')
    expect(tr.data).toMatchObject({ call_id: consultation, transferred_to: target, transferred_by: c.user, related_call: primary })
    const hold = await holdOnceResumed(c, primary)
    expect(hold.status).toBe(202)
    // The target took the customer over: on a call; the agent who handed it over is free.
    const presenceOf = async (user: string) => (await t.call('GET', `/v1/users/${user}/presence`, c)).body.status as string
    await until('the target on the call', async () => (await presenceOf(target)) === 'on_call', 5_000)
    await until('the transferring agent off the call', async () => (await presenceOf(c.user)) !== 'on_call', 5_000)
    expect((await command(c, primary, { action: 'hangup' })).status).toBe(202)
    expect((await eventOf(c, primary, 'call.end')).data.status).toBe('completed')
    await until('the target off the call once it ends', async () => (await presenceOf(target)) !== 'on_call', 5_000)
    const log = await t.call('GET', `/v1/calls/${consultation}`, c)
    expect(log.body).toMatchObject({ related_call: primary, to_user_id: target })
  }, 20_000)

  test('cancelled: hanging up the consultation call ends it with call.end; the primary stays held until resumed', async () => {
    const { primary, consultation } = await warmTransfer(c, '+15557770002')
    await eventOf(c, consultation, 'call.answered')
    const hang = await command(c, consultation, { action: 'hangup' })
    expect(hang.status).toBe(202)
    const end = await eventOf(c, consultation, 'call.end')
    expect(end.data.status).toBe('completed')
    expect((await eventOf(c, consultation, 'call.command_succeeded')).data).toEqual({ call_id: consultation, command: 'hangup', command_id: hang.body.id })
    expect(typesOf(c, consultation)).toEqual(['call.initiated', 'call.answered', 'call.end'])
    const consultLog = await t.call('GET', `/v1/calls/${consultation}`, c)
    expect(consultLog.body).toMatchObject({ status: 'completed', related_call: primary })
    // the primary is still held (a few simulated seconds later)
    await untilClockPasses(t, end.data.ended_at, 5)
    const hold = await command(c, primary, { action: 'hold' })
    expect(hold.status).toBe(409)
    expect(hold.body.code).toBe('call_not_active')
    const live = await t.call('GET', `/v1/calls/${primary}`, c)
    expect(live.body.status).toBeNull()
    const resume = await command(c, primary, { action: 'resume' })
    expect(resume.status).toBe(202)
    expect((await eventOf(c, primary, 'call.command_succeeded', 2)).data).toEqual({ call_id: primary, command: 'resume', command_id: resume.body.id })
    const resume2 = await command(c, primary, { action: 'resume' })
    expect(resume2.status).toBe(409)
    expect(resume2.body.code).toBe('call_not_active')
    expect(c.rx.events().some((e) => e.type === 'call.transfer' && (e.data?.call_id === consultation || e.data?.call_id === primary))).toBe(false)
    expect((await command(c, primary, { action: 'hangup' })).status).toBe(202)
    expect((await eventOf(c, primary, 'call.end')).data.status).toBe('completed')
  }, 20_000)

  test('refusals: complete_transfer off a consultation, transfer on a consultation, warm transfer while ringing, bad mode, bad target', async () => {
    // complete_transfer on a primary (not a consultation) call
    const plain = await simulate(c, { ring_seconds: 1, talk_seconds: 120, recording: false })
    await eventOf(c, plain, 'call.answered')
    const notConsult = await command(c, plain, { action: 'complete_transfer' })
    expect(notConsult.status).toBe(409)
    expect(notConsult.body.code).toBe('call_transfer_not_allowed')
    // 400: a mode that does not exist; a target that is neither E.164 nor a user of the account
    const bogus = await command(c, plain, { action: 'transfer', to: '+15557770003', mode: 'bogus' })
    expect(bogus.status).toBe(400)
    expect(bogus.body.code).toBe('validation_error')
    for (const to of ['usr_nobody', '5557770003', 'not a number']) {
      const badTo = await command(c, plain, { action: 'transfer', to, mode: 'warm' })
      expect(badTo.status).toBe(400)
      expect(badTo.body.code).toBe('validation_error')
      expect(badTo.body.details?.to).toEqual(expect.any(String))
    }
    // a user of another account is not a target either
    const other = await sandbox()
    const foreignUser = await command(c, plain, { action: 'transfer', to: other.user, mode: 'warm' })
    expect(foreignUser.status).toBe(400)
    expect(foreignUser.body.details?.to).toEqual(expect.any(String))
    expect((await command(c, plain, { action: 'hangup' })).status).toBe(202)
    await eventOf(c, plain, 'call.end')

    // transfer (any mode) on a consultation call
    const { primary, consultation } = await warmTransfer(c, '+15557770004')
    await eventOf(c, consultation, 'call.answered')
    for (const body of [
      { action: 'transfer', to: '+15557770005', mode: 'warm' },
      { action: 'transfer', to: '+15557770005', mode: 'blind' },
      { action: 'transfer', to: '+15557770005' },
      { action: 'transfer', to: c.user, mode: 'warm' },
    ]) {
      const r = await command(c, consultation, body)
      expect(r.status).toBe(409)
      expect(r.body.code).toBe('call_transfer_not_allowed')
    }
    // complete_transfer on the held primary is refused too
    const onPrimary = await command(c, primary, { action: 'complete_transfer' })
    expect(onPrimary.status).toBe(409)
    expect(onPrimary.body.code).toBe('call_transfer_not_allowed')
    expect((await command(c, consultation, { action: 'hangup' })).status).toBe(202)
    await eventOf(c, consultation, 'call.end')
    expect((await command(c, primary, { action: 'hangup' })).status).toBe(202)
    await eventOf(c, primary, 'call.end')

    // warm transfer on a ringing call (20 simulated seconds of ring: 0.8 s real)
    const ringing = await simulate(c, { ring_seconds: 20, talk_seconds: 120, recording: false })
    const early = await command(c, ringing, { action: 'transfer', to: '+15557770006', mode: 'warm' })
    expect(early.status).toBe(409)
    expect(early.body.code).toBe('call_not_active')
    const earlyDone = await command(c, ringing, { action: 'complete_transfer' })
    expect(earlyDone.status).toBe(409)
    expect(earlyDone.body.code).toBe('call_transfer_not_allowed')
    await eventOf(c, ringing, 'call.answered')
    expect((await command(c, ringing, { action: 'hangup' })).status).toBe(202)
    await eventOf(c, ringing, 'call.end')
    // no command was run for the refused requests: the hangup's outcome is the only one
    expect((await eventOf(c, ringing, 'call.command_succeeded')).data.command).toBe('hangup')
    await quiescence(t, c.account, callActors(plain, primary, consultation, ringing))
    expect(
      c.rx
        .events()
        .filter((e) => e.type === 'call.command_succeeded' && e.data?.call_id === ringing)
        .map((e) => e.data.command),
    ).toEqual(['hangup'])
    expect(c.rx.events().filter((e) => e.type === 'call.command_failed')).toEqual([])
  }, 20_000)
})
