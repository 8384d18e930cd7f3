/**
 * Media time. Packets go to real phones, so media runs on real milliseconds even when
 * VOICE_CLOCK_SPEED compresses simulated calls: the default is the monotonic
 * `performance.now()`, never the sped-up `Clock` of src/clock.ts. Tests inject a
 * manual clock whose timers fire only when the test advances it.
 */

export interface MediaClock {
  /** Milliseconds on a monotonic scale (the origin does not matter). */
  now(): number
  /** Timers on this clock's time; when absent, the global `setInterval` paces in real time. */
  setInterval?(fn: () => void, ms: number): unknown
  clearInterval?(handle: unknown): void
}

export function realMediaClock(): MediaClock {
  return { now: () => performance.now() }
}

/** Run `fn` every `ms` on the clock's timers (or real ones); returns the function that stops it. */
export function every(clock: MediaClock, ms: number, fn: () => void): () => void {
  if (clock.setInterval && clock.clearInterval) {
    const handle = clock.setInterval(fn, ms)
    return () => clock.clearInterval!(handle)
  }
  const handle = setInterval(fn, ms)
  return () => clearInterval(handle)
}

export interface ManualMediaClock extends MediaClock {
  setInterval(fn: () => void, ms: number): unknown
  clearInterval(handle: unknown): void
  /** Move time forward, firing due timers in time order at their due times. */
  advance(ms: number): void
}

export function manualMediaClock(start = 0): ManualMediaClock {
  let t = start
  let nextId = 1
  const timers = new Map<number, { fn: () => void; every: number; due: number }>()
  return {
    now: () => t,
    setInterval(fn, ms) {
      if (!(ms > 0)) throw new RangeError('interval must be positive')
      const id = nextId++
      timers.set(id, { fn, every: ms, due: t + ms })
      return id
    },
    clearInterval(handle) {
      timers.delete(handle as number)
    },
    advance(ms) {
      const target = t + ms
      // Bounded: every firing moves a timer's due time forward by a positive interval.
      for (let guard = 0; guard < 1_000_000; guard++) {
        let next: { fn: () => void; every: number; due: number } | undefined
        for (const timer of timers.values()) if (timer.due <= target && (!next || timer.due < next.due)) next = timer
        if (!next) break
        t = next.due
        next.due += next.every
        next.fn()
      }
      t = target
    },
  }
}
