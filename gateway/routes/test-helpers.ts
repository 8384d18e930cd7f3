/**
 * Sandbox helpers (spec: "Calls", createTestCall and createTestEvent): simulated
 * calls and fabricated events, through the real call actors and the real signed,
 * retried, ordered webhook path.
 */
import { Elysia } from 'elysia'
import { CALL_KIND, planSimulation, spawnInTx, type TimerRow } from '../../actors/client'
import { ApiError } from '../../src/errors'
import { SAMPLE_PAYLOADS, SUPPORTED_TEST_EVENTS } from '../../src/events/catalog'
import { appendEvents } from '../../src/events/outbox'
import { newId } from '../../src/ids'
import * as C from '../../src/schemas/calls'
import * as S from '../../src/schemas/events'
import { assertUserOfAccount } from '../../src/services/accounts/users'
import { startingCallView } from '../../src/services/calls/call-log'
import { firstActiveNumber } from '../../src/services/numbers/phone-numbers'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Test Helpers'
const sandboxOnly = () => new ApiError(400, 'Test helpers work in sandbox mode only; use a sk_test_ key.', 'sandbox_only')

export function testHelperRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/test-helpers' })
    .use(base)
    .post(
      '/v1/test_helpers/calls',
      async ({ auth, body, mutate }) => {
        const account = auth.account!
        let spawned: TimerRow | undefined
        const response = await mutate(async (tx) => {
          if (account.mode !== 'test') throw sandboxOnly()
          await assertUserOfAccount(tx, account.id, body.user, 'user')
          const number = await firstActiveNumber(tx, account.id)
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
          // The call actor is created by the same commit as the 200 and its idempotency record: a crash cannot separate them.
          spawned = await spawnInTx(tx, deps.clock, CALL_KIND, plan.call.call_id, plan.call, { timers: plan.script })
          const callId = plan.call.call_id
          const call = startingCallView({ ...plan.call, account: account.id, mode: account.mode, simulated: true })
          return { resource: callId, body: { id: callId, object: 'test_call', call, scenario: plan.scenario } }
        })
        // The call's owner would start it at its next poll; asking now means its call log row exists when this answers.
        if (spawned) await deps.actors?.wake(CALL_KIND, spawned.actorId, [spawned]).catch(() => {})
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
      '/v1/test_helpers/events',
      ({ auth, body, mutate }) =>
        mutate(async (tx, ctx) => {
          const account = auth.account!
          if (account.mode !== 'test') throw sandboxOnly()
          const sample = SAMPLE_PAYLOADS[body.event]
          if (!sample) {
            throw new ApiError(400, `Unsupported test event type: ${body.event}.`, 'unsupported_event_type', {
              event: 'is not a supported test event type',
              supported: SUPPORTED_TEST_EVENTS,
            })
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
          description: `Sends a sample payload of the type through the same signed, retried, ordered webhook path; the response echoes the event. Supported: ${SUPPORTED_TEST_EVENTS.join(', ')}. An unknown type gives 400 unsupported_event_type with details.supported; a live key gives 400 sandbox_only.`,
          tag: TAG,
          auth: accountLevel(),
          response: S.Event,
          errors: { 400: ['sandbox_only', 'unsupported_event_type'] },
        }),
      },
    )
}
