import { describe, expect, test } from 'bun:test'
import { watchNpmParent } from './npm-parent'

/** A parent pid the test changes, and what the watch reported. */
function fixture(env: Record<string, string | undefined>) {
  let parent = 100
  const gone: [number, number][] = []
  const watch = watchNpmParent(
    env,
    (was, now) => gone.push([was, now]),
    () => parent,
    2,
  )
  return {
    gone,
    watch,
    reparent: (pid: number) => {
      parent = pid
    },
  }
}

describe('watchNpmParent', () => {
  test('under an npm script, a new parent is reported once, with the old and the new pid', async () => {
    const f = fixture({ npm_lifecycle_event: 'start' })
    await Bun.sleep(20)
    expect(f.gone).toEqual([])
    f.reparent(1)
    await Bun.sleep(20)
    f.reparent(7)
    await Bun.sleep(20)
    expect(f.gone).toEqual([[100, 1]])
    f.watch.stop()
  })

  test('without npm nothing is watched: a service started otherwise outlives its parent', async () => {
    const f = fixture({})
    f.reparent(1)
    await Bun.sleep(20)
    expect(f.gone).toEqual([])
    f.watch.stop()
  })

  test('a stopped watch reports nothing', async () => {
    const f = fixture({ npm_lifecycle_event: 'start' })
    f.watch.stop()
    f.reparent(1)
    await Bun.sleep(20)
    expect(f.gone).toEqual([])
  })
})
