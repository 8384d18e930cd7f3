/**
 * Media legs and the bridge between two of them: the media role anchors every call's
 * RTP, relaying (and where needed transcoding) between the legs it bridges.
 *
 * Where a leg sends (symmetric RTP, RFC 4961 practice for phones behind NAT):
 * - until a packet arrives, to the address and port from the peer's SDP (`setRemote`);
 * - the first RTP packet that arrives with an expected payload type (PCMU, PCMA, the
 *   negotiated audio or DTMF type) latches the leg to its source address and port:
 *   from then on the leg sends there, and packets from any other source are ignored
 *   (so a stray or hostile sender cannot take over a call);
 * - a later `setRemote` with a different address or port (a re-INVITE moving the
 *   media, a transfer handing the leg to another phone) drops the latch; the same one
 *   again keeps it. For RELEARN_MS after such a move only a packet from the new SDP
 *   address latches: the phone the call moved away from keeps sending until its own
 *   BYE, and would otherwise win the latch and take the new phone's audio. After the
 *   window any source may latch again (a phone behind NAT sends from another address
 *   than it announces).
 *
 * What goes out: one SSRC per leg for its whole life, renumbered across changes of
 * source (see outgoing.ts). Audio in the other leg's law is transcoded in place (G.711
 * maps byte to byte); telephone events are relayed with the other leg's negotiated
 * DTMF payload type, or dropped if it negotiated none. Comfort noise and other payload
 * types are counted but not relayed. Playback to a leg takes precedence over relaying
 * to it.
 *
 * Per packet the relay allocates nothing of its own: it rewrites the received datagram
 * and sends it on.
 */
import type { Logger } from '../../src/logger'
import { every, type MediaClock, realMediaClock } from './clock'
import { createDtmfDetector, type DtmfDigit } from './dtmf'
import { decodeTable, encodeTable, type G711PayloadType, isG711, PCMA, PCMU, transcodeInPlace, transcodeTable } from './g711'
import { OWN_SOURCE, OutgoingStream } from './outgoing'
import { createHeaderView, isRtcp, RTP_HEADER_BYTES, RTP_VERSION, type RtpHeaderView, readRtpHeader, writeRtpHeader } from './packet'
import type { PortPair, PortPool, UdpSocket } from './port-pool'
import { createRecorder, type Recorder, type RecorderTap, type Recording } from './recorder'
import { createStreamStats, type ReceiveStats } from './stats'

export const FRAME_MS = 20
export const FRAME_SAMPLES = 160

/**
 * After the media moved, how long only the new SDP address may latch. The old phone
 * stops sending within a round trip of its BYE (a transfer ends its leg at once); a
 * phone behind NAT whose announced address is not its source waits this long for
 * its audio to be relayed.
 */
export const RELEARN_MS = 2000

export interface MediaLegStats extends ReceiveStats {
  packetsSent: number
  /** From an unlatched source, of an unexpected payload type, RTCP on the RTP port, or not RTP at all. */
  packetsIgnored: number
}

export interface RemoteOptions {
  /** The peer's telephone-event payload type from SDP; absent: DTMF is neither recognised from nor relayed to this leg. */
  dtmfPayloadType?: number
}

export interface PlayOptions {
  /** Start again at the end, until `stopPlaying` (hold music). */
  loop?: boolean
}

export interface MediaLeg {
  readonly id: string
  /** The address to put in SDP (c=). */
  readonly host: string
  readonly localPort: number
  readonly rtcpPort: number
  /** This leg's outgoing SSRC, stable for the life of the leg. */
  readonly ssrc: number
  /** Where packets to this leg go now: latched source, else the SDP address; undefined before either. */
  readonly remote: { address: string; port: number } | undefined
  readonly latched: boolean
  /** The negotiated audio payload type (undefined before `setRemote`). */
  readonly payloadType: number | undefined
  readonly closed: boolean
  /** Digits pressed on this leg's phone (RFC 4733), one per key press. */
  onDigit: ((leg: MediaLeg, digit: DtmfDigit) => void) | undefined
  /** From the peer's SDP: where to send and what it speaks (0 = PCMU, 8 = PCMA). */
  setRemote(address: string, port: number, payloadType: number, options?: RemoteOptions): void
  stats(): MediaLegStats
  /**
   * Send 8 kHz PCM to this leg in 20 ms packets, in its codec, at real-time pace.
   * Resolves when the audio has been sent, or when stopped (stopPlaying, another play,
   * close). While playing, nothing is relayed to this leg.
   */
  play(samples: Int16Array, options?: PlayOptions): Promise<void>
  stopPlaying(): void
  readonly playing: boolean
  /** Record what this leg's phone sends (e.g. voicemail). */
  startRecording(): Recording
  /** Unbridge, stop playing, close both sockets and return the ports to the pool. */
  close(): void
}

