import { afterEach, describe, expect, test } from 'bun:test'
import { decodeWavSamples } from '../wav'
import { manualMediaClock } from './clock'
import { buildTelephoneEvent, type DtmfDigit } from './dtmf'
import { ALAW_TO_ULAW, encodeG711, PCMA, PCMU, ULAW_TO_ALAW } from './g711'
import type { RtpPacketInit } from './packet'
import { testPhone, rms, sine, type TestPhone, until } from './phone.testkit'
import { createPortPool, type PortPool } from './port-pool'
import { recordingToWav } from './recorder'
import { bridge, createMediaLeg, type MediaLeg, RELEARN_MS } from './relay'

const HOST = '127.0.0.1'

/** Below Linux's ephemeral ports (where the test phones bind), at a random spot so parallel runs rarely meet; taken ports are skipped anyway. */
function testPool(): PortPool {
  const min = 20000 + 2 * Math.floor(Math.random() * 4500)
  return createPortPool({ host: HOST, min, max: min + 39 })
}

let cleanup: (() => void)[] = []
afterEach(() => {
  for (const f of cleanup.reverse()) f()
  cleanup = []
})

async function phone(): Promise<TestPhone> {
  const p = await testPhone()
  cleanup.push(() => p.close())
  return p
}

async function leg(pool: PortPool, options: Partial<Parameters<typeof createMediaLeg>[0]> = {}): Promise<MediaLeg> {
  const l = await createMediaLeg({ host: HOST, pool, ...options })
  cleanup.push(() => l.close())
  return l
}

/** Audio packet n of a phone's stream. */
const audio = (n: number, payloadType: number, payload: Uint8Array, ssrc = 0x1111, seq0 = 100, ts0 = 5000): RtpPacketInit => ({
  payloadType,
  sequence: (seq0 + n) & 0xffff,
  timestamp: (ts0 + n * 160) >>> 0,
  ssrc,
  payload,
})

/** Two phones, each with its leg, bridged: A speaks PCMU, B PCMA unless told otherwise. */
async function call(
  options: { aPt?: number; bPt?: number; clock?: ReturnType<typeof manualMediaClock>; onDigit?: (leg: MediaLeg, d: DtmfDigit) => void } = {},
) {
  const pool = testPool()
  const [phoneA, phoneB] = [await phone(), await phone()]
  const legA = await leg(pool, { clock: options.clock, onDigit: options.onDigit })
  const legB = await leg(pool, { clock: options.clock })
  legA.setRemote(HOST, phoneA.port, options.aPt ?? PCMU, { dtmfPayloadType: 101 })
  legB.setRemote(HOST, phoneB.port, options.bPt ?? PCMA, { dtmfPayloadType: 96 })
  const b = bridge(legA, legB)
  return { pool, phoneA, phoneB, legA, legB, bridge: b }
}

