import { describe, expect, test } from 'bun:test'
import { manualMediaClock } from './clock'
import { ULAW_DECODE, ULAW_ENCODE } from './g711'
import { createRecorder } from './recorder'

/** 160 µ-law codes of one constant level. */
const frame = (level: number) => new Uint8Array(160).fill(ULAW_ENCODE[level & 0xffff]!)
const level = (x: number) => ULAW_DECODE[ULAW_ENCODE[x & 0xffff]!]!

describe('recorder', () => {
  test('packets are placed by arrival, then by timestamp; silence where nothing came', () => {
    const clock = manualMediaClock(500)
    const rec = createRecorder(clock)
    const tap = rec.tap()
    clock.advance(100)
    // Arrives late (jitter) but its timestamp says it follows on directly: no gap, no overlap.
    tap.write(1, 8000, frame(1000), 0, 160, ULAW_DECODE)
    clock.advance(27)
    tap.write(1, 8160, frame(2000), 0, 160, ULAW_DECODE)
    clock.advance(73)
    const track = rec.stop()
    expect(track.length).toBe(1600)
    expect(track.subarray(0, 800).every((s) => s === 0)).toBe(true)
    expect(track.subarray(800, 960).every((s) => s === level(1000))).toBe(true)
    expect(track.subarray(960, 1120).every((s) => s === level(2000))).toBe(true)
    expect(track.subarray(1120).every((s) => s === 0)).toBe(true)
  })

  test('two streams mix by addition and clip at the 16-bit limits', () => {
    const clock = manualMediaClock()
    const rec = createRecorder(clock)
    const [a, b] = [rec.tap(), rec.tap()]
    a.write(1, 0, frame(30000), 0, 160, ULAW_DECODE)
    b.write(2, 0, frame(30000), 0, 160, ULAW_DECODE)
    clock.advance(20)
    a.write(1, 160, frame(-30000), 0, 160, ULAW_DECODE)
    b.write(2, 160, frame(-30000), 0, 160, ULAW_DECODE)
    clock.advance(20)
    a.write(1, 320, frame(1000), 0, 160, ULAW_DECODE)
    b.write(2, 320, frame(-1000), 0, 160, ULAW_DECODE)
    clock.advance(20)
    const track = rec.stop()
    expect([track[0], track[160], track[320]]).toEqual([32767, -32768, 0])
  })

  test('a duplicated packet is not added twice', () => {
    const clock = manualMediaClock()
    const rec = createRecorder(clock)
    const tap = rec.tap()
    tap.write(1, 0, frame(1000), 0, 160, ULAW_DECODE)
    tap.write(1, 0, frame(1000), 0, 160, ULAW_DECODE)
    clock.advance(20)
    expect(rec.stop()[0]).toBe(level(1000))
  })

  test('timestamps that drift from arrival by more than 100 ms re-anchor on arrival', () => {
    const clock = manualMediaClock()
    const rec = createRecorder(clock)
    const tap = rec.tap()
    tap.write(1, 0, frame(1000), 0, 160, ULAW_DECODE)
    clock.advance(500)
    tap.write(1, 160, frame(1000), 0, 160, ULAW_DECODE) // a sender that jumped in time but not in timestamp
    clock.advance(20)
    const track = rec.stop()
    expect(track[160]).toBe(0)
    expect(track[4000]).toBe(level(1000))
  })

  test('pause drops audio and keeps the time; stop is final and idempotent; the duration cap bounds memory', () => {
    const clock = manualMediaClock()
    let stopped = 0
    const rec = createRecorder(clock, { maxDurationMs: 100, onStop: () => stopped++ })
    const tap = rec.tap()
    rec.pause()
    expect(rec.state).toBe('paused')
    tap.write(1, 0, frame(1000), 0, 160, ULAW_DECODE)
    clock.advance(20)
    rec.resume()
    tap.write(1, 160, frame(1000), 0, 160, ULAW_DECODE)
    clock.advance(1000)
    const track = rec.stop()
    expect(track.length).toBe(800)
    expect(track[0]).toBe(0)
    expect(track[160]).toBe(level(1000))
    expect(rec.stop()).toBe(track)
    rec.resume()
    expect(rec.state).toBe('stopped')
    expect(stopped).toBe(1)
  })

  test('a packet placed partly before the start is cut, not shifted', () => {
    const clock = manualMediaClock()
    const rec = createRecorder(clock)
    const tap = rec.tap()
    tap.write(1, 1000, frame(1000), 0, 160, ULAW_DECODE)
    clock.advance(10)
    tap.write(1, 1000 - 80, frame(2000), 0, 160, ULAW_DECODE) // late, reordered: starts 10 ms before the anchor
    clock.advance(30)
    const track = rec.stop()
    expect(track[0]).toBe(level(1000) + level(2000))
    expect(track[79]).toBe(level(1000) + level(2000))
    expect(track[80]).toBe(level(1000))
  })
})
