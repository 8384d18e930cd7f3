/**
 * The spec's "Calls" group: the call log (list, get, transcript, recording),
 * click-to-call (POST /v1/calls), call control (POST /v1/calls/{id}), recording
 * pause/resume and listeners. The sandbox simulator's test call is in test-helpers.
 *
 * Call control is the recipe for an actor-backed resource: the route finds the call
 * in the account (404), asks the call's machine whether it takes the command in its
 * committed state (actors/client: admitCall; 409 with the refusal's code), and
 * writes the command for the call actor in the transaction of the request's audit
 * and idempotency records (sendCommand). It answers 202 with the command id; the
 * actor runs the command and reports it, exactly once, with
 * call.command_succeeded or call.command_failed.
 */
import { Elysia, t } from 'elysia'
import {
  ActorDone,
  ActorNotFound,
  admitCall,
  CALL_KIND,
  type CallCommand,
  type CallCommandMessage,
  type CallCommandRefusal,
  callSnapshotOf,
  COMMAND_MESSAGE,
  isConnected,
  readActorState,
  recordingToggled,
  sendCommand,
  type TimerRow,
} from '../../actors/client'
import { ApiError, CallNotActive } from '../../src/errors'
import { newId } from '../../src/ids'
import * as S from '../../src/schemas/calls'
import { DateBound, Id, isE164 } from '../../src/schemas/common'
import { assertUserOfAccount } from '../../src/services/accounts/users'
import { createListener, endListener, getListener, listenerView, listListeners, reconcileListeners } from '../../src/services/calls/call-listeners'
import { callLogPage, callView, getCall } from '../../src/services/calls/call-log'
import { type ClickToCallNotice, planClickToCallRequest } from '../../src/services/calls/click-to-call'
import { recordClickToCall } from '../../src/services/calls/click-to-call-requests'
import { callTranscriptView, recordingDownloadView, recordingOfCall, recordingPauses } from '../../src/services/calls/recordings'
import { noRegisteredDevices } from '../../src/services/calls/registered-devices'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { Mutate } from '../plugins/mutation'
import type { requestContext } from '../plugins/request-context'
import { signing } from './media-helpers'

const TAG = 'Calls'
const rule = accountLevel()
const callParams = t.Object({ call_id: Id() })
const listenerParams = t.Object({ call_id: Id(), listener_id: Id() })
type Account = { id: string; platformId: string; mode: 'test' | 'live' }

/** A command the call's machine refused, as the API reports it. */
const refusedBy = (callId: string, r: CallCommandRefusal) => new ApiError(409, `Call ${callId} ${r.reason}.`, r.code)

/** The request as the command the call actor takes (fresh ids for the calls a transfer places). */
function commandOf(body: typeof S.UpdateCallRequest.static): CallCommand {
  if (body.action !== 'transfer') return { command: body.action }
  if (body.mode === 'warm') return { command: 'transfer', to: body.to, mode: 'warm', consultation_call_id: newId('call') }
  return { command: 'transfer', to: body.to, mode: 'blind', new_call_id: newId('call') }
}

/** 202 Accepted carries no body: not even the JSON `null` that mutate() stores for replays. */
function withoutBody(r: Response): Response {
  if (r.status !== 202) return r
  const headers = new Headers(r.headers)
  headers.delete('content-type')
  return new Response(null, { status: 202, headers })
}

