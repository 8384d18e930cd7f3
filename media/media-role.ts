/**
 * The media role: SIP on SIP_HOST:SIP_PORT (the registrar, the B2BUA, check-sync
 * NOTIFYs) and RTP on RTP_PORT_MIN..RTP_PORT_MAX. What it needs from other roles
 * (the device actors' tells, the call actors) is handed in by the composition root.
 */
import { createHmac, randomUUID } from 'node:crypto'
import type { Bus } from '../src/bus/bus'
import type { Clock } from '../src/clock'
import { portUnavailable, type SipTrunkOutbound } from '../src/config'
import type { Db } from '../src/db/client'
import type { Logger } from '../src/logger'
import { forgetMediaNode, MEDIA_HEARTBEAT_MS, mediaHeartbeat } from '../src/services/calls/media-watchdog'
import { registrarLines } from '../src/services/devices/registrations'
import type { ClickToCallNotice } from '../src/services/calls/click-to-call'
import { takeClickToCall, takeMissedClickToCalls } from '../src/services/calls/click-to-call-requests'
import { storeCallQuality } from '../src/services/quality/call-quality'
import { createB2bua, type B2bua } from './b2bua/b2bua'
import { onClickToCall, onQueueCaller, onSipCallControl, onSipCallEnded } from './b2bua/bus-notices'
import { rtpCallMedia } from './b2bua/call-media'
import { callerAuthenticator } from './b2bua/caller-auth'
import { callDirectory } from './b2bua/directory'
import type { CallActors, CallQueues, CallRouting, RecordingStorage } from './b2bua/ports'
import { startCheckSyncNotifier } from './registrar/check-sync-notify'
import { registrarOnDatabase } from './registrar/directory'
import type { DeviceTellWriter } from './device-tell-batcher'
import { lookupBatcher } from './lookup-batcher'
import { createPortPool } from './rtp'
import { composeHandlers } from './sip/handlers'
import { createAuthFailures } from './sip/auth-failures'
import { sharedAuthFailures } from './sip/shared-auth-failures'
import { type SipServer, startSipServer } from './sip/server'
import { startTrunkRegistration, type TrunkRegistration } from './sip/trunk-registration'

/** How often a media process looks for click-to-calls whose notice it missed, and how old one must be (its notice still on its way). */
export const CLICK_TO_CALL_POLL_MS = 2_000
const CLICK_TO_CALL_NOTICE_GRACE_MS = 1_000

export interface MediaRoleOptions {
  db: Db
  clock: Clock
  bus: Pick<Bus, 'subscribe' | 'publish'>
  log: Logger
  sipHost: string
  sipPort: number
  rtpPortMin: number
  rtpPortMax: number
  /** A server secret (the session key): digest nonce keys are derived from it, the same in every process. */
  secret: Uint8Array | string
  writeTells: DeviceTellWriter
  callActors: CallActors
  /** Where call recordings go (the storage the simulator's recordings use). */
  recordings?: RecordingStorage
  /** The account's routing for calls to numbers and to extensions that reach no single user (the routing engine, bound by the composition root). */
  route?: CallRouting
  /** Source addresses of carrier trunks (SIP_TRUNK_SOURCES). */
  trunkSources?: readonly string[]
  /** The carrier trunk live calls to the PSTN go out on (SIP_TRUNK_OUTBOUND). */
  trunkOutbound?: SipTrunkOutbound
  /** The queue actors a routed call waits in (bound by the composition root); absent: a plan reaching a queue goes on past it. */
  queues?: CallQueues
}

export interface MediaRole {
  sip: SipServer
  b2bua: B2bua
  /** With SIP_TRUNK_REGISTER: the registration with the carrier trunk. */
  trunkRegistration?: TrunkRegistration
  stop(): Promise<void>
}

