/**
 * The call actor (call.v1 bound to outbox + call log projection) and the simulator's
 * pure planning, on a manual clock. PGlite, or PostgreSQL when DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { manualClock } from '../../src/clock'
import { openDatabase, type Database } from '../../src/db/client'
import { accounts, calls, durableTimers, events, recordings } from '../../src/db/schema'
import { newId } from '../../src/ids'
import { ensureBootstrapPlatform } from '../../src/services/platform/platforms'
import { createCallKind } from './call-actor'
import { CALL_KIND, type CallActorInput, type CallCommandMessage } from './messages'
import { effectiveScenario, magicOf, planSimulation } from './simulation'
import { ActorHost } from '../runtime/host'
import { COMMAND_MESSAGE, sendCommand } from '../runtime/commands'
import type { CallCommand } from '../../machines/call'
import { and } from 'drizzle-orm'

let database: Database
let owner: CallActorInput['owner']
const clock = manualClock('2026-03-01T10:00:00.000Z')

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
  const { platformId } = await ensureBootstrapPlatform(database.db, clock, { liveEnabled: false })
  const accountId = newId('account')
  await database.db.insert(accounts).values({ id: accountId, platformId, mode: 'test', config: {} as never, createdAt: clock.now(), updatedAt: clock.now() })
  owner = { platformId, accountId, mode: 'test' }
})
afterAll(async () => {
  if (owner) await database.db.delete(accounts).where(eq(accounts.id, owner.accountId))
  await database?.close()
})

describe('call actor', () => {
  test('emits call.* into the outbox with the machine’s data, and projects the calls row (status null until the end)', async () => {
    const kind = createCallKind({ db: database.db, clock })
    const host = new ActorHost({ db: database.db, clock, kinds: [kind.kind] as never, pollTimers: false })
    const id = newId('call')
    const input: CallActorInput = {
      call_id: id,
      direction: 'inbound',
      from_number: '+15551230000',
      from_name: 'Caller',
      to_number: '+15005559000',
      started_at: '2026-03-01T10:00:00.000Z',
      user_id: 'usr_a',
      to_user_id: 'usr_a',
      owner,
    }
    await host.spawn(CALL_KIND, id, input)
    let [row] = await database.db.select().from(calls).where(eq(calls.id, id))
    expect(row).toMatchObject({ accountId: owner.accountId, mode: 'test', direction: 'inbound', status: null, fromLabel: 'Caller', userId: 'usr_a' })
    await host.send(CALL_KIND, id, { type: 'RING', user_id: 'usr_a', at: '2026-03-01T10:00:01.000Z' })
    await host.send(CALL_KIND, id, { type: 'ANSWER', user_id: 'usr_a', at: '2026-03-01T10:00:05.000Z' })
    ;[row] = await database.db.select().from(calls).where(eq(calls.id, id))
    expect(row!.status).toBeNull()
    expect(row!.answeredAt?.toISOString()).toBe('2026-03-01T10:00:05.000Z')
    const end = await host.send(CALL_KIND, id, { type: 'HANGUP', side: 'caller', at: '2026-03-01T10:00:47.000Z' })
    expect(end.status).toBe('done')
    ;[row] = await database.db.select().from(calls).where(eq(calls.id, id))
    expect(row).toMatchObject({ status: 'completed', durationSeconds: 42 })
    expect(row!.ringingAt?.toISOString()).toBe('2026-03-01T10:00:01.000Z')

    const evs = await database.db.select().from(events).where(eq(events.accountId, owner.accountId)).orderBy(events.seq)
    const bodies = evs.map((e) => JSON.parse(e.body)).filter((b) => b.data.call_id === id)
    expect(bodies.map((b) => b.type)).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.end'])
    for (const b of bodies) expect(b.account_id).toBe(owner.accountId)
    expect(bodies[3].data).toEqual({
      call_id: id,
      direction: 'inbound',
      from_number: '+15551230000',
      from_name: 'Caller',
      to_number: '+15005559000',
      user_id: 'usr_a',
      to_user_id: 'usr_a',
      started_at: '2026-03-01T10:00:00.000Z',
      answered_at: '2026-03-01T10:00:05.000Z',
      connected_at: '2026-03-01T10:00:05.000Z',
      ended_at: '2026-03-01T10:00:47.000Z',
      duration_seconds: 42,
      status: 'completed',
    })
    await host.close()
  })
})

describe('call commands (durable messages to the call actor)', () => {
  const input = (id: string): CallActorInput => ({
    call_id: id,
    direction: 'inbound',
    from_number: '+15551230000',
    from_name: null,
    to_number: '+15005559000',
    started_at: '2026-03-01T10:00:00.000Z',
    user_id: 'usr_a',
    to_user_id: 'usr_a',
    owner,
  })
  const command = (id: string, c: CallCommand['command'] & ('hangup' | 'hold')): CallCommandMessage => ({
    type: COMMAND_MESSAGE,
    call_id: id,
    command: { command: c },
    command_id: newId('command'),
    at: '2026-03-01T10:00:30.000Z',
    owner,
  })
  /** Writes the command as the gateway does, then delivers its row (no poller: only this actor's row). */
  const deliver = async (host: ActorHost, id: string, m: CallCommandMessage) => {
    await database.db.transaction((tx) => sendCommand(tx, clock, CALL_KIND, id, m))
    const [row] = await database.db
      .select()
      .from(durableTimers)
      .where(and(eq(durableTimers.actorId, id), eq(durableTimers.name, `${COMMAND_MESSAGE}:${m.command_id}`)))
    expect(row).toBeDefined()
    await host.fire(row as never)
    return (await database.db.select().from(durableTimers).where(eq(durableTimers.id, row!.id))).length
  }
  const bodiesOf = async (id: string) =>
    (await database.db.select().from(events).where(eq(events.accountId, owner.accountId)).orderBy(events.seq))
      .map((e) => JSON.parse(e.body))
      .filter((b) => b.data.call_id === id)

  test('a recording pause and its resume are written to the recordings row by the step that made them', async () => {
    // Before, the API wrote the interval in a transaction of its own after the step:
    // a crash in between left the call paused with no pause on record.
    const host = new ActorHost({ db: database.db, clock, kinds: [createCallKind({ db: database.db, clock }).kind] as never, pollTimers: false })
    const id = newId('call')
    await host.spawn(CALL_KIND, id, { ...input(id), record: true })
    await host.send(CALL_KIND, id, { type: 'RING', user_id: 'usr_a', at: '2026-03-01T10:00:01.000Z' })
    await host.send(CALL_KIND, id, { type: 'ANSWER', user_id: 'usr_a', at: '2026-03-01T10:00:05.000Z' })
    const pausesOf = async () => (await database.db.select().from(recordings).where(eq(recordings.callId, id)))[0]?.pauses
    expect(await pausesOf()).toBeUndefined()
    await host.send(CALL_KIND, id, { type: 'RECORDING_PAUSE', at: '2026-03-01T10:00:15.000Z' })
    expect(await pausesOf()).toEqual([{ from: 10_000, to: null }])
    // Refused by the machine (already paused): nothing written.
    await host.send(CALL_KIND, id, { type: 'RECORDING_PAUSE', at: '2026-03-01T10:00:16.000Z' })
    expect(await pausesOf()).toEqual([{ from: 10_000, to: null }])
    await host.send(CALL_KIND, id, { type: 'RECORDING_RESUME', at: '2026-03-01T10:00:20.000Z' })
    expect(await pausesOf()).toEqual([{ from: 10_000, to: 15_000 }])
    await host.close()
  })

  test('a hangup command ends the call and reports call.command_succeeded in the same step; the row is taken', async () => {
    const host = new ActorHost({ db: database.db, clock, kinds: [createCallKind({ db: database.db, clock }).kind] as never, pollTimers: false })
    const id = newId('call')
    await host.spawn(CALL_KIND, id, input(id))
    await host.send(CALL_KIND, id, { type: 'RING', user_id: 'usr_a', at: '2026-03-01T10:00:01.000Z' })
    await host.send(CALL_KIND, id, { type: 'ANSWER', user_id: 'usr_a', at: '2026-03-01T10:00:05.000Z' })
    const m = command(id, 'hangup')
    expect(await deliver(host, id, m)).toBe(0)
    const bodies = await bodiesOf(id)
    expect(bodies.map((b) => b.type)).toEqual(['call.incoming', 'call.ringing', 'call.answered', 'call.end', 'call.command_succeeded'])
    expect(bodies[3].data).toMatchObject({ status: 'completed', ended_at: '2026-03-01T10:00:30.000Z', duration_seconds: 25 })
    expect(bodies[4].data).toEqual({ call_id: id, command: 'hangup', command_id: m.command_id })
    await host.close()
  })

  test('a command that does not apply (hold on a ringing call) reports call.command_failed, call_not_active', async () => {
    const host = new ActorHost({ db: database.db, clock, kinds: [createCallKind({ db: database.db, clock }).kind] as never, pollTimers: false })
    const id = newId('call')
    await host.spawn(CALL_KIND, id, input(id))
    const m = command(id, 'hold')
    await deliver(host, id, m)
    const bodies = await bodiesOf(id)
    expect(bodies.map((b) => b.type)).toEqual(['call.incoming', 'call.command_failed'])
    expect(bodies[1].data).toEqual({ call_id: id, command: 'hold', command_id: m.command_id, reason: 'call_not_active' })
    await host.close()
  })

  test('a command reaching a call that already ended is reported failed once (the orphan row is taken)', async () => {
    const host = new ActorHost({ db: database.db, clock, kinds: [createCallKind({ db: database.db, clock }).kind] as never, pollTimers: false })
    const id = newId('call')
    await host.spawn(CALL_KIND, id, input(id))
    await host.send(CALL_KIND, id, { type: 'HANGUP', side: 'caller', at: '2026-03-01T10:00:03.000Z' })
    const m = command(id, 'hangup')
    expect(await deliver(host, id, m)).toBe(0)
    const bodies = await bodiesOf(id)
    expect(bodies.map((b) => b.type)).toEqual(['call.incoming', 'call.end', 'call.command_failed'])
    expect(bodies[2].data).toEqual({ call_id: id, command: 'hangup', command_id: m.command_id, reason: 'call_not_active' })
    // a second host (restart) finds nothing left to deliver for it
    const again = await database.db.select().from(durableTimers).where(eq(durableTimers.actorId, id))
    expect(again).toEqual([])
    await host.close()
  })
})

