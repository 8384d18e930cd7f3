/**
 * Waiting for simulated time instead of sleeping: the service runs on its injected
 * Clock (src/clock.ts; VOICE_CLOCK_SPEED compresses it), so "about 10 simulated
 * seconds of talk" is an instant on that clock, derived from an event's timestamp:
 *
 *   const answered = await eventOf(c, id, 'call.answered')
 *   await untilClockPasses(t, answered.data.answered_at, 10)   // answered_at + 10 s
 *
 * Polls `t.service.clock.now()` (the pattern of `until()`), bounded by the real
 * time the remaining simulated time should take plus a margin; no timing is asserted.
 */
import { until } from './polling'
import type { TestService } from './service'

/** `from` (an ISO timestamp, a Date or epoch ms) plus `seconds`, in epoch ms. */
export const simulatedInstant = (from: string | Date | number, seconds = 0): number => new Date(from).getTime() + seconds * 1000

/**
 * Resolves with the service clock's time once it has passed `from` + `seconds`.
 * Fails after the real time those simulated seconds take at the clock's speed, plus
 * `marginMs`.
 */
export async function untilClockPasses(t: TestService, from: string | Date | number, seconds = 0, marginMs = 10_000): Promise<Date> {
  const target = simulatedInstant(from, seconds)
  if (Number.isNaN(target)) throw new Error(`untilClockPasses: not a time: ${String(from)}`)
  const clock = t.service.clock
  const remaining = Math.max(0, target - clock.now().getTime())
  return until(
    `the service clock to pass ${new Date(target).toISOString()}`,
    () => {
      const now = clock.now()
      return now.getTime() > target ? now : undefined
    },
    clock.realDelayMs(remaining) + marginMs,
  )
}
