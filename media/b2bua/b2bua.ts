/**
 * The B2BUA: a call from a registered phone becomes two SIP dialogs (the caller's,
 * where this server is the UAS, and the callee's, where it is the UAC) with the media
 * anchored here between them, and one call actor that the B2BUA tells what SIP did
 * (RING on the first 180, ANSWER on the 200, HANGUP on a BYE or CANCEL, BUSY on 486).
 * The call machine holds the call's truth (events, call log); when it ends the call
 * on its own (a hang-up through the API), `callEnded` takes the legs down.
 *
 * Internal calls: the caller dials an extension of its account that reaches a user,
 * and every registered contact of that user rings at once; the first to answer wins
 * and the others get CANCEL (RFC 3261 §16.7 step 10's behaviour, done by a UAC).
 *
 * Status mapping, callee to caller: 2xx answered; 486, 600 and 603 busy; any other
 * final answer, or no answer within Timer B, no-answer (480 to the caller); the
 * caller's CANCEL no-answer. The caller gets the callee's status for busy (486) and
 * 480 for no-answer.
 */
import type { IncomingResponseMessage } from 'sip.js/lib/core/messages/incoming-response-message.js'
import type { Clock } from '../../src/clock'
import type { SipTrunkOutbound } from '../../src/config'
import { answerDigestChallenge } from '../../src/auth/digest'
import type { ClickToCallNotice } from '../../src/services/calls/click-to-call'
import { OFFER_RING_SECONDS, type QueueCallerNotice } from '../../src/services/routing/queue-caller-notices'
import { idKind, newId } from '../../src/ids'
import type { Logger } from '../../src/logger'
import type { OutgoingRequest } from '../sip/client'
import type { SipRequest, SipRequestContext, SipResponseSpec, SipSource } from '../sip/handler'
import { ackFor2xx, type InviteHandle } from '../sip/invite-client'
import { isEmergencyNumber, type SandboxFarEnd, sandboxFarEnd as sandboxFarEndOf } from '../../src/services/calls/sandbox-numbers'
import { createDigitSequence } from '../rtp'
import { decodeWavSamples } from '../wav'
import { simulatedRecordingWav } from '../simulated-audio'
import { parseReferTo, type ReplacesDialog, referNotify } from '../sip/refer'
import { tagOf } from '../sip/message'
import { newTag } from '../sip/response'
import type { SipServer } from '../sip/server'
import type { CallerAuth } from './caller-auth'
import type { AccountOwner, CallDirectory, CalleeContact } from './directory'
import type {
  CallActors,
  CallMedia,
  CallMediaSession,
  CallOwner,
  CallQueues,
  CallPlan,
  CallRecording,
  CallRouting,
  LegMediaStats,
  QueueCallerEvent,
  RecordingStorage,
  SipCallEvent,
  SipCallStart,
} from './ports'
import { answerDirection, type AudioOffer, DEFAULT_DTMF_PT, type Direction, type G711, readAudio, writeAudio } from './sdp'
import type { SipCallControlNotice } from './bus-notices'
import { swapSides } from './call-media'
import { isE164 } from '../../src/schemas/common'

export interface B2buaDeps {
  sip: Pick<SipServer, 'sendInvite' | 'sendRequest' | 'sendRaw' | 'sentBy'>
  /** The address phones reach this server and its RTP at (SIP_HOST). */
  host: string
  /** This media process (media_nodes): named in each call it holds. */
  node: string
  clock: Clock
  authenticate(request: SipRequest, source: SipSource): Promise<CallerAuth>
  directory: CallDirectory
  actors: CallActors
  media: CallMedia
  /** Where recordings of calls go; without it calls are not recorded. */
  recordings?: RecordingStorage
  /** The account's routing for a call to a number or an extension that is not a user's (ring groups, dial plans...); absent: such calls get 480. */
  route?: CallRouting
  /** The queue actors a routed call waits in; absent: a plan's queue step is passed over. */
  queues?: CallQueues
  /** The carrier trunk live calls to the PSTN go out on (SIP_TRUNK_OUTBOUND); absent: such calls answer 503. */
  trunkOutbound?: SipTrunkOutbound
  /** Source addresses of carrier trunks: their INVITEs to the accounts' numbers are inbound calls, without digest. */
  trunkSources?: ReadonlySet<string>
  /** An answered call's media figures, once it ended (kept with the call for the quality endpoints). */
  onMediaFinished?(media: FinishedCallMedia & { owner: CallOwner; ended_at: string }): void
  log?: Logger
}

/** Our side of one dialog. */
interface Dialog {
  callId: string
  /** Our From (UAC side) or To (UAS side) header value, with our tag. */
  local: string
  /** The peer's header value, with its tag. */
  remote: string
  /** Where in-dialog requests go: the peer's Contact URI. */
  remoteTarget: string
  /** The socket the peer is reached on (the source of its requests, or the binding's). */
  via: SipSource
  cseq: number
  offer?: AudioOffer
  sdpVersion: number
  /** Our last re-INVITE offered this phone a held stream (sendonly or inactive). */
  heldByUs?: boolean
  /** The SDP session id this phone knows (o= line) when it differs from its call's: a leg an attended transfer moved from another call. */
  sessionId?: number
}

interface Call {
  id: string
  owner: CallOwner & { recording: boolean }
  state: 'ringing' | 'answered' | 'ended'
  caller: Dialog
  callee?: Dialog
  callerCodec: G711
  media: CallMediaSession
  forks: InviteHandle[]
  /** Resolves the caller's INVITE (its final answer). */
  answerCaller(spec: SipResponseSpec): void
  /** The actor's events, told one after the other (each committed before the next is written). */
  told: Promise<void>
  sessionId: number
  recording?: CallRecording
  /** The callee's voicemail took the call: whose box, and the message being recorded once the greeting is over. */
  voicemail?: { userId: string; message?: CallRecording }
  /** Our answer to the caller's offer as sent in a 183 (early media, a played prompt): the 200 repeats it. */
  earlyAnswer?: string
  /** A menu waits for the caller's key (null: the call ended first). */
  digitWaiter?: (digit: string | null) => void
  /** Menus the caller has been through (bounded by MAX_MENUS). */
  menus?: number
  /** The queue holding the caller (from its arrival until the call ends): the plan waits in `leave` until the queue lets the caller go on. */
  queue?: {
    id: string
    leave(how: 'timed_out' | 'answered' | 'ended'): void
    /** The current offer's forks by agent (a cancel notice stops one agent's phones). */
    offerForks?: Map<string, InviteHandle[]>
  }
  /** The caller as call.* reports it (for the voicemail record, and a queue's caller). */
  fromNumber?: string
  fromName?: string | null
  /** The From of the INVITEs a routed call's ring steps send (a queue's offers ring with it too). */
  fromHeader?: (tag: string) => string
  /** The number each side is reached by (the caller's, the dialled one): what a transfer's new call shows. */
  toNumber?: string
  /** The user on each side, when a user's phone is there: who a REFER from that side transfers for. */
  users: { caller?: string; callee?: string }
  /** The device of the user's phone that answered (a queue's agent_endpoint). */
  calleeDevice?: string
  /**
   * The side of the call's user, the one the API acts for (POST /v1/calls/{id}): its
   * hold holds the other side, its transfer hands the other side over. The caller for
   * calls phones place; the callee for the call a transfer placed (its caller is the
   * party handed over).
   */
  userSide: 'caller' | 'callee'
  /** Placed by a blind transfer: its caller was answered long ago (a final failure is a BYE to it, not a response). */
  transferred?: boolean
  /** A REFER of one side waits for the machine's word (the transfer notice), and its subscription for the NOTIFYs. */
  refer?: PendingRefer
  /** The API put the call on hold (our re-INVITEs): only the API resumes it. */
  apiHold?: boolean
  /**
   * An attended transfer (REFER with Replaces) waits for the machine's word (a
   * hand_over notice on the consultation call `consult`): the transferor is on
   * `side` here and on `consultSide` there; the target takes its place here.
   */
  handOver?: {
    consult: Call
    side: 'caller' | 'callee'
    consultSide: 'caller' | 'callee'
    /** The REFER's dialog (a phone's attended transfer); none for the API's warm transfer. */
    referDialog?: Dialog
    timer?: ReturnType<typeof setTimeout>
  }
  /** The API's warm transfer placed this call (its consultation) on the transferring user's phone, taken from this held call. */
  consultOf?: Call
  /** Hold and resume from the API, one after the other. */
  controls: Promise<void>
  /** The call a transfer of this one placed on the same legs (a key pressed later belongs to it). */
  successor?: Call
  /** The legs' counts when this call took them over from a transferred one: its figures are its own. */
  statsBase?: { caller: LegMediaStats; callee: LegMediaStats }
}

interface PendingRefer {
  side: 'caller' | 'callee'
  newCallId: string
  /** The transferor hung up before the transfer was carried out (nobody to NOTIFY). */
  transferorGone?: boolean
  /** The transfer was not taken in time: the REFER fails (NOTIFY 603) and the call goes on. */
  timer: ReturnType<typeof setTimeout>
}

/** How long a REFER waits for the call machine to take the transfer (real seconds: the actor's step, not the call's time). */
export const REFER_DECISION_MS = 30_000
/** How long a transfer waits for the transferor's phone to confirm its release (and again to go quiet) before ringing the target anyway. */
const RELEASE_WAIT_MS = 2_000

const sdpBody = (body: string) => ({ body, contentType: 'application/sdp' })

/** How long a user's phones ring before voicemail answers, and the longest message, in simulated seconds. */
export const RING_TIMEOUT_S = 20
/** How often a caller waiting in a queue has the queue's record read (simulated seconds): the bound on a lost timeout notice. */
export const QUEUE_CHECK_S = 10
export const MAX_MESSAGE_S = 120
/** How long the carrier trunk may ring a live call to the PSTN (simulated seconds) before it is cancelled. */
export const TRUNK_RING_TIMEOUT_S = 60
/** How long a menu waits for the caller's key after its prompt (simulated seconds), and how many menus a call may go through. */
export const MENU_DIGIT_TIMEOUT_S = 5
export const MAX_MENUS = 10

