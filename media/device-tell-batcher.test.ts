/** Device tells' group commit: concurrent REGISTERs or fetches share a write; one bad message fails only its own request. */
import { describe, expect, test } from 'bun:test'
import type { Db } from '../src/db/client'
import { type DeviceTellWriter, tellBatcher } from './device-tell-batcher'

const db = {} as Db

describe('tellBatcher', () => {
  test('messages sent together are written by one call; no caller is answered before it returned', async () => {
    const calls: string[][] = []
    let written = false
    const write: DeviceTellWriter = async (_db, batch) => {
      calls.push(batch.map((b) => b.deviceId))
      await new Promise((r) => setImmediate(r))
      written = true
    }
    const tell = tellBatcher(db, write)
    await Promise.all(['d1', 'd2', 'd3'].map((d) => tell(d, [{ type: 'REGISTER' }]).then(() => expect(written).toBe(true))))
    expect(calls).toEqual([['d1', 'd2', 'd3']])
  })

  test('a failed batch is written again one by one: only the bad message is refused', async () => {
    const write: DeviceTellWriter = async (_db, batch) => {
      if (batch.some((b) => b.deviceId === 'bad')) throw new Error('refused')
    }
    const tell = tellBatcher(db, write)
    const outcomes = await Promise.allSettled(['d1', 'bad', 'd3'].map((d) => tell(d, [{ type: 'REGISTER' }])))
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  })

  test('messages arriving during a write go in the next one, not lost', async () => {
    const calls: string[][] = []
    let release: () => void = () => {}
    const gate = new Promise<void>((r) => (release = r))
    const write: DeviceTellWriter = async (_db, batch) => {
      calls.push(batch.map((b) => b.deviceId))
      if (calls.length === 1) await gate
    }
    const tell = tellBatcher(db, write)
    const first = tell('d1', [{ type: 'REGISTER' }])
    await new Promise((r) => setImmediate(r))
    const later = [tell('d2', [{ type: 'REGISTER' }]), tell('d3', [{ type: 'REGISTER' }])]
    release()
    await Promise.all([first, ...later])
    expect(calls).toEqual([['d1'], ['d2', 'd3']])
  })
})
