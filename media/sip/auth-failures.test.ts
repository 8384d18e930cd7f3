import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createAuthFailures, DEFAULT_AUTH_FAILURE_LIMITS } from './auth-failures'

const PHONE = '192.0.2.20'
const OTHER = '198.51.100.7'

function at(start = 0) {
  let now = start
  const blocks: { address: string; username?: string; untilMs: number }[] = []
  const failures = createAuthFailures({ now: () => now, onBlock: (b) => blocks.push(b) })
  return { failures, blocks, advance: (ms: number) => (now += ms) }
}

describe('password guessing over SIP', () => {
  test('a line guessed at from one address is refused there for the block time, and only there', () => {
    const { failures, blocks, advance } = at()
    for (let i = 1; i < DEFAULT_AUTH_FAILURE_LIMITS.perLine; i++) failures.failed(PHONE, '1001')
    expect(failures.lineBlocked(PHONE, '1001')).toBe(false)
    failures.failed(PHONE, '1001')
    expect(failures.lineBlocked(PHONE, '1001')).toBe(true)
    expect(failures.lineBlocked(OTHER, '1001')).toBe(false)
    expect(failures.lineBlocked(PHONE, '1002')).toBe(false)
    expect(failures.sourceBlocked(PHONE)).toBe(false)
    expect(blocks).toEqual([{ address: PHONE, username: '1001', untilMs: DEFAULT_AUTH_FAILURE_LIMITS.blockMs }])
    // A right password during the block changes nothing; retries do not lengthen it.
    failures.succeeded(PHONE, '1001')
    for (let i = 0; i < 50; i++) failures.failed(PHONE, '1001')
    expect(blocks).toHaveLength(1)
    advance(DEFAULT_AUTH_FAILURE_LIMITS.blockMs - 1)
    expect(failures.lineBlocked(PHONE, '1001')).toBe(true)
    advance(1)
    expect(failures.lineBlocked(PHONE, '1001')).toBe(false)
  })

  test('failures spread beyond the window never block; a success starts the count again', () => {
    const { failures, advance } = at()
    for (let i = 0; i < 20; i++) {
      failures.failed(PHONE, '1001')
      if (i % 4 === 3) failures.succeeded(PHONE, '1001')
    }
    expect(failures.lineBlocked(PHONE, '1001')).toBe(false)
    for (let i = 0; i < 20; i++) {
      failures.failed(PHONE, '1002')
      advance(DEFAULT_AUTH_FAILURE_LIMITS.windowMs / 4 + 1)
    }
    expect(failures.lineBlocked(PHONE, '1002')).toBe(false)
  })

  test('an address failing for many users is dropped entirely; a carrier trunk never is', () => {
    const { failures, blocks, advance } = at()
    for (let i = 0; i < DEFAULT_AUTH_FAILURE_LIMITS.perSource; i++) {
      expect(failures.sourceBlocked(PHONE)).toBe(false)
      failures.failed(PHONE, `${1000 + i}`)
      failures.failed(PHONE, `${1000 + i}`)
    }
    expect(failures.sourceBlocked(PHONE)).toBe(true)
    expect(failures.sourceBlocked(OTHER)).toBe(false)
    expect(blocks.at(-1)).toEqual({ address: PHONE, untilMs: DEFAULT_AUTH_FAILURE_LIMITS.blockMs })
    advance(DEFAULT_AUTH_FAILURE_LIMITS.blockMs)
    expect(failures.sourceBlocked(PHONE)).toBe(false)

    const trunk = createAuthFailures({ now: () => 0, exempt: new Set([PHONE]) })
    for (let i = 0; i < 100; i++) trunk.failed(PHONE, `${i}`)
    expect(trunk.sourceBlocked(PHONE)).toBe(false)
    expect(trunk.lineBlocked(PHONE, '1')).toBe(false)
    expect(trunk.size).toBe(0)
  })

  test('any sequence of failures and successes: a line is blocked once perLine failures fell in one window, until the block ends (property)', () => {
    const limits = { perLine: 3, perSource: 1000, windowMs: 100, blockMs: 50 }
    fc.assert(
      fc.property(fc.array(fc.record({ ok: fc.boolean(), gap: fc.integer({ min: 0, max: 60 }) }), { maxLength: 60 }), (steps) => {
        let now = 0
        const failures = createAuthFailures({ now: () => now, limits })
        // The model: the current window's start and failures, or the block's end.
        let tally: { since: number; count: number; blockedUntil: number } | undefined
        const expire = () => {
          if (tally && (tally.blockedUntil > 0 ? now >= tally.blockedUntil : now - tally.since > limits.windowMs)) tally = undefined
        }
        for (const step of steps) {
          now += step.gap
          expire()
          if (step.ok) {
            failures.succeeded(PHONE, '1001')
            if (tally?.blockedUntil === 0) tally = undefined
          } else {
            failures.failed(PHONE, '1001')
            if (!tally) tally = { since: now, count: 0, blockedUntil: 0 }
            if (tally.blockedUntil === 0 && ++tally.count >= limits.perLine) tally.blockedUntil = now + limits.blockMs
          }
          expect(failures.lineBlocked(PHONE, '1001')).toBe((tally?.blockedUntil ?? 0) > 0)
        }
      }),
    )
  })

  test('memory stays bounded whatever a scanner sends', () => {
    const { failures } = at()
    for (let i = 0; i < 120_000; i++) failures.failed(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, `${i}`)
    expect(failures.size).toBeLessThanOrEqual(200_000)
  })
})
