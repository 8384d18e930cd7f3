import { describe, expect, test } from 'bun:test'
import { every, manualMediaClock, realMediaClock } from './clock'

describe('media clock', () => {
  test('a manual clock fires its timers in time order at their due times, only when advanced', () => {
    const clock = manualMediaClock(100)
    const fired: string[] = []
    const stopA = every(clock, 20, () => fired.push(`a@${clock.now()}`))
    every(clock, 30, () => fired.push(`b@${clock.now()}`))
    expect(fired).toEqual([])
    clock.advance(60)
    expect(fired).toEqual(['a@120', 'b@130', 'a@140', 'a@160', 'b@160'])
    stopA()
    clock.advance(30)
    expect(fired.slice(5)).toEqual(['b@190'])
    expect(clock.now()).toBe(190)
  })

  test('the real clock is monotonic milliseconds', () => {
    const clock = realMediaClock()
    const t = clock.now()
    expect(clock.now()).toBeGreaterThanOrEqual(t)
    expect(clock.setInterval).toBeUndefined()
  })
})
