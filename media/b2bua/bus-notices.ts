/**
 * What other roles tell the media role over the bus. The call actor's word that a
 * SIP call ended: the
 * actor may run on another worker than the process holding the call's legs, and
 * every media process hears the notice (the one that holds the call acts on it; the
 * others do not know the id).
 */
import type { Bus, Unsubscribe } from '../../src/bus/bus'
import type { ClickToCallNotice } from '../../src/services/calls/click-to-call'
import { QUEUE_CALLER_SUBJECT, type QueueCallerNotice } from '../../src/services/routing/queue-caller-notices'

export const SIP_CALL_ENDED_SUBJECT = 'voice.media.sip_call_ended'

export interface SipCallEnded {
  call_id: string
  at: string
}

/**
 * The publishing side, for the call actor (bound by the composition root): a notice
 * with `control` is a command for a call that goes on (SIP_CALL_CONTROL_SUBJECT), one
 * without it the call's end.
 */
export function sipCallEndedPublisher(bus: Pick<Bus, 'publish'>): (notice: SipCallEnded & { control?: SipCallControl }) => void {
  return (notice) => bus.publish(notice.control ? SIP_CALL_CONTROL_SUBJECT : SIP_CALL_ENDED_SUBJECT, JSON.stringify(notice))
}

export function onSipCallEnded(bus: Pick<Bus, 'subscribe'>, handle: (callId: string) => void): Unsubscribe {
  return bus.subscribe(SIP_CALL_ENDED_SUBJECT, (data) => {
    try {
      const notice = JSON.parse(data) as Partial<SipCallEnded>
      if (typeof notice.call_id === 'string') handle(notice.call_id)
    } catch {
      // Not a notice of this version: nothing to hang up.
    }
  })
}

export const CLICK_TO_CALL_SUBJECT = 'voice.media.click_to_call'

/** The gateway's side of click-to-call (bound by the composition root): the plan it accepted, to the media role. */
export function clickToCallPublisher(bus: Pick<Bus, 'publish'>): (notice: ClickToCallNotice) => void {
  return (notice) => bus.publish(CLICK_TO_CALL_SUBJECT, JSON.stringify(notice))
}

/**
 * The media role's side. Every media process hears it; only the one that takes the
 * recorded request (src/services/calls/click-to-call-requests.ts) places the call.
 */
export function onClickToCall(bus: Pick<Bus, 'subscribe'>, handle: (notice: ClickToCallNotice) => void): Unsubscribe {
  return bus.subscribe(CLICK_TO_CALL_SUBJECT, (data) => {
    try {
      const notice = JSON.parse(data) as ClickToCallNotice
      if (typeof notice?.request_id === 'string' && notice.plan?.kind && notice.owner?.accountId) handle(notice)
    } catch {
      // Not a notice of this version.
    }
  })
}

/**
 * What the call machine asks of a SIP call it keeps (hold, resume, a blind transfer, a warm transfer's hand-over),
 * on a subject of its own: a media process that predates it would take any notice
 * on the ended subject for a hang-up. One subject for all three keeps their order.
 */
export const SIP_CALL_CONTROL_SUBJECT = 'voice.media.sip_call_control'

export type SipCallControl =
  | { command: 'hold' }
  | { command: 'resume' }
  /** `to`: a user id or an E.164 number; `new_call_id`: the call the transfer places. */
  | { command: 'transfer'; to: string; by: string; new_call_id: string }
  /** A phone's attended transfer completed on this call (its call to consult): its target takes the transferor's place on `primary`. */
  | { command: 'hand_over'; primary: string }
  /** A warm transfer held this call: the transferring user's phone consults `to` on a new call (`consultation_call_id`). */
  | { command: 'consult'; to: string; by: string; consultation_call_id: string }

export interface SipCallControlNotice {
  call_id: string
  at: string
  control: SipCallControl
}

const CONTROL_COMMANDS = new Set(['hold', 'resume', 'transfer', 'hand_over', 'consult'])

export function onSipCallControl(bus: Pick<Bus, 'subscribe'>, handle: (notice: SipCallControlNotice) => void): Unsubscribe {
  return bus.subscribe(SIP_CALL_CONTROL_SUBJECT, (data) => {
    try {
      const notice = JSON.parse(data) as Partial<SipCallControlNotice>
      const c = notice.control as (Partial<Extract<SipCallControl, { command: 'transfer' }>> & { primary?: unknown }) | undefined
      if (typeof notice.call_id !== 'string' || typeof notice.at !== 'string' || !c || !CONTROL_COMMANDS.has(c.command as string)) return
      if (c.command === 'transfer' && (typeof c.to !== 'string' || typeof c.by !== 'string' || typeof c.new_call_id !== 'string')) return
      if ((c.command as string) === 'hand_over' && typeof c.primary !== 'string') return
      const consult = c as { command?: string; to?: unknown; by?: unknown; consultation_call_id?: unknown }
      if (
        consult.command === 'consult' &&
        (typeof consult.to !== 'string' || typeof consult.by !== 'string' || typeof consult.consultation_call_id !== 'string')
      )
        return
      handle(notice as SipCallControlNotice)
    } catch {
      // Not a notice of this version.
    }
  })
}

/** The queue actor's side (bound by the composition root): an offer or a timeout for a real caller. */
export function queueCallerPublisher(bus: Pick<Bus, 'publish'>): (notice: QueueCallerNotice) => void {
  return (notice) => bus.publish(QUEUE_CALLER_SUBJECT, JSON.stringify(notice))
}

export function onQueueCaller(bus: Pick<Bus, 'subscribe'>, handle: (notice: QueueCallerNotice) => void): Unsubscribe {
  return bus.subscribe(QUEUE_CALLER_SUBJECT, (data) => {
    try {
      const n = JSON.parse(data) as Partial<QueueCallerNotice> & Record<string, unknown>
      if (typeof n.queue_id !== 'string' || typeof n.call_id !== 'string') return
      const agents = Array.isArray(n.agents) && n.agents.every((a) => typeof a === 'string')
      if (n.kind === 'offer' && agents && typeof n.offered_at === 'string') handle(n as QueueCallerNotice)
      else if (n.kind === 'cancel' && agents && typeof n.at === 'string') handle(n as QueueCallerNotice)
      else if (n.kind === 'timeout' && typeof n.at === 'string') handle(n as QueueCallerNotice)
    } catch {
      // Not a notice of this version.
    }
  })
}
