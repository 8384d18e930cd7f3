import { describe, expect, test } from 'bun:test'
import { createActor } from 'xstate'
import { callSimulationMachine, type SimStep } from './call-simulation'

function run(steps: SimStep[]) {
  const performed: string[] = []
  const scheduled: { at: string; index: number }[] = []
  const m = callSimulationMachine.provide({
    actions: {
      perform: (_, step: SimStep) => void performed.push(step.action.type),
      schedule: (_, p: { at: string; event: { index: number } }) => void scheduled.push({ at: p.at, index: p.event.index }),
    },
  })
  const actor = createActor(m, { input: { sim_id: 's', steps } }).start()
  return { actor, performed, scheduled }
}

const step = (at: string, type: string): SimStep => ({ at, action: { type } })

describe('call_sim.v1', () => {
  test('schedules one step at a time at its absolute time, performs them in order, then is done', () => {
    const { actor, performed, scheduled } = run([
      step('2026-01-01T00:00:00.000Z', 'a'),
      step('2026-01-01T00:00:05.000Z', 'b'),
      step('2026-01-01T00:00:05.000Z', 'c'),
    ])
    expect(scheduled).toEqual([{ at: '2026-01-01T00:00:00.000Z', index: 0 }])
    actor.send({ type: 'STEP', index: 0 })
    expect(performed).toEqual(['a'])
    expect(scheduled.at(-1)).toEqual({ at: '2026-01-01T00:00:05.000Z', index: 1 })
    actor.send({ type: 'STEP', index: 0 }) // a stale or repeated fire is ignored
    expect(performed).toEqual(['a'])
    actor.send({ type: 'STEP', index: 1 })
    actor.send({ type: 'STEP', index: 2 })
    expect(performed).toEqual(['a', 'b', 'c'])
    expect(scheduled).toHaveLength(3)
    expect(actor.getSnapshot().status).toBe('done')
  })

  test('no steps: done at once', () => {
    const { actor, scheduled } = run([])
    expect(scheduled).toEqual([])
    expect(actor.getSnapshot().status).toBe('done')
  })
})
