/**
 * The presence actor, created lazily: a spawn carrying the change and the change
 * itself (a tell or a command) land in either order and leave the same state. And
 * which users a call puts on a call: every call that ends clears them (a property
 * over generated calls on the call machine). PGlite, or PostgreSQL when DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import fc from 'fast-check'
import { createActor } from 'xstate'
import { type CallContext, type CallEmitted, type CallInput, type CallMachineEvent, callMachine } from '../../machines/call'
import type { PresenceMachineEvent } from '../../machines/presence'
import { manualClock } from '../../src/clock'
import { openDatabase, type Database } from '../../src/db/client'
import { durableTimers } from '../../src/db/schema'
import { newId } from '../../src/ids'
import { dueTimersOf, scheduleTimer, type TimerRow } from '../../src/scheduler/durable-timers'
import { COMMAND_MESSAGE, durableMessage, sendCommand, spawnInTx } from '../runtime/commands'
import { ActorHost } from '../runtime/host'
import { shardOf } from '../runtime/shards'
import { callPresenceChanges } from './call-presence'
import { admitPresence, PRESENCE_KIND, type PresenceCommandMessage, presenceInput, presenceMessages, presenceStatusOf } from './messages'
import { createPresenceKind } from './presence-actor'

let database: Database
const clock = manualClock('2026-03-01T10:00:00.000Z')
const AT = '2026-03-01T10:00:00.000Z'

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
})
afterAll(async () => {
  await database?.db.delete(durableTimers).where(eq(durableTimers.actorKind, PRESENCE_KIND))
  await database?.close()
})

const newHost = () => new ActorHost({ db: database.db, clock, kinds: [createPresenceKind().kind] as never, pollTimers: false })

/** A durable tell row for the user's presence actor, as fx.tell writes it. */
const tellRow = (userId: string, event: { type: string; [field: string]: unknown } | PresenceMachineEvent) =>
  database.db.transaction(async (tx) => {
    const m = durableMessage.tell(event as { type: string } & Record<string, unknown>)
    return scheduleTimer(tx, clock, { actorKind: PRESENCE_KIND, actorId: userId, name: m.name, dueAt: clock.now(), event: m.event, shard: shardOf(userId) })
  })
const spawnRow = (userId: string, input: unknown) => database.db.transaction((tx) => spawnInTx(tx, clock, PRESENCE_KIND, userId, input))

/** Fires the rows one after the other, in this order. */
async function fireInOrder(host: ActorHost, rows: TimerRow[]) {
  for (const r of rows) await host.fire(r)
}

async function contextOf(host: ActorHost, userId: string) {
  const state = await host.inspect(PRESENCE_KIND, userId)
  expect(state).toBeDefined()
  const s = state!.snapshot as { value: string; context: Record<string, unknown> }
  return { value: s.value, manual: s.context.manual, status_text: s.context.status_text, live_calls: s.context.live_calls }
}

