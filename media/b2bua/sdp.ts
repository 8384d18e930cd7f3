/**
 * SDP offer/answer (RFC 3264) as the B2BUA needs it: read a phone's audio stream
 * (where it wants RTP, which G.711 law, which telephone-event payload type, whether
 * it holds), and write our side of it, always pointing at the media role's own RTP
 * port, so media is anchored here. Parsing and writing are sdp-transform's.
 */
import { parse, write } from 'sdp-transform'

export type G711 = 'PCMU' | 'PCMA'
export type Direction = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive'

/** The part of a session description the media plane acts on. */
export interface AudioOffer {
  address: string
  port: number
  /** The G.711 laws offered, in the offerer's order of preference. */
  codecs: G711[]
  /** The telephone-event (RFC 4733) payload type offered, if any. */
  dtmfPayloadType: number | undefined
  direction: Direction
}

const STATIC: Record<number, G711> = { 0: 'PCMU', 8: 'PCMA' }
export const PAYLOAD_TYPE: Record<G711, number> = { PCMU: 0, PCMA: 8 }
/** What we offer for RFC 4733 when the other side has not chosen: the common dynamic number. */
export const DEFAULT_DTMF_PT = 101

/** The first audio stream of an SDP body (with `codecs` empty when it offers no G.711), or undefined when there is none (no audio, no address, garbage). */
export function readAudio(body: string | undefined): AudioOffer | undefined {
  if (!body?.includes('m=')) return undefined
  let session: ReturnType<typeof parse>
  try {
    session = parse(body)
  } catch {
    return undefined
  }
  const audio = session.media?.find((m) => m.type === 'audio')
  if (!audio || typeof audio.port !== 'number') return undefined
  const address = audio.connection?.ip ?? session.connection?.ip
  if (!address) return undefined
  const byPt = new Map<number, string>()
  const rateOf = new Map<number, number | undefined>()
  for (const r of audio.rtp ?? []) {
    byPt.set(r.payload, r.codec.toUpperCase())
    rateOf.set(r.payload, r.rate)
  }
  const codecs: G711[] = []
  let dtmfPayloadType: number | undefined
  for (const raw of String(audio.payloads ?? '').split(/\s+/)) {
    const pt = Number(raw)
    if (!Number.isInteger(pt)) continue
    const name = byPt.get(pt) ?? STATIC[pt]
    if (name === 'PCMU' || name === 'PCMA') {
      if (!codecs.includes(name)) codecs.push(name)
    } else if (name === 'TELEPHONE-EVENT' && dtmfPayloadType === undefined && (rateOf.get(pt) ?? 8000) === 8000) {
      // G.711 is 8 kHz: a telephone-event at another rate (48 kHz, offered for Opus) is not ours.
      dtmfPayloadType = pt
    }
  }
  const direction = (audio.direction ?? session.direction ?? 'sendrecv') as Direction
  // An old-style hold (RFC 2543): c=0.0.0.0 means "send me nothing".
  const held = address === '0.0.0.0' ? 'inactive' : direction
  return { address, port: audio.port, codecs, dtmfPayloadType, direction: held }
}

export interface OurAudio {
  /** Our address (SIP_HOST) and the leg's RTP port. */
  address: string
  port: number
  /** In order of preference; an answer lists exactly one. */
  codecs: G711[]
  dtmfPayloadType: number
  direction?: Direction
  /** o= session id and version: the version goes up with every new offer in a dialog. */
  sessionId: number
  version: number
}

/** Our session description (an offer, or an answer with one codec). */
export function writeAudio(a: OurAudio): string {
  const ip4 = !a.address.includes(':')
  const payloads = [...a.codecs.map((c) => PAYLOAD_TYPE[c]), a.dtmfPayloadType]
  return write({
    version: 0,
    origin: { username: '-', sessionId: a.sessionId, sessionVersion: a.version, netType: 'IN', ipVer: ip4 ? 4 : 6, address: a.address },
    name: 'business-voice',
    connection: { version: ip4 ? 4 : 6, ip: a.address },
    timing: { start: 0, stop: 0 },
    media: [
      {
        type: 'audio',
        port: a.port,
        protocol: 'RTP/AVP',
        payloads: payloads.join(' '),
        rtp: [
          ...a.codecs.map((c) => ({ payload: PAYLOAD_TYPE[c], codec: c, rate: 8000 })),
          { payload: a.dtmfPayloadType, codec: 'telephone-event', rate: 8000 },
        ],
        fmtp: [{ payload: a.dtmfPayloadType, config: '0-15' }],
        ptime: 20,
        direction: a.direction ?? 'sendrecv',
      },
    ],
  })
}

/** RFC 3264 §6.1: the answer's direction to an offer's. */
export function answerDirection(offered: Direction): Direction {
  switch (offered) {
    case 'sendonly':
      return 'recvonly'
    case 'recvonly':
      return 'sendonly'
    default:
      return offered
  }
}
