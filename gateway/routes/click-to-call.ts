/**
 * POST /v1/calls (createCall, click-to-call): ring a user's own registered devices,
 * then connect them to what they dial.
 *
 * The route validates first, every field at once (400 validation_error with
 * details.user / details.dial_string / details.did), then records the request
 * through `mutate` (audit log, Idempotency-Key) and answers 202 Accepted with no
 * body. What happens next is `planClickToCall`'s decision (src/services/click-to-call):
 * nothing when the user has no registered device, an announcement on the caller's
 * phone when a sandbox account dials the public network (no call.* events), else an
 * internal or public call.
 *
 * Devices do not exist yet: the registrar is GatewayDeps.registeredDevices, and
 * without one `noRegisteredDevices()` answers none, so every request plans
 * "nothing" today.
 */
import { and, eq, inArray } from 'drizzle-orm'
import { Elysia } from 'elysia'
import { extensions, phoneNumbers, users } from '../../src/db/schema'
import { ValidationError, type FieldDetails } from '../../src/errors'
import * as S from '../../src/schemas/calls'
import { classifyDialString, directoryKeys, planClickToCall, type ClickToCallPlan } from '../../src/services/click-to-call'
import { firstActiveNumber } from '../../src/services/phone-numbers'
import { noRegisteredDevices } from '../../src/services/registered-devices'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import type { requestContext } from '../plugins/request-context'

/** 202 Accepted carries no body: not even the JSON `null` that mutate() stores for replays. */
function withoutBody(r: Response): Response {
  if (r.status !== 202) return r
  const headers = new Headers(r.headers)
  headers.delete('content-type')
  return new Response(null, { status: 202, headers })
}

export function clickToCallRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  const registrar = deps.registeredDevices ?? noRegisteredDevices()

  return new Elysia({ name: 'routes/click-to-call' }).use(base).post(
    '/v1/calls',
    async ({ auth, body, mutate, log }) => {
      const account = auth.account!
      let plan: ClickToCallPlan | undefined
      const response = await mutate(async (tx) => {
        const keys = directoryKeys(body.dial_string)
        const [ext] = keys.extension
          ? await tx
              .select({ number: extensions.number, target: extensions.target })
              .from(extensions)
              .where(and(eq(extensions.accountId, account.id), eq(extensions.number, keys.extension), eq(extensions.status, 'active')))
          : []
        const candidates = [...new Set([body.user, keys.userId, ext?.target].filter((x): x is string => typeof x === 'string'))]
        const known = new Set(
          (await tx.select({ id: users.id }).from(users).where(and(eq(users.accountId, account.id), inArray(users.id, candidates)))).map((u) => u.id),
        )
        const destination = classifyDialString(body.dial_string, { extensions: new Map(ext ? [[ext.number, ext.target]] : []), users: known })
        const details: FieldDetails = {}
        if (!known.has(body.user)) details.user = 'is not a user of this account'
        if (destination.kind === 'invalid') details.dial_string = destination.reason
        if (body.did !== undefined) {
          const [n] = await tx
            .select({ id: phoneNumbers.id })
            .from(phoneNumbers)
            .where(and(eq(phoneNumbers.accountId, account.id), eq(phoneNumbers.number, body.did), eq(phoneNumbers.status, 'active')))
          if (!n) details.did = 'is not an active phone number of this account'
        }
        if (Object.keys(details).length > 0 || destination.kind === 'invalid') throw new ValidationError(details)

        const devices = await registrar.ofUser(account.id, body.user)
        const wantsDefaultCallerId = devices.length > 0 && destination.kind === 'public' && body.did === undefined
        const default_caller_id = wantsDefaultCallerId ? (account.defaultOutboundDid ?? (await firstActiveNumber(tx, account.id))?.number ?? null) : null
        plan = planClickToCall({ user_id: body.user, devices, destination, mode: account.mode, did: body.did ?? null, default_caller_id })
        return { resource: body.user, status: 202, body: null }
      })
      // Committed (audit, idempotency). A replayed request did not plan, so starts nothing.
      if (plan && plan.kind !== 'nothing') {
        // Unreachable until devices exist (noRegisteredDevices() makes every plan "nothing").
        // The devices issue spawns the call actor here, after the commit as
        // POST /v1/test_helpers/calls does: refused_public_in_sandbox plays the
        // announcement on plan.ring_devices and emits no call.* event;
        // connect_internal and dial_public ring plan.ring_devices (no call.ringing for
        // the caller's own phone), then the destination, with the usual call.* events.
        log.warn({ plan: plan.kind, user: plan.from_user_id }, 'click-to-call planned a call, but no call actor places click-to-call calls yet')
      }
      return withoutBody(response)
    },
    {
      body: S.CreateCallRequest,
      detail: op('createCall', {
        summary: 'Click-to-call: ring a user’s devices, then dial',
        description:
          "Rings the user's registered devices; when one answers, dials dial_string. dial_string is an E.164 number, an extension or user id of the account, or digits (a 10-digit NANP number or 1 + 10 digits becomes +1…; N11 codes and 933 are dialled as given; 911 and 933 are never shadowed by an extension); spaces, dots, dashes and parentheses are ignored. did, when given, must be one of the account's active phone numbers and is the caller ID of this call. Answers 202 Accepted with no body once the request is recorded; the call itself is reported through call.* events. Internal destinations connect; a public-network destination from a sandbox account is refused: the caller hears an announcement and no call.* event is sent. If the user has no registered device nothing happens (no call, no event). 400 validation_error names each offending field: details.user (not a user of the account), details.dial_string (not dialable), details.did (not an active number of the account).",
        tag: 'Calls',
        auth: accountLevel(),
        status: 202,
      }),
    },
  )
}