describe('a command that waits while the call ends', () => {
  test('the call’s final step keeps the command row (it is not one of the call’s own timers): the command is still answered, failed', async () => {
    const host = new ActorHost({ db: database.db, clock, kinds: [createCallKind({ db: database.db, clock }).kind] as never, pollTimers: false })
    const id = newId('call')
    await host.spawn(CALL_KIND, id, {
      call_id: id,
      direction: 'inbound',
      from_number: '+15551230000',
      from_name: null,
      to_number: '+15005559000',
      started_at: '2026-03-01T10:00:00.000Z',
      user_id: 'usr_a',
      to_user_id: 'usr_a',
      owner,
    })
    await host.send(CALL_KIND, id, { type: 'RING', user_id: 'usr_a', at: '2026-03-01T10:00:01.000Z' })
    await host.send(CALL_KIND, id, { type: 'ANSWER', user_id: 'usr_a', at: '2026-03-01T10:00:02.000Z' })
    // The gateway commits a hold; before the call takes it, the far side hangs up.
    const m: CallCommandMessage = {
      type: COMMAND_MESSAGE,
      call_id: id,
      command: { command: 'hold' },
      command_id: newId('command'),
      at: '2026-03-01T10:00:03.000Z',
      owner,
    }
    await database.db.transaction((tx) => sendCommand(tx, clock, CALL_KIND, id, m))
    await host.send(CALL_KIND, id, { type: 'HANGUP', side: 'caller', at: '2026-03-01T10:00:04.000Z' })
    const [row] = await database.db
      .select()
      .from(durableTimers)
      .where(and(eq(durableTimers.actorId, id), eq(durableTimers.name, `${COMMAND_MESSAGE}:${m.command_id}`)))
    expect(row).toBeDefined()
    await host.fire(row as never)
    const outcome = (await database.db.select().from(events).where(eq(events.accountId, owner.accountId)).orderBy(events.seq))
      .map((e) => JSON.parse(e.body))
      .filter((b) => b.data.call_id === id && b.type.startsWith('call.command'))
    expect(outcome.map((b) => [b.type, b.data.reason])).toEqual([['call.command_failed', 'call_not_active']])
    expect(await database.db.select().from(durableTimers).where(eq(durableTimers.actorId, id))).toEqual([])
    await host.close()
  })
})

