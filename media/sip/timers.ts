/**
 * Protocol timers (RFC 3261 Timers E..K) on the injected clock.
 *
 * Durations are real-world ones: the phone at the other end retransmits on its own
 * wall clock, so a Timer J compressed by VOICE_CLOCK_SPEED would forget a request
 * before the phone stops resending it. `after(ms)` therefore means `ms` of real
 * time, which is `ms * clock.speed` of clock time (the same with a manual clock).
 *
 * Not the durable scheduler: these timers live exactly as long as the sockets and
 * transactions they guard, so a database row per retransmission would be waste.
 * They are kept by due time on `clock.now()` and fired by `tick()`; one real
 * `setTimeout` (through `clock.realDelayMs`) wakes the queue when the next one is
 * due, so VOICE_CLOCK_SPEED shortens them and a test on a manual clock advances the
 * clock and calls `tick()` instead of sleeping.
 */
import type { Clock } from '../../src/clock'

export interface TimerHandle {
  cancel(): void
}

interface Entry {
  due: number
  seq: number
  fire: () => void
  cancelled: boolean
  /** Taken out of the heap (fired): cancelling it now changes nothing. */
  done: boolean
}

/** A wake-up is never planned further out than this, so a clock that jumps (speed change, manual clock) is noticed. */
const MAX_REAL_WAIT_MS = 1_000

export class SipTimers {
  /** Binary min-heap on (due, seq): a flood of transactions costs log n per timer, not n. */
  private readonly heap: Entry[] = []
  private seq = 0
  /** Cancelled entries still in the heap (removed lazily, or all at once when they pile up). */
  private cancelled = 0
  private handle: ReturnType<typeof setTimeout> | undefined
  private plannedAt = Number.POSITIVE_INFINITY
  private stopped = false

  constructor(
    private readonly clock: Clock,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** Runs `fire` once `ms` of real time (`ms * clock.speed` of clock time) have passed. */
  after(ms: number, fire: () => void): TimerHandle {
    const entry: Entry = { due: this.clock.now().getTime() + ms * this.clock.speed, seq: this.seq++, fire, cancelled: false, done: false }
    this.push(entry)
    this.plan()
    return {
      cancel: () => {
        if (entry.cancelled || entry.done || this.stopped) return
        entry.cancelled = true
        this.cancelled++
        // A cancelled Timer H waits 32 s in the heap: under a flood they would pile up, so sweep them out.
        if (this.cancelled > 1_000 && this.cancelled * 2 > this.heap.length) this.compact()
      },
    }
  }

  /** Timers not yet fired nor cancelled. */
  get pending(): number {
    return this.heap.length - this.cancelled
  }

  /** Fires every timer due by the clock now (including ones that fire schedules due now); answers how many fired. */
  tick(): number {
    let fired = 0
    // Bounded: a timer that reschedules itself at 0 ms could otherwise spin forever.
    for (let i = 0; i < 100_000; i++) {
      const top = this.heap[0]
      if (!top || top.due > this.clock.now().getTime()) break
      this.pop()
      top.done = true
      if (top.cancelled) {
        this.cancelled--
        continue
      }
      fired++
      try {
        top.fire()
      } catch (e) {
        this.onError(e)
      }
    }
    this.plan()
    return fired
  }

  stop(): void {
    this.stopped = true
    if (this.handle !== undefined) clearTimeout(this.handle)
    this.handle = undefined
    this.heap.length = 0
    this.cancelled = 0
  }

  private plan(): void {
    if (this.stopped) return
    while (this.heap[0]?.cancelled) {
      this.heap[0].done = true
      this.pop()
      this.cancelled--
    }
    const top = this.heap[0]
    if (!top) {
      if (this.handle !== undefined) clearTimeout(this.handle)
      this.handle = undefined
      this.plannedAt = Number.POSITIVE_INFINITY
      return
    }
    const wait = Math.max(0, Math.min(MAX_REAL_WAIT_MS, this.clock.realDelayMs(top.due - this.clock.now().getTime())))
    const at = performance.now() + wait
    if (this.handle !== undefined && this.plannedAt <= at) return
    if (this.handle !== undefined) clearTimeout(this.handle)
    this.plannedAt = at
    this.handle = setTimeout(() => {
      this.handle = undefined
      this.plannedAt = Number.POSITIVE_INFINITY
      this.tick()
    }, wait)
  }

  private compact(): void {
    const live = this.heap.filter((e) => !e.cancelled).sort((a, b) => (before(a, b) ? -1 : 1))
    // A sorted array is a valid min-heap.
    this.heap.length = live.length
    for (let i = 0; i < live.length; i++) this.heap[i] = live[i]!
    this.cancelled = 0
  }

  private push(e: Entry): void {
    const h = this.heap
    h.push(e)
    let i = h.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(h[i]!, h[parent]!)) break
      ;[h[i], h[parent]] = [h[parent]!, h[i]!]
      i = parent
    }
  }

  private pop(): void {
    const h = this.heap
    const last = h.pop()
    if (!last || h.length === 0) return
    h[0] = last
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < h.length && before(h[l]!, h[m]!)) m = l
      if (r < h.length && before(h[r]!, h[m]!)) m = r
      if (m === i) break
      ;[h[i], h[m]] = [h[m]!, h[i]!]
      i = m
    }
  }
}

const before = (a: Entry, b: Entry) => a.due < b.due || (a.due === b.due && a.seq < b.seq)