describe('RTP relay between bridged legs', () => {
  test('PCMU from A arrives at B as PCMA and PCMA from B arrives at A as PCMU, under each leg’s own SSRC', async () => {
    const { phoneA, phoneB, legA, legB } = await call()
    const ulaw = Uint8Array.from({ length: 160 }, (_, i) => i)
    const alaw = Uint8Array.from({ length: 160 }, (_, i) => 255 - i)
    for (let n = 0; n < 3; n++) phoneA.send(audio(n, PCMU, ulaw), legA.localPort)
    await until(() => phoneB.received.length === 3, 'B gets 3 packets')
    for (let n = 0; n < 3; n++) phoneB.send(audio(n, PCMA, alaw, 0x2222), legB.localPort)
    await until(() => phoneA.received.length === 3, 'A gets 3 packets')

    for (const p of phoneB.received) {
      expect(p.payloadType).toBe(PCMA)
      expect(p.ssrc).toBe(legB.ssrc)
      expect(p.payload).toEqual(ulaw.map((c) => ULAW_TO_ALAW[c]!))
    }
    for (const p of phoneA.received) {
      expect(p.payloadType).toBe(PCMU)
      expect(p.ssrc).toBe(legA.ssrc)
      expect(p.payload).toEqual(alaw.map((c) => ALAW_TO_ULAW[c]!))
    }
    expect(legA.stats()).toMatchObject({ packetsReceived: 3, packetsLost: 0, packetsSent: 3 })
  })

  test('same codec: payload untouched; sequence and timestamp keep their spacing (gaps stay gaps)', async () => {
    const { phoneA, phoneB, legA } = await call({ bPt: PCMU })
    const payload = new Uint8Array(160).fill(0x42)
    for (const n of [0, 1, 3, 4]) phoneA.send(audio(n, PCMU, payload), legA.localPort)
    await until(() => phoneB.received.length === 4, 'B gets 4 packets')
    const [first, ...rest] = phoneB.received // loopback keeps the order
    expect(rest.map((p) => (p.sequence - first!.sequence) & 0xffff)).toEqual([1, 3, 4])
    expect(rest.map((p) => (p.timestamp - first!.timestamp) >>> 0)).toEqual([160, 480, 640])
    expect(phoneB.received.every((p) => p.payload.every((c) => c === 0x42))).toBe(true)
  })

  test('when the source behind a leg changes SSRC, the leg’s stream carries on: same SSRC, next sequence, marker set', async () => {
    const { phoneA, phoneB, legA } = await call({ bPt: PCMU })
    const payload = new Uint8Array(160)
    for (let n = 0; n < 3; n++) phoneA.send(audio(n, PCMU, payload, 0xaaaa, 100), legA.localPort)
    await until(() => phoneB.received.length === 3, 'first source relayed')
    for (let n = 0; n < 3; n++) phoneA.send(audio(n, PCMU, payload, 0xbbbb, 40000, 999), legA.localPort)
    await until(() => phoneB.received.length === 6, 'second source relayed')
    const got = phoneB.received
    expect(new Set(got.map((p) => p.ssrc)).size).toBe(1)
    expect(got.slice(1).map((p, i) => (p.sequence - got[i]!.sequence) & 0xffff)).toEqual([1, 1, 1, 1, 1])
    expect(got[3]!.marker).toBe(true)
    expect((got[3]!.timestamp - got[2]!.timestamp) >>> 0).toBeGreaterThanOrEqual(160)
  })

  test('symmetric RTP: before any packet, send to the SDP address; after the first packet, to its source (latching)', async () => {
    const { phoneA, phoneB, legA, legB } = await call({ bPt: PCMU })
    const natted = await phone() // the phone behind NAT: its packets come from another port than its SDP said
    const payload = new Uint8Array(160)
    phoneB.send(audio(0, PCMU, payload), legB.localPort)
    await until(() => phoneA.received.length === 1, 'unlatched leg sends to the SDP address')
    expect(legA.latched).toBe(false)

    natted.send(audio(0, PCMU, payload), legA.localPort)
    await until(() => legA.latched, 'leg A latches')
    expect(legA.remote).toEqual({ address: HOST, port: natted.port })
    phoneB.send(audio(1, PCMU, payload), legB.localPort)
    await until(() => natted.received.length === 1, 'latched leg sends to the packet source')

    // Once latched, another source is not relayed.
    phoneA.send(audio(1, PCMU, payload, 0x9999), legA.localPort)
    await until(() => legA.stats().packetsIgnored === 1, 'foreign source ignored')
    expect(legA.stats().packetsReceived).toBe(1)

    // A re-INVITE moving the media drops the latch.
    legA.setRemote(HOST, phoneA.port + 0, PCMU)
    expect(legA.latched).toBe(true) // same address again: latch kept
    const moved = await phone()
    legA.setRemote(HOST, moved.port, PCMU)
    expect(legA.latched).toBe(false)
    phoneB.send(audio(2, PCMU, payload), legB.localPort)
    await until(() => moved.received.length === 1, 'sends to the new SDP address')
  })

  test('after the media moved, only the new SDP address latches for RELEARN_MS: the old phone, still sending, cannot take the leg', async () => {
    const clock = manualMediaClock(1_000_000)
    const { phoneA, phoneB, legA, legB } = await call({ bPt: PCMU, clock })
    const payload = new Uint8Array(160)
    phoneA.send(audio(0, PCMU, payload), legA.localPort)
    await until(() => legA.latched, 'leg A latches to the first phone')

    // A transfer hands leg A to another phone; the first one has not heard its BYE yet.
    const next = await phone()
    legA.setRemote(HOST, next.port, PCMU)
    phoneA.send(audio(1, PCMU, payload), legA.localPort)
    await until(() => legA.stats().packetsIgnored === 1, 'the old phone is ignored')
    expect(legA.latched).toBe(false)
    next.send(audio(0, PCMU, payload, 0x2222), legA.localPort)
    await until(() => legA.latched, 'the new phone latches')
    expect(legA.remote).toEqual({ address: HOST, port: next.port })
    phoneB.send(audio(0, PCMU, payload), legB.localPort)
    await until(() => next.received.length === 1, 'the new phone hears the other party')
    expect(phoneA.received.length).toBe(0)

    // Behind NAT the new phone sends from another port than it announced: after the window its packets latch.
    const natted = await phone()
    legA.setRemote(HOST, (await phone()).port, PCMU)
    natted.send(audio(0, PCMU, payload, 0x3333), legA.localPort)
    await until(() => legA.stats().packetsIgnored === 2, 'within the window another source is ignored')
    clock.advance(RELEARN_MS)
    natted.send(audio(1, PCMU, payload, 0x3333), legA.localPort)
    await until(() => legA.latched, 'after the window it latches')
    expect(legA.remote).toEqual({ address: HOST, port: natted.port })
  })

  test('RFC 4733 digits are reported once per press and relayed with the other leg’s DTMF payload type', async () => {
    const digits: string[] = []
    const { phoneA, phoneB, legA } = await call({ onDigit: (l, d) => digits.push(`${l.id === legA?.id ? 'A' : '?'}${d}`) })
    const sent: RtpPacketInit[] = []
    let seq = 0
    for (const [i, digit] of ['1', '#'].entries()) {
      const event = digit === '#' ? 11 : 1
      const timestamp = 10000 + i * 8000
      for (const duration of [0, 400, 800])
        sent.push({
          payloadType: 101,
          sequence: seq++,
          timestamp,
          ssrc: 7,
          marker: duration === 0,
          payload: buildTelephoneEvent({ event, end: false, volume: 10, duration }),
        })
      for (let r = 0; r < 3; r++)
        sent.push({ payloadType: 101, sequence: seq++, timestamp, ssrc: 7, payload: buildTelephoneEvent({ event, end: true, volume: 10, duration: 960 }) })
    }
    for (const p of sent) phoneA.send(p, legA.localPort)
    await until(() => phoneB.received.length === sent.length, 'all events relayed')
    expect(digits).toEqual(['A1', 'A#'])
    expect(phoneB.received.every((p) => p.payloadType === 96)).toBe(true)
    expect(new Set(phoneB.received.map((p) => p.timestamp)).size).toBe(2)
    expect(phoneB.received[0]!.marker).toBe(true)
    expect(legA.stats()).toMatchObject({ packetsReceived: sent.length, jitterMs: 0 })
  })

  test('stats show the loss when packets are dropped on the way', async () => {
    const { phoneA, phoneB, legA } = await call()
    const payload = new Uint8Array(160).fill(0xff)
    const kept = Array.from({ length: 50 }, (_, n) => n).filter((n) => n % 10 !== 7)
    for (const n of kept) phoneA.send(audio(n, PCMU, payload), legA.localPort)
    await until(() => phoneB.received.length === kept.length, 'kept packets relayed')
    const s = legA.stats()
    expect(s).toMatchObject({ packetsReceived: 45, packetsExpected: 50, packetsLost: 5, lossFraction: 0.1 })
    expect(s.mos).toBeLessThan(4)
  })

  test('a leg with no SDP yet, latched from early media, is sent its own phone’s codec', async () => {
    const pool = testPool()
    const [phoneA, phoneB] = [await phone(), await phone()]
    const legA = await leg(pool)
    const legB = await leg(pool)
    legA.setRemote(HOST, phoneA.port, PCMU)
    bridge(legA, legB)
    phoneB.send(audio(0, PCMA, new Uint8Array(160).fill(0xd5), 0x2222), legB.localPort)
    await until(() => phoneA.received.length === 1 && legB.latched, 'B latched, its audio relayed to A')
    phoneA.send(audio(0, PCMU, new Uint8Array(160).fill(0xff)), legA.localPort)
    await until(() => phoneB.received.length === 1, 'A relayed to the latched B')
    expect(phoneB.received[0]).toMatchObject({ payloadType: PCMA, payload: new Uint8Array(160).fill(0xd5) })
  })

  test('garbage and RTCP on the RTP port are ignored, not relayed', async () => {
    const { phoneA, phoneB, legA } = await call()
    phoneA.sendRaw(new Uint8Array([1, 2, 3]), legA.localPort)
    phoneA.sendRaw(new Uint8Array([0x80, 200, 0, 6, 0, 0, 0, 1, 0, 0, 0, 0]), legA.localPort)
    phoneA.send(audio(0, 13, new Uint8Array(1)), legA.localPort) // comfort noise, before any latch
    await until(() => legA.stats().packetsIgnored === 3, 'three ignored')
    expect(phoneB.received.length).toBe(0)
    expect(legA.latched).toBe(false)
  })
})

