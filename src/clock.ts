/**
 * The one clock. Nothing reads the wall clock directly so that tests can drive time
 * and VOICE_CLOCK_SPEED can compress simulated durations.
 */
export interface Clock {
  /** Current time (simulated time when the clock runs faster than real time). */
  now(): Date
  /** How much faster than real time simulated durations run (1 = real time). */
  readonly speed: number
  /** Real milliseconds to wait for a simulated duration. */
  realDelayMs(simulatedMs: number): number
  /**
   * Real time, never sped up: for lifetimes that someone else measures on their own
   * clock — session tokens, download links, idempotency records, webhook signature
   * timestamps, digest nonces. VOICE_CLOCK_SPEED compresses simulated calls, not those.
   */
  wallNow(): Date
}

/**
 * Real time, sped up by `speed` from the moment it was created: with speed 100 a
 * 30 s simulated call takes 0.3 s of real time while timestamps still move by 30 s.
 */
export function systemClock(speed = 1): Clock {
  const realStart = Date.now()
  const perf0 = performance.now()
  return {
    speed,
    now: () => (speed === 1 ? new Date() : new Date(realStart + (performance.now() - perf0) * speed)),
    realDelayMs: (ms) => ms / speed,
    wallNow: () => new Date(),
  }
}

/** A clock that only moves when told to: for tests. */
export interface ManualClock extends Clock {
  set(to: Date | string): void
  advance(ms: number): void
}

export function manualClock(start: Date | string = '2026-01-15T12:00:00.000Z'): ManualClock {
  let t = new Date(start).getTime()
  return {
    speed: 1,
    now: () => new Date(t),
    // A test drives every lifetime with the one time it sets.
    wallNow: () => new Date(t),
    realDelayMs: (ms) => ms,
    set: (to) => {
      t = new Date(to).getTime()
    },
    advance: (ms) => {
      t += ms
    },
  }
}
