/**
 * What the B2BUA needs from the rest of the system, as interfaces named for the job:
 * the call's actor (the call machine decides; the B2BUA reports what SIP did) and the
 * media anchored for the call (RTP legs, media/rtp). The composition root binds them.
 */
import type { EmergencyCallInfo } from '../../src/services/e911/emergency-info'
import type { EnginePlanStep } from '../../src/services/routing/route-preview'
import type { G711 } from './sdp'

export interface CallOwner {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
}

/** The call actor's input for a call that SIP placed (machines/call.ts CallInput plus its owner). */
export interface SipCallStart {
  call_id: string
  direction: 'internal' | 'inbound' | 'outbound'
  from_number: string
  from_name?: string | null
  to_number: string
  started_at: string
  user_id: string | null
  from_user_id?: string
  to_user_id?: string
  owner: CallOwner
  /** The media process holding the call's legs (its heartbeat says whether the call can still be reported). */
  media_node: string
  /** Record the call once answered (the account's recording_enabled). */
  record?: boolean
  /** The device that placed the call: the caller's line, or the phone a click-to-call rang first. */
  from_endpoint?: string
  /** An emergency call (911, 933): what call.emergency reports. */
  emergency?: EmergencyCallInfo
  /** The call a blind transfer placed: the transferred call's id. */
  placed_by_transfer?: { related_call: string | null }
  /** The consultation call of a warm transfer: the held call's id. */
  consultation?: { related_call: string | null }
  /** The voicemail box a routed call's plan ends in: whose message it is. */
  voicemail_box?: { type: 'user' | 'shared'; id: string }
  /** The AI agent a routed call's plan ends with. */
  ai_agent?: { id: string; name: string }
  /** The queues the plan may reach: they learn when the call ends, however it ends (a crash of this process included). */
  queues?: string[]
}

/** The routing engine's plan for a call (machines/routing route()), by shape: what the B2BUA plays. */
export interface CallPlan {
  steps: readonly EnginePlanStep[]
  /** The user the number or extension targets directly (call.incoming's user_id). */
  user?: string
  /** The voicemail box the plan ends in: whose message it is. */
  voicemail_box?: { type: 'user' | 'shared'; id: string }
  /** The AI agent the plan ends with, named: its call's summary names it. */
  ai_agent?: { id: string; name: string }
}

/**
 * The account's routing for a call to `to` (a number or an extension of the account)
 * now; undefined: neither. With `answer`: the rest of the plan after a menu the
 * caller answered (a digit, or null for no input), from the menu's node.
 */
export type CallRouting = (
  accountId: string,
  to: string,
  now: Date,
  answer?: { dialPlan: string; node: string; digit: string | null },
) => Promise<CallPlan | undefined>

/**
 * A queue a routed call reaches (the plan's enqueue step): the queue actor holds the
 * caller from here and offers it to agents (notices to the media role, SipQueueNotice).
 */
export interface QueueStep {
  queue_id: string
  max_wait_seconds: number
  /** The queue's members as the plan found them. */
  agents: readonly string[]
  /** Members with no registered phone: a real call cannot reach them (logged out of the queue for it). */
  unreachable: readonly string[]
}

/** What the agents' phones did with an offer (`offered_at` names it), or the caller's end: the queue machine's events. */
export type QueueCallerEvent =
  | { type: 'AGENT_ANSWERED'; call_id: string; user_id: string; endpoint_id?: string; offered_at: string; at: string }
  | { type: 'OFFER_ENDED'; call_id: string; offered_at: string; at: string }
  /** Every phone of this offered agent refused (486, 600, 603): the offer goes on with the others. */
  | { type: 'AGENT_DECLINED'; call_id: string; user_id: string; offered_at: string; at: string }
  | { type: 'CALL_ENDED'; call_id: string; at: string }

/** The queue actors, seen from the media role. Both resolve once what they wrote is committed. */
export interface CallQueues {
  /** The caller enters the queue. */
  arrive(arrival: {
    call: { call_id: string; owner: CallOwner; from_number: string; from_name: string | null; to_number: string; media_node: string }
    queue: QueueStep
  }): Promise<void>
  tell(queueId: string, event: QueueCallerEvent): Promise<void>
  /** Where the queue has the caller by its last committed step (actors/queues/sip-queue.ts QueueStanding). */
  standing(queueId: string, callId: string): Promise<'waiting' | 'connected' | 'departed' | 'unknown'>
}

