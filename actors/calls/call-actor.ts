/**
 * The call actor: binds the pure `call.v1` machine to effects.
 *  - `emit`      → one outbox event (envelope data exactly as emitted; platform,
 *                  account and mode from the actor input), committed with the step;
 *  - projection  → in the step's transaction, the `calls` row (the call log) moves
 *                  with the call: inserted on call.initiated/incoming, updated on
 *                  ringing/answered/transfer/end; `status` stays null until the end;
 *  - `spawnCall` → the new leg of a blind transfer, created durably with the step;
 *  - `placeConsultation` → a warm transfer's consultation call, likewise;
 *  - call.end    → the follow-up actors the owner asks for (recording, voicemail);
 *  - a warm transfer's consultation call, on its call.transfer, tells the held
 *    primary call to resume;
 *  - a recording pause or resume → its interval on the call's recordings row, in the
 *    step that made it (the API's answer reads it back after the step commits);
 *  - presence → the users the call puts on a call or releases (actors/presence/call-presence)
 *    get CALL_STARTED / CALL_ENDED in their presence actor, created with the step if new;
 *    a completed warm transfer resumes the primary call with its target (RESUME
 *    handed_to), whose step puts the target on the call and lets the holders go;
 *  - commands (call control, actors/calls/messages) → admitted by the machine,
 *    their outcome event committed with the machine events they caused;
 *  - every emitted call.* event → one `call transition` line at info (call id,
 *    account, mode, event; the logger carries the worker), written as the step
 *    commits, so only the worker holding the call's shard logs it.
 */
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import type { Logger } from '../../src/logger'
import { idKind } from '../../src/ids'
import { endListenersOfCalls } from '../../src/services/calls/call-listeners'
import { recordPauseToggle } from '../../src/services/calls/recordings'
import { type CallLogInsert, type CallLogPatch, insertCallLogs, patchCallLogs } from '../../src/services/calls/call-log'
import {
  durationSeconds,
  type CallContext,
  type CallEmitted,
  type CallEndData,
  type CallSnapshot,
  type ConsultationRequest,
  type HandOver,
  type RecordingPauseChange,
  type SpawnCallRequest,
} from '../../machines/call'
import type { NewEvent } from '../../src/events/outbox'
import type { SpawnOptions } from '../runtime/client'
import { type Admission, defineActorKind, type ActorSpawn, type Effects } from '../runtime/kinds'
import { type CallPresenceChange, callPresenceChanges, handOverChanges } from '../presence/call-presence'
import { PRESENCE_KIND, presenceMessages } from '../presence/messages'
import { admitActorCommand, CALL_KIND, CALL_MACHINES, type CallActorInput, type CallCommandMessage } from './messages'

export interface CallKindOptions {
  db: Db
  clock: Clock
  /** The call lifecycle at info, one line per emitted event; bound by the worker to its identity (`worker`). */
  log?: Logger
  /** A blind transfer asks for a new call: its input and script (created in the transfer's step). */
  onSpawnCall?: (req: SpawnCallRequest, parent: CallActorInput) => { input: CallActorInput; opts?: SpawnOptions } | undefined
  /** The call ended: the actors to create with call.end (the simulator's recording and voicemail follow-ups). */
  onEnded?: (end: CallEndData, call: CallContext & { input: CallActorInput }) => ActorSpawn[]
  /** A warm transfer held the call: the consultation call to place (created in the same step). */
  onWarmTransfer?: (req: ConsultationRequest, primary: CallActorInput) => { input: CallActorInput; opts?: SpawnOptions }
  /**
   * A SIP call ended: the media role holding its legs hangs up what is still up (a
   * bus publish bound by the composition root). Best effort, handed over as the
   * step's last write, like check-sync's NOTIFY: a notice lost leaves the phones to
   * hang up themselves, the call log is right either way.
   */
  onSipCallEnded?: (notice: SipCallEndedNotice) => void
}

/**
 * What the media role holding a SIP call's legs is told: without `control`, the call
 * ended; with it, what to do to a call that goes on (hold, resume) or is handed over
 * (a blind transfer: it places `new_call_id` itself, starting that call's actor, as
 * it does for every call SIP places).
 */
export interface SipCallEndedNotice {
  call_id: string
  at: string
  control?:
    | { command: 'hold' }
    | { command: 'resume' }
    | { command: 'transfer'; to: string; by: string; new_call_id: string }
    /** A warm transfer completed on this call (the phone's call to consult): its target takes the transferor's place on `primary`. */
    | { command: 'hand_over'; primary: string }
    /** A warm transfer held this call: the transferring user's phone consults `to` on a new call (`consultation_call_id`). */
    | { command: 'consult'; to: string; by: string; consultation_call_id: string }
}