export async function startMediaRole(o: MediaRoleOptions): Promise<MediaRole> {
  const trunk = o.trunkOutbound
  // A trunk we register with sends its inbound calls from its own address.
  const trunkSources = new Set([...(o.trunkSources ?? []), ...(trunk?.register ? [trunk.address] : [])])
  // Password guessing against the lines, REGISTER and INVITE alike (the guessing is in real time).
  // Counted with every other media process's (shared-auth-failures.ts): a scanner spread over them is not slowed less.
  const failures = sharedAuthFailures(
    createAuthFailures({
      now: () => o.clock.wallNow().getTime(),
      exempt: trunkSources,
      onBlock: ({ address, username, untilMs }) =>
        o.log.warn(
          { address, username, until: new Date(untilMs).toISOString() },
          username ? 'SIP line refused from an address guessing its password' : 'SIP source dropped: failed digest for many users',
        ),
    }),
    o.bus,
  )
  // REGISTERs and INVITEs arriving together find their lines in one query.
  const lookupLine = lookupBatcher((usernames: string[]) => registrarLines(o.db, usernames))
  const registrar = registrarOnDatabase({
    db: o.db,
    lookupLine,
    clock: o.clock,
    writeTells: o.writeTells,
    secret: o.secret,
    onError: (err, during) => o.log.error({ err, during }, 'registrar failed'),
    failures,
  })
  let b2bua: B2bua | undefined
  const unavailable = { status: 503, headers: [['Retry-After', '1']] as [string, string][] }
  const sip = await startSipServer({
    host: o.sipHost,
    port: o.sipPort,
    clock: o.clock,
    logger: o.log,
    admit: (source) => !failures.sourceBlocked(source.address),
    handler: composeHandlers({
      REGISTER: registrar,
      INVITE: (request, source, context) => b2bua?.handlers.INVITE(request, source, context) ?? unavailable,
      BYE: (request) => b2bua?.handlers.BYE(request) ?? { status: 481 },
      REFER: (request) => b2bua?.handlers.REFER(request) ?? { status: 481 },
    }),
  }).catch((e) => {
    throw portUnavailable({ port: 'SIP_PORT', host: 'SIP_HOST' }, o.sipHost, o.sipPort, e) ?? e
  })
  // This process's heartbeat: its calls are failed by a worker's watchdog when it stops (src/services/calls/media-watchdog.ts).
  const node = `media-${randomUUID()}`
  await mediaHeartbeat(o.db, node, o.clock.wallNow())
  const beat = setInterval(() => {
    mediaHeartbeat(o.db, node, o.clock.wallNow()).catch((err) => o.log.error({ err }, 'media heartbeat failed'))
  }, MEDIA_HEARTBEAT_MS)
  b2bua = createB2bua({
    sip,
    host: o.sipHost,
    node,
    clock: o.clock,
    authenticate: callerAuthenticator({
      lookupLine,
      clock: o.clock,
      nonceKey: createHmac('sha256', o.secret).update('sip call digest nonces').digest(),
      failures,
    }),
    directory: callDirectory(o.db),
    actors: o.callActors,
    recordings: o.recordings,
    route: o.route,
    queues: o.queues,
    trunkSources,
    trunkOutbound: o.trunkOutbound,
    // The call's media figures, kept for GET /v1/quality/summary and worst-calls.
    onMediaFinished: (m) => void storeCallQuality(o.db, m, o.clock.now()).catch((err) => o.log.error({ err, call_id: m.call_id }, 'call quality not stored')),
    media: rtpCallMedia({ host: o.sipHost, pool: createPortPool({ host: o.sipHost, min: o.rtpPortMin, max: o.rtpPortMax }), log: o.log }),
    log: o.log,
  })
  // Check-sync on a registered phone: its device actor (on any worker) publishes the bindings, this role sends the NOTIFYs.
  const stopCheckSync = startCheckSyncNotifier({ bus: o.bus, sip, host: o.sipHost, log: o.log })
  // A call the call machine ended (an API hang-up): the legs still up are taken down here.
  const stopCallEnded = onSipCallEnded(o.bus, (callId) => b2bua?.callEnded(callId))
  // Hold, resume and blind transfer the call machine took (the API's, or a phone's REFER): carried out on the legs here.
  const stopCallControl = onSipCallControl(o.bus, (notice) => b2bua?.control(notice))
  // Click-to-call accepted by a gateway (recorded with its 202): the process that takes the request rings the user's
  // phones, then the destination; a request whose notice no process heard is taken by the next poll of any of them.
  const placeTaken = (notice: ClickToCallNotice | undefined) => {
    if (notice) b2bua?.clickToCall(notice)
  }
  const stopClickToCall = onClickToCall(o.bus, (notice) => {
    takeClickToCall(o.db, notice.request_id, o.clock.wallNow())
      .then(placeTaken)
      .catch((err) => o.log.error({ err }, 'click-to-call not taken'))
  })
  const missedClickToCalls = setInterval(() => {
    takeMissedClickToCalls(o.db, o.clock.wallNow(), CLICK_TO_CALL_NOTICE_GRACE_MS)
      .then(({ taken, dropped }) => {
        if (dropped > 0) o.log.warn({ dropped }, 'click-to-calls no media process took in time: dropped')
        for (const notice of taken) placeTaken(notice)
      })
      .catch((err) => o.log.error({ err }, 'missed click-to-calls not read'))
  }, CLICK_TO_CALL_POLL_MS)
  // A queue's offers and timeouts for the real callers it holds: the agents' phones ring here.
  const stopQueueCaller = onQueueCaller(o.bus, (notice) => b2bua?.queueCaller(notice))
  o.log.info({ host: o.sipHost, udpPort: sip.udpPort, tcpPort: sip.tcpPort }, 'SIP listening')
  const registration: TrunkRegistration | undefined =
    trunk?.register && trunk.credentials ? startTrunkRegistration({ trunk: { ...trunk, credentials: trunk.credentials }, sip, log: o.log }) : undefined
  return {
    sip,
    b2bua,
    trunkRegistration: registration,
    async stop() {
      await registration?.stop()
      clearInterval(beat)
      stopCheckSync()
      stopCallEnded()
      stopCallControl()
      stopClickToCall()
      clearInterval(missedClickToCalls)
      stopQueueCaller()
      failures.stop()
      // Calls end with their events written before the sockets close (the phones get their BYE).
      await b2bua?.stop()
      await sip.stop()
      await forgetMediaNode(o.db, node).catch(() => {})
    },
  }
}
