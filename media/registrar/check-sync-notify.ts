/**
 * Check-sync reaches a registered phone at once: the device actor (on whichever
 * worker runs it) publishes the device's live bindings on the bus, and the media
 * role, which holds the SIP sockets, sends each an unsolicited NOTIFY with
 * `Event: check-sync;reboot=false` (Yealink, Polycom, Snom, Gigaset and most phones
 * then fetch their configuration without rebooting).
 *
 * Phones are usually behind NAT, so the NOTIFY goes where the REGISTER came from
 * (the binding's source address and port), over the transport it used, with the
 * Contact URI the phone gave as Request-URI and To. Over TCP it can only go down
 * the connection the phone opened: a media process that does not hold it finds the
 * phone unreachable, which is logged at debug.
 *
 * Best effort: the bus may lose a notice and the phone may ignore or miss the
 * NOTIFY. Nothing is retried: the device stays pending_sync and the phone leaves
 * it at its next periodic fetch, as it does when it is not registered at all.
 */
import type { Bus, Unsubscribe } from '../../src/bus/bus'
import type { Logger } from '../../src/logger'
import type { BindingDetails } from '../../src/services/devices/registrations'
import { type ClientOutcome, InvalidRequest, type OutgoingRequest } from '../sip/client'
import type { SipSource } from '../sip/handler'
import { newTag } from '../sip/response'
import type { SipServer } from '../sip/server'

export const CHECK_SYNC_NOTIFY_SUBJECT = 'voice.media.check_sync_notify'

/** One binding to notify: what the registrar recorded of it. */
export type CheckSyncTarget = Pick<BindingDetails, 'username' | 'contact' | 'transport' | 'source_address' | 'source_port'>

/** What travels on the bus: a device asked to check-sync, and its live bindings. */
export interface CheckSyncNotice {
  device: string
  at: string
  targets: CheckSyncTarget[]
}

/** The publishing side, for the device actor (bound by the composition root). */
export function checkSyncPublisher(bus: Pick<Bus, 'publish'>): (notice: CheckSyncNotice) => void {
  return (notice) => bus.publish(CHECK_SYNC_NOTIFY_SUBJECT, JSON.stringify(notice))
}

/** The NOTIFY for one binding; `local` is this server's address for the Contact and From. */
export function checkSyncRequest(target: CheckSyncTarget, local: { host: string; port: number }): OutgoingRequest {
  const transport = target.transport === 'tcp' ? ';transport=tcp' : ''
  return {
    method: 'NOTIFY',
    uri: target.contact,
    headers: [
      ['From', `<sip:provisioning@${local.host}>;tag=${newTag()}`],
      ['To', `<${target.contact}>`],
      ['Call-ID', `${newTag()}${newTag()}@${local.host}`],
      ['CSeq', '1 NOTIFY'],
      ['Contact', `<sip:provisioning@${local.host}:${local.port}${transport}>`],
      ['Event', 'check-sync;reboot=false'],
      // No subscription: the NOTIFY stands alone (RFC 6665 §4.1.3 would otherwise need one).
      ['Subscription-State', 'terminated'],
    ],
  }
}

/** Where the NOTIFY goes; undefined for a transport the SIP server cannot send on (WebSocket, TLS). */
export function checkSyncDestination(target: CheckSyncTarget): SipSource | undefined {
  if (target.transport !== 'udp' && target.transport !== 'tcp') return undefined
  return { transport: target.transport, address: target.source_address, port: target.source_port }
}

export type CheckSyncOutcome = ClientOutcome | { kind: 'unsupported_transport' } | { kind: 'invalid'; reason: string }

export interface CheckSyncNotifierOptions {
  bus: Pick<Bus, 'subscribe'>
  sip: Pick<SipServer, 'sendRequest' | 'udpPort' | 'tcpPort'>
  /** The address peers reach this server at (SIP_HOST). */
  host: string
  log?: Logger
  /** Each NOTIFY's outcome, once known (tests, metrics). */
  onOutcome?: (notice: CheckSyncNotice, target: CheckSyncTarget, outcome: CheckSyncOutcome) => void
}

const isTarget = (t: unknown): t is CheckSyncTarget => {
  const x = t as Record<string, unknown> | null
  return (
    !!x &&
    typeof x.username === 'string' &&
    typeof x.contact === 'string' &&
    typeof x.transport === 'string' &&
    typeof x.source_address === 'string' &&
    Number.isInteger(x.source_port)
  )
}

/** The notice in a bus message, or undefined when it is not one (another version, a stray publisher). */
export function readCheckSyncNotice(data: string): CheckSyncNotice | undefined {
  try {
    const n = JSON.parse(data) as Record<string, unknown>
    if (typeof n?.device !== 'string' || typeof n.at !== 'string' || !Array.isArray(n.targets) || !n.targets.every(isTarget)) return undefined
    return { device: n.device, at: n.at, targets: n.targets }
  } catch {
    return undefined
  }
}

/** The media role's side: NOTIFY every binding of every notice heard on the bus, until the returned function is called. */
export function startCheckSyncNotifier(o: CheckSyncNotifierOptions): Unsubscribe {
  const log = o.log?.child({ component: 'check-sync-notify' })
  const report = (notice: CheckSyncNotice, target: CheckSyncTarget, outcome: CheckSyncOutcome) => {
    const fields = { device: notice.device, contact: target.contact, transport: target.transport, source: `${target.source_address}:${target.source_port}` }
    if (outcome.kind === 'response') log?.info({ ...fields, status: outcome.status }, 'check-sync NOTIFY answered')
    else if (outcome.kind === 'timeout') log?.info(fields, 'check-sync NOTIFY unanswered')
    else if (outcome.kind === 'invalid') log?.warn({ ...fields, reason: outcome.reason }, 'check-sync NOTIFY not sent')
    else log?.debug({ ...fields, outcome: outcome.kind }, 'check-sync NOTIFY not sent')
    o.onOutcome?.(notice, target, outcome)
  }
  const notify = async (target: CheckSyncTarget): Promise<CheckSyncOutcome> => {
    const destination = checkSyncDestination(target)
    if (!destination) return { kind: 'unsupported_transport' }
    const port = destination.transport === 'tcp' ? o.sip.tcpPort : o.sip.udpPort
    try {
      return await o.sip.sendRequest(destination, checkSyncRequest(target, { host: o.host, port }))
    } catch (err) {
      // A contact the phone gave that cannot be a Request-URI: nothing to send.
      if (err instanceof InvalidRequest) return { kind: 'invalid', reason: err.message }
      throw err
    }
  }
  return o.bus.subscribe(CHECK_SYNC_NOTIFY_SUBJECT, (data) => {
    const notice = readCheckSyncNotice(data)
    if (!notice) return log?.warn({ subject: CHECK_SYNC_NOTIFY_SUBJECT }, 'not a check-sync notice: dropped')
    for (const target of notice.targets)
      notify(target).then(
        (outcome) => report(notice, target, outcome),
        (err) => log?.warn({ err, device: notice.device, contact: target.contact }, 'check-sync NOTIFY failed'),
      )
  })
}
