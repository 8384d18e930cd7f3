/**
 * Sandbox helpers (spec: "Calls", createTestCall and createTestEvent): simulated
 * calls and fabricated events, through the real call actors and the real signed,
 * retried, ordered webhook path.
 */
import { Elysia } from 'elysia'
import {
  buildRoutingConfig,
  CALL_KIND,
  PRESENCE_KIND,
  planRoutedCall,
  planSimulation,
  readActorState,
  route,
  routeSimulated,
  sendCommand,
  spawnInTx,
  type TimerRow,
} from '../../actors/client'
import { ApiError } from '../../src/errors'
import { SAMPLE_PAYLOADS, SUPPORTED_TEST_EVENTS } from '../../src/events/catalog'
import { appendEvents } from '../../src/events/outbox'
import { newId } from '../../src/ids'
import * as C from '../../src/schemas/calls'
import * as S from '../../src/schemas/events'
import * as R from '../../src/schemas/routing'
import { assertUserOfAccount } from '../../src/services/accounts/users'
import { emergencyInfoFor } from '../../src/services/e911/emergency-info'
import { startingCallView } from '../../src/services/calls/call-log'
import { firstActiveNumber } from '../../src/services/numbers/phone-numbers'
import { loadRoutingRows } from '../../src/services/routing/config'
import { queueAgentStandings } from '../../src/services/routing/queues'
import { digitsOf, entryOf, planView, queueNames, withDndUsers } from '../../src/services/routing/route-preview'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Test Helpers'
const DEFAULT_CALLER = '+15555550123'
const sandboxOnly = () => new ApiError(400, 'Test helpers work in sandbox mode only; use a sk_test_ key.', 'sandbox_only')