export function callRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  const registrar = deps.registeredDevices ?? noRegisteredDevices()
  /** Durable messages run at the owner's next poll anyway; this only spares the wait. */
  const wake = (callId: string, rows: TimerRow[]) => deps.actors?.wake(CALL_KIND, callId, rows).catch(() => {})

  /**
   * A recording toggle: a synchronous message to the call actor, whose step writes the
   * pause interval with the toggle (one durable step); the answer reads it back.
   */
  const toggleRecording = async (account: Account, callId: string, pause: boolean, mutate: Mutate) => {
    const call = await getCall(deps.db, account.id, callId)
    const admission = admitCall(
      await readActorState(deps.db, CALL_KIND, call.id),
      { command: pause ? 'recording_pause' : 'recording_resume' },
      deps.clock.now().toISOString(),
    )
    if ('refused' in admission) throw refusedBy(call.id, admission.refused)
    if (!deps.actors)
      throw new ApiError(503, 'This process cannot reach the call actors (no worker role, and no NATS to reach workers).', 'call_simulator_unavailable')
    const result = await deps.actors.send(CALL_KIND, call.id, admission.event).catch((err) => {
      throw err instanceof ActorDone || err instanceof ActorNotFound ? new CallNotActive(call.id, 'has ended') : err
    })
    if (!recordingToggled(result, pause))
      throw new ApiError(409, `The recording of call ${call.id} changed state meanwhile.`, pause ? 'recording_not_active' : 'recording_not_paused')
    return mutate(async (tx) => ({
      resource: call.id,
      body: {
        object: 'call_recording' as const,
        call_id: call.id,
        status: pause ? ('paused' as const) : ('recording' as const),
        pauses: await recordingPauses(tx, account.id, call.id),
      },
    }))
  }

  return new Elysia({ name: 'routes/calls' })
    .use(base)
    .get(
      '/v1/calls',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        return listEnvelope(ctx, await callLogPage(deps.db, auth.account!.id, query, pageRequest(ctx)), (v) => v)
      },
      {
        query: t.Object(
          {
            ...listQuery,
            user_id: t.Optional(Id()),
            endpoint_id: t.Optional(Id('calls this device (a desk phone, a DECT handset) placed or answered')),
            direction: S.DirectionFilter,
            from_number: t.Optional(t.String({ maxLength: 32 })),
            to_number: t.Optional(t.String({ maxLength: 32 })),
            status: t.Optional(t.Union([t.Literal('completed'), t.Literal('no-answer'), t.Literal('busy'), t.Literal('failed'), t.Literal('voicemail')])),
            from_date: DateBound('calls started at or after'),
            to_date: DateBound('calls started up to (a date is inclusive)'),
            'expand[]': expandQuery('recording'),
          },
          { additionalProperties: false },
        ),
        detail: op('listCallLogs', { summary: 'List call logs', tag: TAG, auth: rule, list: S.CallLog }),
      },
    )
    .post(
      '/v1/calls',
      async ({ auth, body, mutate, log }) => {
        const account = auth.account!
        let notice: ClickToCallNotice | undefined
        const response = await mutate(async (tx) => {
          const placed = await planClickToCallRequest(tx, account, body, registrar)
          // Recorded with the 202: a media process places it once it takes it (on the notice, or on its poll for missed ones).
          if (placed.kind !== 'nothing')
            notice = await recordClickToCall(
              tx,
              { owner: { platformId: account.platformId, accountId: account.id, mode: account.mode }, plan: placed, at: deps.clock.now().toISOString() },
              deps.clock.wallNow(),
            )
          return { resource: body.user, status: 202, body: null }
        })
        // After the commit: the media role rings the user's phones, then the destination (a replayed request places nothing again).
        if (notice) {
          if (deps.placeClickToCall) deps.placeClickToCall(notice)
          else
            log.warn(
              { plan: notice.plan.kind, user: notice.plan.from_user_id },
              'click-to-call recorded; no media role is told now (one takes it on its next poll)',
            )
        }
        return withoutBody(response)
      },
      {
        body: S.CreateCallRequest,
        detail: op('createCall', {
          summary: 'Click-to-call: ring a user’s devices, then dial',
          description:
            "Rings the user's registered devices; when one answers, dials dial_string. dial_string is an E.164 number, an extension or user id of the account, or digits (a 10-digit NANP number or 1 + 10 digits becomes +1…; N11 codes and 933 are dialled as given; 911 and 933 are never shadowed by an extension); spaces, dots, dashes and parentheses are ignored. did, when given, must be one of the account's active phone numbers and is the caller ID of this call. Answers 202 Accepted with no body once the request is recorded; the call itself is reported through call.* events. Internal destinations connect; a public-network destination from a sandbox account is refused: the caller hears an announcement and no call.* event is sent. If the user has no registered device nothing happens (no call, no event). 400 validation_error names each offending field: details.user (not a user of the account), details.dial_string (not dialable), details.did (not an active number of the account).",
          tag: TAG,
          auth: rule,
          status: 202,
        }),
      },
    )
    .get(
      '/v1/calls/:call_id',
      async ({ auth, params }) => {
        const accountId = auth.account!.id
        const row = await getCall(deps.db, accountId, params.call_id)
        return callView(row, row.status === null ? undefined : ((await recordingOfCall(deps.db, accountId, row.id)) ?? null))
      },
      {
        params: callParams,
        query: t.Object({ 'expand[]': expandQuery('recording') }, { additionalProperties: false }),
        detail: op('getCallLog', {
          summary: 'Get a call log',
          description: 'While the call is in flight this is a sparse live view: status is null and fields known only after the end are absent.',
          tag: TAG,
          auth: rule,
          response: S.CallLog,
          errors: { 404: ['call_not_found'] },
        }),
      },
    )
    .post(
      '/v1/calls/:call_id',
      async ({ auth, params, body, mutate }) => {
        const account = auth.account! as Account
        const command = commandOf(body)
        let written: TimerRow | undefined
        const response = await mutate(async (tx) => {
          const call = await getCall(tx, account.id, params.call_id)
          if (command.command === 'transfer' && !isE164(command.to)) await assertUserOfAccount(tx, account.id, command.to, 'to')
          const at = deps.clock.now().toISOString()
          const admission = admitCall(await readActorState(tx, CALL_KIND, call.id), command, at)
          if ('refused' in admission) throw refusedBy(call.id, admission.refused)
          const message: CallCommandMessage = {
            type: COMMAND_MESSAGE,
            command_id: newId('command'),
            at,
            call_id: call.id,
            owner: { platformId: account.platformId, accountId: account.id, mode: account.mode },
            command,
          }
          // Durable: committed with this request's audit and idempotency records.
          written = await sendCommand(tx, deps.clock, CALL_KIND, call.id, message)
          return {
            resource: call.id,
            status: 202,
            body: {
              id: message.command_id,
              object: 'call_command' as const,
              call_id: call.id,
              command: command.command as Exclude<CallCommand['command'], 'recording_pause' | 'recording_resume'>,
              ...(command.command === 'transfer' && command.mode === 'warm' ? { consultation_call_id: command.consultation_call_id } : {}),
            },
          }
        })
        if (written) void wake(params.call_id, [written])
        return response
      },
      {
        params: callParams,
        body: S.UpdateCallRequest,
        detail: op('updateCall', {
          summary: 'Control an active call',
          description:
            'Commands: hangup (ends the call now), hold, resume, transfer and complete_transfer. transfer takes `to` (an E.164 number or a user id) and `mode`: blind (the default: the original call gets call.transfer and ends, the new leg has its own full event set) or warm (the call is held and a consultation call from the transferring user to `to` is placed; its id is `consultation_call_id` in this answer and in call.command_succeeded). complete_transfer, sent to the consultation call, hands the held caller to the target: the consultation call emits call.transfer as its last event (no call.end) and the primary call resumes, ending normally later; hanging up the consultation call cancels the transfer. Answers 202 with the command id once the command is recorded (a crash after the answer does not lose it); the outcome arrives as call.command_succeeded {call_id, command, command_id[, consultation_call_id]} or call.command_failed {call_id, command, command_id, reason} (reason: call_not_active when the call ended or changed state first). 409 call_not_active when the call has ended or its state does not admit the command (hold/resume/transfer/complete_transfer need an answered call; resume needs a held one); 409 call_transfer_not_allowed for transfer on a consultation call, complete_transfer on any other call, or a warm transfer of a call on real phones that has no user on a phone to consult from. On a call on real phones (SIP) a warm transfer moves the user’s phone onto the consultation call while the other party hears the hold music; a consultation that ends without complete_transfer puts the phone back on the held call, which stays held until resumed. A call a voice app answered takes hangup and a blind transfer (made by the app: transferred_by is the app’s id), nothing else; the app receives the outcome events of the call’s commands with its other events.',
          tag: TAG,
          auth: rule,
          status: 202,
          response: S.CallCommand,
          errors: { 404: ['call_not_found'], 409: ['call_not_active', 'call_transfer_not_allowed'] },
        }),
      },
    )
    .get(
      '/v1/calls/:call_id/transcript',
      async ({ auth, params }) => {
        const accountId = auth.account!.id
        const row = await getCall(deps.db, accountId, params.call_id)
        return callTranscriptView(row.id, await recordingOfCall(deps.db, accountId, row.id))
      },
      {
        params: callParams,
        detail: op('getCallTranscript', {
          summary: 'Get the transcript of a call recording',
          description: '404 recording_not_found when the call has no recording.',
          tag: TAG,
          auth: rule,
          response: S.Transcript,
          errors: { 404: ['call_not_found', 'recording_not_found'] },
        }),
      },
    )
    .get(
      '/v1/calls/:call_id/recording',
      async ({ auth, params }) => {
        const accountId = auth.account!.id
        const row = await getCall(deps.db, accountId, params.call_id)
        return recordingDownloadView(row.id, await recordingOfCall(deps.db, accountId, row.id), signing(deps))
      },
      {
        params: callParams,
        detail: op('getCallRecording', {
          summary: 'Get the recording of a call',
          description:
            'Answers with a signed download URL serving the audio (audio/wav), valid for an hour without an API key. Pause and resume leave silent gaps in the one file. 404 recording_not_found when the call has no recording.',
          tag: TAG,
          auth: rule,
          response: S.RecordingDownload,
          errors: { 404: ['call_not_found', 'recording_not_found'] },
        }),
      },
    )
    .post('/v1/calls/:call_id/recording/pause', ({ auth, params, mutate }) => toggleRecording(auth.account! as Account, params.call_id, true, mutate), {
      params: callParams,
      detail: op('pauseCallRecording', {
        summary: 'Pause the recording of a call',
        description:
          'The recording keeps one file: the paused stretch is silence in it. 409 call_not_active when the call is not answered or has ended; 409 recording_not_active when it is not recording or already paused.',
        tag: TAG,
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
        tag: TAG,
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
        detail: op('listCallListeners', {
          summary: 'List the listeners of a call',
          tag: TAG,
          auth: rule,
          list: S.CallListener,
          errors: { 404: ['call_not_found'] },
        }),
      },
    )
    .post(
      '/v1/calls/:call_id/listeners',
      async ({ auth, params, body, mutate }) => {
        const accountId = auth.account!.id
        const response = await mutate(async (tx) => {
          const call = await getCall(tx, accountId, params.call_id)
          const snapshot = callSnapshotOf(await readActorState(tx, CALL_KIND, call.id))
          if (!snapshot || !isConnected(snapshot)) throw new CallNotActive(call.id, snapshot ? 'is not answered' : 'has ended')
          if (body.user) await assertUserOfAccount(tx, accountId, body.user, 'user')
          const l = await createListener(tx, deps.clock, accountId, call.id, { user: body.user, mode: body.mode })
          return { resource: l.id, body: listenerView(l) }
        })
        // A call that ended while the listener was created ends it too.
        await reconcileListeners(deps.db, deps.clock, accountId, params.call_id)
        return response
      },
      {
        params: callParams,
        body: S.CreateListenerRequest,
        detail: op('createCallListener', {
          summary: 'Add a listener to an active call',
          description:
            'mode listen (default), whisper or barge. Refused with 409 call_not_active while the call is ringing or after it ended. Listeners end when the call ends.',
          tag: TAG,
          auth: rule,
          response: S.CallListener,
          errors: { 404: ['call_not_found'], 409: ['call_not_active'] },
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
        detail: op('getCallListener', {
          summary: 'Get a listener of a call',
          tag: TAG,
          auth: rule,
          response: S.CallListener,
          errors: { 404: ['call_not_found', 'listener_not_found'] },
        }),
      },
    )
    .delete(
      '/v1/calls/:call_id/listeners/:listener_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx) => {
          const accountId = auth.account!.id
          const call = await getCall(tx, accountId, params.call_id)
          const l = await endListener(tx, deps.clock, accountId, call.id, params.listener_id)
          return { resource: l.id, body: listenerView(l) }
        }),
      {
        params: listenerParams,
        detail: op('deleteCallListener', {
          summary: 'Remove a listener from a call',
          description: 'Ends the listener; answers it with status ended.',
          tag: TAG,
          auth: rule,
          response: S.CallListener,
          errors: { 404: ['call_not_found', 'listener_not_found'] },
        }),
      },
    )
}