export interface MediaLegOptions {
  host: string
  pool: PortPool
  clock?: MediaClock
  onDigit?: (leg: MediaLeg, digit: DtmfDigit) => void
  /** For rare events only (latching, a throwing digit handler); nothing per packet. */
  log?: Logger
  id?: string
}

export async function createMediaLeg(options: MediaLegOptions): Promise<MediaLeg> {
  const ports = await options.pool.allocate()
  return new Leg(ports, options)
}

export interface Bridge {
  readonly a: MediaLeg
  readonly b: MediaLeg
  /** Stop relaying to `leg`; with `music`, play it to the leg in a loop until `unhold`. */
  hold(leg: MediaLeg, options?: { music?: Int16Array }): void
  unhold(leg: MediaLeg): void
  isHeld(leg: MediaLeg): boolean
  /** Record the call: both directions mixed into one track. */
  startRecording(): Recording
  /** Stop relaying both ways (hold music this bridge started stops too); the legs stay open, and so does a recording. */
  close(): void
}

/** Relay RTP between two legs, both ways. A leg is in at most one bridge at a time. */
export function bridge(a: MediaLeg, b: MediaLeg): Bridge {
  if (!(a instanceof Leg) || !(b instanceof Leg)) throw new TypeError('bridge takes legs made by createMediaLeg')
  if (a === b) throw new Error('cannot bridge a leg to itself')
  if (a.closed || b.closed) throw new Error('cannot bridge a closed leg')
  if (a.partner || b.partner) throw new Error('leg is already bridged')
  // The playback each leg's hold music is, so unhold stops only that and not a later announcement.
  const music = new Map<Leg, number>()
  const own = (leg: MediaLeg): Leg => {
    if (leg !== a && leg !== b) throw new Error('leg is not in this bridge')
    return leg as Leg
  }
  // Legs outlive bridges and may be bridged again, even to each other: a stale bridge must not touch a newer one.
  const token = {}
  const current = (l: Leg) => l.bridgeToken === token
  a.link(b, token)
  b.link(a, token)
  return {
    a,
    b,
    hold(leg, opts = {}) {
      const l = own(leg)
      if (!current(l)) return
      l.setHeld(true)
      if (opts.music) {
        // A leg whose codec is not G.711 gets silence instead of music: still on hold.
        l.play(opts.music, { loop: true }).catch(() => {})
        music.set(l, l.playbackSerial)
      }
    },
    unhold(leg) {
      const l = own(leg)
      if (!current(l)) return
      if (music.get(l) === l.playbackSerial) l.stopPlaying()
      music.delete(l)
      l.setHeld(false)
    },
    isHeld: (leg) => {
      const l = own(leg)
      return current(l) && l.held
    },
    startRecording() {
      const recorder: Recorder = createRecorder(a.clock, { onStop: () => detach() })
      const taps = [a.addTap(recorder.tap()), b.addTap(recorder.tap())]
      const detach = () => {
        for (const remove of taps) remove()
      }
      return recorder
    },
    close() {
      for (const [l, serial] of music) if (current(l) && l.playbackSerial === serial) l.stopPlaying()
      music.clear()
      for (const l of [a, b]) if (current(l)) l.unlink()
    },
  }
}

interface Playback {
  samples: Int16Array
  loop: boolean
  /** Next sample to send. */
  offset: number
  /** Clock time the next frame is due. */
  due: number
  sequence: number
  timestamp: number
  stopTimer: () => void
  resolve: () => void
}

/** A timer that ran late sends the frames it owes, but at most this many at once... */
const MAX_CATCH_UP_FRAMES = 3
/** ...and beyond this lag it skips ahead instead: a burst would only overflow the phone's jitter buffer. */
const MAX_LAG_MS = 100

class Leg implements MediaLeg {
  readonly id: string
  readonly host: string
  readonly localPort: number
  readonly rtcpPort: number
  readonly clock: MediaClock
  onDigit: ((leg: MediaLeg, digit: DtmfDigit) => void) | undefined
  partner: Leg | undefined
  bridgeToken: object | undefined
  held = false
  /** Counts calls of `play`, so that one who started a playback can tell it is still the current one. */
  playbackSerial = 0
  payloadType: number | undefined
  closed = false

  private readonly ports: PortPair
  private readonly socket: UdpSocket
  private readonly log: Logger | undefined
  private readonly out = new OutgoingStream()
  private readonly view = createHeaderView()
  private readonly detector = createDtmfDetector()
  private readonly receiveStats = createStreamStats()
  private taps: RecorderTap[] = []
  private playback: Playback | undefined
  private dtmfPayloadType = -1
  private heardPayloadType: number | undefined
  private sdpAddress: string | undefined
  private sdpPort = 0
  private sendAddress: string | undefined
  private sendPort = 0
  private latchedAddress: string | undefined
  private latchedPort = 0
  /** Until then (media clock) only the SDP address may latch: see RELEARN_MS. */
  private relearnUntil = -Infinity
  private sent = 0
  private ignored = 0