describe('presence actor: spawn + change in either order', () => {
  test('a call start (spawn with the call, tell CALL_STARTED): on_call with one live call, whichever lands first', async () => {
    const host = newHost()
    const results = []
    for (const order of ['spawn first', 'tell first'] as const) {
      const user = newId('user')
      const m = presenceMessages(user, { type: 'CALL_STARTED', call_id: 'call_1' }, AT)
      const spawn = await spawnRow(user, m.input)
      const tell = await tellRow(user, m.event)
      await fireInOrder(host, order === 'spawn first' ? [spawn, tell] : [tell, spawn])
      results.push(await contextOf(host, user))
    }
    expect(results[0]).toEqual({ value: 'on_call', manual: 'available', status_text: null, live_calls: ['call_1'] })
    expect(results[1]).toEqual(results[0])
    await host.close()
  })

  test('a manual choice (spawn with it, command SET_MANUAL): the same state in both orders, and the same as the PUT answered', async () => {
    const host = newHost()
    const results = []
    for (const order of ['spawn first', 'command first'] as const) {
      const user = newId('user')
      const admission = admitPresence(undefined, user, { status: 'dnd', status_text: 'in a meeting' }, AT, '2026-02-01T00:00:00.000Z')
      if ('refused' in admission) throw new Error('refused')
      const command: PresenceCommandMessage = {
        type: COMMAND_MESSAGE,
        command_id: newId('command'),
        at: AT,
        user_id: user,
        command: { status: 'dnd', status_text: 'in a meeting' },
      }
      const [spawn, cmd] = await database.db.transaction(async (tx) => [
        await spawnInTx(tx, clock, PRESENCE_KIND, user, admission.input),
        await sendCommand(tx, clock, PRESENCE_KIND, user, command),
      ])
      await fireInOrder(host, order === 'spawn first' ? [spawn!, cmd!] : [cmd!, spawn!])
      results.push(await contextOf(host, user))
      expect(presenceStatusOf(await host.inspect(PRESENCE_KIND, user), user, 'unused')).toEqual(admission.after)
    }
    // No device registered: offline shows, the manual choice is kept for when one does.
    expect(results[0]).toEqual({ value: 'offline', manual: 'dnd', status_text: 'in a meeting', live_calls: [] })
    expect(results[1]).toEqual(results[0])
    await host.close()
  })

  test('an existing actor keeps its state on a second spawn, and takes the tell', async () => {
    const host = newHost()
    const user = newId('user')
    await fireInOrder(host, [await spawnRow(user, presenceInput(user, AT, { manual: 'away' }))])
    await fireInOrder(host, [
      await spawnRow(user, presenceMessages(user, { type: 'CALL_STARTED', call_id: 'call_2' }, AT).input),
      await tellRow(user, presenceMessages(user, { type: 'CALL_STARTED', call_id: 'call_2' }, AT).event),
    ])
    expect(await contextOf(host, user)).toEqual({ value: 'on_call', manual: 'away', status_text: null, live_calls: ['call_2'] })
    await fireInOrder(host, [await tellRow(user, { type: 'CALL_ENDED', call_id: 'call_2', at: AT })])
    // a repeated end is harmless
    await fireInOrder(host, [await tellRow(user, { type: 'CALL_ENDED', call_id: 'call_2', at: AT })])
    expect(await contextOf(host, user)).toEqual({ value: 'offline', manual: 'away', status_text: null, live_calls: [] })
    await host.close()
  })

  test('admission: on_call and offline are refused naming status; status_text over 100 naming status_text', () => {
    const since = '2026-02-01T00:00:00.000Z'
    for (const status of ['on_call', 'offline']) {
      const a = admitPresence(undefined, 'usr_x', { status }, AT, since)
      expect('refused' in a && a.refused.field).toBe('status')
    }
    const long = admitPresence(undefined, 'usr_x', { status: 'away', status_text: 'x'.repeat(101) }, AT, since)
    expect('refused' in long && long.refused.field).toBe('status_text')
    const ok = admitPresence(undefined, 'usr_x', { status: 'away', status_text: 'x'.repeat(100) }, AT, since)
    expect('after' in ok && ok.after).toEqual({ user: 'usr_x', status: 'offline', status_text: 'x'.repeat(100), updated_at: AT })
    // nothing visible changed: updated_at stays the user's creation
    const same = admitPresence(undefined, 'usr_x', { status: 'dnd' }, AT, since)
    expect('after' in same && same.after.updated_at).toBe(since)
  })
})

// ---------------------------------------------------------------- which users a call puts on a call

const USERS = ['usr_a', 'usr_b', 'usr_c']
const T0 = Date.parse('2026-03-01T10:00:00.000Z')

type Step =
  | { kind: 'ring'; user: number }
  | { kind: 'answer'; user: number | null }
  | { kind: 'voicemail' | 'busy' | 'fail' | 'hold' | 'resume' | 'timeout' | 'hangup' }
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('ring' as const), user: fc.nat(2) }),
  fc.record({ kind: fc.constant('answer' as const), user: fc.option(fc.nat(2), { nil: null }) }),
  fc.record({
    kind: fc.constantFrom('voicemail' as const, 'busy' as const, 'fail' as const, 'hold' as const, 'resume' as const, 'timeout' as const, 'hangup' as const),
  }),
)
const callArb = fc.record({
  direction: fc.constantFrom('inbound' as const, 'outbound' as const, 'internal' as const),
  user: fc.option(fc.nat(2), { nil: null }),
  steps: fc.array(stepArb, { maxLength: 6 }),
})

function eventOf(s: Step, at: string): CallMachineEvent {
  switch (s.kind) {
    case 'ring':
      return { type: 'RING', user_id: USERS[s.user], at }
    case 'answer':
      return { type: 'ANSWER', user_id: s.user === null ? null : USERS[s.user], at }
    case 'voicemail':
      return { type: 'VOICEMAIL', at }
    case 'busy':
      return { type: 'BUSY', at }
    case 'fail':
      return { type: 'FAIL', at }
    case 'hold':
      return { type: 'HOLD', at }
    case 'resume':
      return { type: 'RESUME', at }
    case 'timeout':
      return { type: 'TIMER', timer: 'ring_timeout', at }
    case 'hangup':
      return { type: 'HANGUP', side: 'caller', at }
  }
}

