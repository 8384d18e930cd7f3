/**
 * Which users a call makes "on a call", and when it lets them go: the presence
 * changes one call event causes, for the call actor to tell the users' presence
 * actors in the step that emits the event.
 *
 *   on a call   the user who placed the call (outbound or internal: the initiating
 *               user), from call.initiated, while their phone dials and talks;
 *               the user who took the call (the connected answering user), from
 *               call.answered; a voicemail or greeting answering connects nobody;
 *   handed over a completed warm transfer puts its target on the held call and lets
 *               the users who held it go (the call actor tells those changes when
 *               the call resumes: machines/call `handedOver`);
 *   released    when the call reaches a final state: call.end, or call.transfer of a
 *               warm transfer's consultation call, or of a phone's call to consult
 *               that completed an attended transfer (its last event). A blind transfer
 *               ends the transferring call with call.end; the new leg is a call of
 *               its own, with its own users.
 * A release names every user the call can have started (removing a call id that is
 * not there is harmless), so every call that ends clears the user's on_call.
 */
import { type CallContext, type CallEmitted, usersOnCall } from '../../machines/call'

export interface CallPresenceChange {
  user_id: string
  type: 'CALL_STARTED' | 'CALL_ENDED'
  call_id: string
  at: string
}

/** The user who placed the call, when a user did (never for inbound calls). */
const initiatingUser = (c: CallContext): string | undefined =>
  c.input.direction === 'inbound' ? undefined : (c.input.user_id ?? c.input.from_user_id ?? undefined)

/** The users whose presence this call event changes (`c`: the call's context after the event; `cause`: the machine event that emitted it). */
export function callPresenceChanges(ev: CallEmitted, c: CallContext, cause?: string): CallPresenceChange[] {
  const callId = c.input.call_id
  const change = (type: CallPresenceChange['type'], at: string) => (user_id: string | null | undefined) =>
    user_id ? [{ user_id, type, call_id: callId, at }] : []
  switch (ev.type) {
    case 'call.initiated':
      return change('CALL_STARTED', ev.data.started_at)(initiatingUser(c))
    case 'call.answered':
      return c.connected_at ? change('CALL_STARTED', c.connected_at)(c.answered_by) : []
    case 'call.end':
      return released(c, ev.data.ended_at)
    case 'call.transfer':
      return c.input.consultation || cause === 'COMPLETE_WARM_TRANSFER' ? released(c, ev.data.transferred_at) : []
    default:
      return []
  }
}

function released(c: CallContext, at: string): CallPresenceChange[] {
  return usersOnCall(c).map((user_id) => ({ user_id, type: 'CALL_ENDED' as const, call_id: c.input.call_id, at }))
}

/** A warm transfer's hand-over on the call it resumes: its target on the call, the users who held it off. */
export function handOverChanges(c: CallContext, h: { to: string; from: string[]; at: string }): CallPresenceChange[] {
  const callId = c.input.call_id
  return [
    { user_id: h.to, type: 'CALL_STARTED' as const, call_id: callId, at: h.at },
    ...h.from.map((user_id) => ({ user_id, type: 'CALL_ENDED' as const, call_id: callId, at: h.at })),
  ]
}
