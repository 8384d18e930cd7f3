/**
 * A fixed piece of allocation-heavy JavaScript, timed: what the benches do most
 * (objects, strings, maps, JSON) on this machine. Machines of the same kind differ
 * by up to two times on the calls bench (2026-11-29: 735–1,003 calls/s on one,
 * 396–407 on another, same code); this figure, printed with every bench, tells
 * which kind of machine a result came from. Compare results only between runs with
 * similar reference times.
 */
export function referenceWorkMs(rounds = 3): number {
  let best = Number.POSITIVE_INFINITY
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now()
    const m = new Map<string, { a: number; b: number[] }>()
    for (let i = 0; i < 250_000; i++) m.set(`k${i}`, { a: i, b: [i] })
    let n = 0
    for (let i = 0; i < 50_000; i++) n += JSON.parse(JSON.stringify({ id: `call_${i}`, at: i, tags: ['x', 'y'] })).at
    if (n < 0 || m.size !== 250_000) throw new Error('unreachable')
    best = Math.min(best, performance.now() - t0)
  }
  return best
}
