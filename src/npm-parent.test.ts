import { describe, expect, test } from 'bun:test'
import { watchNpmParent } from './npm-parent'

/** A parent pid the test changes, how often the watch read it, and what it reported. */
function fixture(env: Record<string, string | undefined>) {
  let parent = 100
  let reads = 0
  const gone: [number, number][] = []
  const watch = watchNpmParent(
    env,
    (was, now) => gone.push([was, now]),
    () => {
      reads++
      return parent
    },
    2,
  )
  /** Resolves once the watch has looked at the parent `n` more times (bounded: 5 s). */
  const looks = async (n: number) => {
    const until = reads + n
    for (let i = 0; i < 2500 && reads < until; i++) await Bun.sleep(2)
    return reads >= until
  }
  return {
    gone,
    watch,
    looks,
    reads: () => reads,
    reparent: (pid: number) => {
      parent = pid
    },
  }
}

describe('watchNpmParent', () => {
  test('under an npm script, a new parent is reported once, with the old and the new pid', async () => {
    const f = fixture({ npm_lifecycle_event: 'start' })
    expect(await f.looks(3)).toBe(true)
    expect(f.gone).toEqual([])
    f.reparent(1)
    for (let i = 0; i < 2500 && f.gone.length === 0; i++) await Bun.sleep(2)
    expect(f.gone).toEqual([[100, 1]])
    // Reported, the watch is over: a later change is not looked at.
    const after = f.reads()
    f.reparent(7)
    await Bun.sleep(20)
    expect(f.reads()).toBe(after)
    expect(f.gone).toEqual([[100, 1]])
    f.watch.stop()
  })

  test('without npm nothing is watched: a service started otherwise outlives its parent', async () => {
    const f = fixture({})
    f.reparent(1)
    await Bun.sleep(20)
    expect(f.reads()).toBe(0)
    expect(f.gone).toEqual([])
    f.watch.stop()
  })

  test('a stopped watch reports nothing', async () => {
    const f = fixture({ npm_lifecycle_event: 'start' })
    f.watch.stop()
    const after = f.reads()
    f.reparent(1)
    await Bun.sleep(20)
    expect(f.reads()).toBe(after)
    expect(f.gone).toEqual([])
  })
})
