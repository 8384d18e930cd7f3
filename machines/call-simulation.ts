// call_sim.v1: a pure script runner for sandbox (simulated) calls.
//
// The plan is decided up front (by the caller) as a list of steps, each due at an
// absolute ISO time. The machine schedules one step at a time as a durable timer
// and, when it fires, hands the step to the named action `perform` (the actor kind
// turns it into events and record writes: a call's recording or voicemail
// follow-ups). No I/O, no clock.
import { assign, setup } from 'xstate'

export interface SimStep {
  /** ISO 8601 simulated time the step is due. */
  at: string
  /** What the step does; interpreted by the `perform` action of the actor kind. */
  action: { type: string } & Record<string, unknown>
}

export interface SimInput {
  sim_id: string
  steps: SimStep[]
}

export interface SimContext {
  input: SimInput
  next: number
}

export type SimEvent = { type: 'STEP'; index: number }

const scheduleNext = (c: SimContext) => {
  const step = c.input.steps[c.next]!
  return { name: 'step', at: step.at, event: { type: 'STEP' as const, index: c.next } }
}

export const callSimulationMachine = setup({
  types: { context: {} as SimContext, events: {} as SimEvent, input: {} as SimInput },
  actions: {
    perform: (_: unknown, _params: SimStep) => {},
    schedule: (_: unknown, _params: { name: string; at: string; event: SimEvent }) => {},
  },
  guards: {
    hasSteps: ({ context }) => context.input.steps.length > 0,
    isCurrent: ({ context, event }) => event.index === context.next,
  },
}).createMachine({
  id: 'call_sim.v1',
  context: ({ input }) => ({ input, next: 0 }),
  initial: 'start',
  states: {
    start: {
      always: [{ guard: 'hasSteps', target: 'running', actions: { type: 'schedule', params: ({ context }) => scheduleNext(context) } }, { target: 'done' }],
    },
    running: {
      on: {
        STEP: [
          {
            guard: ({ context, event }) => event.index === context.next && context.next + 1 < context.input.steps.length,
            // not the last step: perform it and schedule the next
            actions: [
              { type: 'perform', params: ({ context }) => context.input.steps[context.next]! },
              assign({ next: ({ context }) => context.next + 1 }),
              { type: 'schedule', params: ({ context }) => scheduleNext(context) },
            ],
          },
          {
            guard: 'isCurrent',
            target: 'done',
            actions: [{ type: 'perform', params: ({ context }) => context.input.steps[context.next]! }, assign({ next: ({ context }) => context.next + 1 })],
          },
        ],
      },
    },
    done: { type: 'final' },
  },
})
