/**
 * A request whose work an actor does is committed with its answer: the 200 of a test
 * call and the 202 of a call command are written in one transaction with the durable
 * message for the actor (a spawn, a command) and the request's audit and idempotency
 * records. So the actor does the work even when no worker ran at the time of the
 * request (a crash between the answer and the actor cannot lose it), and a retry with
 * the same Idempotency-Key replays the answer without a second call.
 *
 * The service here has no worker role (gateway and delivery only, no NATS); the test
 * starts and stops a worker on the service's own database to play the crash.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { CALL_KIND } from '../actors/calls/messages'
import { embeddedWorkers, type ActorWorkers } from '../actors/workers'
import { actorSnapshots, durableTimers } from '../src/db/schema'
import { OUTBOX_WAKE_SUBJECT } from '../src/events/stream'
import { callSandboxes } from './support/call-sandbox'
import { until } from './support/polling'
import { startTestService } from './support/service'

const t = await startTestService({ VOICE_CLOCK_SPEED: '50', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1', NATS_URL: '' }, { args: ['--role', 'gateway,delivery'] })
const { sandbox, simulate, command, eventOf } = callSandboxes(t)
const db = t.service.database.db

const workers: ActorWorkers[] = []
function startWorker(): ActorWorkers {
  const w = embeddedWorkers({
    db,
    clock: t.service.clock,
    log: t.service.log,
    outboxCommitted: () => t.service.bus.publish(OUTBOX_WAKE_SUBJECT, ''),
  })
  workers.push(w)
  return w
}
const stopWorkers = async () => {
  for (const w of workers.splice(0)) await w.stop()
}
afterAll(stopWorkers)

const rowsFor = (id: string) =>
  db
    .select()
    .from(durableTimers)
    .where(and(eq(durableTimers.actorKind, CALL_KIND), eq(durableTimers.actorId, id)))
const actorOf = async (id: string) =>
  (
    await db
      .select()
      .from(actorSnapshots)
      .where(and(eq(actorSnapshots.kind, CALL_KIND), eq(actorSnapshots.id, id)))
  )[0]

describe('a test call is created with its answer', () => {
  test('the 200 commits the call actor’s spawn; a replay answers the same; a worker started later runs the call once', async () => {
    expect(t.service.actors).toBeUndefined() // no worker role: nothing runs actors in this process
    const c = await sandbox()
    const headers = { 'idempotency-key': `test-call-${crypto.randomUUID()}` }
    const body = { user: c.user, from_number: '+15551234567', scenario: { ring_seconds: 1, talk_seconds: 3, recording: false } }
    const first = await t.call('POST', '/v1/test_helpers/calls', { key: c.key, account: c.account, headers, body })
    expect(first.status).toBe(200)
    const id = first.body.id as string
    expect(first.body.call).toMatchObject({ id, status: null, direction: 'inbound', to_user_id: c.user })

    // Committed with the answer: the spawn message, and nothing has run yet.
    const spawn = await rowsFor(id)
    expect(spawn.map((r) => r.name)).toEqual(['$spawn'])
    expect(await actorOf(id)).toBeUndefined()
    expect((await t.call('GET', `/v1/calls/${id}`, c)).status).toBe(404)

    const replay = await t.call('POST', '/v1/test_helpers/calls', { key: c.key, account: c.account, headers, body })
    expect(replay.status).toBe(200)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(replay.body).toEqual(first.body)
    expect((await rowsFor(id)).length).toBe(1)

    startWorker()
    const end = await eventOf(c, id, 'call.end')
    expect(end.data.status).toBe('completed')
    const types = c.rx
      .events()
      .filter((e) => e.data?.call_id === id)
      .map((e) => e.type)
    expect(types).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.end'])
    expect((await t.call('GET', `/v1/calls/${id}`, c)).body.status).toBe('completed')
    expect(await rowsFor(id)).toEqual([])
    await stopWorkers()
  }, 20_000)
})

describe('a call command is committed with its 202', () => {
  test('a hangup accepted while no worker runs is run by the next worker: call.end, then call.command_succeeded', async () => {
    const c = await sandbox()
    startWorker()
    const id = await simulate(c, { ring_seconds: 1, talk_seconds: 120, recording: false })
    await eventOf(c, id, 'call.answered')
    // The only worker goes away mid-call (as a crashed one would, minus the crash).
    await stopWorkers()

    const r = await command(c, id, { action: 'hangup' })
    expect(r.status).toBe(202)
    const pending = await rowsFor(id)
    expect(pending.map((row) => row.name)).toContain(`$command:${r.body.id}`)
    expect((await actorOf(id))!.status).toBe('active')

    startWorker()
    const end = await eventOf(c, id, 'call.end')
    expect(end.data.status).toBe('completed')
    const ok = await eventOf(c, id, 'call.command_succeeded')
    expect(ok.data).toEqual({ call_id: id, command: 'hangup', command_id: r.body.id })
    await until('the command row taken', async () => (await rowsFor(id)).length === 0)
  }, 20_000)
})