describe('recording tap', () => {
  test('a 1 kHz tone lands in the right 100 ms windows, a pause leaves a silent gap, both directions mix, WAV round trip', async () => {
    const clock = manualMediaClock(1_000_000)
    const { phoneA, phoneB, legA, legB, bridge: b } = await call({ clock, bPt: PCMU })
    const tone = encodeG711(PCMU, sine(1000, 160 * 50))
    const otherTone = encodeG711(PCMU, sine(2000 / 3, 160 * 50, 8000))
    const recording = b.startRecording()
    let toB = 0
    let toA = 0
    for (let n = 0; n < 50; n++) {
      const t = n * 20
      if (t === 400) recording.pause()
      if (t === 600) recording.resume()
      phoneA.send(audio(n, PCMU, tone.subarray(n * 160, n * 160 + 160)), legA.localPort)
      toB++
      await until(() => phoneB.received.length === toB, `A's packet ${n} relayed`)
      if (t >= 200 && t < 300) {
        phoneB.send(audio(n, PCMU, otherTone.subarray(n * 160, n * 160 + 160), 0x2222), legB.localPort)
        toA++
        await until(() => phoneA.received.length === toA, `B's packet ${n} relayed`)
      }
      clock.advance(20)
    }
    clock.advance(200) // nothing arrives in the last 200 ms
    expect(recording.state).toBe('recording')
    const track = recording.stop()
    expect(recording.state).toBe('stopped')
    expect(track.length).toBe(8000 * 1.2)

    const windows = Array.from({ length: 12 }, (_, w) => rms(track, w * 800, w * 800 + 800))
    const toneRms = 8000 / Math.SQRT2
    for (const w of [0, 1, 3, 6, 7, 8, 9]) expect(windows[w]! / toneRms).toBeCloseTo(1, 1)
    // 200-300 ms: both parties at once, uncorrelated tones: power adds.
    expect(windows[2]! / toneRms).toBeCloseTo(Math.SQRT2, 1)
    for (const w of [4, 5, 10, 11]) expect(windows[w]).toBe(0)

    expect(decodeWavSamples(recordingToWav(track))).toEqual(track)
  })
})

