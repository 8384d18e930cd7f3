/**
 * Controlling an active call: POST /v1/calls/{call_id} (updateCall), recording
 * pause/resume, and listeners.
 *
 * Commands answer 202 and run in the actor: the route checks that the call exists
 * in the account (404 call_not_found) and that the call actor's committed state
 * admits the command (409 call_not_active), then writes the command for the call
 * actor in the transaction of the request's audit and idempotency records
 * (actors/call-commands.ts), and answers 202 with the command id. The call actor
 * runs it and reports the outcome with it, exactly once:
 *
 *   call.command_succeeded  {call_id, command, command_id[, consultation_call_id]}
 *   call.command_failed     {call_id, command, command_id, reason: call_not_active}
 *
 * (the call ended or changed state before the command ran).
 *
 * Warm transfer: `transfer` with mode warm holds the call and places a consultation
 * call from the transferring user to the target (its id is in the 202 answer);
 * `complete_transfer` on the consultation call hands the held caller over: the
 * consultation call's last event is call.transfer and the primary call resumes with
 * the target, ending normally later. Hanging up the consultation call instead
 * cancels the transfer (the primary stays on hold until resumed).
 */
import { and, eq } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { CALL_KIND } from '../../actors/call-actor'
import { ActorDone, ActorNotFound, type ActorClient } from '../../actors/runtime'
import { callState, COMMAND_MESSAGE, sendCallCommand, type CallCommandMessage } from '../../actors/call-commands'
import { recordings, users } from '../../src/db/schema'
import type { Db } from '../../src/db/client'
import { ApiError, CallNotActive, conflict, ValidationError } from '../../src/errors'
import { newId } from '../../src/ids'
import { Id, ListOf } from '../../src/schemas/common'
import * as S from '../../src/schemas/calls'
import { getCall } from '../../src/services/calls'
import { createListener, endListener, getListener, listenerView, listListeners, reconcileListeners } from '../../src/services/call-listeners'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const rule = accountLevel()
type Transfer = NonNullable<CallCommandMessage['transfer']>
type Account = { id: string; platformId: string; mode: 'test' | 'live' }

