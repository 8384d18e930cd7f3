import { describe, expect, test } from 'bun:test'
import { lookupBatcher } from './lookup-batcher'

describe('lookups batched per turn of the event loop', () => {
  test('lookups asked together are one fetch (each key once); later ones the next', async () => {
    const fetches: string[][] = []
    const lookup = lookupBatcher(async (keys: string[]) => {
      fetches.push(keys)
      return new Map(keys.filter((k) => k !== 'nobody').map((k) => [k, k.toUpperCase()]))
    })
    expect(await Promise.all([lookup('a'), lookup('b'), lookup('a'), lookup('nobody')])).toEqual(['A', 'B', 'A', undefined])
    expect(await lookup('c')).toBe('C')
    expect(fetches).toEqual([['a', 'b', 'nobody'], ['c']])
  })

  test('a batch that fails is asked again key by key: only the bad key fails', async () => {
    const lookup = lookupBatcher(async (keys: string[]) => {
      if (keys.includes('bad')) throw new Error('bad key')
      return new Map(keys.map((k) => [k, k.length]))
    })
    const outcomes = await Promise.allSettled([lookup('one'), lookup('bad'), lookup('three')])
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([3, 'bad key', 5])
  })

  test('batches are cut at the most keys a query takes', async () => {
    const sizes: number[] = []
    const lookup = lookupBatcher(async (keys: number[]) => {
      sizes.push(keys.length)
      return new Map(keys.map((k) => [k, k]))
    }, 10)
    const keys = Array.from({ length: 25 }, (_, i) => i)
    expect(await Promise.all(keys.map(lookup))).toEqual(keys)
    expect(sizes).toEqual([10, 10, 5])
  })
})
