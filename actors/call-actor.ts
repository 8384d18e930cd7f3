/**
 * The call actor: binds the pure `call.v1` machine to effects.
 *  - `emit`      → one outbox event (envelope data exactly as emitted; platform,
 *                  account and mode from the actor input), committed with the step;
 *  - projection  → in the step's transaction, the `calls` row (the call log) moves
 *                  with the call: inserted on call.initiated/incoming, updated on
 *                  ringing/answered/transfer/end; `status` stays null until the end;
 *  - `spawnCall` → the new leg of a blind transfer, created durably with the step;
 *  - call.end    → the follow-up actors the owner asks for (recording, voicemail);
 *  - a warm transfer's consultation call, on its call.transfer, tells the held
 *    primary call to resume.
 */
import { and, eq, isNull } from 'drizzle-orm'
import type { Clock } from '../src/clock'
import type { Db } from '../src/db/client'
import { callListeners, calls } from '../src/db/schema'
import { callMachine, durationSeconds, type CallContext, type CallEmitted, type CallEndData, type CallInput, type SpawnCallRequest } from '../machines/call'
import { defineActorKind, type Effects, type SpawnOptions } from './runtime'
import { callerUser, callState, commandEvent, commandOutcome, commandSucceeded, COMMAND_MESSAGE, type CallCommandMessage } from './call-commands'

export const CALL_KIND = 'call'

export interface CallOwner {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
}

/** What the call actor is spawned with: the machine input plus who owns the call. */
export interface CallActorInput extends CallInput {
  owner: CallOwner
  simulated?: boolean
}

export interface CallKindOptions {
  db: Db
  clock: Clock
  /** A blind transfer asks for a new call: its input and script (created in the transfer's step). */
  onSpawnCall?: (req: SpawnCallRequest, parent: CallActorInput) => { input: CallActorInput; opts?: SpawnOptions } | undefined
  /** The call ended: the actors to create with call.end (the simulator's recording and voicemail follow-ups). */
  onEnded?: (end: CallEndData, call: CallContext & { input: CallActorInput }) => ActorSpawn[]
  /** A warm transfer held the call: the consultation call to place (created in the same step). */
  onWarmTransfer?: (r: { call_id: string; primary: CallActorInput; to: string; by: string }, at: Date) => { input: CallActorInput; opts?: SpawnOptions }
}

const d = (iso: string | null | undefined) => (iso ? new Date(iso) : null)

/** The `calls` row change for one emitted call event. */
async function project(db: Db, clock: Clock, input: CallActorInput, ev: CallEmitted): Promise<void> {
  const now = clock.now()
  const id = input.call_id
  switch (ev.type) {
    case 'call.initiated':
    case 'call.incoming': {
      const data = ev.data as unknown as Record<string, unknown>
      await db
        .insert(calls)
        .values({
          id,
          accountId: input.owner.accountId,
          mode: input.owner.mode,
          direction: input.direction,
          fromNumber: input.from_number,
          fromLabel: (input.from_name as string | null | undefined) ?? null,
          toNumber: input.to_number,
          userId: (data.user_id as string | null) ?? null,
          fromUserId: input.from_user_id ?? null,
          toUserId: input.to_user_id ?? null,
          status: null,
          startedAt: new Date(input.started_at),
          relatedCall: input.placed_by_transfer?.related_call ?? input.consultation?.related_call ?? null,
          simulated: input.simulated ?? false,
          createdAt: new Date(input.started_at),
          updatedAt: now,
        })
        .onConflictDoNothing()
      return
    }
    case 'call.ringing':
      // the first ringing (of several users) sets ringing_at
      await db
        .update(calls)
        .set({ ringingAt: new Date(ev.data.ringing_at), userId: ev.data.user_id, updatedAt: now })
        .where(and(eq(calls.id, id), isNull(calls.ringingAt)))
      return
    case 'call.answered':
      await db
        .update(calls)
        .set({
          answeredAt: d(ev.data.answered_at),
          connectedAt: d(ev.data.connected_at),
          ...(ev.data.user_id ? { userId: ev.data.user_id } : {}),
          ...(ev.data.to_user_id ? { toUserId: ev.data.to_user_id } : {}),
          updatedAt: now,
        })
        .where(eq(calls.id, id))
      return
    case 'call.transfer':
      if (input.consultation) {
        // A completed warm transfer's consultation call: its last event (no call.end), so its log is final here.
        const [row] = await db.select({ answeredAt: calls.answeredAt, startedAt: calls.startedAt }).from(calls).where(eq(calls.id, id))
        const from = row?.answeredAt ?? row?.startedAt ?? new Date(input.started_at)
        await db
          .update(calls)
          .set({ status: 'completed', endedAt: new Date(ev.data.transferred_at), durationSeconds: durationSeconds(from.toISOString(), ev.data.transferred_at), updatedAt: now })
          .where(eq(calls.id, id))
        await db.update(callListeners).set({ status: 'ended', updatedAt: now }).where(and(eq(callListeners.callId, id), eq(callListeners.status, 'active')))
      } else if (ev.data.related_call) await db.update(calls).set({ relatedCall: ev.data.related_call, updatedAt: now }).where(eq(calls.id, id))
      return
    case 'call.end':
      await db
        .update(calls)
        .set({
          status: ev.data.status,
          answeredAt: d(ev.data.answered_at),
          connectedAt: d(ev.data.connected_at),
          endedAt: new Date(ev.data.ended_at),
          durationSeconds: ev.data.duration_seconds,
          ...(ev.data.user_id ? { userId: ev.data.user_id } : {}),
          ...(ev.data.to_user_id ? { toUserId: ev.data.to_user_id } : {}),
          updatedAt: now,
        })
        .where(eq(calls.id, id))
      // listeners end when the call ends
      await db.update(callListeners).set({ status: 'ended', updatedAt: now }).where(and(eq(callListeners.callId, id), eq(callListeners.status, 'active')))
      return
    default:
      return
  }
}