/** The call machine's events a SIP call produces (machines/call.ts CallMachineEvent). */
export type SipCallEvent =
  | { type: 'RING'; user_id?: string; at: string }
  /** `endpoint_id`: the device that answered, when a user's phone did. */
  | { type: 'ANSWER'; user_id?: string; endpoint_id?: string; at: string }
  | { type: 'BUSY'; at: string }
  | { type: 'FAIL'; reason?: string; at: string }
  | { type: 'HANGUP'; side: 'caller' | 'callee'; at: string }
  | { type: 'HOLD'; by_phone: true; at: string }
  | { type: 'RESUME'; by_phone: true; at: string }
  | { type: 'VOICEMAIL'; box?: { type: 'user' | 'shared'; id: string }; at: string }
  /** A voice app (with `ai_agent`, an AI agent) answered: the app follows the call from here. */
  | { type: 'APP_ANSWER'; app: string; ai_agent?: string; ai_agent_name?: string; at: string }
  /** A notify-mode voice app node: the app follows the call from here. */
  | { type: 'APP_NOTIFY'; app: string; at: string }
  | { type: 'MESSAGE_STORED'; message: StoredMedia; at: string }
  | { type: 'RECORDING_STORED'; recording: StoredMedia; at: string }
  | { type: 'RECORDING_PAUSE'; at: string }
  | { type: 'RECORDING_RESUME'; at: string }
  /** A phone asked for a blind transfer (REFER): `by` the transferring user, `to` a user id or an E.164 number. */
  | { type: 'BLIND_TRANSFER'; to: string; by: string; new_call_id: string; at: string }
  /** A phone's attended transfer (REFER with Replaces), told to its call to consult: `related_call` the held call, whose party `to` takes over. */
  | { type: 'COMPLETE_WARM_TRANSFER'; to: string; by: string; related_call: string; at: string }

/**
 * The call actor, seen from the media role. Both resolve once what they wrote is
 * committed: a phone is told nothing the call log does not hold.
 */
export interface CallActors {
  start(call: SipCallStart): Promise<void>
  tell(callId: string, event: SipCallEvent): Promise<void>
  /**
   * The recording of a call the machine ended itself (an API hang-up: call.end is
   * committed, so the record can follow it at once) is stored: recording.available
   * follows. A call a phone ends names its recording to the machine instead
   * (RECORDING_STORED before HANGUP).
   */
  recorded(call: { call_id: string; owner: CallOwner }, recording: StoredRecording): Promise<void>
}

export interface StoredRecording {
  recording_id: string
  storage_key: string
  duration_seconds: number
}

/** Audio the media role stored for a call (machines/call.ts StoredMedia): the record it becomes once the call ends. */
export interface StoredMedia {
  id: string
  storage_key: string
  duration_seconds: number
}

/** Where a leg's RTP goes and how it is encoded (from the peer's SDP). */
export interface RemoteMedia {
  address: string
  port: number
  codec: G711
  dtmfPayloadType: number | undefined
}

/** The media of one call: one anchored RTP leg per side, relayed (and transcoded) once both are set. */
export interface CallMediaSession {
  readonly callerPort: number
  readonly calleePort: number
  setCaller(remote: RemoteMedia): void
  setCallee(remote: RemoteMedia): void
  /** Stops (or restarts) relaying to a side whose peer put the call on hold; `music` plays to it meanwhile. */
  hold(side: 'caller' | 'callee', held: boolean, music?: Int16Array): void
  /** What each leg received from its phone and sent to it. */
  stats(): { caller: LegMediaStats; callee: LegMediaStats }
  /** Plays 8 kHz audio to one side's phone (nothing is relayed to it meanwhile); `loop` until stopPlaying. */
  play(side: 'caller' | 'callee', samples: Int16Array, o?: { loop?: boolean }): Promise<void>
  stopPlaying(side: 'caller' | 'callee'): void
  /** Records both directions mixed (8 kHz mono); a paused stretch stays in the track as silence. */
  startRecording(): CallRecording
  close(): void
}

export interface CallRecording {
  pause(): void
  resume(): void
  readonly paused: boolean
  /** Ends the recording: its WAV file. */
  stop(): Uint8Array
}

/** One leg's RTP as the quality figures need it. */
export interface LegMediaStats {
  packetsReceived: number
  packetsSent: number
  packetsLost: number
  lossFraction: number
  jitterMs: number
  mos: number
}

export interface CallMedia {
  /** Two legs for a new call; undefined when the RTP port range is used up. `onDigit`: a key pressed on either phone (RFC 4733). */
  open(callId: string, onDigit?: (side: 'caller' | 'callee', digit: string) => void): Promise<CallMediaSession | undefined>
}

/** Where recordings and messages go, and where greetings and hold music are read: the service's blob storage. */
export interface RecordingStorage {
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>
  get(key: string): Promise<{ bytes: Uint8Array } | undefined>
}