/** A sine tone at 8 kHz (the default greeting and the beep: no speech synthesis here). */
const tone = (hz: number, seconds: number) => {
  const out = new Int16Array(Math.round(8000 * seconds))
  for (let i = 0; i < out.length; i++) out[i] = Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / 8000))
  return out
}
const silence = (seconds: number) => new Int16Array(Math.round(8000 * seconds))
/** The special information tone (ITU-T E.180: 950, 1400, 1800 Hz), twice: "this call cannot be completed". */
const specialInformationTone = () => {
  const once = [tone(950, 0.33), tone(1400, 0.33), tone(1800, 0.33), silence(1)]
  return concat([...once, ...once])
}
/** Audio pieces one after the other. */
const concat = (parts: Int16Array[]) => {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const QUIET_STEP_MS = 50
/** Until one side's phone has sent nothing for a few steps (at most RELEASE_WAIT_MS): counted in steps, no clock read. */
async function quiet(media: CallMediaSession, side: 'caller' | 'callee') {
  let last = media.stats()[side].packetsReceived
  let still = 0
  for (let step = 0; step < RELEASE_WAIT_MS / QUIET_STEP_MS && still < 4; step++) {
    await sleep(QUIET_STEP_MS)
    const now = media.stats()[side].packetsReceived
    still = now === last ? still + 1 : 0
    last = now
  }
}

/** The call ended meanwhile (read after an await: its state may have moved). */
const over = (call: { state: string }) => call.state === 'ended'

/** Dialed digits that name a PSTN number (E.164, a 10-digit NANP number, or an emergency number), normalised; undefined otherwise. */
export function pstnNumber(dialed: string): string | undefined {
  if (isEmergencyNumber(dialed) && /^\d{3}$/.test(dialed)) return dialed
  if (/^\+[1-9]\d{6,14}$/.test(dialed)) return dialed
  if (/^[2-9]\d{9}$/.test(dialed)) return `+1${dialed}`
  if (/^1[2-9]\d{9}$/.test(dialed)) return `+${dialed}`
  return undefined
}

/** What the simulated far end says: the voice simulated recordings are made of, for as long as it talks. */
const simulatedFarEndVoice = (seed: string, seconds: number) => decodeWavSamples(simulatedRecordingWav({ seed, durationMs: Math.max(1, seconds) * 1000 }))
const header = (r: { getHeader(name: string): string | undefined }, name: string) => r.getHeader(name) ?? ''
/** A header of a request we built (written with its canonical name). */
const headerOf = (r: OutgoingRequest, name: string) => r.headers.find(([n]) => n === name)?.[1] ?? ''
const cseqOf = (r: OutgoingRequest) => Number.parseInt(headerOf(r, 'CSeq') || '1', 10)

export function createB2bua(deps: B2buaDeps) {
  const calls = new Map<string, Call>()
  /** SIP Call-ID → the call and the side whose dialog it is. */
  const bySipCallId = new Map<string, { call: Call; side: 'caller' | 'callee' }>()
  const at = () => deps.clock.now().toISOString()
  const log = deps.log?.child({ component: 'b2bua' })

  const tell = (call: Call, event: SipCallEvent) => {
    call.told = call.told
      .then(() => deps.actors.tell(call.id, event))
      .catch((err) => log?.error({ err, call_id: call.id, event: event.type }, 'call event not written'))
  }

  /** A queue's event about this call, after the call's own events so far (a queue reads the call's end after its answer). */
  const tellQueue = (call: Call, queueId: string, event: QueueCallerEvent) => {
    const queues = deps.queues
    if (!queues) return
    call.told = call.told
      .then(() => queues.tell(queueId, event))
      .catch((err) => log?.error({ err, call_id: call.id, queue: queueId, event: event.type }, 'queue event not written'))
  }

  const contactOf = (transport: 'udp' | 'tcp', user = 'b2bua') => `<sip:${user}@${deps.sip.sentBy(transport)}${transport === 'tcp' ? ';transport=tcp' : ''}>`

  /** A new dialog's INVITE to a registered contact, offering G.711 on our anchored port. */
  const offerTo = (contact: CalleeContact, callId: string, from: string, to: string, port: number, sessionId: number): OutgoingRequest => ({
    method: 'INVITE',
    uri: contact.uri,
    headers: [
      ['From', from],
      ['To', to],
      ['Call-ID', callId],
      ['CSeq', '1 INVITE'],
      ['Contact', contactOf(contact.transport)],
      ['Allow', 'INVITE, ACK, CANCEL, BYE, OPTIONS'],
    ],
    ...sdpBody(writeAudio({ address: deps.host, port, codecs: ['PCMU', 'PCMA'], dtmfPayloadType: DEFAULT_DTMF_PT, sessionId, version: 1 })),
  })

  const inDialog = (d: Dialog, method: string, extra: [string, string][] = [], body?: string, contentType = 'application/sdp'): OutgoingRequest => ({
    method,
    uri: d.remoteTarget,
    headers: [['From', d.local], ['To', d.remote], ['Call-ID', d.callId], ['CSeq', `${++d.cseq} ${method}`], ...extra],
    ...(body ? { body, contentType } : {}),
  })

  const bye = (d: Dialog | undefined) => {
    if (!d) return
    deps.sip.sendRequest(d.via, inDialog(d, 'BYE')).catch(() => {})
  }

  /** The media figures of the last calls this process carried (newest last), for the operator and the tests. */
  const finished: FinishedCallMedia[] = []
  const keepFigures = (call: Call) => {
    const media = { call_id: call.id, ...ownStats(call) }
    finished.push(media)
    if (finished.length > 100) finished.shift()
    try {
      deps.onMediaFinished?.({
        ...media,
        owner: { platformId: call.owner.platformId, accountId: call.owner.accountId, mode: call.owner.mode },
        ended_at: at(),
      })
    } catch (err) {
      log?.error({ err, call_id: call.id }, 'call media figures not kept')
    }
  }
  const finish = (call: Call) => {
    if (call.state === 'ended') return
    const wasAnswered = call.state === 'answered'
    call.state = 'ended'
    call.digitWaiter?.(null)
    if (call.queue) {
      call.queue.leave('ended')
      tellQueue(call, call.queue.id, { type: 'CALL_ENDED', call_id: call.id, at: at() })
    }
    for (const f of call.forks) f.cancel()
    if (call.refer) clearTimeout(call.refer.timer)
    if (wasAnswered) keepFigures(call)
    // Still recording here only when the machine ended the call itself (an API hang-up): call.end is committed already.
    if (call.recording) storeRecording(call, call.recording.stop())
    for (const timer of callTimers.get(call.id) ?? []) clearTimeout(timer)
    callTimers.delete(call.id)
    call.media.close()
    calls.delete(call.id)
    // A consultation's caller leg is the held call's: that dialog stays the held call's.
    if (bySipCallId.get(call.caller.callId)?.call === call) bySipCallId.delete(call.caller.callId)
    if (call.callee) bySipCallId.delete(call.callee.callId)
    // The held call of a warm transfer ended (its user hung up): the consultation ends with it.
    const consult = call.handOver?.consult
    if (consult?.consultOf === call && consult.state !== 'ended') {
      tell(consult, { type: 'HANGUP', side: 'caller', at: at() })
      if (consult.state === 'ringing') for (const f of consult.forks) f.cancel()
      else bye(consult.callee)
      finish(consult)
    }
    if (call.handOver?.timer) clearTimeout(call.handOver.timer)
  }

  /**
   * The WAV goes to storage first, then the call actor is told (after the call's own
   * events): the record never points at nothing. A recording lost to a failed write
   * is logged; the call itself is unaffected.
   */
  const storeRecording = (call: Call, wav: Uint8Array) => {
    const store = deps.recordings
    if (!store) return
    const recordingId = newId('recording')
    const key = `recordings/${call.owner.accountId}/${recordingId}.wav`
    const durationSeconds = Math.round((wav.length - 44) / 2 / 8000)
    call.told = call.told
      .then(() => store.put(key, wav, 'audio/wav'))
      .then(() =>
        deps.actors.recorded({ call_id: call.id, owner: call.owner }, { recording_id: recordingId, storage_key: key, duration_seconds: durationSeconds }),
      )
      .catch((err) => log?.error({ err, call_id: call.id }, 'recording not stored'))
  }

  /** `*7` on either phone pauses or resumes the call's recording (spec); the machine is told. */
  const onDigit = (call: () => Call | undefined) => {
    const star7 = { caller: createDigitSequence('*7'), callee: createDigitSequence('*7') }
    return (side: 'caller' | 'callee', digit: string) => {
      let c = call()
      while (c?.successor) c = c.successor
      if (side === 'caller' && c?.digitWaiter) {
        c.digitWaiter(digit)
        return
      }
      if (!star7[side].push(digit as never) || !c?.recording || c.state !== 'answered') return
      if (c.recording.paused) c.recording.resume()
      else c.recording.pause()
      tell(c, { type: c.recording.paused ? 'RECORDING_PAUSE' : 'RECORDING_RESUME', at: at() })
    }
  }

  /** A 200 to our INVITE that came again (our ACK was lost): acknowledged again, in the INVITE's own dialog and CSeq. */
  const ackRetransmitted2xx = (call: Call, contact: CalleeContact, request: OutgoingRequest) => (response: IncomingResponseMessage) => {
    const target: SipSource = { transport: contact.transport, address: contact.address, port: contact.port }
    const ack = ackFor2xx(
      {
        uri: call.callee?.remoteTarget ?? contact.uri,
        from: headerOf(request, 'From'),
        to: header(response, 'to'),
        callId: headerOf(request, 'Call-ID'),
        cseq: cseqOf(request),
      },
      deps.sip.sentBy(target.transport),
      target,
    )
    deps.sip.sendRaw(ack, target)
  }

  /** The callee's 200: confirm its dialog, answer the caller, bridge the media. */
  const answered = (call: Call, contact: CalleeContact, request: OutgoingRequest, response: IncomingResponseMessage, userId: string | undefined) => {
    const to = header(response, 'to')
    const remoteTarget = (response.parseHeader('contact') as { uri?: { toString(): string } } | undefined)?.uri?.toString() ?? contact.uri
    const target: SipSource = { transport: contact.transport, address: contact.address, port: contact.port }
    const from = headerOf(request, 'From')
    const callId = headerOf(request, 'Call-ID')
    // The INVITE's own CSeq (2 after a carrier's digest challenge): the ACK and our next in-dialog request follow it.
    const cseq = cseqOf(request)
    deps.sip.sendRaw(ackFor2xx({ uri: remoteTarget, from, to, callId, cseq }, deps.sip.sentBy(target.transport), target), target)
    if (call.state !== 'ringing') {
      // Another phone won, or the caller left meanwhile: this one is hung up at once.
      const late: Dialog = { callId, local: from, remote: to, remoteTarget, via: target, cseq, sdpVersion: 1 }
      bye(late)
      return
    }
    const answer = readAudio(response.body)
    const codec = answer?.codecs[0]
    // Our offer was version 1: what we send this phone next is a later one.
    call.callee = { callId, local: from, remote: to, remoteTarget, via: target, cseq, offer: answer, sdpVersion: 2 }
    bySipCallId.set(callId, { call, side: 'callee' })
    call.state = 'answered'
    call.users.callee = userId
    if (userId) call.calleeDevice = contact.device
    for (const f of call.forks) f.cancel()
    if (answer && codec) call.media.setCallee({ address: answer.address, port: answer.port, codec, dtmfPayloadType: answer.dtmfPayloadType })
    if (call.transferred) connectTransferred(call)
    // A queue's music, or a prompt still playing: the agent's voice now.
    call.media.stopPlaying('caller')
    if (call.owner.recording && deps.recordings) call.recording = call.media.startRecording()
    tell(call, { type: 'ANSWER', user_id: userId, ...(userId ? { endpoint_id: contact.device } : {}), at: at() })
    call.answerCaller({
      status: 200,
      headers: [['Contact', contactOf(call.caller.via.transport)]],
      ...sdpBody(callerAnswer(call)),
    })
  }

  /** Our answer to the caller's INVITE: the one a 183 sent already, if a prompt played before the answer (RFC 3261 §13.2.1: one answer per offer). */
  const callerAnswer = (call: Call) => call.earlyAnswer ?? ourAnswer(call, 'caller')

  /**
   * Plays one of the account's clips to the caller before any answer, as early media
   * (a 183 with our SDP, once): the caller hears it while the call is not answered.
   * A clip that is missing or unreadable is passed over.
   */
  const playPrompt = async (call: Call, ctx: Pick<SipRequestContext, 'provisional'>, clipId: string) => {
    let samples: Int16Array | undefined
    try {
      const key = await deps.directory.clipOf(call.owner.accountId, clipId)
      const blob = key ? await deps.recordings?.get(key) : undefined
      if (blob) samples = decodeWavSamples(blob.bytes)
    } catch (err) {
      log?.warn({ err, call_id: call.id, clip: clipId }, 'prompt not read: passed over')
    }
    if (!samples || call.state !== 'ringing') return
    earlyMedia(call, ctx)
    await call.media.play('caller', samples).catch(() => {})
  }

  /** The caller's media flows before any answer (a 183 with our SDP, sent once): for prompts, and for the keys a menu waits for. */
  const earlyMedia = (call: Call, ctx: Pick<SipRequestContext, 'provisional'>) => {
    if (call.earlyAnswer) return
    call.earlyAnswer = ourAnswer(call, 'caller')
    ctx.provisional({ status: 183, reason: 'Session Progress', headers: [['Contact', contactOf(call.caller.via.transport)]], ...sdpBody(call.earlyAnswer) })
  }

  /** The caller's next key (RFC 4733), or null after MENU_DIGIT_TIMEOUT_S or when the call ends. */
  const nextDigit = (call: Call): Promise<string | null> =>
    new Promise((resolve) => {
      call.digitWaiter = (digit) => {
        call.digitWaiter = undefined
        resolve(digit)
      }
      after(call, MENU_DIGIT_TIMEOUT_S, () => call.digitWaiter?.(null))
    })

  /** Our SDP towards one side: its anchored port, its codec, the direction its last offer asked for. */
  const ourAnswer = (call: Call, side: 'caller' | 'callee') => {
    const d = side === 'caller' ? call.caller : call.callee!
    return writeAudio({
      address: deps.host,
      port: side === 'caller' ? call.media.callerPort : call.media.calleePort,
      codecs: [side === 'caller' ? call.callerCodec : (d.offer?.codecs[0] ?? 'PCMU')],
      dtmfPayloadType: d.offer?.dtmfPayloadType ?? DEFAULT_DTMF_PT,
      direction: answerDirection(d.offer?.direction ?? 'sendrecv'),
      sessionId: d.sessionId ?? call.sessionId,
      version: d.sdpVersion++,
    })
  }

  /**
   * One ring step: every registered contact of these users rings at once for
   * `timeoutS` (simulated seconds). The first to answer takes the call and the other
   * forks get CANCEL; a user's first 18x is their RING. Resolves how the step ended:
   * answered, busy (every contact declined busy) or no-answer (rang out, or declined
   * otherwise); the step's forks are cancelled when it ends unanswered.
   */
  const ringStep = (
    call: Call,
    users: { userId: string; contacts: CalleeContact[] }[],
    timeoutS: number,
    fromHeader: (tag: string) => string,
    calleeNumber: string,
    /** Filled with each user's forks as they go out (a queue offer cancels one agent's). */
    forksByUser?: Map<string, InviteHandle[]>,
    /**
     * Every phone of this user refused (486, 600, 603) while others still ring. Not
     * called for the last user to refuse: the step itself then ends busy.
     */
    onDeclined?: (userId: string) => void,
  ): Promise<'answered' | 'busy' | 'no-answer'> =>
    new Promise((resolve) => {
      const forks: InviteHandle[] = []
      let left = users.reduce((n, u) => n + u.contacts.length, 0)
      // Per user: forks not ended yet, and whether every ended one refused (all users refusing: the step ends busy).
      const userLeft = new Map(users.map((u) => [u.userId, u.contacts.length]))
      const userRefused = new Map(users.map((u) => [u.userId, true]))
      const allBusy = () => [...userRefused.values()].every(Boolean)
      let settled = false
      const settle = (end: 'answered' | 'busy' | 'no-answer') => {
        if (settled) return
        settled = true
        if (end !== 'answered') for (const f of forks) f.cancel()
        resolve(end)
      }
      const rang = new Set<string>()
      after(call, timeoutS, () => settle('no-answer'))
      for (const { userId, contacts } of users)
        for (const contact of contacts) {
          const target: SipSource = { transport: contact.transport, address: contact.address, port: contact.port }
          const callId = `${newTag()}${newTag()}@${deps.host}`
          const request = offerTo(contact, callId, fromHeader(newTag()), `<sip:${calleeNumber}@${deps.host}>`, call.media.calleePort, call.sessionId)
          let handle: InviteHandle
          try {
            handle = deps.sip.sendInvite(target, request, {
              onProvisional: (response) => {
                if (settled || rang.has(userId) || call.state !== 'ringing' || (response.statusCode ?? 0) < 180) return
                rang.add(userId)
                tell(call, { type: 'RING', user_id: userId, at: at() })
              },
              onRetransmitted2xx: ackRetransmitted2xx(call, contact, request),
            })
          } catch (err) {
            // A contact that cannot be sent to (a phone gone from its address) is a fork that failed.
            log?.warn({ err, call_id: call.id }, 'fork not sent')
            userRefused.set(userId, false)
            userLeft.set(userId, userLeft.get(userId)! - 1)
            if (--left === 0) settle('no-answer')
            continue
          }
          forks.push(handle)
          call.forks.push(handle)
          forksByUser?.set(userId, [...(forksByUser.get(userId) ?? []), handle])
          handle.outcome
            .then((outcome) => {
              if (outcome.kind === 'answered') {
                answered(call, contact, request, outcome.response, userId)
                settle('answered')
                return
              }
              if (!(outcome.kind === 'rejected' && [486, 600, 603].includes(outcome.status))) userRefused.set(userId, false)
              const userForksLeft = userLeft.get(userId)! - 1
              userLeft.set(userId, userForksLeft)
              if (--left === 0) return settle(allBusy() ? 'busy' : 'no-answer')
              if (!settled && userForksLeft === 0 && userRefused.get(userId)) onDeclined?.(userId)
            })
            .catch((err) => log?.error({ err, call_id: call.id }, 'fork failed'))
        }
      if (left === 0) settle('no-answer')
    })

  /** A user's phones ring (RING_TIMEOUT_S), then their voicemail answers; every phone busy: busy. */
  const ring = async (call: Call, contacts: CalleeContact[], userId: string, fromHeader: (tag: string) => string, calleeNumber: string) => {
    const end = await ringStep(call, [{ userId, contacts }], RING_TIMEOUT_S, fromHeader, calleeNumber)
    if (end === 'answered' || call.state !== 'ringing') return
    if (end === 'no-answer') {
      void toVoicemail(call, userId)
      return
    }
    tell(call, { type: 'BUSY', at: at() })
    call.answerCaller({ status: 486 })
    finish(call)
  }

  /**
   * A voice app, or an AI agent, takes the call: the caller is answered (answered_at,
   * no connected_at) and hears the account's hold music while a webhook app decides
   * (it hangs up or transfers with POST /v1/calls/{id}), or the agent's turn to speak
   * (a tone: there is no speech synthesis or recognition here yet) until the caller
   * hangs up. The app acts for the far side: its transfer hands the caller over.
   */
  const appAnswers = async (call: Call, app: string, agent: string | undefined, agentName: string | undefined) => {
    if (call.state !== 'ringing') return
    for (const f of call.forks) f.cancel()
    call.state = 'answered'
    call.userSide = 'callee'
    tell(call, { type: 'APP_ANSWER', app, ...(agent ? { ai_agent: agent, ...(agentName ? { ai_agent_name: agentName } : {}) } : {}), at: at() })
    call.answerCaller({ status: 200, headers: [['Contact', contactOf(call.caller.via.transport)]], ...sdpBody(callerAnswer(call)) })
    const sound = agent ? tone(440, 0.5) : await holdMusicFor(call.owner.accountId)
    if (over(call) || !sound) return
    await call.media.play('caller', sound, { loop: !agent })
  }

  /**
   * A routed call (a ring group, a dial plan, a number's route...) played on real
   * phones, step by step as the routing engine planned it: a ring step rings its
   * users' registered contacts at once for its time (users with no registered phone
   * are not rung) and a step nobody answers moves on; a notify node lets its voice
   * app follow the call; a voicemail step answers with the box's greeting and takes
   * the message; a voice app or AI agent answers (appAnswers); a played clip or a
   * menu's prompt plays as early media (playPrompt); a menu waits for the caller's
   * key (RFC 4733) and the plan goes on from the menu's node with it; a queue holds
   * the caller (waitInQueue) until an agent answers or it times out to the steps
   * after it. A plan that ends unanswered ends busy when every phone rung was busy,
   * else no-answer (480).
   */
  const playPlan = async (call: Call, plan: CallPlan, ctx: Pick<SipRequestContext, 'provisional'>, fromHeader: (tag: string) => string) => {
    call.fromHeader = fromHeader
    let rang = false
    let allBusy = true
    let current = plan
    let steps = current.steps
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i]!
      if (call.state !== 'ringing') return
      if (step.kind === 'ring') {
        const now = deps.clock.now()
        const users = await Promise.all(
          (step.users ?? []).map(async (userId) => ({ userId, contacts: await deps.directory.contactsOf(call.owner.accountId, userId, now) })),
        )
        const reachable = users.filter((u) => u.contacts.length > 0)
        if (reachable.length === 0 || call.state !== 'ringing') continue
        if (!rang) ctx.provisional({ status: 180 })
        rang = true
        const end = await ringStep(call, reachable, step.timeoutSeconds ?? RING_TIMEOUT_S, fromHeader, call.toNumber ?? '')
        if (end === 'answered') return
        if (end === 'no-answer') allBusy = false
      } else if (step.kind === 'enqueue' && step.queue && deps.queues) {
        // No 180: the caller hears the queue (183, early media) until an agent answers. The queue's timeout lets the caller go on with the plan (the queue's timeout target); anything else ended it here.
        if ((await waitInQueue(call, ctx, step)) !== 'timed_out') return
        allBusy = false
      } else if (step.kind === 'notify' && step.app) {
        tell(call, { type: 'APP_NOTIFY', app: step.app, at: at() })
      } else if (step.kind === 'voicemail' && step.box) {
        void toVoicemail(call, step.box.id, step.box)
        return
      } else if ((step.kind === 'voice_app' || step.kind === 'ai_agent') && step.app) {
        void appAnswers(call, step.app, step.kind === 'ai_agent' ? step.agent : undefined, current.ai_agent?.name)
        return
      } else if (step.kind === 'play' || step.kind === 'menu') {
        const clip = step.kind === 'play' ? step.clip : step.prompt
        if (clip) await playPrompt(call, ctx, clip)
      } else if (step.kind === 'gather' && step.dialPlan && step.node && (call.menus = (call.menus ?? 0) + 1) <= MAX_MENUS) {
        // A menu: its prompt, then the caller's key (or none), then the plan from the menu's node with it.
        if (step.prompt) await playPrompt(call, ctx, step.prompt)
        earlyMedia(call, ctx)
        const digit = await nextDigit(call)
        if (call.state !== 'ringing') return
        const next = await deps.route?.(call.owner.accountId, call.toNumber ?? '', deps.clock.now(), { dialPlan: step.dialPlan, node: step.node, digit })
        if (!next) break
        current = next
        steps = current.steps
        i = -1
      } else {
        if (step.kind !== 'hangup') log?.info({ call_id: call.id, step: step.kind }, 'routed call reached a step real calls do not take yet')
        break
      }
    }
    if (call.state !== 'ringing') return
    if (rang && allBusy) {
      tell(call, { type: 'BUSY', at: at() })
      call.answerCaller({ status: 486 })
    } else {
      tell(call, { type: 'HANGUP', side: 'callee', at: at() })
      call.answerCaller({ status: 480, reason: 'Temporarily Unavailable' })
    }
    finish(call)
  }

  /**
   * The caller waits in a queue: the queue actor holds it and offers it to agents
   * (queueCaller), the caller hears the account's hold music (early media) meanwhile.
   * Resolves how the wait ended: an agent answered, the queue timed the caller out
   * (the plan goes on), or the call ended. A queue that cannot take the caller (its
   * actor not written) is passed over like a timeout.
   */
  const waitInQueue = async (
    call: Call,
    ctx: Pick<SipRequestContext, 'provisional'>,
    step: CallPlan['steps'][number],
  ): Promise<'timed_out' | 'answered' | 'ended'> => {
    const queues = deps.queues!
    const queueId = step.queue!
    const agents = step.agents ?? []
    const now = deps.clock.now()
    const contacts = await Promise.all(agents.map((u) => deps.directory.contactsOf(call.owner.accountId, u, now)))
    if (call.state !== 'ringing') return 'ended'
    const left = new Promise<'timed_out' | 'answered' | 'ended'>((resolve) => {
      call.queue = {
        id: queueId,
        leave: (how) => {
          if (how !== 'answered') call.media.stopPlaying('caller')
          resolve(how)
        },
      }
    })
    try {
      await queues.arrive({
        call: {
          call_id: call.id,
          owner: { platformId: call.owner.platformId, accountId: call.owner.accountId, mode: call.owner.mode },
          from_number: call.fromNumber ?? '',
          from_name: call.fromName ?? null,
          to_number: call.toNumber ?? '',
          media_node: deps.node,
        },
        queue: { queue_id: queueId, max_wait_seconds: step.maxWaitSeconds ?? 0, agents, unreachable: agents.filter((_, i) => contacts[i]!.length === 0) },
      })
    } catch (err) {
      log?.error({ err, call_id: call.id, queue: queueId }, 'caller not queued: the plan goes on')
      call.queue = undefined
      return call.state === 'ringing' ? 'timed_out' : 'ended'
    }
    if (call.state !== 'ringing') return 'ended'
    earlyMedia(call, ctx)
    watchQueue(call, queueId, false)
    const music = await holdMusicFor(call.owner.accountId)
    if (music && call.state === 'ringing' && call.queue?.id === queueId) void call.media.play('caller', music, { loop: true }).catch(() => {})
    return left
  }

  /**
   * The queue's timeout reaches this process as a bus notice, which a restart of the
   * bus or a busy moment may lose: the caller would then hear hold music until they
   * hang up. So while a caller waits, the queue's own record is read every
   * QUEUE_CHECK_S: once the queue has let the caller go (it says so, or the caller it
   * held is gone from it) with no agent's answer here, the plan goes on as the notice
   * would have had it.
   */
  const watchQueue = (call: Call, queueId: string, seenWaiting: boolean) => {
    after(call, QUEUE_CHECK_S, () => {
      const queue = call.queue
      if (queue?.id !== queueId || call.state !== 'ringing') return
      // An offer ringing now keeps the caller in the queue's record (waiting), so it needs no exception here.
      deps
        .queues!.standing(queueId, call.id)
        .then((standing) => {
          if (call.queue !== queue || call.state !== 'ringing') return
          const gone = standing === 'departed' || (standing === 'unknown' && seenWaiting)
          if (!gone) return watchQueue(call, queueId, seenWaiting || standing === 'waiting')
          log?.warn({ call_id: call.id, queue: queueId }, 'the queue let the caller go without a word here: the plan goes on')
          queueCaller({ kind: 'timeout', queue_id: queueId, call_id: call.id, at: at() })
        })
        .catch((err) => {
          log?.warn({ err, call_id: call.id, queue: queueId }, 'queue standing not read')
          watchQueue(call, queueId, seenWaiting)
        })
    })
  }

  /**
   * A queue's word about a caller this process holds: ring the offered agents'
   * phones at once (ringStep, OFFER_RING_SECONDS) and report the answer, or
   * that nobody took it; or the caller times out and the plan goes on. A notice for
   * a call held elsewhere, or one that already left the queue, is not ours.
   */
  const queueCaller = (notice: QueueCallerNotice) => {
    const call = calls.get(notice.call_id)
    if (!call || call.queue?.id !== notice.queue_id || call.state !== 'ringing') return
    const queue = call.queue
    if (notice.kind === 'timeout') {
      for (const f of call.forks) f.cancel()
      call.queue = undefined
      queue.leave('timed_out')
      return
    }
    if (notice.kind === 'cancel') {
      // Agents the queue took back from the offer (logged out): their phones stop ringing, the others ring on.
      for (const agent of notice.agents) for (const f of queue.offerForks?.get(agent) ?? []) f.cancel()
      return
    }
    const offered_at = notice.offered_at
    const forksByUser = new Map<string, InviteHandle[]>()
    queue.offerForks = forksByUser
    void (async () => {
      const now = deps.clock.now()
      const users = await Promise.all(
        notice.agents.map(async (userId) => ({ userId, contacts: await deps.directory.contactsOf(call.owner.accountId, userId, now) })),
      )
      const reachable = users.filter((u) => u.contacts.length > 0)
      const fromHeader = call.fromHeader ?? ((tag: string) => `<sip:${call.fromNumber ?? 'anonymous'}@${deps.host}>;tag=${tag}`)
      // An agent whose phones all refuse leaves the offer at once (the others ring on) and is free for the queue's next
      // caller; the last one to refuse ends the offer as before, when its ring time would have.
      const declined = (userId: string) => {
        if (call.state === 'ringing' && call.queue === queue)
          tellQueue(call, queue.id, { type: 'AGENT_DECLINED', call_id: call.id, user_id: userId, offered_at, at: at() })
      }
      const end =
        reachable.length > 0 ? await ringStep(call, reachable, OFFER_RING_SECONDS, fromHeader, call.toNumber ?? '', forksByUser, declined) : 'no-answer'
      if (end === 'answered') {
        tellQueue(call, queue.id, {
          type: 'AGENT_ANSWERED',
          call_id: call.id,
          user_id: call.users.callee!,
          ...(call.calleeDevice ? { endpoint_id: call.calleeDevice } : {}),
          offered_at,
          at: at(),
        })
        queue.leave('answered')
        return
      }
      // An offer that ends early (every phone busy at once, or none left to ring) ends when its ring time would have: the queue
      // offers again at once, and phones that refuse at once would otherwise be rung in a tight loop.
      const left = OFFER_RING_SECONDS - (deps.clock.now().getTime() - Date.parse(offered_at)) / 1000
      if (left > 0) await new Promise<void>((r) => after(call, left, r))
      if (call.state === 'ringing' && call.queue === queue) tellQueue(call, queue.id, { type: 'OFFER_ENDED', call_id: call.id, offered_at, at: at() })
    })().catch((err) => log?.error({ err, call_id: call.id }, 'queue offer failed'))
  }

  const NO_G711: SipResponseSpec = {
    status: 488,
    reason: 'Not Acceptable Here',
    headers: [['Warning', '304 business-voice "G.711 (PCMU or PCMA) required"']],
  }

  /**
   * The caller's leg of a new call: its media anchored, the call not yet kept (its
   * actor must start first). Undefined when the RTP port range is used up.
   */
  const openCall = async (
    request: SipRequest,
    source: SipSource,
    ctx: SipRequestContext,
    o: { owner: AccountOwner; offer: AudioOffer; callerCodec: G711; users: Call['users']; toNumber?: string; contactUser: string },
  ): Promise<Call | undefined> => {
    let placed: Call | undefined
    const media = await deps.media.open(
      request.callId,
      onDigit(() => placed),
    )
    if (!media) return undefined
    media.setCaller({ address: o.offer.address, port: o.offer.port, codec: o.callerCodec, dtmfPayloadType: o.offer.dtmfPayloadType })
    placed = {
      id: newId('call'),
      owner: o.owner,
      state: 'ringing',
      caller: {
        callId: request.callId,
        local: `${header(request, 'to')};tag=${ctx.toTag}`,
        remote: header(request, 'from'),
        remoteTarget:
          (request.parseHeader('contact') as { uri?: { toString(): string } } | undefined)?.uri?.toString() ??
          `sip:${o.contactUser}@${source.address}:${source.port}`,
        via: source,
        cseq: 0,
        offer: o.offer,
        sdpVersion: 1,
      },
      callerCodec: o.callerCodec,
      media,
      forks: [],
      answerCaller: () => {},
      told: Promise.resolve(),
      sessionId: Math.floor(Math.random() * 1e9),
      users: o.users,
      userSide: o.users.caller ? 'caller' : 'callee',
      controls: Promise.resolve(),
      toNumber: o.toNumber,
    }
    return placed
  }

  /** Starts the call's actor, then keeps the call: the caller's INVITE is answered when `answerCaller` is, or 487 on its CANCEL. */
  const admit = async (call: Call, ctx: SipRequestContext, start: SipCallStart): Promise<{ answer: Promise<SipResponseSpec> } | undefined> => {
    try {
      await deps.actors.start(start)
    } catch (err) {
      call.media.close()
      log?.error({ err }, 'call not started')
      return undefined
    }
    call.fromNumber = start.from_number
    call.fromName = start.from_name ?? null
    calls.set(call.id, call)
    bySipCallId.set(call.caller.callId, { call, side: 'caller' })
    const answer = new Promise<SipResponseSpec>((resolve) => {
      call.answerCaller = (spec) => {
        call.answerCaller = () => {}
        resolve(spec)
      }
    })
    ctx.cancelled.addEventListener('abort', () => {
      if (call.state !== 'ringing') return
      // The server has answered 487 already.
      tell(call, { type: 'HANGUP', side: 'caller', at: at() })
      call.answerCaller({ status: 487 })
      finish(call)
    })
    // Wrapped: an async function returning the promise itself would wait for the answer.
    return { answer }
  }

  /**
   * What the call's input keeps of the plan: the voicemail box (whose message it is), the AI agent (named in the
   * summary), the queues it may wait in (they learn of its end). A queue a menu leads to later learns it from here (finish).
   */
  const planEndOf = (plan: CallPlan) => {
    const queues = [...new Set(plan.steps.flatMap((s) => (s.kind === 'enqueue' && s.queue ? [s.queue] : [])))]
    return {
      ...(plan.voicemail_box ? { voicemail_box: plan.voicemail_box } : {}),
      ...(plan.ai_agent ? { ai_agent: plan.ai_agent } : {}),
      ...(queues.length > 0 ? { queues } : {}),
    }
  }

  /**
   * An INVITE from a carrier trunk (SIP_TRUNK_SOURCES) to one of the accounts'
   * numbers: an inbound call that follows the number's routing. Carriers are known
   * by their address, not by digest. Undefined: the request URI names no number, so
   * the INVITE is taken as a phone's.
   */
  const trunkInvite = async (request: SipRequest, source: SipSource, ctx: SipRequestContext): Promise<SipResponseSpec | undefined> => {
    const number = pstnNumber(request.ruri?.user ?? '')
    if (!number?.startsWith('+')) return undefined
    const accountId = await deps.directory.numberHolder(number)
    if (!accountId) return { status: 404, reason: 'No Such Number' }
    const offer = readAudio(request.body)
    const callerCodec = offer?.codecs[0]
    if (!offer || !callerCodec) return NO_G711
    const [owner, plan] = await Promise.all([deps.directory.owner(accountId), deps.route?.(accountId, number, deps.clock.now())])
    if (!owner || !plan) return { status: 404, reason: 'No Such Number' }
    const fromUser = request.from?.uri?.user ?? 'anonymous'
    const fromNumber = pstnNumber(fromUser) ?? fromUser
    const fromName = request.from?.displayName || null
    const call = await openCall(request, source, ctx, { owner, offer, callerCodec, users: {}, toNumber: number, contactUser: fromUser })
    if (!call) return { status: 503, reason: 'No Media Ports', headers: [['Retry-After', '5']] }
    const direct = plan.user
    const admitted = await admit(call, ctx, {
      call_id: call.id,
      direction: 'inbound',
      from_number: fromNumber,
      from_name: fromName,
      to_number: number,
      started_at: at(),
      user_id: direct ?? null,
      ...(direct ? { to_user_id: direct } : {}),
      owner: { platformId: owner.platformId, accountId: owner.accountId, mode: owner.mode },
      record: owner.recording && deps.recordings !== undefined,
      media_node: deps.node,
      ...planEndOf(plan),
    })
    if (!admitted) return { status: 500 }
    log?.info({ call_id: call.id, account: owner.accountId, to: number, steps: plan.steps.length }, 'sip call from a trunk')
    void playPlan(call, plan, ctx, (tag) => `${fromName ? `"${fromName}" ` : ''}<sip:${fromNumber}@${deps.host}>;tag=${tag}`)
    return admitted.answer
  }

  const invite = async (request: SipRequest, source: SipSource, ctx: SipRequestContext | undefined): Promise<SipResponseSpec> => {
    if (request.toTag) return reInvite(request)
    if (!ctx) return { status: 500 }
    if (deps.trunkSources?.has(source.address)) {
      const fromTrunk = await trunkInvite(request, source, ctx)
      if (fromTrunk) return fromTrunk
    }
    const auth = await deps.authenticate(request, source)
    if (!auth.ok) return auth.response
    const line = auth.line
    const callerUser = line.userIds[0]
    if (!callerUser) return { status: 403, reason: 'Line Has No User' }
    const offer = readAudio(request.body)
    const callerCodec = offer?.codecs[0]
    if (!offer || !callerCodec) return NO_G711
    const digits = request.ruri?.user ?? ''
    const [owner, target] = await Promise.all([deps.directory.owner(line.account), deps.directory.dial(line.account, digits)])
    if (!owner) return { status: 404 }
    // An extension that reaches a ring group, a dial plan...: the account's routing decides.
    const plan = target.kind === 'unsupported' && deps.route ? await deps.route(line.account, digits, deps.clock.now()) : undefined
    if (target.kind === 'unsupported' && !plan) return { status: 480, reason: 'Destination Not Yet Reachable By SIP' }
    const pstn = target.kind === 'unknown' ? pstnNumber(digits) : undefined
    if (target.kind === 'unknown' && !pstn) return { status: 404, reason: 'No Such Extension' }
    // Live calls to the PSTN go out on the carrier trunk (SIP_TRUNK_OUTBOUND).
    if (pstn && owner.mode === 'live' && !deps.trunkOutbound) return { status: 503, reason: 'No Carrier Trunk', headers: [['Retry-After', '3600']] }

    const call = await openCall(request, source, ctx, {
      owner,
      offer,
      callerCodec,
      users: { caller: callerUser, ...(target.kind === 'user' ? { callee: target.userId } : {}) },
      toNumber: target.kind === 'unknown' ? pstn : target.number,
      contactUser: line.username,
    })
    if (!call) return { status: 503, reason: 'No Media Ports', headers: [['Retry-After', '5']] }
    const common = {
      call_id: call.id,
      started_at: at(),
      user_id: callerUser,
      from_user_id: callerUser,
      owner: { platformId: owner.platformId, accountId: owner.accountId, mode: owner.mode },
      record: owner.recording && deps.recordings !== undefined,
      media_node: deps.node,
      from_endpoint: line.lineDevice,
    }
    let contacts: CalleeContact[] = []
    let start: SipCallStart
    if (target.kind === 'user' || plan) {
      const number = target.kind === 'unknown' ? digits : target.number
      const [extension, found] = await Promise.all([
        deps.directory.extensionOf(line.account, callerUser),
        target.kind === 'user' ? deps.directory.contactsOf(line.account, target.userId, deps.clock.now()) : [],
      ])
      contacts = found
      const from_number = extension ?? line.username
      start = plan
        ? { ...common, direction: 'internal', from_number, to_number: number, ...planEndOf(plan) }
        : { ...common, direction: 'internal', from_number, to_number: number, to_user_id: (target as { userId: string }).userId }
    } else {
      const callerId = await deps.directory.callerIdOf(line.account)
      const emergency = isEmergencyNumber(pstn!) ? await deps.directory.emergencyInfo(line.account, callerUser, line.lineDevice, source.address) : undefined
      // A carrier takes a live call only from a number of the account's (an emergency call goes out whatever it shows).
      if (owner.mode === 'live' && !callerId && !emergency) {
        call.media.close()
        return { status: 403, reason: 'No Caller ID Number' }
      }
      const from_number = callerId ?? line.username
      start = { ...common, direction: 'outbound', from_number, to_number: pstn!, ...(emergency ? { emergency } : {}) }
    }
    const admitted = await admit(call, ctx, start)
    if (!admitted) return { status: 500 }
    const { answer } = admitted
    const callerNumber = start.from_number
    log?.info({ call_id: call.id, account: owner.accountId, to: start.to_number, contacts: contacts.length }, 'sip call')
    const fromHeader = (tag: string) => `"${callerNumber}" <sip:${callerNumber}@${line.domain}>;tag=${tag}`
    if (plan) {
      void playPlan(call, plan, ctx, fromHeader)
      return answer
    }
    if (target.kind !== 'user') {
      if (owner.mode === 'live') void dialTrunk(call, ctx, pstn!, callerNumber)
      else sandboxFarEnd(call, ctx, sandboxFarEndOf(pstn!))
      return answer
    }
    if (contacts.length === 0) {
      void toVoicemail(call, target.userId)
      return answer
    }
    ctx.provisional({ status: 180 })
    void ring(call, contacts, target.userId, fromHeader, target.number)
    return answer
  }

  /**
   * A sandbox call to the PSTN: the simulator is the far end, with the magic numbers'
   * behaviour (src/services/calls/sandbox-numbers.ts), in simulated time
   * (VOICE_CLOCK_SPEED compresses it as for simulated calls). Ringing is a 180 and
   * call.ringing without a user; once answered the caller hears the simulated far
   * end's voice (the audio simulated recordings are made of) until the far end hangs up.
   */
  const sandboxFarEnd = (call: Call, ctx: Pick<SipRequestContext, 'provisional'> | undefined, far: SandboxFarEnd) => {
    const later = (seconds: number, fn: () => void) => after(call, seconds, fn)
    if (far.outcome === 'busy') {
      tell(call, { type: 'BUSY', at: at() })
      call.answerCaller({ status: 486 })
      finish(call)
      return
    }
    ctx?.provisional({ status: 180 })
    tell(call, { type: 'RING', at: at() })
    if (far.outcome === 'no-answer') {
      later(far.ring_seconds, () => {
        tell(call, { type: 'HANGUP', side: 'callee', at: at() })
        call.answerCaller({ status: 480, reason: 'Temporarily Unavailable' })
        finish(call)
      })
      return
    }
    later(far.ring_seconds, () => {
      call.state = 'answered'
      if (call.transferred) connectTransferred(call)
      if (call.owner.recording && deps.recordings) call.recording = call.media.startRecording()
      tell(call, { type: 'ANSWER', at: at() })
      call.answerCaller({ status: 200, headers: [['Contact', contactOf(call.caller.via.transport)]], ...sdpBody(callerAnswer(call)) })
      call.media.play('caller', simulatedFarEndVoice(call.id, far.talk_seconds))
      later(far.talk_seconds, () => {
        bye(call.caller)
        hangUp(call, 'callee')
      })
    })
  }
  /**
   * A live call to the PSTN, sent to the carrier trunk (SIP_TRUNK_OUTBOUND): an
   * INVITE for the number, with the caller ID in From; a digest challenge of the
   * carrier's is answered once with the trunk's credentials. The carrier's first 18x
   * is the call's ringing (180 to the caller; a 183 with SDP: its early media is
   * relayed, the caller gets our 183 instead), its 200 the answer; unanswered within
   * TRUNK_RING_TIMEOUT_S it is cancelled. 486/600/603 end the call busy, 480, 408, 487
   * and no answer no-answer, anything else failed (the carrier's status relayed).
   */
  const dialTrunk = async (call: Call, ctx: Pick<SipRequestContext, 'provisional'> | undefined, number: string, callerId: string) => {
    const trunk = deps.trunkOutbound!
    const target: SipSource = { transport: trunk.transport, address: trunk.address, port: trunk.port }
    const host = trunk.address.includes(':') ? `[${trunk.address}]` : trunk.address
    const contact: CalleeContact = {
      uri: `sip:${number}@${host}:${trunk.port}${trunk.transport === 'tcp' ? ';transport=tcp' : ''}`,
      ...target,
      device: 'trunk',
    }
    const callId = `${newTag()}${newTag()}@${deps.host}`
    const first = offerTo(contact, callId, `<sip:${callerId}@${deps.host}>;tag=${newTag()}`, `<sip:${number}@${host}>`, call.media.calleePort, call.sessionId)
    let rang = false
    after(call, TRUNK_RING_TIMEOUT_S, () => {
      for (const f of call.forks) f.cancel()
    })
    const send = (request: OutgoingRequest) => {
      const handle = deps.sip.sendInvite(target, request, {
        onProvisional: (response) => {
          if (call.state !== 'ringing' || (response.statusCode ?? 0) < 180) return
          // The carrier's early media (ringback, an announcement): relayed to the phone, which gets a 183 with our SDP once.
          const early = readAudio(response.body)
          const codec = early?.codecs[0]
          if (early && codec && ctx) {
            call.media.setCallee({ address: early.address, port: early.port, codec, dtmfPayloadType: early.dtmfPayloadType })
            earlyMedia(call, ctx)
          }
          if (rang) return
          rang = true
          if (!call.earlyAnswer) ctx?.provisional({ status: 180 })
          tell(call, { type: 'RING', at: at() })
        },
        onRetransmitted2xx: ackRetransmitted2xx(call, contact, request),
      })
      call.forks.push(handle)
      return handle.outcome
    }
    let request = first
    let outcome = await send(request).catch(() => ({ kind: 'unreachable' as const }))
    const challenged = outcome.kind === 'rejected' && (outcome.status === 401 || outcome.status === 407) ? outcome : undefined
    if (challenged && trunk.credentials && call.state === 'ringing') {
      const proxy = challenged.status === 407
      const challenge = header(challenged.response, proxy ? 'proxy-authenticate' : 'www-authenticate')
      const authorization = answerDigestChallenge(challenge, { ...trunk.credentials, method: 'INVITE', uri: contact.uri })
      if (authorization) {
        // The same dialog's next INVITE (RFC 3261 §22.2): CSeq up, the answer to the challenge added.
        request = {
          ...first,
          headers: [
            ...first.headers.map(([n, v]): [string, string] => [n, n === 'CSeq' ? '2 INVITE' : v]),
            [proxy ? 'Proxy-Authorization' : 'Authorization', authorization],
          ],
        }
        outcome = await send(request).catch(() => ({ kind: 'unreachable' as const }))
      }
    }
    if (outcome.kind === 'answered') {
      answered(call, contact, request, outcome.response, undefined)
      return
    }
    if (call.state !== 'ringing') return
    const status = outcome.kind === 'rejected' ? outcome.status : outcome.kind === 'timeout' ? 408 : 503
    log?.info({ call_id: call.id, status, outcome: outcome.kind }, 'carrier trunk did not answer')
    if ([486, 600, 603].includes(status)) {
      tell(call, { type: 'BUSY', at: at() })
      call.answerCaller({ status: 486 })
    } else if ([480, 408, 487].includes(status)) {
      tell(call, { type: 'HANGUP', side: 'callee', at: at() })
      call.answerCaller({ status: 480, reason: 'Temporarily Unavailable' })
    } else {
      tell(call, { type: 'FAIL', reason: `carrier_${status}`, at: at() })
      // 401/407 the trunk could not answer are ours, not the caller's to answer: 503.
      call.answerCaller({ status: status >= 400 && status < 700 && status !== 401 && status !== 407 ? status : 503 })
    }
    finish(call)
  }

  /** Timers of calls (a ring timeout, a simulated far end, a message's longest length), cleared when their call ends first. */
  const callTimers = new Map<string, ReturnType<typeof setTimeout>[]>()
  /** Runs `fn` after `seconds` of simulated time (VOICE_CLOCK_SPEED compresses it, as for simulated calls), unless the call ended. */
  const after = (call: Call, seconds: number, fn: () => void) => {
    const timer = setTimeout(
      () => {
        if (call.state !== 'ended') fn()
      },
      (seconds * 1000) / deps.clock.speed,
    )
    callTimers.set(call.id, [...(callTimers.get(call.id) ?? []), timer])
  }

  /** The account's hold music (hold_music_clip), decoded; none: silence while held. */
  const holdMusicFor = async (accountId: string): Promise<Int16Array | undefined> => {
    try {
      const key = await deps.directory.holdMusicOf(accountId)
      const blob = key ? await deps.recordings?.get(key) : undefined
      return blob ? decodeWavSamples(blob.bytes) : undefined
    } catch (err) {
      log?.warn({ err, account: accountId }, 'hold music not read: silence while held')
      return undefined
    }
  }

  /** The greeting of the user's box (their `unavailable` greeting, else a short tone), then the beep. */
  const greetingFor = async (accountId: string, userId: string): Promise<Int16Array> => {
    let greeting: Int16Array | undefined
    try {
      const key = await deps.directory.greetingOf(accountId, userId, 'unavailable')
      const blob = key ? await deps.recordings?.get(key) : undefined
      if (blob) greeting = decodeWavSamples(blob.bytes)
    } catch (err) {
      log?.warn({ err, user: userId }, 'greeting not read: the default one plays')
    }
    return concat([greeting ?? tone(440, 0.6), silence(0.3), tone(1000, 0.4)])
  }

  /**
   * Nobody answered (no registered phone, every phone refused or rang out, or the ring
   * timeout): the callee's voicemail answers the caller, plays the greeting and the
   * beep, then records the message until the caller hangs up (or MAX_MESSAGE_S).
   */
  const toVoicemail = async (call: Call, userId: string, box?: { type: 'user' | 'shared'; id: string }) => {
    if (call.state !== 'ringing') return
    for (const f of call.forks) f.cancel()
    call.state = 'answered'
    if (call.transferred) connectTransferred(call)
    call.voicemail = { userId }
    tell(call, { type: 'VOICEMAIL', ...(box ? { box: { type: box.type, id: box.id } } : {}), at: at() })
    call.answerCaller({ status: 200, headers: [['Contact', contactOf(call.caller.via.transport)]], ...sdpBody(callerAnswer(call)) })
    const greeting = await greetingFor(call.owner.accountId, userId)
    if (over(call)) return
    await call.media.play('caller', greeting)
    if (over(call)) return
    call.voicemail.message = call.media.startRecording()
    after(call, MAX_MESSAGE_S, () => {
      bye(call.caller)
      endVoicemail(call)
    })
  }

  /**
   * The caller hung up (or the message reached its longest length): a message is
   * stored, then the machine hears MESSAGE_STORED and HANGUP (status voicemail) and the
   * voicemail record follows; without a message (the caller left during the greeting)
   * the call ends no-answer, as the spec says.
   */
  const endVoicemail = (call: Call) => {
    const v = call.voicemail!
    const wav = v.message?.stop()
    v.message = undefined
    finish(call)
    const seconds = wav ? Math.round((wav.length - 44) / 2 / 8000) : 0
    const store = deps.recordings
    if (!wav || seconds < 1 || !store) {
      tell(call, { type: 'HANGUP', side: 'caller', at: at() })
      return
    }
    const voicemailId = newId('voicemail')
    const key = `voicemails/${call.owner.accountId}/${voicemailId}.wav`
    const ended = at()
    // The call actor's end then creates the voicemail record (after call.end, as for simulated calls).
    const message = { id: voicemailId, storage_key: key, duration_seconds: seconds }
    call.told = call.told
      .then(() => store.put(key, wav, 'audio/wav'))
      .then(() => deps.actors.tell(call.id, { type: 'MESSAGE_STORED', message, at: ended }))
      .catch((err) => log?.error({ err, call_id: call.id }, 'voicemail not stored'))
      .then(() => deps.actors.tell(call.id, { type: 'HANGUP', side: 'caller', at: ended }))
      .catch((err) => log?.error({ err, call_id: call.id }, 'call event not written'))
  }

  /**
   * An answered call ends (a BYE from either phone, the simulated far end hanging up):
   * its recording, if any, is stored first and named to the machine (RECORDING_STORED),
   * then HANGUP: the call actor's end creates the recording record, so
   * recording.available follows call.end as for simulated calls.
   */
  const hangUp = (call: Call, side: 'caller' | 'callee') => {
    const wav = call.recording?.stop()
    call.recording = undefined
    finish(call)
    const store = deps.recordings
    if (wav && store) {
      const recordingId = newId('recording')
      const key = `recordings/${call.owner.accountId}/${recordingId}.wav`
      const recording = { id: recordingId, storage_key: key, duration_seconds: Math.round((wav.length - 44) / 2 / 8000) }
      const ended = at()
      call.told = call.told
        .then(() => store.put(key, wav, 'audio/wav'))
        .then(() => deps.actors.tell(call.id, { type: 'RECORDING_STORED', recording, at: ended }))
        .catch((err) => log?.error({ err, call_id: call.id }, 'recording not stored'))
        .then(() => deps.actors.tell(call.id, { type: 'HANGUP', side, at: ended }))
        .catch((err) => log?.error({ err, call_id: call.id }, 'call event not written'))
      return
    }
    tell(call, { type: 'HANGUP', side, at: at() })
  }

  /** A re-INVITE in a dialog: hold (sendonly, inactive, c=0.0.0.0) or resume; answered from our anchored leg. */
  const reInvite = async (request: SipRequest): Promise<SipResponseSpec> => {
    const found = bySipCallId.get(request.callId)
    if (found?.call.state !== 'answered') return { status: 481 }
    const { call, side } = phoneCallOf(found)
    const d = side === 'caller' ? call.caller : call.callee!
    d.cseq = Math.max(d.cseq, 0)
    const offer = readAudio(request.body)
    if (offer) {
      const wasHeld = d.offer?.direction === 'sendonly' || d.offer?.direction === 'inactive'
      const holds = offer.direction === 'sendonly' || offer.direction === 'inactive'
      d.offer = offer
      const codec = offer.codecs[0]
      if (codec && offer.address !== '0.0.0.0') {
        const remote = { address: offer.address, port: offer.port, codec, dtmfPayloadType: offer.dtmfPayloadType }
        if (side === 'caller') call.media.setCaller(remote)
        else call.media.setCallee(remote)
      }
      // A consultation still ringing has nobody to hold: the phone's offer is answered and kept.
      if (holds !== wasHeld && call.state === 'answered') {
        call.media.hold(side === 'caller' ? 'callee' : 'caller', holds, holds ? await holdMusicFor(call.owner.accountId) : undefined)
        tell(call, { type: holds ? 'HOLD' : 'RESUME', by_phone: true, at: at() })
      }
    }
    return { status: 200, headers: [['Contact', contactOf(d.via.transport)]], ...sdpBody(ourAnswer(call, side)) }
  }

  /**
   * The call a phone's dialog carries now. During the API's warm transfer the
   * transferring user's phone talks on the consultation call, though its dialog stays
   * the held call's (it goes back there if the consultation ends without a hand-over):
   * its re-INVITEs (hold, resume, a moved address) belong to the consultation.
   */
  const phoneCallOf = (found: { call: Call; side: 'caller' | 'callee' }): { call: Call; side: 'caller' | 'callee' } => {
    const pending = found.call.handOver
    const q = pending?.consult
    return q?.consultOf === found.call && pending!.side === found.side && q.state !== 'ended' ? { call: q, side: 'caller' } : found
  }

  const byeReceived = (request: SipRequest): SipResponseSpec => {
    const found = bySipCallId.get(request.callId)
    // A transferor's own BYE crossing ours (RFC 5589 has it hang up after the NOTIFY): the dialog is over, which it asked for.
    if (!found) return releasedDialogs.delete(request.callId) ? { status: 200 } : { status: 481 }
    const { call, side } = found
    if (call.voicemail) {
      endVoicemail(call)
      return { status: 200 }
    }
    if (call.refer?.side === side) {
      // The transferor left before the transfer was carried out (RFC 5589 has it wait for the NOTIFY; some phones do not): the transfer goes on without it.
      bySipCallId.delete(request.callId)
      call.refer.transferorGone = true
      return { status: 200 }
    }
    if (call.consultOf && side === 'callee') {
      // The consulted party hung up: the transfer is off, the transferring user's phone goes back to the held call.
      tell(call, { type: 'HANGUP', side: 'callee', at: at() })
      backToHeldCall(call)
      finish(call)
      return { status: 200 }
    }
    if (call.transferred && call.state === 'ringing') tell(call, { type: 'HANGUP', side: 'caller', at: at() })
    if (call.state === 'answered') {
      bye(side === 'caller' ? call.callee : call.caller)
      hangUp(call, side)
    } else finish(call)
    return { status: 200 }
  }

  const other = (side: 'caller' | 'callee') => (side === 'caller' ? 'callee' : 'caller')

  /** Dialogs a transfer released (we BYE them): their own BYE is answered 200, not 481. The newest 1,000. */
  const releasedDialogs = new Set<string>()
  const releaseDialog = (d: Dialog) => {
    bySipCallId.delete(d.callId)
    releasedDialogs.add(d.callId)
    if (releasedDialogs.size > 1_000) releasedDialogs.delete(releasedDialogs.values().next().value!)
  }
  const dialogOf = (call: Call, side: 'caller' | 'callee') => (side === 'caller' ? call.caller : call.callee)
  const heldDirection = (d: Dialog | undefined) => d?.offer?.direction === 'sendonly' || d?.offer?.direction === 'inactive'

  /** An answered call's figures since it took its legs over (a transferred call's legs carried another call first). */
  const ownStats = (call: Call) => {
    const now = call.media.stats()
    const base = call.statsBase
    if (!base) return now
    const minus = (a: LegMediaStats, b: LegMediaStats): LegMediaStats => ({
      ...a,
      packetsReceived: a.packetsReceived - b.packetsReceived,
      packetsSent: a.packetsSent - b.packetsSent,
      packetsLost: Math.max(0, a.packetsLost - b.packetsLost),
    })
    return { caller: minus(now.caller, base.caller), callee: minus(now.callee, base.callee) }
  }

  /**
   * A re-INVITE of ours to one side's phone, offering `direction` on its anchored port
   * (API hold and resume). Resolves once it is answered and acknowledged: the next one
   * waits for it (RFC 3261 §14.1: one INVITE at a time in a dialog).
   */
  const sendReInvite = async (call: Call, side: 'caller' | 'callee', direction: Direction): Promise<void> => {
    const d = dialogOf(call, side)
    if (!d) return
    d.heldByUs = direction !== 'sendrecv'
    const sdp = writeAudio({
      address: deps.host,
      port: side === 'caller' ? call.media.callerPort : call.media.calleePort,
      codecs: [side === 'caller' ? call.callerCodec : (d.offer?.codecs[0] ?? 'PCMU')],
      dtmfPayloadType: d.offer?.dtmfPayloadType ?? DEFAULT_DTMF_PT,
      direction,
      sessionId: d.sessionId ?? call.sessionId,
      version: d.sdpVersion++,
    })
    const request = inDialog(d, 'INVITE', [['Contact', contactOf(d.via.transport)]], sdp)
    const cseq = d.cseq
    const ack = () =>
      deps.sip.sendRaw(ackFor2xx({ uri: d.remoteTarget, from: d.local, to: d.remote, callId: d.callId, cseq }, deps.sip.sentBy(d.via.transport), d.via), d.via)
    const outcome = await deps.sip.sendInvite(d.via, request, { onRetransmitted2xx: ack }).outcome
    if (outcome.kind === 'answered') ack()
    else log?.warn({ call_id: call.id, side, outcome: outcome.kind }, 're-INVITE not answered')
  }

  /**
   * Hold from the API: the other side than the call's user hears the hold music (a
   * sendonly re-INVITE), the user's phone hears nothing (inactive). A call a phone
   * holds already stays as the phone put it, and only a hold of the API's is resumed
   * by the API: a phone's own hold is its user's to release.
   */
  const holdFromApi = async (call: Call, held: boolean) => {
    // An attended transfer's hold is the transferor phone's own (told to the machine so that the hand-over resumes it).
    if (call.state !== 'answered' || call.voicemail || call.handOver) return
    const userSide = call.userSide
    const heldSide = other(userSide)
    if (held) {
      if (call.apiHold || heldDirection(call.caller) || heldDirection(call.callee)) return
      call.apiHold = true
      const music = await holdMusicFor(call.owner.accountId)
      if (call.state !== 'answered' || !call.apiHold) return
      call.media.hold(heldSide, true, music)
      call.media.hold(userSide, true)
      await Promise.all([sendReInvite(call, heldSide, 'sendonly'), sendReInvite(call, userSide, 'inactive')])
      return
    }
    if (!call.apiHold) return
    call.apiHold = false
    call.media.hold(heldSide, false)
    call.media.hold(userSide, false)
    await Promise.all([sendReInvite(call, heldSide, 'sendrecv'), sendReInvite(call, userSide, 'sendrecv')])
  }

  /** A NOTIFY in the referring dialog: the transfer's progress as a sipfrag status line (RFC 3515 §2.4.5). */
  const notifyRefer = (call: Call, d: Dialog, status: number, reason: string) => {
    const n = referNotify(status, reason)
    return deps.sip
      .sendRequest(d.via, inDialog(d, 'NOTIFY', [['Contact', contactOf(d.via.transport)], ...n.headers], n.body, n.contentType))
      .catch((err) => log?.warn({ err, call_id: call.id }, 'refer NOTIFY not sent'))
  }

  /** What a REFER's target is to the machine: a user of the account (by extension) or, in the sandbox, a public number. */
  const transferTarget = async (owner: CallOwner, dialled: string): Promise<{ to: string } | { refused: SipResponseSpec }> => {
    const found = await deps.directory.dial(owner.accountId, dialled)
    if (found.kind === 'user') return { to: found.userId }
    if (found.kind === 'unsupported') return { refused: { status: 480, reason: 'Destination Not Yet Reachable By SIP' } }
    const pstn = pstnNumber(dialled)
    // An emergency call is dialled, never transferred to (rule 7 has no call.emergency for transfers).
    if (!pstn?.startsWith('+')) return { refused: { status: 404, reason: 'No Such Extension' } }
    if (owner.mode === 'live') return { refused: { status: 503, reason: 'No Carrier Trunk' } }
    return { to: pstn }
  }

  /**
   * A blind transfer asked by a phone (REFER in an answered call): 202, a NOTIFY
   * "100 Trying", and the machine is told BLIND_TRANSFER; its transfer notice comes
   * back (`transferCall`), which reports "200 OK" and releases the transferor. A
   * transfer the machine does not take within REFER_DECISION_MS is reported 603
   * and the call goes on.
   */
  const referReceived = async (request: SipRequest): Promise<SipResponseSpec> => {
    // A REFER that names no target is malformed wherever it is sent (RFC 3515 §2.4.1), before any dialog is looked for.
    const target = parseReferTo(request.getHeader('refer-to'))
    if (!target) return { status: 400, reason: 'Bad Refer-To' }
    const found = bySipCallId.get(request.callId)
    if (!found) return { status: 481 }
    const { call, side } = found
    const d = dialogOf(call, side)
    if (!d || !request.toTag || !d.local.endsWith(`tag=${request.toTag}`)) return { status: 481 }
    if (target.replaces) return attendedTransfer(call, side, d, target.replacesDialog)
    if (call.state !== 'answered' || call.voicemail) return { status: 403, reason: 'Call Not Connected' }
    if (call.refer) return { status: 491 }
    const by = call.users[side]
    if (!by) return { status: 403, reason: 'No User To Transfer For' }
    const decided = await transferTarget(call.owner, target.user)
    if ('refused' in decided) return decided.refused
    if (call.state !== 'answered' || call.refer) return { status: 481 }
    const newCallId = newId('call')
    call.refer = { side, newCallId, timer: setTimeout(() => referNotTaken(call), REFER_DECISION_MS) }
    tell(call, { type: 'BLIND_TRANSFER', to: decided.to, by, new_call_id: newCallId, at: at() })
    // After the 202 has left (the server sends it once this resolves): the NOTIFY must not overtake it.
    setTimeout(() => {
      if (call.refer?.newCallId === newCallId && !call.refer.transferorGone) void notifyRefer(call, d, 100, 'Trying')
    }, 0)
    return { status: 202, headers: [['Contact', contactOf(d.via.transport)]] }
  }

  /**
   * An attended transfer (RFC 5589 §7): the transferor's phone, with one call held
   * and another to the target (its call to consult), REFERs one of them naming the
   * other in Replaces. The call the phone holds keeps its other party (the
   * transferee) and takes the target in place of the transferor; the call to
   * consult ends with call.transfer, as a warm transfer's consultation call does.
   * The machine decides (COMPLETE_WARM_TRANSFER on the call to consult); its
   * hand_over notice then moves the target's leg (handOver). Either call may carry
   * the REFER; Replaces must name the other call's dialog with the same phone.
   */
  const attendedTransfer = (call: Call, side: 'caller' | 'callee', d: Dialog, replaces: ReplacesDialog | undefined): SipResponseSpec => {
    if (!replaces) return { status: 400, reason: 'Bad Replaces' }
    const named = bySipCallId.get(replaces.callId)
    if (!named || named.call === call) return { status: 481, reason: 'Replaced Dialog Does Not Exist' }
    const namedDialog = dialogOf(named.call, named.side)
    const tags = namedDialog ? [tagOf(namedDialog.local) ?? '', tagOf(namedDialog.remote) ?? ''].sort() : []
    // RFC 3891 names the tags from the target's side, phones from their own: either order names the dialog.
    if (tags.join(' ') !== [replaces.toTag, replaces.fromTag].sort().join(' ')) return { status: 481, reason: 'Replaced Dialog Does Not Exist' }
    // The primary call is the one the phone holds (else the one the REFER came in); the other is the call to consult.
    const referHeld = heldDirection(d)
    const [primary, consult] = referHeld || !heldDirection(namedDialog) ? [{ call, side }, named] : [named, { call, side }]
    const p = primary.call
    const q = consult.call
    if (p.state !== 'answered' || q.state !== 'answered' || p.voicemail || q.voicemail) return { status: 403, reason: 'Call Not Connected' }
    if (p.owner.accountId !== q.owner.accountId) return { status: 403, reason: 'Calls Of Different Accounts' }
    const by = p.users[primary.side]
    const to = q.users[other(consult.side)]
    if (!by || q.users[consult.side] !== by) return { status: 403, reason: 'No User To Transfer For' }
    // The target must be a phone on the line (a user's): a simulated far end has no leg to move.
    if (!to || !dialogOf(p, other(primary.side)) || !dialogOf(q, other(consult.side))) return { status: 403, reason: 'Transfer Needs Phones On Both Calls' }
    if (p.refer || q.refer || p.handOver || q.handOver) return { status: 491 }
    p.handOver = {
      consult: q,
      side: primary.side,
      consultSide: consult.side,
      referDialog: d,
      timer: setTimeout(() => handOverNotTaken(p, call), REFER_DECISION_MS),
    }
    // The machine resumes the primary call with the target (RESUME handed_to): it must know the call as held first.
    if (!heldDirection(dialogOf(p, primary.side))) tell(p, { type: 'HOLD', by_phone: true, at: at() })
    const heldTold = p.told
    q.told = q.told
      .then(() => heldTold)
      .then(() => deps.actors.tell(q.id, { type: 'COMPLETE_WARM_TRANSFER', to, by, related_call: p.id, at: at() }))
      .catch((err) => log?.error({ err, call_id: q.id }, 'attended transfer not written'))
    setTimeout(() => {
      if (p.handOver?.consult === q) void notifyRefer(call, d, 100, 'Trying')
    }, 0)
    return { status: 202, headers: [['Contact', contactOf(d.via.transport)]] }
  }

  /**
   * The API's warm transfer held call `p` (the machine re-INVITEs its phones: the
   * other party hears the hold music): the transferring user's phone now talks on a
   * consultation call of its own, on a new anchored session (a re-INVITE moves its
   * audio there), and the target rings as a call from that user would (a user's
   * phones, else their voicemail; a number: the sandbox's far end, or the carrier
   * trunk). complete_transfer then hands the held party over (handOver); the
   * consultation ending otherwise puts the user's phone back on the held call.
   */
  const consultCall = async (p: Call, c: { to: string; by: string; consultation_call_id: string }) => {
    if (p.state !== 'answered' || p.voicemail || p.handOver || p.refer) {
      log?.warn({ call_id: p.id }, 'consultation not placed: the call moved on')
      return
    }
    const side = p.users.caller === c.by ? 'caller' : p.users.callee === c.by ? 'callee' : p.userSide
    const phone = dialogOf(p, side)
    if (!phone?.offer?.codecs[0]) {
      log?.warn({ call_id: p.id }, 'consultation not placed: the transferring user is on no phone of ours')
      return
    }
    let q: Call | undefined
    const media = await deps.media.open(
      c.consultation_call_id,
      onDigit(() => q),
    )
    if (!media || p.state !== 'answered') {
      media?.close()
      log?.warn({ call_id: p.id }, 'consultation not placed: no media ports')
      return
    }
    phone.sessionId ??= p.sessionId
    // The other party waits on hold (the machine held the call: no hold notice comes for it), with the music.
    const held = other(side)
    if (!p.apiHold) {
      p.apiHold = true
      p.media.hold(held, true, await holdMusicFor(p.owner.accountId))
      p.media.hold(side, true)
      await sendReInvite(p, held, 'sendonly')
    }
    const consult: Call = {
      id: c.consultation_call_id,
      owner: p.owner,
      state: 'ringing',
      caller: phone,
      callerCodec: phone.offer.codecs[0],
      media,
      forks: [],
      // The user's phone is in a call already: a target that fails sends it back to the held call.
      answerCaller: (spec) => {
        if (spec.status >= 300) backToHeldCall(consult)
      },
      told: Promise.resolve(),
      sessionId: Math.floor(Math.random() * 1e9),
      users: { caller: c.by },
      userSide: 'caller',
      controls: Promise.resolve(),
      consultOf: p,
      fromNumber: (side === 'caller' ? p.fromNumber : p.toNumber) ?? c.by,
    }
    q = consult
    calls.set(consult.id, consult)
    p.handOver = { consult, side, consultSide: 'caller' }
    media.setCaller({ address: phone.offer.address, port: phone.offer.port, codec: consult.callerCodec, dtmfPayloadType: phone.offer.dtmfPayloadType })
    await sendReInvite(consult, 'caller', 'sendrecv')
    const owner = { platformId: p.owner.platformId, accountId: p.owner.accountId, mode: p.owner.mode }
    const toUser = !isE164(c.to)
    const [extension, targetExtension, contacts] = await Promise.all([
      deps.directory.extensionOf(owner.accountId, c.by),
      toUser ? deps.directory.extensionOf(owner.accountId, c.to) : undefined,
      toUser ? deps.directory.contactsOf(owner.accountId, c.to, deps.clock.now()) : [],
    ])
    const fromNumber = extension ?? consult.fromNumber!
    consult.toNumber = toUser ? (targetExtension ?? c.to) : c.to
    if (toUser) consult.users.callee = c.to
    try {
      await deps.actors.start({
        call_id: consult.id,
        direction: toUser ? 'internal' : 'outbound',
        from_number: fromNumber,
        to_number: consult.toNumber,
        started_at: at(),
        user_id: c.by,
        from_user_id: c.by,
        ...(toUser ? { to_user_id: c.to } : {}),
        owner,
        record: p.owner.recording && deps.recordings !== undefined,
        media_node: deps.node,
        consultation: { related_call: p.id },
      })
    } catch (err) {
      log?.error({ err, call_id: consult.id }, 'consultation not started')
      backToHeldCall(consult)
      finish(consult)
      return
    }
    log?.info({ call_id: consult.id, related_call: p.id, account: owner.accountId }, 'consultation')
    await reachTarget(consult, c.to, contacts, fromNumber, () => backToHeldCall(consult))
  }

  /**
   * A leg the B2BUA placed (a transfer's, a consultation) reaches its target: a
   * user's registered phones (their voicemail when none), a number: the sandbox's
   * simulated far end or, for a live account, the carrier trunk. A live call with no
   * trunk fails; `failed` releases what the call's caller side holds.
   */
  const reachTarget = async (call: Call, to: string, contacts: CalleeContact[], fromNumber: string, failed: () => void) => {
    if (isE164(to)) {
      if (call.owner.mode !== 'live') sandboxFarEnd(call, undefined, sandboxFarEndOf(to))
      else if (deps.trunkOutbound) void dialTrunk(call, undefined, to, (await deps.directory.callerIdOf(call.owner.accountId)) ?? fromNumber)
      else {
        // No carrier trunk is configured (as for a phone dialling out in live mode).
        tell(call, { type: 'FAIL', reason: 'no_carrier_trunk', at: at() })
        failed()
        finish(call)
      }
      return
    }
    if (contacts.length === 0) {
      void toVoicemail(call, to)
      return
    }
    ring(call, contacts, to, (tag) => `"${fromNumber}" <sip:${fromNumber}@${deps.host}>;tag=${tag}`, call.toNumber ?? to)
  }

  /** A consultation that ended without a hand-over: the transferring user's phone is moved back to the held call (still held). */
  const backToHeldCall = (q: Call) => {
    const p = q.consultOf
    q.consultOf = undefined
    if (p?.state !== 'answered' || p.handOver?.consult !== q) return
    const side = p.handOver.side
    p.handOver = undefined
    p.controls = p.controls
      .then(() => sendReInvite(p, side, p.apiHold ? 'inactive' : 'sendrecv'))
      .catch((err) => log?.error({ err, call_id: p.id }, 're-INVITE back to the held call failed'))
  }

  /**
   * A call the machine ended by a transfer, whose legs live on in another call: its
   * figures kept, its timers cleared, forgotten here, its recording stored (the
   * record follows the event that ended it). Its media and dialogs are the caller's to hand on.
   */
  const endTransferred = (call: Call) => {
    call.state = 'ended'
    keepFigures(call)
    for (const timer of callTimers.get(call.id) ?? []) clearTimeout(timer)
    callTimers.delete(call.id)
    calls.delete(call.id)
    bySipCallId.delete(call.caller.callId)
    if (call.callee) bySipCallId.delete(call.callee.callId)
    if (call.recording) storeRecording(call, call.recording.stop())
    call.recording = undefined
  }

  /** The machine did not take the attended transfer in time: the REFER fails (NOTIFY 603) and both calls go on. */
  const handOverNotTaken = (p: Call, referCall: Call) => {
    const pending = p.handOver
    if (!pending) return
    p.handOver = undefined
    log?.warn({ call_id: p.id }, 'attended transfer not taken by the call')
    if (referCall.state === 'answered' && pending.referDialog) void notifyRefer(referCall, pending.referDialog, 603, 'Declined')
  }

  /**
   * The machine completed the attended transfer on the call to consult (`q`; its
   * call.transfer is committed): the target's leg joins the primary call in the
   * transferor's place (a re-INVITE moves its media to the primary call's anchored
   * port), the transferee stops hearing the hold music, and the transferor's phone is
   * released on both calls (NOTIFY 200 in the referring dialog, then BYEs).
   */
  const handOver = (q: Call, primaryId: string) => {
    const p = calls.get(primaryId)
    const pending = p?.handOver
    if (!p || !pending || pending.consult !== q || q.state !== 'answered' || p.state !== 'answered') return
    clearTimeout(pending.timer)
    p.handOver = undefined
    const sideR = pending.side
    const transferorInP = dialogOf(p, sideR)!
    const transferorInQ = dialogOf(q, pending.consultSide)!
    const target = dialogOf(q, other(pending.consultSide))
    // The call to consult ends here (its machine ended it); its recording follows its call.transfer.
    endTransferred(q)
    q.media.close()
    q.consultOf = undefined
    if (!target) {
      // The consulted party was the sandbox's simulated far end: no leg to move; the transferring user is released all the same.
      log?.warn({ call_id: p.id, consultation: q.id }, 'warm transfer to a simulated far end: nobody joins the held call')
      releaseDialog(transferorInP)
      bye(transferorInP)
      return
    }
    // The target takes the transferor's place on the primary call.
    target.sessionId ??= q.sessionId
    if (sideR === 'caller') {
      p.caller = target
      p.callerCodec = target.offer?.codecs[0] ?? p.callerCodec
    } else p.callee = target
    releaseDialog(transferorInP)
    releaseDialog(transferorInQ)
    bySipCallId.set(target.callId, { call: p, side: sideR })
    p.users[sideR] = q.users[other(pending.consultSide)]
    const offer = target.offer
    const codec = offer?.codecs[0]
    if (offer && codec) {
      const remote = { address: offer.address, port: offer.port, codec, dtmfPayloadType: offer.dtmfPayloadType }
      if (sideR === 'caller') p.media.setCaller(remote)
      else p.media.setCallee(remote)
    }
    p.media.hold('caller', false)
    p.media.hold('callee', false)
    // The referring dialog hears the outcome before its BYE (RFC 5589 §7); the other is hung up at once. The API's warm
    // transfer consulted on the held call's own dialog: one BYE.
    const referring = pending.referDialog
    if (referring) {
      const quiet = referring === transferorInP ? transferorInQ : transferorInP
      void notifyRefer(p, referring, 200, 'OK').then(() => bye(referring))
      bye(quiet)
    } else bye(transferorInP)
    p.controls = p.controls
      .then(() => sendReInvite(p, sideR, 'sendrecv'))
      .catch((err) => log?.error({ err, call_id: p.id }, 're-INVITE of the transfer target failed'))
    log?.info({ call_id: p.id, consultation: q.id }, 'attended transfer')
  }

  const referNotTaken = (call: Call) => {
    const r = call.refer
    if (!r || call.state !== 'answered') return
    call.refer = undefined
    log?.warn({ call_id: call.id }, 'transfer not taken by the call')
    if (!r.transferorGone) {
      void notifyRefer(call, dialogOf(call, r.side)!, 603, 'Declined')
      return
    }
    // Nobody is left to hear it but the party that was to be handed over.
    bye(dialogOf(call, other(r.side)))
    hangUp(call, r.side)
  }

  /** The machine's orders for a call this process holds (hold, resume, a blind transfer). Unknown ids are other processes' calls. */
  const control = (notice: SipCallControlNotice) => {
    const call = calls.get(notice.call_id)
    if (!call) return
    const c = notice.control
    if (c.command === 'hand_over') {
      handOver(call, c.primary)
      return
    }
    if (c.command === 'consult') {
      call.controls = call.controls.then(() => consultCall(call, c)).catch((err) => log?.error({ err, call_id: call.id }, 'consultation failed'))
      return
    }
    if (c.command === 'transfer') {
      transferCall(call, c).catch((err) => log?.error({ err, call_id: call.id }, 'transfer failed'))
      return
    }
    call.controls = call.controls.then(() => holdFromApi(call, c.command === 'hold')).catch((err) => log?.error({ err, call_id: call.id }, 'hold failed'))
  }

  /**
   * A blind transfer the machine took (from a REFER or the API; the old call's
   * call.transfer and call.end are committed): the transferor's phone is released
   * (NOTIFY 200 then BYE for a REFER, BYE otherwise), and the party left on the line
   * becomes the caller of the new call, placed here as a phone's call is: a user's
   * registered phones ring (voicemail when none answers), a public number is the
   * sandbox's simulated far end. The transferee hears the hold music until the
   * target answers; the leg the transferor used carries the target.
   */
  const transferCall = async (call: Call, c: { to: string; by: string; new_call_id: string }) => {
    if (call.state !== 'answered' || call.voicemail) return
    const pending = call.refer?.newCallId === c.new_call_id ? call.refer : undefined
    if (call.refer) clearTimeout(call.refer.timer)
    call.refer = undefined
    const transferorSide = pending?.side ?? (call.users.caller === c.by ? 'caller' : call.users.callee === c.by ? 'callee' : call.userSide)
    const transfereeSide = other(transferorSide)
    const transferor = dialogOf(call, transferorSide)
    const transferee = dialogOf(call, transfereeSide)
    // The old call has ended in the machine already: its recording follows its call.end.
    endTransferred(call)
    if (transferor) releaseDialog(transferor)
    const releaseTransferor = async () => {
      if (!transferor || pending?.transferorGone) return
      if (pending) await notifyRefer(call, transferor, 200, 'OK')
      await deps.sip.sendRequest(transferor.via, inDialog(transferor, 'BYE')).catch(() => {})
    }
    const released = releaseTransferor()
    if (!transferee) {
      // The party left is the sandbox's simulated far end: there is no phone to hand over.
      log?.warn({ call_id: call.id }, 'transfer of a simulated far end: nothing placed')
      call.media.close()
      return
    }
    const media = transfereeSide === 'caller' ? call.media : swapSides(call.media)
    const fromNumber = (transfereeSide === 'caller' ? call.fromNumber : call.toNumber) ?? c.by
    const next: Call = {
      id: c.new_call_id,
      owner: call.owner,
      state: 'ringing',
      caller: transferee,
      callerCodec: transfereeSide === 'caller' ? call.callerCodec : (transferee.offer?.codecs[0] ?? 'PCMU'),
      media,
      forks: [],
      // Its caller was answered long ago: a call that fails now ends with a BYE to it.
      answerCaller: (spec) => {
        next.answerCaller = () => {}
        if (spec.status >= 300) bye(next.caller)
      },
      told: call.told,
      sessionId: call.sessionId,
      fromNumber,
      users: { caller: call.users[transfereeSide] },
      userSide: 'callee',
      transferred: true,
      controls: Promise.resolve(),
      statsBase: media.stats(),
    }
    // What the new call's phones do is told after its actor is started (a message to an actor not yet spawned is dropped).
    let started!: () => void
    const gate = new Promise<void>((resolve) => {
      started = resolve
    })
    next.told = call.told.then(() => gate)
    call.successor = next
    calls.set(next.id, next)
    bySipCallId.set(transferee.callId, { call: next, side: 'caller' })
    // Nothing reaches the leg the transferor left; the transferee hears the music until the target answers.
    media.hold('callee', true)
    media.hold('caller', true, await holdMusicFor(call.owner.accountId))
    const owner = { platformId: call.owner.platformId, accountId: call.owner.accountId, mode: call.owner.mode }
    // A voice app's transfer (by names the app) places a call of no user's.
    const byUser = idKind(c.by) === 'user' ? c.by : undefined
    const common = {
      call_id: next.id,
      started_at: at(),
      from_number: fromNumber,
      user_id: byUser ?? null,
      ...(byUser ? { from_user_id: byUser } : {}),
      owner,
      record: call.owner.recording && deps.recordings !== undefined,
      media_node: deps.node,
      placed_by_transfer: { related_call: call.id },
    }
    const toUser = !isE164(c.to)
    let contacts: CalleeContact[] = []
    try {
      if (toUser) {
        const [extension, found] = await Promise.all([
          deps.directory.extensionOf(owner.accountId, c.to),
          deps.directory.contactsOf(owner.accountId, c.to, deps.clock.now()),
        ])
        contacts = found
        next.toNumber = extension ?? c.to
        next.users.callee = c.to
        await deps.actors.start({ ...common, direction: 'internal', to_number: next.toNumber, to_user_id: c.to })
      } else {
        next.toNumber = c.to
        await deps.actors.start({
          ...common,
          direction: 'outbound',
          from_number: (await deps.directory.callerIdOf(owner.accountId)) ?? fromNumber,
          to_number: c.to,
        })
      }
    } catch (err) {
      log?.error({ err, call_id: next.id }, 'transferred call not started')
      bye(next.caller)
      finish(next)
      return
    } finally {
      started()
    }
    // The target rings once the transferor's phone has hung up and gone quiet (bounded: a phone that does not does not hold the
    // transfer up): RTP it still sent after the target's answer would be taken for the target's (symmetric RTP latches the first source).
    await Promise.race([released, sleep(RELEASE_WAIT_MS)])
    await quiet(media, 'callee')
    if (over(next)) return
    log?.info({ call_id: next.id, related_call: call.id, account: owner.accountId, contacts: contacts.length }, 'sip transfer')
    await reachTarget(next, c.to, contacts, fromNumber, () => bye(next.caller))
  }

  /** The target of a transfer answered (or its voicemail did): the legs relay again, and a phone we held hears the other side. */
  const connectTransferred = (call: Call) => {
    call.media.hold('caller', false)
    call.media.hold('callee', false)
    if (call.caller.heldByUs) void sendReInvite(call, 'caller', 'sendrecv').catch((err) => log?.error({ err, call_id: call.id }, 're-INVITE failed'))
  }

  /**
   * Click-to-call (POST /v1/calls, planned by the gateway: src/services/calls/click-to-call.ts):
   * the user's own phones ring first (no call.* event for them, spec rule 1: the call
   * does not exist until the user takes it); the first to answer is the caller side of
   * a call that then rings the destination exactly as if the phone had dialled it. A
   * public destination the account cannot reach (a sandbox account, or no carrier trunk)
   * gets the special information tone and a BYE, with no call.* event.
   */
  const clickToCall = async (notice: ClickToCallNotice) => {
    const { plan, owner } = notice
    const contacts = await deps.directory.contactsOf(owner.accountId, plan.from_user_id, deps.clock.now())
    if (contacts.length === 0) return
    let placed: Call | undefined
    const media = await deps.media.open(
      newId('call'),
      onDigit(() => placed),
    )
    if (!media) {
      log?.warn({ account: owner.accountId }, 'click-to-call not placed: no media ports')
      return
    }
    const accountOwner = await deps.directory.owner(owner.accountId)
    const call: Call = {
      id: newId('call'),
      owner: { ...owner, recording: accountOwner?.recording ?? false },
      state: 'ringing',
      caller: { callId: '', local: '', remote: '', remoteTarget: '', via: { transport: 'udp', address: '', port: 0 }, cseq: 1, sdpVersion: 1 },
      callerCodec: 'PCMU',
      media,
      forks: [],
      // The user's phone answered long ago: a destination that fails is a BYE to it.
      answerCaller: (spec) => {
        call.answerCaller = () => {}
        if (spec.status >= 300) bye(call.caller)
      },
      told: Promise.resolve(),
      sessionId: Math.floor(Math.random() * 1e9),
      users: { caller: plan.from_user_id, ...(plan.kind === 'connect_internal' ? { callee: plan.to_user_id } : {}) },
      userSide: 'caller',
      controls: Promise.resolve(),
    }
    placed = call
    const ownPhones: InviteHandle[] = []
    let taken = false
    let left = contacts.length
    const giveUp = () => {
      for (const f of ownPhones) f.cancel()
      if (!taken) media.close()
    }
    const ownTimer = setTimeout(giveUp, (RING_TIMEOUT_S * 1000) / deps.clock.speed)
    const label = plan.kind === 'connect_internal' ? (plan.extension ?? 'a colleague') : plan.to_number
    for (const contact of contacts) {
      const target: SipSource = { transport: contact.transport, address: contact.address, port: contact.port }
      const callId = `${newTag()}${newTag()}@${deps.host}`
      const from = `"${label.replace(/"/g, '')}" <sip:${label.replace(/[^0-9A-Za-z+*#._-]/g, '') || 'call'}@${deps.host}>;tag=${newTag()}`
      const request = offerTo(contact, callId, from, `<${contact.uri}>`, media.callerPort, call.sessionId)
      const handle = deps.sip.sendInvite(target, request)
      ownPhones.push(handle)
      handle.outcome
        .then(async (outcome) => {
          if (outcome.kind !== 'answered') {
            if (--left === 0 && !taken) {
              clearTimeout(ownTimer)
              media.close()
            }
            return
          }
          const response = outcome.response
          const to = header(response, 'to')
          const remoteTarget = (response.parseHeader('contact') as { uri?: { toString(): string } } | undefined)?.uri?.toString() ?? contact.uri
          const from = request.headers[0]![1]
          deps.sip.sendRaw(ackFor2xx({ uri: remoteTarget, from, to, callId, cseq: 1 }, deps.sip.sentBy(target.transport), target), target)
          const dialog: Dialog = { callId, local: from, remote: to, remoteTarget, via: target, cseq: 1, sdpVersion: 1 }
          if (taken) {
            bye(dialog)
            return
          }
          taken = true
          clearTimeout(ownTimer)
          for (const f of ownPhones) if (f !== handle) f.cancel()
          const answer = readAudio(response.body)
          const codec = answer?.codecs[0] ?? 'PCMU'
          call.caller = { ...dialog, offer: answer, sdpVersion: 2 }
          call.callerCodec = codec
          if (answer) media.setCaller({ address: answer.address, port: answer.port, codec, dtmfPayloadType: answer.dtmfPayloadType })
          await connectClickToCall(call, notice, contact)
        })
        .catch((err) => log?.error({ err }, 'click-to-call leg failed'))
    }
  }

  /**
   * A live account's click-to-call to a public number, once the user took their
   * phone: an outbound call (call.emergency for 911 and 933, from the phone that
   * answered) out on the carrier trunk, with the plan's caller ID.
   */
  const clickToCallOut = async (
    call: Call,
    notice: ClickToCallNotice,
    plan: Extract<ClickToCallNotice['plan'], { kind: 'dial_public' }>,
    phone: CalleeContact,
  ) => {
    const owner = notice.owner
    const fromNumber = plan.caller_id ?? (await deps.directory.callerIdOf(owner.accountId))
    const emergency = plan.emergency ? await deps.directory.emergencyInfo(owner.accountId, plan.from_user_id, phone.device, phone.address) : undefined
    if (!fromNumber && !emergency) {
      // A carrier takes a live call only from a number of the account's.
      log?.warn({ account: owner.accountId }, 'click-to-call out not placed: the account has no number')
      bye(call.caller)
      finish(call)
      return
    }
    call.fromNumber = fromNumber ?? plan.from_user_id
    call.toNumber = plan.to_number
    try {
      await deps.actors.start({
        call_id: call.id,
        direction: 'outbound',
        from_number: call.fromNumber,
        to_number: plan.to_number,
        started_at: at(),
        user_id: plan.from_user_id,
        from_user_id: plan.from_user_id,
        owner: { platformId: owner.platformId, accountId: owner.accountId, mode: owner.mode },
        record: call.owner.recording && deps.recordings !== undefined,
        media_node: deps.node,
        from_endpoint: phone.device,
        ...(emergency ? { emergency } : {}),
      })
    } catch (err) {
      log?.error({ err }, 'click-to-call not started')
      bye(call.caller)
      finish(call)
      return
    }
    log?.info({ call_id: call.id, account: owner.accountId, to: plan.to_number }, 'click-to-call out on the carrier trunk')
    await dialTrunk(call, undefined, plan.to_number, call.fromNumber)
  }

  /** The user took their phone: the call exists now, and rings its destination. */
  const connectClickToCall = async (call: Call, notice: ClickToCallNotice, phone: CalleeContact) => {
    const { plan, owner } = notice
    bySipCallId.set(call.caller.callId, { call, side: 'caller' })
    calls.set(call.id, call)
    if (plan.kind === 'dial_public' && owner.mode === 'live' && deps.trunkOutbound) {
      await clickToCallOut(call, notice, plan, phone)
      return
    }
    if (plan.kind !== 'connect_internal') {
      // The sandbox cannot call the public network (spec), nor a live account without a carrier trunk: the tone, then goodbye.
      call.state = 'answered'
      await call.media.play('caller', specialInformationTone())
      if (!over(call)) {
        bye(call.caller)
        call.state = 'ended'
        call.media.close()
        calls.delete(call.id)
        bySipCallId.delete(call.caller.callId)
      }
      return
    }
    const [extension, targetExtension, contacts] = await Promise.all([
      deps.directory.extensionOf(owner.accountId, plan.from_user_id),
      plan.extension ? Promise.resolve(plan.extension) : deps.directory.extensionOf(owner.accountId, plan.to_user_id),
      deps.directory.contactsOf(owner.accountId, plan.to_user_id, deps.clock.now()),
    ])
    const fromNumber = plan.caller_id ?? extension ?? plan.from_user_id
    const toNumber = targetExtension ?? plan.to_user_id
    call.fromNumber = fromNumber
    call.toNumber = toNumber
    try {
      await deps.actors.start({
        call_id: call.id,
        direction: 'internal',
        from_number: fromNumber,
        to_number: toNumber,
        started_at: at(),
        user_id: plan.from_user_id,
        from_user_id: plan.from_user_id,
        to_user_id: plan.to_user_id,
        owner: { platformId: owner.platformId, accountId: owner.accountId, mode: owner.mode },
        record: call.owner.recording && deps.recordings !== undefined,
        media_node: deps.node,
        from_endpoint: phone.device,
      })
    } catch (err) {
      log?.error({ err }, 'click-to-call not started')
      bye(call.caller)
      finish(call)
      return
    }
    log?.info({ call_id: call.id, account: owner.accountId, to: toNumber, contacts: contacts.length }, 'click-to-call')
    if (contacts.length === 0) {
      void toVoicemail(call, plan.to_user_id)
      return
    }
    ring(call, contacts, plan.to_user_id, (tag) => `"${fromNumber}" <sip:${fromNumber}@${deps.host}>;tag=${tag}`, toNumber)
  }

  return {
    handlers: { INVITE: invite, BYE: byeReceived, REFER: referReceived },
    /** The call machine's orders for a call it keeps (hold, resume) or hands over (a blind transfer). */
    control,
    clickToCall: (notice: ClickToCallNotice) => {
      clickToCall(notice).catch((err) => log?.error({ err }, 'click-to-call failed'))
    },
    /** A queue's offer or timeout for one of its real callers (unknown ids are other processes' calls). */
    queueCaller,
    /** The call machine ended the call (an API hang-up): take its legs down. Unknown ids are other processes' calls. */
    callEnded(callId: string) {
      const call = calls.get(callId)
      if (!call) return
      if (call.consultOf) {
        // The consultation was hung up (the API): the transferring user's phone goes back to the held call.
        if (call.state === 'ringing') for (const f of call.forks) f.cancel()
        else bye(call.callee)
        backToHeldCall(call)
        finish(call)
        return
      }
      if (call.state === 'ringing') call.answerCaller({ status: 487 })
      else {
        bye(call.caller)
        bye(call.callee)
      }
      finish(call)
    },
    /**
     * The media process stops cleanly (SIGTERM): its calls end now rather than wait for
     * the watchdog to fail them. An answered call is hung up on both phones (BYE) and
     * ends completed; a ringing one gets 503 and ends failed; a message being left is
     * kept. Resolves once those events are written (at most `withinMs`).
     */
    async stop(withinMs = 5_000) {
      const going = [...calls.values()]
      for (const call of going) {
        if (call.voicemail) {
          bye(call.caller)
          endVoicemail(call)
        } else if (call.state === 'answered') {
          bye(call.caller)
          bye(call.callee)
          hangUp(call, 'callee')
        } else {
          call.answerCaller({ status: 503, reason: 'Service Stopping' })
          tell(call, { type: 'FAIL', reason: 'media_stopped', at: at() })
          finish(call)
        }
      }
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([Promise.all(going.map((c) => c.told)), new Promise((r) => (timer = setTimeout(r, withinMs)))])
      clearTimeout(timer)
    },
    get activeCalls() {
      return calls.size
    },
    /** What the media of the last answered calls did (at most 100, newest last). */
    recentMedia(): readonly FinishedCallMedia[] {
      return finished
    },
  }
}

export type B2bua = ReturnType<typeof createB2bua>

export interface FinishedCallMedia {
  call_id: string
  caller: LegMediaStats
  callee: LegMediaStats
}
