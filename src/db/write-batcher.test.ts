/** Group commit: concurrent writes share a statement; one bad item fails only its own caller; nothing is answered before its write returned. */
import { describe, expect, test } from 'bun:test'
import { writeBatcher } from './write-batcher'

describe('writeBatcher', () => {
  test('items sent together are written by one call, each caller gets its own result, none before the write returned', async () => {
    const calls: string[][] = []
    let written = false
    const send = writeBatcher(async (items: string[]) => {
      calls.push(items)
      await new Promise((r) => setImmediate(r))
      written = true
      return items.map((i) => `${i}!`)
    })
    const results = await Promise.all(
      ['d1', 'd2', 'd3'].map((d) =>
        send(d).then((r) => {
          expect(written).toBe(true)
          return r
        }),
      ),
    )
    expect(calls).toEqual([['d1', 'd2', 'd3']])
    expect(results).toEqual(['d1!', 'd2!', 'd3!'])
  })

  test('a failed batch is written again one by one: only the bad item is refused', async () => {
    const send = writeBatcher(async (items: string[]) => {
      if (items.includes('bad')) throw new Error('refused')
      return items
    })
    const outcomes = await Promise.allSettled(['d1', 'bad', 'd3'].map((d) => send(d)))
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  })

  test('items arriving during a write go in the next one, not lost', async () => {
    const calls: string[][] = []
    let release: () => void = () => {}
    const gate = new Promise<void>((r) => (release = r))
    const send = writeBatcher(async (items: string[]) => {
      calls.push(items)
      if (calls.length === 1) await gate
      return items
    })
    const first = send('d1')
    await new Promise((r) => setImmediate(r))
    const later = [send('d2'), send('d3')]
    release()
    await Promise.all([first, ...later])
    expect(calls).toEqual([['d1'], ['d2', 'd3']])
  })
})