export function callControlRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  const client = (): ActorClient => {
    const sim = deps.callSimulator
    if (!sim) throw new ApiError(503, 'This process does not run calls (no worker role).', 'call_simulator_unavailable')
    return sim.client
  }

  /** 404 when the call is not the account's; 409 call_not_active when no live actor runs it. */
  const liveCall = async (accountId: string, callId: string) => {
    const row = await getCall(deps.db, accountId, callId)
    const state = callState(await client().inspect(CALL_KIND, row.id))
    if (!state || state.ended || row.status !== null) throw new CallNotActive(row.id, 'has ended')
    return { row, state }
  }

  /** Sends a recording toggle to the call actor and records the pause interval (simulated ms from the answer). */
  const toggleRecording = async (account: Account, callId: string, pause: boolean, mutate: (w: (tx: Db) => Promise<{ resource: string; body: unknown }>) => Promise<Response>) => {
    const { state } = await liveCall(account.id, callId)
    if (!state.connected) throw new CallNotActive(callId, 'is not answered')
    if (pause && (!state.recording.on || state.recording.paused)) throw conflict(`Call ${callId} is not recording (or its recording is already paused).`, 'recording_not_active')
    if (!pause && !(state.recording.on && state.recording.paused)) throw conflict(`The recording of call ${callId} is not paused.`, 'recording_not_paused')
    const at = deps.clock.now()
    let after: NonNullable<ReturnType<typeof callState>>
    try {
      after = callState(await client().send(CALL_KIND, callId, { type: pause ? 'RECORDING_PAUSE' : 'RECORDING_RESUME', at: at.toISOString() }))!
    } catch (err) {
      if (err instanceof ActorDone || err instanceof ActorNotFound) throw new CallNotActive(callId, 'has ended')
      throw err
    }
    if (after.ended || after.recording.paused !== pause) throw conflict(`The recording of call ${callId} changed state meanwhile.`, pause ? 'recording_not_active' : 'recording_not_paused')
    const offset = Math.max(0, at.getTime() - Date.parse(state.answered_at!))
    return mutate(async (tx) => {
      const [rec] = await tx.select().from(recordings).where(and(eq(recordings.accountId, account.id), eq(recordings.callId, callId)))
      let pauses = rec?.pauses ?? []
      if (pause) pauses = [...pauses, { from: offset, to: null }]
      else pauses = pauses.map((p) => (p.to === null ? { ...p, to: Math.max(p.from, offset) } : p))
      if (rec) {
        await tx.update(recordings).set({ pauses, updatedAt: at }).where(eq(recordings.id, rec.id))
      } else {
        await tx.insert(recordings).values({ id: newId('recording'), callId, accountId: account.id, status: 'recording', pauses, createdAt: at, updatedAt: at })
      }
      return {
        resource: callId,
        body: {
          object: 'call_recording' as const,
          call_id: callId,
          status: pause ? ('paused' as const) : ('recording' as const),
          pauses: pauses.map((p) => ({ from_ms: p.from, to_ms: p.to })),
        },
      }
    })
  }

  const callParams = t.Object({ call_id: Id() })
  const listenerParams = t.Object({ call_id: Id(), listener_id: Id() })

  return new Elysia({ name: 'routes/call-control' })
    .use(base)
    .post(
      '/v1/calls/:call_id',
      async ({ auth, params, body, mutate }) => {
        const account = auth.account! as Account
        const command = body.action
        const callId = params.call_id
        let transfer: Transfer | undefined
        // The state checks run after the idempotency lookup (a replay answers what the first request got).
        const check = async () => {
          const { row, state } = await liveCall(account.id, callId)
          if (command === 'hold' && !(state.connected && !state.held)) throw new CallNotActive(row.id, state.connected ? 'is already on hold' : 'is not answered')
          if (command === 'resume' && !(state.connected && state.held)) throw new CallNotActive(row.id, 'is not on hold')
          if (body.action === 'transfer') {
            if (!state.connected) throw new CallNotActive(row.id, 'is not answered')
            if (state.input.consultation) throw conflict(`Call ${row.id} is the consultation call of a warm transfer: complete or hang up that transfer instead.`, 'call_transfer_not_allowed')
            const to = body.to
            if (!/^\+[1-9]\d{1,14}$/.test(to)) {
              const [u] = await deps.db.select({ id: users.id }).from(users).where(and(eq(users.accountId, account.id), eq(users.id, to)))
              if (!u) throw new ValidationError({ to: 'must be an E.164 number or a user of this account' })
            }
            const mode = body.mode ?? 'blind'
            transfer = { to, mode, ...(mode === 'warm' ? { consultation_call_id: newId('call') } : { new_call_id: newId('call') }) }
          }
          if (command === 'complete_transfer') {
            if (!state.input.consultation) throw conflict(`Call ${row.id} is not the consultation call of a warm transfer.`, 'call_transfer_not_allowed')
            if (!state.connected) throw new CallNotActive(row.id, 'is not answered')
          }
        }
        const commandId = `cmd_${crypto.randomUUID().replace(/-/g, '')}`
        // The command travels to the call actor durably, with the request's audit and idempotency records.
        return mutate(async (tx) => {
          await sendCallCommand(tx, deps.clock, callId, {
            type: COMMAND_MESSAGE,
            call_id: callId,
            command,
            command_id: commandId,
            at: deps.clock.now().toISOString(),
            owner: { platformId: account.platformId, accountId: account.id, mode: account.mode },
            ...(transfer ? { transfer } : {}),
          })
          return {
            resource: callId,
            status: 202,
            body: {
              id: commandId,
              object: 'call_command' as const,
              call_id: callId,
              command,
              ...(transfer?.consultation_call_id ? { consultation_call_id: transfer.consultation_call_id } : {}),
            },
          }
        }, { check })
      },
      {
        params: callParams,
        body: S.UpdateCallRequest,
        detail: op('updateCall', {
          summary: 'Control an active call',
          description:
            'Commands: hangup (ends the call now), hold, resume, transfer and complete_transfer. transfer takes `to` (an E.164 number or a user id) and `mode`: blind (the default: the original call gets call.transfer and ends, the new leg has its own full event set) or warm (the call is held and a consultation call from the transferring user to `to` is placed; its id is `consultation_call_id` in this answer and in call.command_succeeded). complete_transfer, sent to the consultation call, hands the held caller to the target: the consultation call emits call.transfer as its last event (no call.end) and the primary call resumes, ending normally later; hanging up the consultation call cancels the transfer. Answers 202 with the command id; the outcome arrives as call.command_succeeded {call_id, command, command_id[, consultation_call_id]} or call.command_failed {call_id, command, command_id, reason}. 409 call_not_active when the call has ended or its state does not admit the command (hold/resume/transfer/complete_transfer need an answered call; resume needs a held one); 409 call_transfer_not_allowed for transfer on a consultation call or complete_transfer on any other call.',
          tag: 'Calls',
          auth: rule,
          status: 202,
          response: S.CallCommand,
          errors: { 404: ['call_not_found'], 409: ['call_not_active', 'call_transfer_not_allowed'], 503: ['call_simulator_unavailable'] },
        }),
      },
    )
    .post('/v1/calls/:call_id/recording/pause', ({ auth, params, mutate }) => toggleRecording(auth.account! as Account, params.call_id, true, mutate), {
      params: callParams,
      detail: op('pauseCallRecording', {
        summary: 'Pause the recording of a call',
        description: 'The recording keeps one file: the paused stretch is silence in it. 409 call_not_active when the call is not answered or has ended; 409 recording_not_active when it is not recording or already paused.',
        tag: 'Calls',
        auth: rule,
        response: S.CallRecordingState,
        errors: { 404: ['call_not_found'], 409: ['call_not_active', 'recording_not_active'], 503: ['call_simulator_unavailable'] },
      }),
    })
    .post('/v1/calls/:call_id/recording/resume', ({ auth, params, mutate }) => toggleRecording(auth.account! as Account, params.call_id, false, mutate), {
      params: callParams,
      detail: op('resumeCallRecording', {
        summary: 'Resume the recording of a call',
        description: '409 call_not_active when the call is not answered or has ended; 409 recording_not_paused when the recording is not paused.',
        tag: 'Calls',
        auth: rule,
        response: S.CallRecordingState,
        errors: { 404: ['call_not_found'], 409: ['call_not_active', 'recording_not_paused'], 503: ['call_simulator_unavailable'] },
      }),
    })
    .get(
      '/v1/calls/:call_id/listeners',
      async ({ auth, params, query, listContext }) => {
        const accountId = auth.account!.id
        const call = await getCall(deps.db, accountId, params.call_id)
        await reconcileListeners(deps.db, deps.clock, accountId, call.id)
        const ctx = listContext(query)
        return listEnvelope(ctx, await listListeners(deps.db, accountId, call.id, pageRequest(ctx)), listenerView)
      },
      {
        params: callParams,
        query: t.Object({ ...listQuery }, { additionalProperties: false }),
        detail: op('listCallListeners', { summary: 'List the listeners of a call', tag: 'Calls', auth: rule, response: ListOf(S.CallListener), errors: { 404: ['call_not_found'] } }),
      },
    )
    .post(
      '/v1/calls/:call_id/listeners',
      async ({ auth, params, body, mutate }) => {
        const accountId = auth.account!.id
        const { row, state } = await liveCall(accountId, params.call_id)
        if (!state.connected) throw new CallNotActive(row.id, 'is not answered')
        const response = await mutate(async (tx) => {
          if (body.user) {
            const [u] = await tx.select({ id: users.id }).from(users).where(and(eq(users.accountId, accountId), eq(users.id, body.user)))
            if (!u) throw new ValidationError({ user: 'is not a user of this account' })
          }
          const l = await createListener(tx, deps.clock, accountId, row.id, { user: body.user, mode: body.mode })
          return { resource: l.id, body: listenerView(l) }
        })
        // A call that ended while the listener was created ends it too.
        await reconcileListeners(deps.db, deps.clock, accountId, row.id)
        return response
      },
      {
        params: callParams,
        body: S.CreateListenerRequest,
        detail: op('createCallListener', {
          summary: 'Add a listener to an active call',
          description: "mode listen (default), whisper or barge. Refused with 409 call_not_active while the call is ringing or after it ended. Listeners end when the call ends.",
          tag: 'Calls',
          auth: rule,
          response: S.CallListener,
          errors: { 404: ['call_not_found'], 409: ['call_not_active'], 503: ['call_simulator_unavailable'] },
        }),
      },
    )
    .get(
      '/v1/calls/:call_id/listeners/:listener_id',
      async ({ auth, params }) => {
        const accountId = auth.account!.id
        const call = await getCall(deps.db, accountId, params.call_id)
        await reconcileListeners(deps.db, deps.clock, accountId, call.id)
        return listenerView(await getListener(deps.db, accountId, call.id, params.listener_id))
      },
      {
        params: listenerParams,
        detail: op('getCallListener', { summary: 'Get a listener of a call', tag: 'Calls', auth: rule, response: S.CallListener, errors: { 404: ['call_not_found', 'listener_not_found'] } }),
      },
    )
    .delete(
      '/v1/calls/:call_id/listeners/:listener_id',
      async ({ auth, params, mutate }) => {
        const accountId = auth.account!.id
        const call = await getCall(deps.db, accountId, params.call_id)
        return mutate(async (tx) => {
          const l = await endListener(tx, deps.clock, accountId, call.id, params.listener_id)
          return { resource: l.id, body: listenerView(l) }
        })
      },
      {
        params: listenerParams,
        detail: op('deleteCallListener', {
          summary: 'Remove a listener from a call',
          description: 'Ends the listener; answers it with status ended.',
          tag: 'Calls',
          auth: rule,
          response: S.CallListener,
          errors: { 404: ['call_not_found', 'listener_not_found'] },
        }),
      },
    )
}
