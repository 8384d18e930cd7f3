/** Sandbox helpers: fabricated events through the real signed, retried, ordered path. */
import { Elysia } from 'elysia'
import { ApiError } from '../../src/errors'
import { SAMPLE_PAYLOADS, SUPPORTED_TEST_EVENTS } from '../../src/events/catalog'
import { appendEvents } from '../../src/events/outbox'
import { newId } from '../../src/ids'
import * as S from '../../src/schemas/events'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import type { requestContext } from '../plugins/request-context'

export function testHelperRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/test-helpers' }).use(base).post(
    '/v1/test_helpers/events',
    ({ auth, body, mutate }) =>
      mutate(async (tx, ctx) => {
        const account = auth.account!
        if (account.mode !== 'test') throw new ApiError(400, 'Test helpers work in sandbox mode only; use a sk_test_ key.', 'sandbox_only')
        const sample = SAMPLE_PAYLOADS[body.event]
        if (!sample) {
          throw new ApiError(400, `Unsupported test event type: ${body.event}.`, 'unsupported_event_type', { event: 'is not a supported test event type', supported: SUPPORTED_TEST_EVENTS })
        }
        const prefixes = new Map<string, string>()
        const data = sample({
          accountId: account.id,
          now: deps.clock.now(),
          requestId: ctx.requestId,
          // One fabricated id per kind, so related fields (queue and queue_id) agree.
          id: (prefix) => prefixes.get(prefix) ?? (prefixes.set(prefix, `${prefix}_test_${newId('event').slice(4)}`), prefixes.get(prefix)!),
        })
        const [event] = await appendEvents(tx, deps.clock, [{ platformId: account.platformId, accountId: account.id, mode: account.mode, type: body.event, data }])
        return { resource: event!.id, body: JSON.parse(event!.body) }
      }),
    {
      body: S.CreateTestEventRequest,
      detail: op('createTestEvent', {
        summary: 'Send a sample event (sandbox only)',
        description: `Sends a sample payload of the type through the same signed, retried, ordered webhook path; the response echoes the event. Supported: ${SUPPORTED_TEST_EVENTS.join(', ')}. An unknown type gives 400 unsupported_event_type with details.supported; a live key gives 400 sandbox_only.`,
        tag: 'Test Helpers',
        auth: accountLevel(),
        response: S.Event,
        errors: { 400: ['sandbox_only', 'unsupported_event_type'] },
      }),
    },
  )
}
