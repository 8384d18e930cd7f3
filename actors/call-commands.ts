/**
 * Commands on a call (POST /v1/calls/{id}): hang up, hold, resume, blind or warm
 * transfer, complete a warm transfer.
 *
 * A command is a durable message to the call actor: the gateway writes it (a timer
 * row due now) in the same transaction as the request's audit and idempotency
 * records, and the call actor's step runs it, emitting its machine events and
 * the outcome together:
 *
 *   call.command_succeeded  {call_id, command, command_id[, consultation_call_id]}
 *   call.command_failed     {call_id, command, command_id, reason: 'call_not_active'}
 *
 * So an accepted (202) command is never lost by a crash and reported exactly once;
 * a command that reaches a call already ended is reported failed.
 */
import type { StateValue } from 'xstate'
import type { Clock } from '../src/clock'
import type { Db } from '../src/db/client'
import { scheduleTimer } from '../src/scheduler/durable-timers'
import type { NewEvent } from '../src/events/outbox'
import type { CallMachineEvent } from '../machines/call'
import type { CallActorInput, CallOwner } from './call-actor'
import { shardOf } from './shards'

export const COMMAND_MESSAGE = '$command'
export type CallCommandName = 'hangup' | 'hold' | 'resume' | 'transfer' | 'complete_transfer'

export interface CallCommandMessage {
  type: typeof COMMAND_MESSAGE
  call_id: string
  command: CallCommandName
  command_id: string
  /** When the command was accepted (the machine events carry it). */
  at: string
  owner: CallOwner
  transfer?: { to: string; mode: 'blind' | 'warm'; consultation_call_id?: string; new_call_id?: string }
}

/** What call control needs to know of a call actor's state. */
export interface CallState {
  ended: boolean
  /** answered by a person (not voicemail) and not ended. */
  connected: boolean
  held: boolean
  recording: { on: boolean; paused: boolean }
  answered_at: string | null
  input: CallActorInput
}

/** From a persisted row ({status, snapshot}) or a live snapshot ({value, context, status}). */
export function callState(row: { status: string; snapshot?: unknown; value?: unknown; context?: unknown } | undefined): CallState | undefined {
  if (!row) return undefined
  const snap = ('snapshot' in row && row.snapshot !== undefined ? row.snapshot : row) as { value?: StateValue; context?: Record<string, unknown> }
  const value = snap.value
  const ctx = (snap.context ?? {}) as { recording?: { on: boolean; paused: boolean }; answered_at?: string | null; input: CallActorInput }
  const answered = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).answered : undefined
  const connected = typeof answered === 'object' && answered !== null ? (answered as Record<string, unknown>).connected : undefined
  const ended = row.status === 'done' || value === 'ended' || value === 'transferred'
  return {
    ended,
    connected: !ended && connected !== undefined,
    held: connected === 'held',
    recording: ctx.recording ?? { on: false, paused: false },
    answered_at: ctx.answered_at ?? null,
    input: ctx.input,
  }
}

/** The user a command acts for: the call's user. */
export const callerUser = (i: CallActorInput) => i.user_id ?? i.from_user_id ?? i.to_user_id ?? null

/** The machine event a command sends, or undefined when it has none (a warm transfer of a call already held). */
export function commandEvent(m: CallCommandMessage, before: CallState): CallMachineEvent | undefined {
  const at = m.at
  const by = callerUser(before.input) ?? 'api'
  switch (m.command) {
    case 'hangup':
      return { type: 'HANGUP', side: before.input.direction === 'inbound' ? 'callee' : 'caller', at }
    case 'hold':
      return { type: 'HOLD', at }
    case 'resume':
      return { type: 'RESUME', at }
    case 'transfer':
      if (m.transfer!.mode === 'warm') return before.held ? undefined : { type: 'HOLD', at }
      return { type: 'BLIND_TRANSFER', to: m.transfer!.to, by, new_call_id: m.transfer!.new_call_id!, at }
    case 'complete_transfer':
      return { type: 'COMPLETE_WARM_TRANSFER', to: before.input.to_user_id ?? before.input.to_number, by, at }
  }
}

/** Whether the command did what it asks, judged by the state after it. */
export function commandSucceeded(m: CallCommandMessage, after: CallState): boolean {
  switch (m.command) {
    case 'hangup':
    case 'complete_transfer':
      return after.ended
    case 'transfer':
      return m.transfer!.mode === 'blind' ? after.ended : after.connected && after.held
    case 'hold':
      return after.connected && after.held
    case 'resume':
      return after.connected && !after.held
  }
}

/** The outcome event of a command. */
export function commandOutcome(m: CallCommandMessage, callId: string, ok: boolean): NewEvent {
  const consultation = m.command === 'transfer' && m.transfer?.consultation_call_id ? { consultation_call_id: m.transfer.consultation_call_id } : {}
  return {
    platformId: m.owner.platformId,
    accountId: m.owner.accountId,
    mode: m.owner.mode,
    type: ok ? 'call.command_succeeded' : 'call.command_failed',
    data: { call_id: callId, command: m.command, command_id: m.command_id, ...consultation, ...(ok ? {} : { reason: 'call_not_active' }) },
  }
}

/** Writes the command for the call actor in the caller's transaction (durable: the actor's owner runs it). */
export async function sendCallCommand(tx: Db, clock: Clock, callId: string, m: CallCommandMessage): Promise<void> {
  await scheduleTimer(tx, clock, {
    actorKind: 'call',
    actorId: callId,
    name: `${COMMAND_MESSAGE}:${m.command_id}`,
    dueAt: clock.now(),
    event: m as unknown as Record<string, unknown>,
    shard: shardOf(callId),
  })
}