const date = (iso: string | null | undefined) => (iso ? new Date(iso) : undefined)

/** What the call log needs of one emitted call event (written in batches: src/services/calls/call-log). */
type Projection = { insert: CallLogInsert } | { patch: CallLogPatch } | { listenersEnd: string }

/** `cause`: the machine event that emitted `ev` (a completed warm transfer's call.transfer is its call's last event). */
function project(now: Date, c: CallContext & { input: CallActorInput }, ev: CallEmitted, cause: string): Projection[] {
  const input = c.input
  const id = input.call_id
  switch (ev.type) {
    case 'call.initiated':
    case 'call.incoming':
      return [
        {
          insert: {
            id,
            accountId: input.owner.accountId,
            mode: input.owner.mode,
            direction: input.direction,
            fromNumber: input.from_number,
            fromLabel: input.from_name ?? null,
            toNumber: input.to_number,
            userId: ev.data.user_id ?? null,
            fromUserId: input.from_user_id ?? null,
            toUserId: input.to_user_id ?? null,
            startedAt: new Date(input.started_at),
            relatedCall: input.placed_by_transfer?.related_call ?? input.consultation?.related_call ?? null,
            simulated: input.simulated ?? false,
            ...(input.from_endpoint ? { fromEndpoint: input.from_endpoint } : {}),
            updatedAt: now,
          },
        },
      ]
    case 'call.ringing':
      // the first ringing (of several users) sets ringing_at and the rung user
      return [{ patch: { id, updatedAt: now, firstRing: { at: new Date(ev.data.ringing_at), userId: ev.data.user_id } } }]
    case 'call.answered':
      return [
        {
          patch: {
            id,
            updatedAt: now,
            answeredAt: date(ev.data.answered_at),
            connectedAt: date(ev.data.connected_at),
            userId: ev.data.user_id,
            toUserId: ev.data.to_user_id,
            ...(c.answered_endpoint ? { endpoint: c.answered_endpoint } : {}),
          },
        },
      ]
    case 'call.transfer':
      if (cause === 'COMPLETE_WARM_TRANSFER') {
        // A completed warm transfer's consultation call (or a phone's call to consult): its last event (no call.end), so its log is final here.
        const from = c.answered_at ?? input.started_at
        return [
          {
            patch: {
              id,
              updatedAt: now,
              status: 'completed',
              // a phone's call to consult learns here which call it was for
              relatedCall: ev.data.related_call ?? undefined,
              endedAt: new Date(ev.data.transferred_at),
              durationSeconds: durationSeconds(from, ev.data.transferred_at),
            },
          },
          { listenersEnd: id },
        ]
      }
      return ev.data.related_call ? [{ patch: { id, updatedAt: now, relatedCall: ev.data.related_call } }] : []
    case 'call.end':
      return [
        {
          patch: {
            id,
            updatedAt: now,
            ...(c.handled_by?.ai_agent ? { summary: agentSummary(c, ev.data) } : {}),
            status: ev.data.status,
            answeredAt: date(ev.data.answered_at),
            connectedAt: date(ev.data.connected_at),
            endedAt: new Date(ev.data.ended_at),
            durationSeconds: ev.data.duration_seconds,
            userId: ev.data.user_id,
            toUserId: ev.data.to_user_id,
          },
        },
        // listeners end when the call ends
        { listenersEnd: id },
      ]
    default:
      return []
  }
}

/**
 * An AI agent's call summary. The sandbox has no speech, so it says what the call
 * was, not what was said; a live agent's vendor summary takes its place.
 */
function agentSummary(c: CallContext & { input: CallActorInput }, end: CallEndData): string {
  const agent = c.handled_by?.ai_agent_name ?? (c.input.ai_agent?.id === c.handled_by?.ai_agent ? c.input.ai_agent!.name : c.handled_by!.ai_agent!)
  return `AI agent ${agent} handled a ${end.duration_seconds}-second call from ${c.input.from_number}${c.input.simulated ? ' (simulated call, no transcript)' : ''}.`
}

const CALL_LOG_INSERT = 'call_log.insert'
const CALL_LOG_PATCH = 'call_log.patch'
const LISTENERS_END = 'call_listeners.end'
const RECORDING_PAUSES = 'recording.pauses'

type RecordingPauseWrite = { accountId: string; callId: string; paused: boolean; offsetMs: number }

