/**
 * The media of B2BUA calls on the RTP plane (media/rtp): two anchored legs per call,
 * bridged from the start (a leg relays once its peer's address is known, from SDP
 * or, with symmetric RTP, from its first packet).
 */
import type { Logger } from '../../src/logger'
import { bridge, createMediaLeg, type MediaLeg, type PortPool, PortsExhausted, recordingToWav } from '../rtp'
import type { CallMedia, CallMediaSession, LegMediaStats, RemoteMedia } from './ports'
import { PAYLOAD_TYPE } from './sdp'

const legStats = (leg: MediaLeg): LegMediaStats => {
  const s = leg.stats()
  return {
    packetsReceived: s.packetsReceived,
    packetsSent: s.packetsSent,
    packetsLost: s.packetsLost,
    lossFraction: s.lossFraction,
    jitterMs: s.jitterMs,
    mos: s.mos,
  }
}

export function rtpCallMedia(o: { host: string; pool: PortPool; log?: Logger }): CallMedia {
  return {
    async open(callId, onDigit) {
      let caller: Awaited<ReturnType<typeof createMediaLeg>> | undefined
      try {
        caller = await createMediaLeg({ host: o.host, pool: o.pool, log: o.log, id: `${callId}/caller`, onDigit: (_, d) => onDigit?.('caller', d) })
        const callee = await createMediaLeg({ host: o.host, pool: o.pool, log: o.log, id: `${callId}/callee`, onDigit: (_, d) => onDigit?.('callee', d) })
        const relay = bridge(caller, callee)
        const legs = { caller, callee }
        const set = (side: 'caller' | 'callee', r: RemoteMedia) =>
          legs[side].setRemote(r.address, r.port, PAYLOAD_TYPE[r.codec], r.dtmfPayloadType === undefined ? {} : { dtmfPayloadType: r.dtmfPayloadType })
        const session: CallMediaSession = {
          callerPort: caller.localPort,
          calleePort: callee.localPort,
          setCaller: (r) => set('caller', r),
          setCallee: (r) => set('callee', r),
          hold: (side, held, music) => (held ? relay.hold(legs[side], music ? { music } : undefined) : relay.unhold(legs[side])),
          stats: () => ({ caller: legStats(legs.caller), callee: legStats(legs.callee) }),
          play: (side, samples, p) => legs[side].play(samples, p).catch(() => {}),
          stopPlaying: (side) => legs[side].stopPlaying(),
          startRecording: () => {
            const recording = relay.startRecording()
            return {
              pause: () => recording.pause(),
              resume: () => recording.resume(),
              get paused() {
                return recording.state === 'paused'
              },
              stop: () => recordingToWav(recording.stop()),
            }
          },
          close: () => {
            relay.close()
            legs.caller.close()
            legs.callee.close()
          },
        }
        return session
      } catch (e) {
        caller?.close()
        if (e instanceof PortsExhausted) return undefined
        throw e
      }
    },
  }
}

const other = (side: 'caller' | 'callee') => (side === 'caller' ? 'callee' : 'caller')

/**
 * The same two legs seen from the other end: after a transfer the party that was
 * called may be the one left on the line, and the call it is now the caller of rings
 * the target on the leg the transferor used.
 */
export function swapSides(s: CallMediaSession): CallMediaSession {
  return {
    get callerPort() {
      return s.calleePort
    },
    get calleePort() {
      return s.callerPort
    },
    setCaller: (r) => s.setCallee(r),
    setCallee: (r) => s.setCaller(r),
    hold: (side, held, music) => s.hold(other(side), held, music),
    stats: () => {
      const { caller, callee } = s.stats()
      return { caller: callee, callee: caller }
    },
    play: (side, samples, o) => s.play(other(side), samples, o),
    stopPlaying: (side) => s.stopPlaying(other(side)),
    startRecording: () => s.startRecording(),
    close: () => s.close(),
  }
}
