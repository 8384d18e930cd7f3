/**
 * Queue dispatch latency, for `npm run bench -- routing` (scenarios/routing.ts calls it).
 *
 * One queue.v1 actor in this process, 100 agents, 1,000 callers waiting (priorities
 * 0 to 2, so several lanes). Every agent is on a queue call; each measured decision
 * is one `actor.send` of CALL_COMPLETED: the agent is free again, and the queue picks
 * the head caller and the agents to ring (the whole machine step: guard, context
 * update, the dispatch decision, effects). Between measurements, not measured, the
 * agent answers and a new caller arrives, so 1,000 callers are always waiting.
 * Half the decisions run with the longest-idle strategy, half with ring-all.
 *
 * Goal (issue 9): a dispatch decision < 1 ms p99.
 * Environment: BENCH_QUEUE_DECISIONS decisions per strategy (default 5000).
 */
import { createActor } from 'xstate'
import { type DispatchStrategy, type QueueOffer, queueMachine, queueOrder } from '../../../machines/queue'

export const QUEUE_DISPATCH_GOAL = { p99Ms: 1, waiting: 1000, agents: 100 }

const T0 = Date.parse('2026-01-01T00:00:00.000Z')

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!
}

function measureStrategy(strategy: DispatchStrategy, decisions: number, waiting: number, agents: number): number[] {
  let clock = T0
  const at = () => new Date((clock += 1000)).toISOString()
  let lastOffer: QueueOffer | null = null
  const actor = createActor(
    queueMachine.provide({
      actions: {
        emit: () => {},
        offer: (_, p) => {
          lastOffer = p
        },
        cancelOffer: () => {},
        toTimeoutTarget: () => {},
      },
    }),
    { input: { queue_id: 'queue_bench', queue_name: 'Bench', strategy } },
  ).start()
  let nextCall = 0
  const enqueue = () =>
    actor.send({ type: 'ENQUEUE', call_id: `call_${nextCall}`, from_number: '+15550000000', to_number: '+15559990000', priority: nextCall++ % 3, at: at() })

  // every agent takes a call: all busy
  for (let i = 0; i < agents; i++) {
    actor.send({ type: 'AGENT_STATUS', user_id: `agent_${i}`, status: 'available', endpoint_id: `ep_${i}`, at: at() })
    enqueue()
    const offer = lastOffer as QueueOffer | null
    if (!offer) throw new Error('no dispatch while setting up')
    actor.send({ type: 'AGENT_ANSWERED', call_id: offer.call_id, user_id: `agent_${i}`, at: at() })
  }
  const onCall = new Map<string, string>() // agent → call
  for (const [call, c] of Object.entries(actor.getSnapshot().context.connected)) onCall.set(c.agent_user, call)
  for (let i = 0; i < waiting; i++) enqueue()

  const samples: number[] = []
  for (let d = 0; d < decisions; d++) {
    const agent = `agent_${d % agents}`
    const call = onCall.get(agent)!
    lastOffer = null
    const event = { type: 'CALL_COMPLETED' as const, call_id: call, at: at() }
    const start = performance.now()
    actor.send(event)
    samples.push(performance.now() - start)
    const offer = lastOffer as QueueOffer | null
    if (!offer) throw new Error('the freed agent got no caller')
    // not measured: the agent answers, a new caller arrives
    const taker = offer.agents[0]!.user_id
    actor.send({ type: 'AGENT_ANSWERED', call_id: offer.call_id, user_id: taker, at: at() })
    onCall.set(taker, offer.call_id)
    enqueue()
  }
  const ctx = actor.getSnapshot().context
  if (queueOrder(ctx).length !== waiting) throw new Error(`expected ${waiting} waiting, found ${queueOrder(ctx).length}`)
  actor.stop()
  return samples
}

export async function measureQueueDispatch(): Promise<{ decisions: number; p50Ms: number; p99Ms: number }> {
  const perStrategy = Number(process.env.BENCH_QUEUE_DECISIONS ?? 5000) || 5000
  const { waiting, agents } = QUEUE_DISPATCH_GOAL
  // a short warm-up so the JIT has compiled the step before it is measured
  measureStrategy('longest_idle', 200, waiting, agents)
  const samples = [...measureStrategy('longest_idle', perStrategy, waiting, agents), ...measureStrategy('ring_all', perStrategy, waiting, agents)]
  samples.sort((a, b) => a - b)
  return { decisions: samples.length, p50Ms: percentile(samples, 0.5), p99Ms: percentile(samples, 0.99) }
}

if (import.meta.main) {
  const r = await measureQueueDispatch()
  const verdict = r.p99Ms < QUEUE_DISPATCH_GOAL.p99Ms ? 'goal met' : 'GOAL MISSED'
  console.log(`queue dispatch: ${r.decisions} decisions, p50 ${r.p50Ms.toFixed(3)} ms, p99 ${r.p99Ms.toFixed(3)} ms (goal < 1 ms p99: ${verdict})`)
}