  constructor(ports: PortPair, options: MediaLegOptions) {
    this.ports = ports
    this.socket = ports.rtp
    this.id = options.id ?? `leg-${ports.rtpPort}`
    this.host = options.host
    this.localPort = ports.rtpPort
    this.rtcpPort = ports.rtcpPort
    this.clock = options.clock ?? realMediaClock()
    this.onDigit = options.onDigit
    this.log = options.log
    ports.onRtp = (data, port, address) => this.receive(data, port, address)
  }

  get ssrc(): number {
    return this.out.ssrc
  }

  get latched(): boolean {
    return this.latchedAddress !== undefined
  }

  get remote(): { address: string; port: number } | undefined {
    return this.sendAddress === undefined ? undefined : { address: this.sendAddress, port: this.sendPort }
  }

  get playing(): boolean {
    return this.playback !== undefined
  }

  setRemote(address: string, port: number, payloadType: number, options: RemoteOptions = {}): void {
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`bad RTP port ${port}`)
    for (const pt of [payloadType, options.dtmfPayloadType ?? 0]) {
      if (!Number.isInteger(pt) || pt < 0 || pt > 127) throw new RangeError(`bad payload type ${pt}`)
    }
    const moved = this.sdpAddress !== undefined && (address !== this.sdpAddress || port !== this.sdpPort)
    if (moved) {
      this.latchedAddress = undefined
      this.latchedPort = 0
      this.relearnUntil = this.clock.now() + RELEARN_MS
    }
    this.sdpAddress = address
    this.sdpPort = port
    this.payloadType = payloadType
    this.dtmfPayloadType = options.dtmfPayloadType ?? -1
    if (!this.latched) {
      this.sendAddress = address
      this.sendPort = port
    }
  }

  stats(): MediaLegStats {
    return { ...this.receiveStats.snapshot(), packetsSent: this.sent, packetsIgnored: this.ignored }
  }

  link(partner: Leg, token: object): void {
    this.partner = partner
    this.bridgeToken = token
    this.held = false
    this.out.breakSource()
  }

  unlink(): void {
    this.partner = undefined
    this.bridgeToken = undefined
    this.held = false
    this.out.breakSource()
  }

  setHeld(held: boolean): void {
    if (this.held === held) return
    this.held = held
    this.out.breakSource()
  }

  /** Returns the function that removes the tap. */
  addTap(tap: RecorderTap): () => void {
    this.taps = [...this.taps, tap]
    return () => {
      this.taps = this.taps.filter((t) => t !== tap)
    }
  }

  startRecording(): Recording {
    const recorder = createRecorder(this.clock, { onStop: () => remove() })
    const remove = this.addTap(recorder.tap())
    return recorder
  }

  /** The socket's data handler: the hot path. */
  private receive(data: Uint8Array, port: number, address: string): void {
    const v = this.view
    if (this.closed || isRtcp(data) || !readRtpHeader(data, v)) {
      this.ignored++
      return
    }
    const pt = v.payloadType
    const isDtmf = pt === this.dtmfPayloadType
    const isAudio = pt === PCMU || pt === PCMA || pt === this.payloadType
    if (this.latchedAddress === undefined) {
      if (!isDtmf && !isAudio) {
        this.ignored++
        return
      }
      if ((address !== this.sdpAddress || port !== this.sdpPort) && this.clock.now() < this.relearnUntil) {
        this.ignored++
        return
      }
      this.latch(address, port)
    } else if (port !== this.latchedPort || address !== this.latchedAddress) {
      this.ignored++
      return
    }
    const now = this.clock.now()
    this.receiveStats.add(v.sequence, v.timestamp, now, isAudio)
    const to = this.partner !== undefined && !this.partner.held && this.partner.playback === undefined ? this.partner : undefined

    if (isDtmf) {
      const digit = this.detector.push(v.timestamp, data, v.payloadOffset, v.payloadEnd)
      if (digit !== undefined) this.reportDigit(digit)
      if (to !== undefined && to.dtmfPayloadType >= 0) to.forward(data, v, to.dtmfPayloadType, undefined, now)
      return
    }
    if (!isAudio) return // comfort noise and the like: counted above, relayed nowhere
    this.heardPayloadType = pt
    if (this.taps.length > 0 && isG711(pt)) {
      const decode = decodeTable(pt)
      for (const tap of this.taps) tap.write(v.ssrc, v.timestamp, data, v.payloadOffset, v.payloadEnd, decode)
    }
    if (to === undefined) return
    // Before its SDP, a leg latched from early media gets what its phone itself sends.
    const outPt = to.payloadType ?? to.heardPayloadType
    if (pt === outPt) to.forward(data, v, pt, undefined, now)
    else if (isG711(pt) && outPt !== undefined && isG711(outPt)) to.forward(data, v, outPt, transcodeTable(pt, outPt), now)
  }

  /** Send a packet received on the partner leg (`v` is its header) on to this leg's phone. */
  private forward(data: Uint8Array, v: RtpHeaderView, payloadType: number, transcode: Uint8Array | undefined, now: number): void {
    if (this.sendAddress === undefined || this.sendPort === 0 || this.closed) return
    if (transcode !== undefined) transcodeInPlace(data, transcode, v.payloadOffset, v.payloadEnd)
    const out = this.out
    out.map(v.ssrc, v.sequence, v.timestamp, now, v.marker)
    writeRtpHeader(data, out.marker, payloadType, out.sequence, out.timestamp, out.ssrc)
    this.socket.send(data, this.sendPort, this.sendAddress)
    this.sent++
  }

  private latch(address: string, port: number): void {
    this.latchedAddress = this.sendAddress = address
    this.latchedPort = this.sendPort = port
    this.log?.debug({ leg: this.id, address, port, sdp: this.sdpAddress && `${this.sdpAddress}:${this.sdpPort}` }, 'rtp latched')
  }

  private reportDigit(digit: DtmfDigit): void {
    try {
      this.onDigit?.(this, digit)
    } catch (err) {
      // The socket's handler must survive a caller's bug.
      this.log?.error({ err, leg: this.id }, 'digit handler threw')
    }
  }

  play(samples: Int16Array, options: PlayOptions = {}): Promise<void> {
    this.stopPlaying()
    this.playbackSerial++
    if (this.closed || samples.length === 0) return Promise.resolve()
    if (this.payloadType === undefined || !isG711(this.payloadType)) {
      return Promise.reject(new Error(`cannot play to leg ${this.id}: its payload type ${this.payloadType} is not PCMU or PCMA`))
    }
    const payloadType: G711PayloadType = this.payloadType
    return new Promise<void>((resolve) => {
      const p: Playback = {
        samples,
        loop: options.loop === true,
        offset: 0,
        due: this.clock.now(),
        sequence: 0,
        timestamp: 0,
        stopTimer: () => {},
        resolve,
      }
      this.playback = p
      this.out.breakSource()
      p.stopTimer = every(this.clock, FRAME_MS, () => this.tick(p, payloadType))
      this.tick(p, payloadType)
    })
  }

  stopPlaying(): void {
    const p = this.playback
    if (p === undefined) return
    this.playback = undefined
    p.stopTimer()
    this.out.breakSource()
    p.resolve()
  }

  private tick(p: Playback, payloadType: G711PayloadType): void {
    if (this.playback !== p) return
    const now = this.clock.now()
    if (now - p.due > MAX_LAG_MS) p.due = now
    // Half a frame early is on time: real timers fire a little early or late.
    for (let n = 0; n < MAX_CATCH_UP_FRAMES && now >= p.due - FRAME_MS / 2; n++) {
      this.sendFrame(p, payloadType, now)
      p.due += FRAME_MS
      if (!p.loop && p.offset >= p.samples.length) {
        this.stopPlaying()
        return
      }
    }
  }

  private sendFrame(p: Playback, payloadType: G711PayloadType, now: number): void {
    // A fresh buffer per frame: 50 a second is cheap, and the socket may still hold the last one.
    const packet = new Uint8Array(RTP_HEADER_BYTES + FRAME_SAMPLES)
    packet[0] = RTP_VERSION << 6
    const encode = encodeTable(payloadType)
    const { samples } = p
    let i = 0
    for (; i < FRAME_SAMPLES; i++) {
      if (p.offset >= samples.length) {
        if (!p.loop) break
        p.offset = 0
      }
      packet[RTP_HEADER_BYTES + i] = encode[samples[p.offset++]! & 0xffff]!
    }
    for (; i < FRAME_SAMPLES; i++) packet[RTP_HEADER_BYTES + i] = encode[0]! // the last frame's tail is silence
    const out = this.out
    out.map(OWN_SOURCE, p.sequence, p.timestamp, now, false)
    p.sequence = (p.sequence + 1) & 0xffff
    p.timestamp = (p.timestamp + FRAME_SAMPLES) >>> 0
    writeRtpHeader(packet, out.marker, payloadType, out.sequence, out.timestamp, out.ssrc)
    if (this.sendAddress !== undefined && this.sendPort !== 0) {
      this.socket.send(packet, this.sendPort, this.sendAddress)
      this.sent++
    }
  }

  close(): void {
    if (this.closed) return
    this.stopPlaying()
    const partner = this.partner
    if (partner) {
      partner.unlink()
      this.unlink()
    }
    this.closed = true
    this.taps = []
    this.ports.release()
  }
}