describe('playback', () => {
  test('plays 8 kHz PCM as 20 ms packets in the leg’s codec, paced by the clock, then resolves', async () => {
    const clock = manualMediaClock()
    const pool = testPool()
    const p = await phone()
    const l = await leg(pool, { clock })
    l.setRemote(HOST, p.port, PCMA)
    const samples = sine(440, 400) // two and a half frames
    let done = false
    const played = l.play(samples).then(() => (done = true))
    await until(() => p.received.length === 1, 'first frame at once')
    clock.advance(20)
    await until(() => p.received.length === 2, 'second frame after 20 ms')
    expect(done).toBe(false)
    clock.advance(20)
    await played
    await until(() => p.received.length === 3, 'last frame')
    const expected = encodeG711(
      PCMA,
      Int16Array.from({ length: 480 }, (_, i) => samples[i] ?? 0),
    )
    expect(p.received.flatMap((r) => [...r.payload])).toEqual([...expected])
    expect(p.received.map((r) => r.payloadType)).toEqual([PCMA, PCMA, PCMA])
    expect(p.received.every((r) => r.ssrc === l.ssrc)).toBe(true)
    expect(p.received.slice(1).map((r, i) => [(r.sequence - p.received[i]!.sequence) & 0xffff, (r.timestamp - p.received[i]!.timestamp) >>> 0])).toEqual([
      [1, 160],
      [1, 160],
    ])
    clock.advance(100)
    expect(l.playing).toBe(false)
  })

  test('looped playback goes on until stopPlaying, which resolves it; close stops a playback too', async () => {
    const clock = manualMediaClock()
    const pool = testPool()
    const p = await phone()
    const l = await leg(pool, { clock })
    l.setRemote(HOST, p.port, PCMU)
    const looped = l.play(sine(500, 160), { loop: true })
    for (let i = 1; i <= 5; i++) {
      clock.advance(20)
      await until(() => p.received.length === i + 1, `frame ${i}`)
    }
    l.stopPlaying()
    await looped
    const again = l.play(sine(500, 160), { loop: true })
    l.close()
    await again
    expect(pool.inUse).toBe(0)
  })

  test('a leg whose codec is not G.711 refuses to play', async () => {
    const l = await leg(testPool())
    l.setRemote(HOST, 9, 18)
    await expect(l.play(new Int16Array(160))).rejects.toThrow(/not PCMU or PCMA/)
  })
})