export function testHelperRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/test-helpers' })
    .use(base)
    .post(
      '/v1/test_helpers/calls',
      async ({ auth, body, mutate }) => {
        const account = auth.account!
        let spawned: Promise<TimerRow> | undefined
        const response = await mutate(async (tx, { alongside }) => {
          if (account.mode !== 'test') throw sandboxOnly()
          // Both reads in one round trip (the user's error, if any, still comes first).
          const [, number] = await Promise.all([assertUserOfAccount(tx, account.id, body.user, 'user'), firstActiveNumber(tx, account.id)])
          if (!number)
            throw new ApiError(400, 'The account has no phone number; order one first (the simulator uses the first as the account side).', 'no_phone_number')
          const owner = { platformId: account.platformId, accountId: account.id, mode: account.mode }
          const plan = planSimulation(
            {
              owner,
              user: body.user,
              direction: body.direction ?? 'inbound',
              account_number: number.number,
              to_number: body.to_number,
              from_number: body.from_number,
              from_name: body.from_name ?? null,
              scenario: body.scenario,
            },
            deps.clock.now(),
            { call: newId('call'), transferCall: newId('call') },
          )
          // An emergency call names the caller's device, its location and whether that location is provisioned for E911.
          if (plan.call.emergency) plan.call.emergency = await emergencyInfoFor(tx, account.id, body.user)
          // The call actor is created by the same commit as the 200 and its idempotency record: a crash cannot separate them.
          spawned = spawnInTx(tx, deps.clock, CALL_KIND, plan.call.call_id, plan.call, { timers: plan.script })
          alongside(spawned)
          const callId = plan.call.call_id
          const call = startingCallView({ ...plan.call, account: account.id, mode: account.mode, simulated: true })
          return { resource: callId, body: { id: callId, object: 'test_call', call, scenario: plan.scenario } }
        })
        // The call's owner would start it at its next poll; asking now means its call log row exists when this answers.
        // Committed with the answer: its row is there.
        const row = await spawned
        if (row) await deps.actors?.wake(CALL_KIND, row.actorId, [row]).catch(() => {})
        return response
      },
      {
        body: C.CreateTestCallRequest,
        detail: op('createTestCall', {
          summary: 'Simulate a call (sandbox only)',
          description:
            'Starts a simulated call on durable timers (VOICE_CLOCK_SPEED compresses it). The account side is the account’s first phone number. Inbound (default) rings the given user directly; outbound dials to_number, where +15005550100 (answered after 5 s, 30 s talk, recorded), +15005550101 (rings 20 s, no answer), +15005550102 (busy), +15005550103 (answering machine, recorded as answered), +15005550104 (answered then transferred) and 933 (answered, call.emergency) are magic. Durations are clamped to 120 s; the response carries the effective scenario. The call is created with the answer (one commit): a 200 is never a call that does not start. 400: sandbox_only, no_phone_number, validation_error (unknown outcome, user not of the account).',
          tag: TAG,
          auth: accountLevel(),
          response: C.TestCall,
          errors: { 400: ['sandbox_only', 'no_phone_number'] },
        }),
      },
    )
    .post(
      '/v1/test_helpers/inbound_calls',
      async ({ auth, body, mutate }) => {
        const account = auth.account!
        const spawned: { kind: string; row: TimerRow }[] = []
        const response = await mutate(async (tx) => {
          spawned.length = 0 // a retried transaction starts over
          if (account.mode !== 'test') throw sandboxOnly()
          const rows = await loadRoutingRows(tx, account.id)
          const entry = entryOf(rows, body.to)
          if (!entry)
            throw new ApiError(400, 'to is neither a phone number nor an extension of this account.', 'validation_error', {
              to: 'is neither a phone number nor an extension of this account',
            })
          const users = new Set(rows.users.map((u) => u.id))
          const strangers = Object.keys(body.outcomes ?? {}).filter((u) => !users.has(u))
          if (strangers.length > 0)
            throw new ApiError(
              400,
              'outcomes names users that are not of this account.',
              'validation_error',
              Object.fromEntries(strangers.map((u) => [`outcomes.${u}`, 'is not a user of this account'])),
            )
          const dnd = new Set(
            Object.entries(body.outcomes ?? {})
              .filter(([, o]) => o === 'dnd')
              .map(([u]) => u),
          )
          const config = buildRoutingConfig(withDndUsers(rows, dnd))
          const now = deps.clock.now()
          // `at` is when the routing is evaluated (schedules); the simulated call itself runs now.
          const at = body.at ? new Date(body.at) : now
          const plan = routeSimulated((digits) => route(config, { entry: { type: entry.type, number: entry.number }, digits }, at), digitsOf(body.digits))
          const owner = { platformId: account.platformId, accountId: account.id, mode: account.mode }
          // The members of the queues the call may reach, as they stand now: queue-agent standing and presence.
          const queueIds = new Set(plan.steps.flatMap((s) => (s.kind === 'enqueue' ? [s.queue] : [])))
          const queue_members: Record<string, { user_id: string; standing: 'available' | 'unavailable'; presence: unknown }[]> = {}
          for (const q of rows.queues.filter((q) => queueIds.has(q.id))) {
            const standings = await queueAgentStandings(tx, q.members)
            queue_members[q.id] = []
            for (const [i, user_id] of q.members.entries())
              queue_members[q.id]!.push({ user_id, standing: standings[i]!, presence: (await readActorState(tx, PRESENCE_KIND, user_id))?.snapshot })
          }
          const sim = planRoutedCall(
            {
              owner,
              plan,
              to_number: body.to,
              from_number: body.from_number ?? DEFAULT_CALLER,
              from_name: body.from_name ?? null,
              outcomes: body.outcomes,
              talk_seconds: body.talk_seconds ?? 10,
              hangup_after_seconds: body.hangup_after_seconds,
              queue_names: queueNames(rows),
              ai_agent_names: Object.fromEntries(rows.aiAgents.map((a) => [a.id, a.name])),
              queue_members,
              queue_priority: body.queue_priority,
              queue_callback_after_seconds: body.queue_callback_after_seconds,
            },
            now,
            { call: newId('call'), command: newId('command') },
          )
          const callId = sim.call.call_id
          // The call and its queue events start with the 200 (one commit), as with createTestCall.
          spawned.push({ kind: CALL_KIND, row: await spawnInTx(tx, deps.clock, CALL_KIND, callId, sim.call, { timers: sim.script }) })
          // The queue actor takes the caller: its spawn carries the arrival for a queue with no actor yet, the command for one that has.
          const q = sim.queue
          if (q) {
            spawned.push({ kind: q.kind, row: await spawnInTx(tx, deps.clock, q.kind, q.id, q.input) })
            spawned.push({ kind: q.kind, row: await sendCommand(tx, deps.clock, q.kind, q.id, q.command) })
          }
          return {
            resource: callId,
            body: {
              id: callId,
              object: 'test_inbound_call',
              at: at.toISOString(),
              plan: planView(plan),
              expected: { status: sim.outcome.status, answered_by: sim.outcome.answered_by },
            },
          }
        })
        for (const s of spawned) await deps.actors?.wake(s.kind, s.row.actorId, [s.row]).catch(() => {})
        return response
      },
      {
        body: R.CreateTestInboundCallRequest,
        detail: {
          ...op('createTestInboundCall', {
            summary: 'Simulate an inbound call through the account’s routing (sandbox only; extension)',
            description:
              'Extension beyond the spec (x-extension). Places a simulated inbound call to one of the account’s numbers or extensions and lets it follow the account’s routing: the plan of the routing engine at `at` (default now; schedules are read at that time) is played on durable timers, with each user reacting as `outcomes` says (omitted: the first user rung answers after 3 s). Ring steps ring their users (one call.ringing per user, one call_id); a sequential group rings the next member when the previous one’s ring time runs out; busy users decline at once (when every user of a step is busy, the step ends after 1 s); dnd users are never rung; a voicemail step takes a message of talk_seconds (voicemail.new, without user_id for a shared box); a queue step hands the caller to the queue’s actor, where every caller of that queue waits in order (queue_priority: higher first) for the queue’s members that are logged in (queue-agent) and not dnd or away (presence), busy while on a call: queue.call.queued, dispatched (each offer rings its free agents 15 s, who react as outcomes says), answered and completed, or abandoned when the caller hangs up at hangup_after_seconds, or timed_out at the queue’s max wait (a ring in progress finishes first), then the timeout target; queue_callback_after_seconds makes a waiting caller ask for a callback and hang up, keeping the place: at the head an agent takes it and calls back (queue.call.callback_requested, callback_attempted); a number routed to nothing drops the call (call.end no-answer, never rung); a menu without a digit in `digits` takes the no-input branch. A voice app or AI agent answers at once (call.answered with answered_at and no connected_at) and the caller hangs up after talk_seconds (status completed); a webhook voice app receives the call’s call.* events from then on at its url, signed with the app’s secret, and may end or move the call first with POST /v1/calls/{id} (hangup, blind transfer); a notify-mode voice_app node lets the app follow the call from that point while the plan goes on; an AI agent’s call carries a summary naming the agent. Every call.* event comes from the call machine, queue.call.* from the queue machine. The response carries the plan (as GET /v1/phone-numbers/{id}/route-preview shows it) and the expected end. 400: sandbox_only; validation_error naming to or outcomes.<user>.',
            tag: TAG,
            auth: accountLevel(),
            response: R.TestInboundCall,
            errors: { 400: ['sandbox_only'] },
          }),
          'x-extension': true,
        },
      },
    )
    .post(
      '/v1/test_helpers/events',
      ({ auth, body, mutate }) =>
        mutate(async (tx, ctx) => {
          const account = auth.account!
          if (account.mode !== 'test') throw sandboxOnly()
          const sample = SAMPLE_PAYLOADS[body.event]
          if (!sample) {
            const suggestion = closest(body.event, SUPPORTED_TEST_EVENTS)
            throw new ApiError(
              400,
              `Unsupported test event type: ${body.event}.${suggestion ? ` Did you mean ${suggestion}?` : ''}`,
              'unsupported_event_type',
              {
                event: suggestion ? `is not a supported test event type; did you mean ${suggestion}?` : 'is not a supported test event type',
                supported: SUPPORTED_TEST_EVENTS,
              },
            )
          }
          const prefixes = new Map<string, string>()
          const data = sample({
            accountId: account.id,
            now: deps.clock.now(),
            requestId: ctx.requestId,
            // One fabricated id per kind, so related fields (queue and queue_id) agree.
            id: (prefix) => {
              if (!prefixes.has(prefix)) prefixes.set(prefix, `${prefix}_test_${newId('event').slice(4)}`)
              return prefixes.get(prefix)!
            },
          })
          const [event] = await appendEvents(tx, deps.clock, [
            { platformId: account.platformId, accountId: account.id, mode: account.mode, type: body.event, data },
          ])
          return { resource: event!.id, body: JSON.parse(event!.body) }
        }),
      {
        body: S.CreateTestEventRequest,
        detail: op('createTestEvent', {
          summary: 'Send a sample event (sandbox only)',
          description: `Sends a sample payload of the type through the same signed, retried, ordered webhook path; the response echoes the event. Supported: ${SUPPORTED_TEST_EVENTS.join(', ')}. An unknown type gives 400 unsupported_event_type with details.supported (and the closest supported type when it looks like a typo); a live key gives 400 sandbox_only.`,
          tag: TAG,
          auth: accountLevel(),
          response: S.Event,
          errors: { 400: ['sandbox_only', 'unsupported_event_type'] },
        }),
      },
    )
}

/** The known name nearest to a mistyped one (edit distance), when near enough to be a typo. */
function closest(input: string, known: readonly string[]): string | undefined {
  const distance = (a: string, b: string) => {
    let row = Array.from({ length: b.length + 1 }, (_, j) => j)
    for (let i = 1; i <= a.length; i++) {
      const next = [i]
      for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      row = next
    }
    return row[b.length]!
  }
  const needle = input.slice(0, 100).toLowerCase()
  let best: { name: string; d: number } | undefined
  for (const name of known) {
    const d = distance(needle, name)
    if (!best || d < best.d) best = { name, d }
  }
  return best && best.d <= Math.max(2, Math.floor(best.name.length / 4)) ? best.name : undefined
}
