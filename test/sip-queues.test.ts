/**
 * Real calls that wait in a queue, with sipp (Debian `sip-tester`) as the carrier
 * and as the agents' phones, over UDP on loopback (test/support/sip-phones.ts):
 *  - the carrier's call waits in a queue (183, early media: the caller hears the
 *    queue), both agents' phones ring at once, one answers, the other is cancelled;
 *    the queue.call.* events are the simulator's for the same call, ending completed
 *    by the agent who answered;
 *  - an agent with no registered phone cannot take the call: the caller waits out the
 *    queue's max wait and goes on to its timeout target, a user whose phone answers;
 *    so it does when the queue's timeout notice is lost on the bus (the media role
 *    reads the queue's record);
 *  - the caller hangs up while an agent's phone rings: the queue reports the caller
 *    abandoned and the agent's phone gets CANCEL;
 *  - an agent's phone that refuses at once (486) is not rung again before the
 *    offer's ring time is over (no tight loop of offers).
 */
import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { events as eventRows } from '../src/db/schema'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { carrierNumbers, expectAllPassed, sipAccount, sipWorkFolder, sipp, sox, withSipp } from './support/sip-phones'

const t = await startTestService({ SIP_TRUNK_SOURCES: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const work = sipWorkFolder('sip-queues-')
const { numberRoutedTo, endedCallTo, call: carrierCall } = carrierNumbers(t)

type Account = Awaited<ReturnType<typeof sipAccount>>

/** A queue of these users, with its settings. */
async function queueOf(a: Account, members: string[], settings: Record<string, unknown> = {}) {
  const q = await t.call('POST', '/v1/queues', { ...a.c, body: { name: 'Help desk', ...settings } })
  expect([q.status, q.body.details]).toEqual([200, undefined])
  for (const user of members) expect((await t.call('POST', `/v1/queues/${q.body.id}/members`, { ...a.c, body: { user } })).status).toBe(200)
  return q.body.id as string
}

const queueEvents = (events: any[]) => events.filter((e) => e.type.startsWith('queue.call.'))

if (!sipp || !sox) test.skip(`real calls in queues (skipped: ${!sipp ? 'sipp is not installed; Debian package sip-tester' : 'sox is not installed'})`, () => {})

describe.skipIf(!sipp || !sox)('real calls wait in queues', () => {
  test(
    'a carrier’s call waits in a queue: both agents’ phones ring, one answers, the other is cancelled; queued, dispatched, answered, completed',
    async () => {
      const a = await sipAccount(t, work, 2)
      const [bob, carol] = a.lines as [Account['lines'][0], Account['lines'][0]]
      const bobRings = (await bob.register())('answer-ring.xml')
      const carolAnswers = (await carol.register())('answer.xml')
      const queue = await queueOf(a, [bob.user, carol.user])
      const number = await numberRoutedTo(a.c, queue)
      // The carrier's scenario needs the 183 (the queue as early media) before the 200.
      expectAllPassed(await carrierCall(work, 'trunk-call-prompt.xml', number), await carolAnswers, await bobRings)

      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ direction: 'inbound', status: 'completed', user_id: carol.user })
      const events = await a.eventsOf(call.id, 'queue.call.completed')
      const q = queueEvents(events)
      expect(q.map((e) => e.type)).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.answered', 'queue.call.completed'])
      expect(q[0].data).toMatchObject({ queue: queue, queue_name: 'Help desk', to_number: number })
      expect(q[2].data.agent_user).toBe(carol.user)
      expect(q[3].data.agent_user).toBe(carol.user)
      // The phone that took the call is the agent's endpoint, as the call log's endpoint filter knows it.
      expect([q[2].data.agent_endpoint, q[3].data.agent_endpoint]).toEqual([carol.device, carol.device])
      expect((await t.call('GET', `/v1/calls?endpoint_id=${carol.device}`, a.c)).body.data.map((c: any) => c.id)).toEqual([call.id])
      expect((await t.call('GET', `/v1/calls?endpoint_id=${bob.device}`, a.c)).body.data).toEqual([])
      const calls = events.filter((e) => e.type.startsWith('call.') && !e.type.startsWith('call.command_')).map((e) => e.type)
      expect(calls[0]).toBe('call.incoming')
      expect(calls.slice(-2)).toEqual(['call.answered', 'call.end'])
      await a.stop()
    },
    withSipp(90_000),
  )

  /**
   * A queue whose only agent has no registered phone: the carrier's caller waits out
   * max wait, then the timeout target's phone answers. `loseTimeoutNotices`: the bus
   * loses every timeout notice of the queue on its way to the media role.
   */
  async function waitsOutToTheTimeoutTarget(loseTimeoutNotices: boolean) {
    const a = await sipAccount(t, work, 2)
    const [away, carol] = a.lines as [Account['lines'][0], Account['lines'][0]]
    const carolAnswers = (await carol.register())('answer.xml')
    const queue = await queueOf(a, [away.user], { max_wait_seconds: 2, timeout_target: carol.user })
    const number = await numberRoutedTo(a.c, queue)
    const b2bua = t.service.media!.b2bua!
    const deliver = b2bua.queueCaller
    const lost: string[] = []
    if (loseTimeoutNotices)
      b2bua.queueCaller = (notice) => (notice.kind === 'timeout' && notice.queue_id === queue ? void lost.push(notice.call_id) : deliver(notice))
    try {
      expectAllPassed(await carrierCall(work, 'trunk-call-prompt.xml', number), await carolAnswers)
    } finally {
      b2bua.queueCaller = deliver
    }
    const call = await endedCallTo(a, number)
    expect(lost).toEqual(loseTimeoutNotices ? [call.id] : [])
    expect(call).toMatchObject({ status: 'completed', user_id: carol.user })
    const events = await a.eventsOf(call.id)
    expect(queueEvents(events).map((e) => e.type)).toEqual(['queue.call.queued', 'queue.call.timed_out'])
    expect(events.filter((e) => e.type === 'call.ringing').map((e) => e.data.user_id)).toEqual([carol.user])
    await a.stop()
  }

  test(
    'an agent with no registered phone cannot take the call: the caller waits out max wait, then the timeout target’s phone answers',
    () => waitsOutToTheTimeoutTarget(false),
    withSipp(90_000),
  )

  test(
    'the queue’s timeout notice is lost: the caller still goes on to the timeout target, by the queue’s own record',
    () => waitsOutToTheTimeoutTarget(true),
    withSipp(90_000),
  )

  test(
    'an agent logs out while their phone rings for the caller: the phone gets CANCEL before the caller’s max wait, the caller waits on and reaches the timeout target',
    async () => {
      const a = await sipAccount(t, work, 2)
      const [bob, carol] = a.lines as [Account['lines'][0], Account['lines'][0]]
      // Bob's phone rings until it is cancelled: by his logout, before the caller's max wait (12 s) would cancel it too.
      const bobRings = (await bob.register())('answer-ring.xml')
      const carolAnswers = (await carol.register())('answer.xml')
      const queue = await queueOf(a, [bob.user], { max_wait_seconds: 12, timeout_target: carol.user })
      const number = await numberRoutedTo(a.c, queue)
      const carrier = carrierCall(work, 'trunk-call-prompt.xml', number)
      await until('Bob’s phone rings', async () => (await a.events()).some((e) => e.type === 'call.ringing' && e.data.user_id === bob.user), 30_000)
      expect((await t.call('POST', `/v1/users/${bob.user}/queue-agent`, { ...a.c, body: { status: 'unavailable' } })).status).toBe(200)
      expectAllPassed(await bobRings)
      // Cancelled by the logout, not by the timeout: the queue has not timed the caller out yet.
      const timedOut = await t.service.database.db
        .select({ id: eventRows.id })
        .from(eventRows)
        .where(and(eq(eventRows.accountId, a.c.account), eq(eventRows.type, 'queue.call.timed_out')))
      expect(timedOut).toEqual([])
      expectAllPassed(await carrier, await carolAnswers)

      const call = await endedCallTo(a, number)
      expect(call).toMatchObject({ status: 'completed', user_id: carol.user })
      const events = await a.eventsOf(call.id)
      expect(queueEvents(events).map((e) => e.type)).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.timed_out'])
      await a.stop()
    },
    withSipp(90_000),
  )

  test(
    'the caller hangs up while the agent’s phone rings: abandoned, and the agent’s phone gets CANCEL',
    async () => {
      const a = await sipAccount(t, work, 1)
      const [bob] = a.lines as [Account['lines'][0]]
      const bobRings = (await bob.register())('answer-ring.xml')
      const queue = await queueOf(a, [bob.user])
      const number = await numberRoutedTo(a.c, queue)
      expectAllPassed(await carrierCall(work, 'trunk-call-cancel.xml', number), await bobRings)

      const call = await endedCallTo(a, number)
      expect(call.status).toBe('no-answer')
      const events = await a.eventsOf(call.id, 'queue.call.abandoned')
      expect(queueEvents(events).map((e) => e.type)).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.abandoned'])
      expect(events.filter((e) => e.type === 'call.ringing').map((e) => e.data.user_id)).toEqual([bob.user])
      // The agent is free again: their presence leaves on_call.
      await until('Bob is available', async () => (await t.call('GET', `/v1/users/${bob.user}/presence`, a.c)).body.status === 'available')
      await a.stop()
    },
    withSipp(90_000),
  )

  test(
    'an agent whose phone refuses leaves the offer at once: the next caller is offered to them while the other agent’s phone still rings',
    async () => {
      const a = await sipAccount(t, work, 2)
      const [bob, carol] = a.lines as [Account['lines'][0], Account['lines'][0]]
      // Bob's phone refuses both callers at once (486); Carol's rings 10 s before she picks up the first.
      const bobRefuses = (await bob.register())('answer-busy.xml', ['unused'], ['-m', '2'])
      const carolAnswersLate = (await carol.register())('answer-after-ringing.xml')
      const queue = await queueOf(a, [bob.user, carol.user])
      const number = await numberRoutedTo(a.c, queue)
      const first = carrierCall(work, 'trunk-call-prompt.xml', number)
      await until('the first caller queued', async () => (await a.events()).some((e) => e.type === 'queue.call.queued'), 30_000)
      // The second caller gives up after 4 s, long before Carol answers the first: only an agent freed by the refusal can be offered it.
      const second = carrierCall(work, 'trunk-call-cancel.xml', number)
      expectAllPassed(await first, await second, await carolAnswersLate, await bobRefuses)

      const queued = (await a.events()).filter((e) => e.type === 'queue.call.queued').map((e) => e.data.call_id as string)
      expect(queued).toHaveLength(2)
      const [firstCall, secondCall] = queued as [string, string]
      const firstEvents = await a.eventsOf(firstCall, 'queue.call.completed')
      const secondEvents = await a.eventsOf(secondCall, 'queue.call.abandoned')
      expect(queueEvents(firstEvents).map((e) => e.type)).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.answered', 'queue.call.completed'])
      expect(queueEvents(firstEvents)[2].data.agent_user).toBe(carol.user)
      expect(queueEvents(secondEvents).map((e) => e.type)).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.abandoned'])
      // Bob's phone took two INVITEs (sipp -m 2 passed), the second caller's offered while Carol's phone still rang for the first.
      const answered = Date.parse(queueEvents(firstEvents)[2].data.answered_at)
      const secondDispatched = Date.parse(queueEvents(secondEvents)[1].data.dispatched_at)
      expect(secondDispatched).toBeLessThan(answered)
      await a.stop()
    },
    withSipp(90_000),
  )

  test(
    'an agent’s phone that answers busy at once is offered the caller again only after the ring time, not in a loop',
    async () => {
      const a = await sipAccount(t, work, 1)
      const [bob] = a.lines as [Account['lines'][0]]
      const bobBusy = (await bob.register())('answer-busy.xml')
      const queue = await queueOf(a, [bob.user])
      const number = await numberRoutedTo(a.c, queue)
      // The caller waits 4 s, well within the offer's 15 s of ringing, and gives up.
      expectAllPassed(await carrierCall(work, 'trunk-call-cancel.xml', number), await bobBusy)
      const call = await endedCallTo(a, number)
      const events = await a.eventsOf(call.id, 'queue.call.abandoned')
      expect(queueEvents(events).map((e) => e.type)).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.abandoned'])
      await a.stop()
    },
    withSipp(90_000),
  )
})