/** The call actor kind, bound to a database and clock. */
export function createCallKind(opts: CallKindOptions) {
  const kind = defineActorKind({
    kind: CALL_KIND,
    machines: CALL_MACHINES,
    batchWriters: {
      [CALL_LOG_INSERT]: (tx, items) => insertCallLogs(tx, items as CallLogInsert[]),
      [CALL_LOG_PATCH]: (tx, items) => patchCallLogs(tx, items as CallLogPatch[]),
      [LISTENERS_END]: (tx, items) => endListenersOfCalls(tx, opts.clock, items as string[]),
      [RECORDING_PAUSES]: async (tx, items) => {
        // In order: a pause and the resume that closes it may commit in one batch.
        for (const w of items as RecordingPauseWrite[]) await recordPauseToggle(tx, opts.clock, w.accountId, w.callId, w.paused, w.offsetMs)
      },
    },
    actions: (fx: Effects) => ({
      emit: ({ context, event }: { context: unknown; event: { type: string } }, params: CallEmitted) => {
        const c = context as CallContext & { input: CallActorInput }
        const input = c.input
        fx.emit({
          platformId: input.owner.platformId,
          accountId: input.owner.accountId,
          mode: input.owner.mode,
          type: params.type,
          data: params.data as unknown as Record<string, unknown>,
          ...(c.apps?.length ? { voiceApps: c.apps } : {}),
        })
        logTransition(fx, opts.log, input, params)
        // The call log moves in the same transaction as the event (batched with the other steps' changes).
        for (const p of project(opts.clock.now(), c, params, event.type)) {
          if ('insert' in p) fx.batch(CALL_LOG_INSERT, p.insert)
          else if ('patch' in p) fx.batch(CALL_LOG_PATCH, p.patch)
          else fx.batch(LISTENERS_END, p.listenersEnd)
        }
        if (params.type === 'call.end') for (const a of opts.onEnded?.(params.data, c) ?? []) fx.spawnActor(a.kind, a.id, a.input, a.opts)
        // A blind transfer's end is no hang-up for the media role: the transfer notice hands the legs over instead.
        if (params.type === 'call.end' && input.sip && event.type !== 'BLIND_TRANSFER') tellMedia(fx, { call_id: input.call_id, at: params.data.ended_at })
        if (params.type === 'call.transfer' && input.sip && event.type === 'BLIND_TRANSFER' && params.data.related_call) {
          const d = params.data
          tellMedia(fx, {
            call_id: input.call_id,
            at: d.transferred_at,
            control: { command: 'transfer', to: d.transferred_to, by: d.transferred_by, new_call_id: d.related_call! },
          })
        }
        if (params.type === 'call.end')
          for (const w of input.end_watchers ?? []) fx.tell(w.kind, w.id, { type: 'CALL_ENDED', call_id: input.call_id, at: params.data.ended_at })
        // The users this event puts on the call or releases.
        tellPresence(fx, callPresenceChanges(params, c, event.type))
        if (params.type === 'call.transfer' && event.type === 'COMPLETE_WARM_TRANSFER' && params.data.related_call) {
          // A completed warm transfer: the held primary call resumes, now with the transfer target (a user who took the consultation, if one did;
          // for a phone's attended transfer, the user its call to consult reached, who may have placed it too).
          const handedTo = (event as { related_call?: string }).related_call
            ? idKind(params.data.transferred_to) === 'user'
              ? params.data.transferred_to
              : undefined
            : c.answered_by
          fx.tell(CALL_KIND, params.data.related_call, {
            type: 'RESUME',
            at: params.data.transferred_at,
            ...(handedTo ? { handed_to: handedTo } : {}),
          })
          // A phone's attended transfer: the media role puts the target on the held call's line (its legs are there).
          if (input.sip)
            tellMedia(fx, { call_id: input.call_id, at: params.data.transferred_at, control: { command: 'hand_over', primary: params.data.related_call } })
        }
      },
      spawnCall: ({ context }: { context: unknown }, params: SpawnCallRequest) => {
        const input = (context as { input: CallActorInput }).input
        // A real call's new leg is placed by the media role (the transfer notice): it rings real phones and starts that call's actor.
        if (input.sip) return
        const leg = opts.onSpawnCall?.(params, input)
        if (leg) fx.spawnActor(CALL_KIND, params.call_id, leg.input, leg.opts)
      },
      holdChanged: ({ context }: { context: unknown }, params: { held: boolean; at: string }) => {
        const input = (context as { input: CallActorInput }).input
        // The media role re-INVITEs the phones unless one of them put the call on hold itself (it tells apart which).
        if (input.sip) tellMedia(fx, { call_id: input.call_id, at: params.at, control: { command: params.held ? 'hold' : 'resume' } })
      },
      recordingPauseChanged: ({ context }: { context: unknown }, params: RecordingPauseChange) => {
        const input = (context as { input: CallActorInput }).input
        fx.batch(RECORDING_PAUSES, { accountId: input.owner.accountId, callId: input.call_id, paused: params.paused, offsetMs: params.offset_ms })
      },
      handedOver: ({ context }: { context: unknown }, params: HandOver) => {
        tellPresence(fx, handOverChanges(context as CallContext, params))
      },
      placeConsultation: ({ context }: { context: unknown }, params: ConsultationRequest) => {
        const input = (context as { input: CallActorInput }).input
        // A real call's consultation is placed by the media role (the consult notice): the transferring user's phone talks to the target.
        if (input.sip) {
          tellMedia(fx, {
            call_id: input.call_id,
            at: params.at,
            control: { command: 'consult', to: params.to, by: params.by, consultation_call_id: params.call_id },
          })
          return
        }
        const leg = opts.onWarmTransfer?.(params, input)
        if (leg) fx.spawnActor(CALL_KIND, params.call_id, leg.input, leg.opts)
      },
    }),
    // Call control: the machine admits a command (admitActorCommand) and its outcome commits in the same step.
    commands: {
      admit: (m: CallCommandMessage, snapshot): Admission => {
        if (!snapshot) return { refused: { code: 'call_not_active', reason: 'has ended' } }
        const admission: Admission & { apps?: string[] } = admitActorCommand(snapshot as CallSnapshot, m.command, m.at)
        // The voice apps following the call hear how their commands (and any other) went, as they hear its other events.
        const apps = (snapshot as CallSnapshot).context.apps
        if (apps?.length) admission.apps = apps
        return admission
      },
      outcome: (m: CallCommandMessage, admission) => [
        {
          ...commandOutcome(m, 'refused' in admission ? admission.refused.code : undefined),
          ...((admission as { apps?: string[] }).apps ? { voiceApps: (admission as { apps?: string[] }).apps } : {}),
        },
      ],
    },
  })
  /**
   * Best effort, handed over as the step's last write, like check-sync's NOTIFY: a
   * notice lost leaves the phones to hang up themselves, the call log is right either way.
   */
  function tellMedia(fx: Effects, notice: SipCallEndedNotice) {
    const notify = opts.onSipCallEnded
    if (!notify) return
    fx.write(async () => {
      try {
        notify(notice)
      } catch {
        // A closed bus must not fail the step.
      }
    })
  }
  return { kind }
}

