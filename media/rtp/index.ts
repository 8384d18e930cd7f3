/**
 * The RTP media plane: each call leg gets a UDP port pair in the media role, and
 * bridged legs relay G.711 between them (transcoding µ-law ↔ A-law), detect RFC 4733
 * digits, keep receive statistics, record and play audio.
 *
 * How the SIP side (B2BUA) uses it:
 *
 *   const pool = createPortPool({ host: config.sipHost, min: config.rtpPortMin, max: config.rtpPortMax })
 *   // INVITE in: a leg for the caller; its host and localPort go into our SDP answer.
 *   const caller = await createMediaLeg({ host, pool, onDigit: (leg, d) => tellActor(leg.id, d) })
 *   caller.setRemote(sdp.address, sdp.port, 0, { dtmfPayloadType: 101 })   // from the caller's offer
 *   // Outbound leg: create it first, offer its port, setRemote when the answer arrives.
 *   const callee = await createMediaLeg({ host, pool })
 *   callee.setRemote(answer.address, answer.port, 8, { dtmfPayloadType: 96 })
 *   const b = bridge(caller, callee)           // relay both ways from now on
 *   b.hold(callee, { music })                  // re-INVITE sendonly from the caller
 *   b.unhold(callee)
 *   const rec = b.startRecording()             // pause(), resume(), stop() → Int16Array
 *   const wav = recordingToWav(rec.stop())     // into the recordings storage
 *   await caller.play(greeting)                // to a leg not being relayed to
 *   caller.stats()                             // loss, jitter, MOS for the quality endpoints
 *   b.close(); caller.close(); callee.close()  // BYE: sockets closed, ports back in the pool
 *
 * A re-INVITE calls `setRemote` again (a new address drops the latch). `*7` and other
 * key sequences: `createDigitSequence('*7')` fed from `onDigit`.
 */
export { every, type ManualMediaClock, type MediaClock, manualMediaClock, realMediaClock } from './clock'
export {
  buildTelephoneEvent,
  createDigitSequence,
  createDtmfDetector,
  type DigitSequence,
  type DigitSequenceOptions,
  type DtmfDetector,
  type DtmfDigit,
  digitToEvent,
  eventToDigit,
  parseTelephoneEvent,
  type TelephoneEvent,
} from './dtmf'
export {
  ALAW_TO_ULAW,
  alawToUlaw,
  decodeG711,
  encodeG711,
  type G711PayloadType,
  isG711,
  PCMA,
  PCMU,
  transcodeInPlace,
  ULAW_TO_ALAW,
  ulawToAlaw,
} from './g711'
export { buildRtp, isRtcp, parseRtp, type RtpExtension, type RtpPacket, type RtpPacketInit } from './packet'
export { createPortPool, type PortPair, type PortPool, type PortPoolOptions, PortsExhausted } from './port-pool'
export { createRecorder, type Recorder, type RecorderOptions, type Recording, type RecordingState, recordingToWav } from './recorder'
export {
  type Bridge,
  bridge,
  createMediaLeg,
  FRAME_MS,
  FRAME_SAMPLES,
  type MediaLeg,
  type MediaLegOptions,
  type MediaLegStats,
  type PlayOptions,
  type RemoteOptions,
} from './relay'
export { createStreamStats, eModelR, mosFromR, type ReceiveStats, type StreamStats } from './stats'
