/**
 * The queue actor with a real caller (attachment `{ sip: { media_node } }`): its
 * offers and timeout are notices to the media role, it never plays the sandbox's
 * phones for such a caller, and an offer whose notice was lost (nobody reports on
 * it) ends by the queue's own ring-end timer and is offered again. PGlite, or
 * PostgreSQL when DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { manualClock } from '../../src/clock'
import { type Database, openDatabase } from '../../src/db/client'
import { durableTimers, events } from '../../src/db/schema'
import { newId } from '../../src/ids'
import { dueTimersOf } from '../../src/scheduler/durable-timers'
import type { QueueCallerNotice } from '../../src/services/routing/queue-caller-notices'
import { CALL_KIND } from '../calls/messages'
import { spawnInTx, tellActor } from '../runtime/commands'
import { ActorHost } from '../runtime/host'
import { QUEUE_KIND, queueHandoff } from './messages'
import { createQueueKind, REAL_OFFER_END_SECONDS } from './queue-actor'
import { sipQueueCallers } from './sip-queue'

let database: Database
const clock = manualClock('2026-03-02T10:00:00.000Z')
const owner = { platformId: 'plat_queue_actor', accountId: 'acct_queue_actor', mode: 'test' as const }

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
})
afterAll(async () => {
  await database?.db.delete(durableTimers).where(eq(durableTimers.actorKind, QUEUE_KIND))
  await database?.close()
})

/** A queue actor host whose notices to the media role are kept. */
function queueHost() {
  const notices: QueueCallerNotice[] = []
  const host = new ActorHost({
    db: database.db,
    clock,
    kinds: [createQueueKind({ clock, onQueueCaller: (n) => notices.push(n) }).kind] as never,
    pollTimers: false,
  })
  return { host, notices }
}

/** A real caller arriving at a new queue with one agent (available unless said otherwise). */
async function realCallerArrives(host: ActorHost, agent: string, o: { status?: 'available' | 'offline'; maxWaitSeconds?: number } = {}) {
  const queueId = newId('queue')
  const callId = newId('call')
  const at = clock.now().toISOString()
  const h = queueHandoff(
    { queue_id: queueId, queue_name: 'Help desk', max_wait_seconds: o.maxWaitSeconds ?? 120 },
    owner,
    {
      type: 'CALLER_ARRIVED',
      call_id: callId,
      from_number: '+15551230000',
      to_number: '+15557654321',
      attachment: { sip: { media_node: 'media-test' } },
      agents: [{ user_id: agent, status: o.status ?? 'available' }],
      at,
    },
    newId('command'),
  )
  await host.fire(await database.db.transaction((tx) => spawnInTx(tx, clock, QUEUE_KIND, queueId, h.input)))
  return { queueId, callId }
}

const queueEventTypes = async (callId: string) =>
  (
    await database.db
      .select({ type: events.type, body: events.body })
      .from(events)
      .where(and(eq(events.accountId, owner.accountId)))
  )
    .filter((e) => JSON.parse(e.body).data?.call_id === callId)
    .map((e) => e.type)

describe('queue actor: a real caller', () => {
  test('the offer is a notice to the media role, and the agent’s answer it reports is the queue’s answer; the call actor is told nothing', async () => {
    const { host, notices } = queueHost()
    const agent = newId('user')
    const { queueId, callId } = await realCallerArrives(host, agent)
    expect(notices).toEqual([{ kind: 'offer', queue_id: queueId, call_id: callId, agents: [agent], offered_at: clock.now().toISOString() }])
    const offered_at = (notices[0] as { offered_at: string }).offered_at
    await host.fire(
      await tellActor(database.db, clock, QUEUE_KIND, queueId, {
        type: 'AGENT_ANSWERED',
        call_id: callId,
        user_id: agent,
        offered_at,
        at: clock.now().toISOString(),
      }),
    )
    expect(await sipQueueCallers({ db: database.db, clock }).standing(queueId, callId)).toBe('connected')
    await host.fire(await tellActor(database.db, clock, QUEUE_KIND, queueId, { type: 'CALL_ENDED', call_id: callId, at: clock.now().toISOString() }))
    expect(await queueEventTypes(callId)).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.answered', 'queue.call.completed'])
    // The sandbox's scripted phones (ANSWER, HANGUP to the call) are not played for a real caller.
    const toCall = await database.db
      .select()
      .from(durableTimers)
      .where(and(eq(durableTimers.actorKind, CALL_KIND), eq(durableTimers.actorId, callId)))
    expect(toCall).toEqual([])
  })

  test('an offer nobody reports on (its notice lost) ends by the queue’s ring-end timer and is offered again', async () => {
    const { host, notices } = queueHost()
    const agent = newId('user')
    const { queueId, callId } = await realCallerArrives(host, agent)
    expect(notices).toHaveLength(1)
    clock.advance((REAL_OFFER_END_SECONDS - 1) * 1000)
    expect(await dueTimersOf(database.db, clock.now(), QUEUE_KIND, queueId)).toEqual([])
    clock.advance(1000)
    const due = await dueTimersOf(database.db, clock.now(), QUEUE_KIND, queueId)
    expect(due.map((d) => (d.event as { type: string }).type)).toEqual(['OFFER_ENDED'])
    await host.fire(due[0]!)
    expect(notices.map((n) => n.kind)).toEqual(['offer', 'offer'])
    expect((notices[1] as { offered_at: string }).offered_at).toBe(clock.now().toISOString())
    expect(await queueEventTypes(callId)).toEqual(['queue.call.queued', 'queue.call.dispatched', 'queue.call.dispatched'])
  })

  test('an agent logged out mid-offer: a cancel notice names them (the media role stops their phones), and the caller waits again', async () => {
    const { host, notices } = queueHost()
    const agent = newId('user')
    const { queueId, callId } = await realCallerArrives(host, agent)
    await host.fire(
      await tellActor(database.db, clock, QUEUE_KIND, queueId, { type: 'AGENT_STATUS', user_id: agent, status: 'offline', at: clock.now().toISOString() }),
    )
    expect(notices.map((n) => n.kind)).toEqual(['offer', 'cancel'])
    expect(notices[1]).toEqual({ kind: 'cancel', queue_id: queueId, call_id: callId, agents: [agent], at: clock.now().toISOString() })
    expect(await queueEventTypes(callId)).toEqual(['queue.call.queued', 'queue.call.dispatched'])
  })

  test('max wait: the caller times out with a notice (the media role goes on with the plan)', async () => {
    const { host, notices } = queueHost()
    // An agent who is logged out: nobody is offered the caller, who waits out max wait.
    const { queueId, callId } = await realCallerArrives(host, newId('user'), { status: 'offline', maxWaitSeconds: 30 })
    expect(notices).toEqual([])
    // What the media role reads when the notice may have been lost: waiting, then departed.
    const callers = sipQueueCallers({ db: database.db, clock })
    expect(await callers.standing(queueId, callId)).toBe('waiting')
    expect(await callers.standing(queueId, newId('call'))).toBe('unknown')
    expect(await callers.standing(newId('queue'), callId)).toBe('unknown')
    clock.advance(30_000)
    const [due] = await dueTimersOf(database.db, clock.now(), QUEUE_KIND, queueId)
    await host.fire(due!)
    expect(notices).toEqual([{ kind: 'timeout', queue_id: queueId, call_id: callId, at: clock.now().toISOString() }])
    expect(await queueEventTypes(callId)).toEqual(['queue.call.queued', 'queue.call.timed_out'])
    expect(await callers.standing(queueId, callId)).toBe('departed')
  })
})