/**
 * The presence changes of a step, told to the users' presence actors: a start creates
 * the actor when there is none (from an input carrying the change), as presence actors
 * are created lazily; a release needs no spawn, the start it undoes was written by an
 * earlier step.
 */
function tellPresence(fx: Effects, changes: CallPresenceChange[]) {
  for (const p of changes) {
    const m = presenceMessages(p.user_id, { type: p.type, call_id: p.call_id }, p.at)
    fx.tell(PRESENCE_KIND, p.user_id, m.event, p.type === 'CALL_STARTED' ? { orSpawn: m.input } : undefined)
  }
}

/**
 * One line per transition, for an operator asking which worker holds a call: ids,
 * the event and (at the end) the status, never numbers, names or SDP. Written with
 * the step's writes, after the shard fence is checked: a worker that lost the
 * shard does not log a transition it cannot commit.
 */
function logTransition(fx: Effects, log: Logger | undefined, input: CallActorInput, ev: CallEmitted) {
  if (!log?.isLevelEnabled('info')) return
  const line = {
    call_id: input.call_id,
    account: input.owner.accountId,
    mode: input.owner.mode,
    event: ev.type,
    ...(ev.type === 'call.end' ? { status: ev.data.status } : {}),
  }
  fx.write(async () => log.info(line, 'call transition'))
}

/** The outcome event of a command: succeeded, or failed with the refusal's code as the reason. */
export function commandOutcome(m: CallCommandMessage, refusal: string | undefined): NewEvent {
  const c = m.command
  return {
    platformId: m.owner.platformId,
    accountId: m.owner.accountId,
    mode: m.owner.mode,
    type: refusal === undefined ? 'call.command_succeeded' : 'call.command_failed',
    data: {
      call_id: m.call_id,
      command: c.command,
      command_id: m.command_id,
      ...(c.command === 'transfer' && c.mode === 'warm' ? { consultation_call_id: c.consultation_call_id } : {}),
      ...(refusal === undefined ? {} : { reason: refusal }),
    },
  }
}