describe('simulator planning (pure)', () => {
  test('magic numbers: digits matched, formatting ignored', () => {
    expect(magicOf('+15005550100')).toBe('answered_long')
    expect(magicOf('1 (500) 555-0101')).toBe('no_answer')
    expect(magicOf('500-555-0102')).toBe('busy')
    expect(magicOf('+15005550103')).toBe('machine')
    expect(magicOf('+15005550104')).toBe('transfer')
    expect(magicOf('933')).toBe('emergency')
    expect(magicOf('911')).toBeUndefined()
    expect(magicOf('+15005550105')).toBeUndefined()
  })

  test('clamping, defaults, and the direction rules', () => {
    expect(effectiveScenario('inbound', undefined, { ring_seconds: 999, talk_seconds: -3 }).scenario).toEqual({
      outcome: 'answered',
      ring_seconds: 120,
      talk_seconds: 0,
      voicemail_seconds: 15,
      recording: true,
    })
    expect(effectiveScenario('inbound', '+15005550102', { outcome: 'voicemail' }).scenario.outcome).toBe('voicemail')
    expect(effectiveScenario('outbound', '+15555550000', { outcome: 'voicemail' }).scenario.outcome).toBe('answered')
    expect(effectiveScenario('outbound', '+15005550102', { outcome: 'answered' }).scenario).toMatchObject({ outcome: 'busy', recording: false })
  })

  test('steps are at absolute simulated times from the start', () => {
    const plan = planSimulation(
      {
        owner: { platformId: 'p', accountId: 'a', mode: 'test' },
        user: 'usr_1',
        direction: 'inbound',
        account_number: '+15005559000',
        scenario: { ring_seconds: 3, talk_seconds: 30, recording: false },
      },
      new Date('2026-03-01T10:00:00.000Z'),
      { call: 'call_1', transferCall: 'call_2' },
    )
    expect(plan.script.map((s) => [s.at, s.event.type])).toEqual([
      ['2026-03-01T10:00:00.000Z', 'RING'],
      ['2026-03-01T10:00:03.000Z', 'ANSWER'],
      ['2026-03-01T10:00:33.000Z', 'HANGUP'],
    ])
    expect(plan.call).toMatchObject({ direction: 'inbound', to_number: '+15005559000', user_id: 'usr_1', to_user_id: 'usr_1', record: false })
  })
})