describe('callPresenceChanges (property)', () => {
  test('the connected answering user and the placing user are on the call while it lasts; once every call ended, nobody has a live call', () => {
    fc.assert(
      fc.property(fc.array(callArb, { minLength: 1, maxLength: 4 }), (calls) => {
        const live = new Map<string, Set<string>>(USERS.map((u) => [u, new Set()]))
        const apply = (ev: CallEmitted, c: CallContext) => {
          for (const p of callPresenceChanges(ev, c)) {
            const set = live.get(p.user_id)!
            if (p.type === 'CALL_STARTED') set.add(p.call_id)
            else set.delete(p.call_id)
          }
        }
        let t = T0
        const actors = calls.map((spec, i) => {
          const user = spec.user === null ? null : USERS[spec.user]!
          const input: CallInput = {
            call_id: `call_${i}`,
            direction: spec.direction,
            from_number: '+15551230000',
            to_number: '+15005559000',
            started_at: new Date(t).toISOString(),
            user_id: user,
            ...(spec.direction !== 'inbound' && user ? { from_user_id: user } : {}),
          }
          const machine = callMachine.provide({
            actions: { emit: ({ context }, params) => apply(params as CallEmitted, context as CallContext), spawnCall: () => {}, placeConsultation: () => {} },
          })
          return createActor(machine, { input }).start()
        })
        // The calls interleave: step i of every call, then step i+1...
        const longest = Math.max(...calls.map((c) => c.steps.length))
        for (let i = 0; i < longest; i++) {
          calls.forEach((spec, n) => {
            const s = spec.steps[i]
            if (!s) return
            actors[n]!.send(eventOf(s, new Date((t += 1000)).toISOString()))
            const c = actors[n]!.getSnapshot().context as CallContext
            // while a call lasts, its connected answering user is on it
            if (actors[n]!.getSnapshot().status === 'active' && c.connected_at && c.answered_by)
              expect(live.get(c.answered_by)!.has(c.input.call_id)).toBe(true)
          })
        }
        for (const a of actors) a.send({ type: 'HANGUP', side: 'caller', at: new Date((t += 1000)).toISOString() })
        for (const a of actors) expect(a.getSnapshot().status).toBe('done')
        for (const u of USERS) expect([...live.get(u)!]).toEqual([])
      }),
      { numRuns: 150 },
    )
  })

  test('an outbound call places its user on the call from call.initiated; a voicemail answer connects nobody', () => {
    const changes: string[] = []
    const machine = callMachine.provide({
      actions: {
        emit: ({ context }, params) => {
          for (const p of callPresenceChanges(params as CallEmitted, context as CallContext))
            changes.push(`${(params as CallEmitted).type}:${p.type}:${p.user_id}`)
        },
        spawnCall: () => {},
        placeConsultation: () => {},
      },
    })
    const out = createActor(machine, {
      input: { call_id: 'c1', direction: 'outbound', from_number: '+15005559000', to_number: '+15551230000', started_at: AT, user_id: 'usr_a' },
    }).start()
    out.send({ type: 'HANGUP', side: 'caller', at: '2026-03-01T10:00:05.000Z' })
    const vm = createActor(machine, {
      input: {
        call_id: 'c2',
        direction: 'inbound',
        from_number: '+15551230000',
        to_number: '+15005559000',
        started_at: AT,
        user_id: 'usr_b',
        to_user_id: 'usr_b',
      },
    }).start()
    vm.send({ type: 'RING', user_id: 'usr_b', at: '2026-03-01T10:00:01.000Z' })
    vm.send({ type: 'VOICEMAIL', at: '2026-03-01T10:00:20.000Z' })
    vm.send({ type: 'HANGUP', side: 'caller', at: '2026-03-01T10:00:40.000Z' })
    expect(changes).toEqual(['call.initiated:CALL_STARTED:usr_a', 'call.end:CALL_ENDED:usr_a'])
  })
})

describe('presence actor: the idle timeout', () => {
  test('an activity report schedules the durable timer at the deadline; its fire shows the user away, the next report available', async () => {
    const host = newHost()
    const user = newId('user')
    const t0 = clock.now().toISOString()
    await fireInOrder(host, [await spawnRow(user, { ...presenceInput(user, t0), registered_devices: ['dev_1'] })])
    expect((await contextOf(host, user)).value).toBe('available')
    await fireInOrder(host, [await tellRow(user, { type: 'ACTIVITY', idle_timeout_seconds: 60, at: t0 })])
    const deadline = new Date(Date.parse(t0) + 60_000)
    const pending = async () => (await database.db.select().from(durableTimers).where(eq(durableTimers.actorId, user))).filter((r) => r.name === 'idle_timeout')
    const [timer] = await pending()
    expect(timer?.dueAt.toISOString()).toBe(deadline.toISOString())

    clock.set(deadline)
    const [due] = await dueTimersOf(database.db, clock.now(), PRESENCE_KIND, user)
    expect(due?.name).toBe('idle_timeout')
    await host.fire(due!)
    expect((await contextOf(host, user)).value).toBe('away')
    expect(await pending()).toEqual([])

    await fireInOrder(host, [await tellRow(user, { type: 'ACTIVITY', idle_timeout_seconds: 60, at: clock.now().toISOString() })])
    expect((await contextOf(host, user)).value).toBe('available')
    expect((await pending()).map((r) => r.dueAt.toISOString())).toEqual([new Date(deadline.getTime() + 60_000).toISOString()])
  })
})