describe('hold', () => {
  test('hold stops relaying to the leg and plays music to it; unhold relays again, same SSRC, sequence continuous', async () => {
    const clock = manualMediaClock()
    const { phoneA, phoneB, legA, bridge: b, legB } = await call({ clock, bPt: PCMU })
    const voice = new Uint8Array(160).fill(0x11)
    const music = sine(300, 160)
    phoneA.send(audio(0, PCMU, voice), legA.localPort)
    await until(() => phoneB.received.length === 1, 'relayed before hold')

    b.hold(legB, { music })
    expect(b.isHeld(legB)).toBe(true)
    phoneA.send(audio(1, PCMU, voice), legA.localPort)
    await until(() => legA.stats().packetsReceived === 2, 'A still heard by the leg')
    clock.advance(20)
    await until(() => phoneB.received.length === 3, 'music frames reach B')
    const musicPayload = [...encodeG711(PCMU, music)]
    expect(phoneB.received.slice(1).map((p) => [...p.payload])).toEqual([musicPayload, musicPayload])

    b.unhold(legB)
    expect(legB.playing).toBe(false)
    phoneA.send(audio(2, PCMU, voice), legA.localPort)
    await until(() => phoneB.received.length === 4, 'relayed after unhold')
    const got = phoneB.received
    expect(got[3]!.payload.every((c) => c === 0x11)).toBe(true)
    expect(new Set(got.map((p) => p.ssrc))).toEqual(new Set([legB.ssrc]))
    expect(got.slice(1).map((p, i) => (p.sequence - got[i]!.sequence) & 0xffff)).toEqual([1, 1, 1])
  })

  test('unhold stops only the hold music, not an announcement played over it', async () => {
    const clock = manualMediaClock()
    const { legB, bridge: b } = await call({ clock, bPt: PCMU })
    b.hold(legB, { music: sine(300, 160) })
    expect(legB.playing).toBe(true)
    const announcement = legB.play(sine(500, 1600))
    b.unhold(legB)
    expect(b.isHeld(legB)).toBe(false)
    expect(legB.playing).toBe(true)
    legB.stopPlaying()
    await announcement
  })

  test('a closed bridge relays nothing; the legs can be bridged again; close returns the ports', async () => {
    const { phoneA, phoneB, legA, legB, bridge: b, pool } = await call({ bPt: PCMU })
    b.close()
    phoneA.send(audio(0, PCMU, new Uint8Array(160)), legA.localPort)
    await until(() => legA.stats().packetsReceived === 1, 'received by the leg')
    expect(phoneB.received.length).toBe(0)
    expect(() => bridge(legA, legA)).toThrow()
    const again = bridge(legA, legB)
    expect(() => bridge(legA, legB)).toThrow(/already bridged/)
    phoneA.send(audio(1, PCMU, new Uint8Array(160)), legA.localPort)
    await until(() => phoneB.received.length === 1, 'relayed by the new bridge')
    b.close() // the old bridge must not undo the new one
    phoneA.send(audio(2, PCMU, new Uint8Array(160)), legA.localPort)
    await until(() => phoneB.received.length === 2, 'still relayed')
    again.close()
    legA.close()
    legB.close()
    expect(pool.inUse).toBe(0)
  })
})
