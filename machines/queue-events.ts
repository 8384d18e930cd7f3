// The nine queue.call.* events, as the spec's "Queue events" table gives them.
//
// The queue machine emits them with the current field names only; the deprecated
// aliases (queue_id, agent_user_id, agent_endpoint_id, callback_id) are added once,
// by `withQueueAliases`, when an event is written to the outbox, so the machine and
// its tests never deal with two names for one value.
//
// Designed where the spec says "not shown" (the OpenAPI schemas say the same):
// - agents_claimed: integer, the agents this dispatch claimed (rang);
//   targets_dispatched: integer, the endpoints rung for them (one per agent here;
//   the runtime may pass the real device count).
// - callback result: 'answered' | 'no_answer' | 'busy' | 'failed'; next_attempt_at is
//   null when no further attempt will be made.
// - callback_failed reason: 'max_attempts_exceeded' (the one way a callback fails today;
//   a string, so that more reasons can be added).
// - The callback events carry queue, from_number and to_number (the spec excludes
//   call_id, from_name, position_at_admit and wait_seconds; only callback_requested
//   carries queue_name).

export interface QueueCallCommon {
  call_id: string
  queue: string
  queue_name: string
  from_number: string
  from_name: string | null
  to_number: string
  /** 1-based place the caller took on arrival (after higher-priority callers). */
  position_at_admit?: number
  /** whole seconds the caller waited: until the event, or until answered. */
  wait_seconds: number
}

export type CallbackResult = 'answered' | 'no_answer' | 'busy' | 'failed'
export const CALLBACK_RESULTS: readonly CallbackResult[] = ['answered', 'no_answer', 'busy', 'failed']
export type CallbackFailReason = 'max_attempts_exceeded'

interface CallbackCommon {
  queue: string
  from_number: string
  to_number: string
  callback: string
}

export type QueueEmitted =
  | { type: 'queue.call.queued'; data: QueueCallCommon & { queued_at: string } }
  | { type: 'queue.call.dispatched'; data: QueueCallCommon & { agents_claimed: number; targets_dispatched: number; dispatched_at: string } }
  | { type: 'queue.call.answered'; data: QueueCallCommon & { agent_user: string; agent_endpoint: string | null; answered_at: string } }
  | { type: 'queue.call.abandoned'; data: QueueCallCommon & { abandoned_at: string } }
  | { type: 'queue.call.timed_out'; data: QueueCallCommon & { timed_out_at: string } }
  | { type: 'queue.call.completed'; data: QueueCallCommon & { agent_user: string; agent_endpoint: string | null; completed_at: string } }
  | {
      type: 'queue.call.callback_requested'
      data: CallbackCommon & { queue_name: string; original_priority: number; original_entered_at: string; requested_at: string }
    }
  | {
      type: 'queue.call.callback_attempted'
      data: CallbackCommon & { attempt_number: number; result: CallbackResult; next_attempt_at: string | null }
    }
  | { type: 'queue.call.callback_failed'; data: CallbackCommon & { attempts: number; reason: CallbackFailReason } }

export type QueueEventType = QueueEmitted['type']
export const QUEUE_EVENT_TYPES: readonly QueueEventType[] = [
  'queue.call.queued',
  'queue.call.dispatched',
  'queue.call.answered',
  'queue.call.abandoned',
  'queue.call.timed_out',
  'queue.call.completed',
  'queue.call.callback_requested',
  'queue.call.callback_attempted',
  'queue.call.callback_failed',
]

/** The deprecated alias of each field that has one (spec, Versioning 4). */
export const QUEUE_ALIASES = { queue: 'queue_id', agent_user: 'agent_user_id', agent_endpoint: 'agent_endpoint_id', callback: 'callback_id' } as const

/** The event's data as delivered: every field, plus its deprecated alias with the same value. */
export function withQueueAliases(e: QueueEmitted): Record<string, unknown> {
  const data: Record<string, unknown> = { ...e.data }
  for (const [field, alias] of Object.entries(QUEUE_ALIASES)) if (field in data) data[alias] = data[field]
  return data
}
