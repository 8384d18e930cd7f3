import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { manualClock } from '../../src/clock'
import { SipTimers } from './timers'

describe('protocol timers on the injected clock', () => {
  test('fire in due order once the clock has passed them, not before', () => {
    const clock = manualClock()
    const timers = new SipTimers(clock)
    const fired: string[] = []
    timers.after(500, () => fired.push('G'))
    timers.after(32_000, () => fired.push('H'))
    timers.after(500, () => fired.push('G2'))
    expect(timers.tick()).toBe(0)
    clock.advance(499)
    expect(timers.tick()).toBe(0)
    clock.advance(1)
    expect(timers.tick()).toBe(2)
    expect(fired).toEqual(['G', 'G2'])
    clock.advance(40_000)
    timers.tick()
    expect(fired).toEqual(['G', 'G2', 'H'])
    expect(timers.pending).toBe(0)
    timers.stop()
  })

  test('a cancelled timer does not fire; a timer set by a firing one that is already due fires in the same tick', () => {
    const clock = manualClock()
    const timers = new SipTimers(clock)
    const fired: string[] = []
    timers.after(100, () => fired.push('cancelled')).cancel()
    timers.after(100, () => timers.after(0, () => fired.push('chained')))
    clock.advance(100)
    timers.tick()
    expect(fired).toEqual(['chained'])
    timers.stop()
  })

  test('a running clock fires them by itself', async () => {
    const timers = new SipTimers(manualClock())
    let fired = false
    timers.after(0, () => (fired = true))
    for (let i = 0; i < 200 && !fired; i++) await Bun.sleep(5)
    expect(fired).toBe(true)
    timers.stop()
  })

  test('property: any schedule with any cancellations fires exactly the live timers, in (due, order set) order, and many cancellations are swept', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat({ max: 10_000 }), fc.boolean()), { maxLength: 3_000 }), (plan) => {
        const clock = manualClock()
        const timers = new SipTimers(clock)
        const fired: number[] = []
        const handles = plan.map(([due], i) => timers.after(due, () => fired.push(i)))
        for (const [i, [, cancel]] of plan.entries()) if (cancel) handles[i]!.cancel()
        const live = plan.map(([due, cancel], i) => ({ due, cancel, i })).filter((t) => !t.cancel)
        expect(timers.pending).toBe(live.length)
        clock.advance(10_000)
        timers.tick()
        expect(fired).toEqual(live.sort((a, b) => a.due - b.due || a.i - b.i).map((t) => t.i))
        timers.stop()
      }),
      { numRuns: 100 },
    )
  })
})

describe('protocol timers under VOICE_CLOCK_SPEED', () => {
  test('keep real-world durations: a peer retransmits on its own wall clock', () => {
    const base = manualClock()
    const sped = { ...base, speed: 100, realDelayMs: (ms: number) => ms / 100 }
    const timers = new SipTimers(sped)
    let fired = false
    timers.after(500, () => (fired = true))
    base.advance(499 * 100)
    timers.tick()
    expect(fired).toBe(false)
    base.advance(100)
    timers.tick()
    expect(fired).toBe(true)
    timers.stop()
  })
})