/** Another actor a call's step creates (durably, in the step's transaction). */
export interface ActorSpawn {
  kind: string
  id: string
  input: unknown
  opts?: SpawnOptions
}

/** The call actor kind, bound to a database and clock. */
export function createCallKind(opts: CallKindOptions) {
  const kind = defineActorKind({
    kind: CALL_KIND,
    machines: [callMachine],
    actions: (fx: Effects) => ({
      emit: ({ context }: { context: unknown }, params: CallEmitted) => {
        const c = context as CallContext & { input: CallActorInput }
        const input = c.input
        fx.emit({ platformId: input.owner.platformId, accountId: input.owner.accountId, mode: input.owner.mode, type: params.type, data: params.data as unknown as Record<string, unknown> })
        // The call log moves in the same transaction as the event.
        fx.write((tx) => project(tx, opts.clock, input, params))
        if (params.type === 'call.end') for (const a of opts.onEnded?.(params.data, c) ?? []) fx.spawnActor(a.kind, a.id, a.input, a.opts)
        if (params.type === 'call.transfer' && input.consultation?.related_call) {
          // A completed warm transfer: the held primary call resumes, now with the transfer target.
          fx.tell(CALL_KIND, input.consultation.related_call, { type: 'RESUME', at: params.data.transferred_at })
        }
      },
      spawnCall: ({ context }: { context: unknown }, params: SpawnCallRequest) => {
        const input = (context as { input: CallActorInput }).input
        const leg = opts.onSpawnCall?.(params, input)
        if (leg) fx.spawnActor(CALL_KIND, params.call_id, leg.input, leg.opts)
      },
    }),
    // Commands from call control: machine events and their outcome in one step (actors/call-commands.ts).
    handle: (message, actor, fx) => {
      if (message.type !== COMMAND_MESSAGE) return false
      const m = message as unknown as CallCommandMessage
      const before = callState(actor.snapshot())!
      const callId = before.input.call_id
      let ok = !before.ended
      if (ok) {
        const event = commandEvent(m, before)
        if (event) actor.send(event)
        ok = commandSucceeded(m, callState(actor.snapshot())!)
      }
      if (ok && m.command === 'transfer' && m.transfer?.mode === 'warm' && opts.onWarmTransfer) {
        const leg = opts.onWarmTransfer({ call_id: m.transfer.consultation_call_id!, primary: before.input, to: m.transfer.to, by: callerUser(before.input) ?? 'api' }, new Date(m.at))
        fx.spawnActor(CALL_KIND, m.transfer.consultation_call_id!, leg.input, leg.opts)
      }
      fx.emit(commandOutcome(m, callId, ok))
      return true
    },
    // A command that reaches a call already over is reported failed.
    orphan: (message) => {
      if (message.type !== COMMAND_MESSAGE) return undefined
      const m = message as unknown as CallCommandMessage
      return [commandOutcome(m, m.call_id, false)]
    },
  })
  return { kind }
}
