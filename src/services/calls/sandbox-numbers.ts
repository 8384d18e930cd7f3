/**
 * The sandbox's magic destinations (spec, "Sandbox"): what the far end of an outbound
 * sandbox call does, for the call simulator (actors/calls/simulation.ts) and for a
 * real phone calling out through the B2BUA (media/b2bua), which must behave alike.
 */

/** Magic outbound destinations (digits matched, formatting ignored). */
export type Magic = 'answered_long' | 'no_answer' | 'busy' | 'machine' | 'transfer' | 'emergency'
export function magicOf(number: string | undefined): Magic | undefined {
  if (!number) return undefined
  const digits = number.replace(/\D/g, '')
  if (digits === '933') return 'emergency'
  const m = /^1?5005550(10[0-4])$/.exec(digits)
  if (!m) return undefined
  return (['answered_long', 'no_answer', 'busy', 'machine', 'transfer'] as const)[Number(m[1]) - 100]
}

/** Emergency numbers a phone may dial: the carrier test number 933 and 911 itself. */
export function isEmergencyNumber(digits: string): boolean {
  const d = digits.replace(/\D/g, '')
  return d === '933' || d === '911'
}

/**
 * What the simulated far end of a real phone's sandbox call does: ring, then answer
 * (talking until it hangs up), or stay busy, or ring out. Seconds are simulated time
 * (VOICE_CLOCK_SPEED compresses them), as for simulated calls.
 */
export interface SandboxFarEnd {
  outcome: 'answered' | 'no-answer' | 'busy'
  ring_seconds: number
  talk_seconds: number
}

export function sandboxFarEnd(number: string): SandboxFarEnd {
  if (isEmergencyNumber(number)) return { outcome: 'answered', ring_seconds: 1, talk_seconds: 30 }
  switch (magicOf(number)) {
    case 'no_answer':
      return { outcome: 'no-answer', ring_seconds: 20, talk_seconds: 0 }
    case 'busy':
      return { outcome: 'busy', ring_seconds: 0, talk_seconds: 0 }
    case 'answered_long':
      return { outcome: 'answered', ring_seconds: 5, talk_seconds: 30 }
    default:
      return { outcome: 'answered', ring_seconds: 5, talk_seconds: 10 }
  }
}
