/** Lanes alone: order inside a lane, parallel lanes, the next attempt on acknowledgement, crashes, stopping. */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../../clock'
import { Lanes } from './lanes'
import { deferred, deliveryRow, recordingLogger, settle, until } from './test-fixtures'
import type { Job } from './types'

const clock = manualClock()
const job = (endpointId: string, accountId: string, tag: string): Job => ({ delivery: deliveryRow(clock, { id: tag, endpointId, accountId }), body: tag })

/**
 * An attempt the test drives: each call is logged as started and waits for the test
 * to acknowledge it (`ack`) and then to finish it (`finish`).
 */
function drivenAttempts() {
  const started: string[] = []
  const calls = new Map<string, { ack: () => void; finish: ReturnType<typeof deferred<void>> }>()
  const attempt = (j: Job, acknowledged: () => void) => {
    started.push(j.body)
    const finish = deferred()
    calls.set(j.body, { ack: acknowledged, finish })
    return finish.promise
  }
  const ack = (tag: string) => calls.get(tag)!.ack()
  const finish = (tag: string) => calls.get(tag)!.finish.resolve()
  const fail = (tag: string, err: Error) => calls.get(tag)!.finish.reject(err)
  return { attempt, started, ack, finish, fail }
}

describe('lanes', () => {
  test('one lane: first attempts one after another, in the order enqueued', async () => {
    const a = drivenAttempts()
    const lanes = new Lanes({ attempt: a.attempt, active: () => true, log: recordingLogger().log })
    for (const tag of ['e1', 'e2', 'e3']) lanes.enqueue(job('we_1', 'acct_1', tag))
    expect(a.started).toEqual(['e1'])
    expect(lanes.waiting('we_1|acct_1')).toBe(2)
    a.finish('e1')
    await until('e2 started', () => a.started.length === 2)
    expect(a.started).toEqual(['e1', 'e2'])
    a.finish('e2')
    await until('e3 started', () => a.started.length === 3)
    expect(a.started).toEqual(['e1', 'e2', 'e3'])
    a.finish('e3')
    await until('the lane is done', () => !lanes.isBusy('we_1|acct_1'))
    expect(lanes.waiting('we_1|acct_1')).toBe(0)
  })

  test('the next attempt goes once the previous is acknowledged, while that one is still being recorded', async () => {
    const a = drivenAttempts()
    const lanes = new Lanes({ attempt: a.attempt, active: () => true, log: recordingLogger().log })
    lanes.enqueue(job('we_1', 'acct_1', 'e1'))
    lanes.enqueue(job('we_1', 'acct_1', 'e2'))
    await settle()
    expect(a.started).toEqual(['e1'])
    a.ack('e1') // acknowledged, not finished (its recording is under way)
    await until('e2 started', () => a.started.length === 2)
    a.ack('e2')
    a.finish('e2')
    a.finish('e1')
    await until('the lane is done', () => !lanes.isBusy('we_1|acct_1'))
  })

  test('lanes of other accounts and other endpoints run in parallel', async () => {
    const a = drivenAttempts()
    const lanes = new Lanes({ attempt: a.attempt, active: () => true, log: recordingLogger().log })
    lanes.enqueue(job('we_1', 'acct_1', 'a1'))
    lanes.enqueue(job('we_1', 'acct_1', 'a2'))
    lanes.enqueue(job('we_1', 'acct_2', 'b1'))
    lanes.enqueue(job('we_2', 'acct_1', 'c1'))
    // The first of each lane is out at once; a2 waits behind a1 only.
    expect(a.started).toEqual(['a1', 'b1', 'c1'])
    a.finish('b1')
    a.finish('c1')
    await until('b and c lanes done', () => !lanes.isBusy('we_1|acct_2') && !lanes.isBusy('we_2|acct_1'))
    expect(a.started).toEqual(['a1', 'b1', 'c1'])
    a.finish('a1')
    await until('a2 started', () => a.started.includes('a2'))
    a.finish('a2')
  })

  test('a job enqueued while its lane is idle starts a new runner; one enqueued while busy waits its turn', async () => {
    const a = drivenAttempts()
    const lanes = new Lanes({ attempt: a.attempt, active: () => true, log: recordingLogger().log })
    lanes.enqueue(job('we_1', 'acct_1', 'e1'))
    a.finish('e1')
    await until('lane idle', () => !lanes.isBusy('we_1|acct_1'))
    lanes.enqueue(job('we_1', 'acct_1', 'e2'))
    expect(a.started).toEqual(['e1', 'e2'])
    lanes.enqueue(job('we_1', 'acct_1', 'e3'))
    expect(a.started).toEqual(['e1', 'e2'])
    a.finish('e2')
    await until('e3 started', () => a.started.length === 3)
    a.finish('e3')
  })

  test('an attempt that throws is logged and the lane goes on', async () => {
    const a = drivenAttempts()
    const { log, lines } = recordingLogger()
    const lanes = new Lanes({ attempt: a.attempt, active: () => true, log })
    lanes.enqueue(job('we_1', 'acct_1', 'e1'))
    lanes.enqueue(job('we_1', 'acct_1', 'e2'))
    a.fail('e1', new Error('database went away'))
    await until('e2 started', () => a.started.length === 2)
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'delivery attempt crashed', delivery: 'e1' }))
    a.finish('e2')
  })

  test('once no longer active, a lane takes no further job (they stay for resume)', async () => {
    const a = drivenAttempts()
    let active = true
    const lanes = new Lanes({ attempt: a.attempt, active: () => active, log: recordingLogger().log })
    lanes.enqueue(job('we_1', 'acct_1', 'e1'))
    lanes.enqueue(job('we_1', 'acct_1', 'e2'))
    active = false
    a.finish('e1')
    await until('the runner ended', () => !lanes.isBusy('we_1|acct_1'))
    expect(a.started).toEqual(['e1'])
    expect(lanes.waiting('we_1|acct_1')).toBe(1)
    // Active again (a restart of the loop): the next enqueue runs the lane from where it stopped.
    active = true
    lanes.enqueue(job('we_1', 'acct_1', 'e3'))
    expect(a.started).toEqual(['e1', 'e2'])
    a.finish('e2')
    await until('e3 started', () => a.started.length === 3)
    a.finish('e3')
  })
})
