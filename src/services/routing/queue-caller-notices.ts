/**
 * What a queue actor tells the media role about a real caller it holds (a caller
 * whose attachment names the media process, `{ sip: { media_node } }`): ring these
 * agents for the caller (the offer, named by `offered_at`), stop ringing some of them
 * (an agent logged out mid-offer), or the caller leaves the queue for its timeout
 * target. A bus notice, best effort: every media process hears
 * it and the one holding the call acts. A lost offer ends by the queue's own ring
 * timer; a lost timeout leaves the caller hearing the queue until they hang up.
 */
export const QUEUE_CALLER_SUBJECT = 'voice.media.queue_caller'

export type QueueCallerNotice =
  | { kind: 'offer'; queue_id: string; call_id: string; agents: string[]; offered_at: string }
  /** These agents are no longer offered the caller (logged out mid-offer): their phones stop ringing. */
  | { kind: 'cancel'; queue_id: string; call_id: string; agents: string[]; at: string }
  | { kind: 'timeout'; queue_id: string; call_id: string; at: string }

/** How long the media role rings the agents of one offer (simulated seconds), as the sandbox's queue offers ring. */
export const OFFER_RING_SECONDS = 15

/** The attachment the queue keeps with a real caller: the media process holding its legs. */
export interface QueueSipAttachment {
  sip: { media_node: string }
}

export const sipAttachmentOf = (attachment: unknown): QueueSipAttachment | undefined =>
  attachment && typeof attachment === 'object' && 'sip' in attachment ? (attachment as QueueSipAttachment) : undefined
