/**
 * The queue actor: binds the pure `queue.v1` machine (one per queue) to effects.
 *  - `emit`            → one outbox event with the spec's fields and their deprecated
 *                        aliases (withQueueAliases), committed with the step;
 *  - durable delays    → the queue's own timers, named per caller so that a later one
 *                        replaces an earlier one (max wait, callback retry, a caller
 *                        arriving after the earlier steps of its plan);
 *  - a sandbox caller  → (the caller's attachment, `QueueCallerSim`) the queue plays
 *                        the phones: an offer rings the agents on the caller's call
 *                        (RING), the agents react as the request's outcomes say
 *                        (AGENT_ANSWERED after 3 s, AGENT_DECLINED after 1 s for busy,
 *                        OFFER_ENDED after 15 s), the answer connects the call (ANSWER)
 *                        and the caller hangs up after talk_seconds (CALL_COMPLETED);
 *                        the caller abandons at hangup_after_seconds and asks for a
 *                        callback at callback_after_seconds (hanging up, keeping the
 *                        place); a callback an agent takes places the callback call; a
 *                        timeout writes the rest of the plan as the call's timers.
 *  - a real caller    → (attachment `{ sip: { media_node } }`) the media role rings the
 *                        agents' phones: an offer and a timeout are notices to it
 *                        (`onQueueCaller`, bound by the composition root), and it reports
 *                        AGENT_ANSWERED or OFFER_ENDED; the queue's own ring-end timer,
 *                        later than the media role's ring, ends an offer nobody reports
 *                        (a media process gone): the queue never waits on a lost notice.
 * Every timer name is per caller (and per agent), never per step: several messages may
 * be applied in one step, and the last schedule of a name is the one that stays.
 */
import {
  findEntry,
  maxWaitDeadline,
  type QueueCallBack,
  type QueueCancelOffer,
  type QueueContext,
  type QueueOffer,
  type QueueTimeout,
  type QueueWake,
} from '../../machines/queue'
import { type QueueEmitted, withQueueAliases } from '../../machines/queue-events'
import type { Clock } from '../../src/clock'
import { newId } from '../../src/ids'
import { OFFER_RING_SECONDS, type QueueCallerNotice, sipAttachmentOf } from '../../src/services/routing/queue-caller-notices'
import { scheduleTimer } from '../../src/scheduler/durable-timers'
import { CALL_KIND } from '../calls/messages'
import { ANSWER_AFTER_SECONDS, BUSY_AFTER_SECONDS, planAfterQueue, QUEUE_OFFER_RING_SECONDS, type QueueCallerSim } from '../calls/routed-simulation'
import { CALLBACK_ANSWER_SECONDS, planCallbackCall } from '../calls/simulation'
import type { ScheduleRequest } from '../runtime/client'
import { defineActorKind, type Effects } from '../runtime/kinds'
import { shardOf } from '../runtime/shards'
import { admitQueueCommand, QUEUE_KIND, QUEUE_MACHINES, type QueueArrivalCommand, type QueueRuntime } from './messages'

export interface QueueKindOptions {
  clock: Clock
  /** Tells the media role to ring agents for a real caller, or that the caller times out (a bus publish; best effort). */
  onQueueCaller?: (notice: QueueCallerNotice) => void
}

/** How long the queue lets a real caller's offer ring before ending it itself: well after the media role's ring ends it. */
export const REAL_OFFER_END_SECONDS = 2 * OFFER_RING_SECONDS

type Args = { context: unknown; event?: { type: string } }
const ctxOf = (a: Args) => a.context as QueueContext
const plus = (at: string, seconds: number) => new Date(Date.parse(at) + seconds * 1000).toISOString()

/** The sandbox script a caller carries, if any (a real call carries none). */
const simOf = (attachment: unknown): QueueCallerSim | undefined =>
  attachment && typeof attachment === 'object' && 'rest' in attachment ? (attachment as QueueCallerSim) : undefined

/** The attachment of a caller the queue holds (waiting, ringing, calling back or connected). */
function callerSim(c: QueueContext, callId: string): QueueCallerSim | undefined {
  return simOf(findEntry(c, callId)?.attachment ?? c.connected[callId]?.entry.attachment)
}

const timer = {
  maxWait: (call: string) => `max_wait:${call}`,
  hangup: (call: string) => `hangup:${call}`,
  callback: (call: string) => `callback:${call}`,
  complete: (call: string) => `complete:${call}`,
  ringEnd: (call: string) => `ring_end:${call}`,
  answer: (call: string, user: string) => `answer:${call}:${user}`,
  decline: (call: string, user: string) => `decline:${call}:${user}`,
  arrive: (call: string) => `arrive:${call}`,
  callbackRetry: (cb: string) => `callback_retry:${cb}`,
  callbackResult: (cb: string) => `callback_result:${cb}`,
}

/** The callback id of a caller (one callback per caller and queue visit). */
export const callbackIdOf = (callId: string) => `${callId}_callback`

export function createQueueKind(opts: QueueKindOptions) {
  const { clock } = opts

  /** Events for the caller's call: a durable message now. */
  const toCall = (fx: Effects, callId: string, event: { type: string; at: string } & Record<string, unknown>) => fx.tell(CALL_KIND, callId, event)

  /** Timers of another call actor (the script of its plan after the queue), written in this step's transaction. */
  const writeCallTimers = (fx: Effects, callId: string, script: ScheduleRequest[]) => {
    if (script.length === 0) return
    fx.write(async (tx) => {
      for (const s of script)
        await scheduleTimer(tx, clock, { actorKind: CALL_KIND, actorId: callId, name: s.name, dueAt: new Date(s.at!), event: s.event, shard: shardOf(callId) })
    })
  }

  /** What the queue does after its own events, beyond publishing them: its timers, and the sandbox caller's phone. */
  const follow = (fx: Effects, c: QueueContext, e: QueueEmitted, cause: string | undefined) => {
    /** The caller's call ended already (a real call's end, or a sandbox call hung up by command): nobody to hang up. */
    const callOver = cause === 'CALL_ENDED'
    switch (e.type) {
      case 'queue.call.queued': {
        const call = e.data.call_id
        const entry = findEntry(c, call)
        if (entry)
          fx.schedule({
            name: timer.maxWait(call),
            at: maxWaitDeadline(c.config, entry),
            event: { type: 'TIMER', timer: 'max_wait', call_id: call, at: maxWaitDeadline(c.config, entry) },
          })
        const sim = simOf(entry?.attachment)
        if (!sim) return
        if (sim.hangup_after_seconds !== undefined) {
          const at = plus(sim.started_at, sim.hangup_after_seconds)
          fx.schedule({ name: timer.hangup(call), at, event: { type: 'ABANDON', call_id: call, at } })
        }
        if (sim.callback_after_seconds !== undefined) {
          const at = plus(e.data.queued_at, sim.callback_after_seconds)
          fx.schedule({ name: timer.callback(call), at, event: { type: 'CALLBACK_REQUESTED', call_id: call, callback_id: callbackIdOf(call), at } })
        }
        return
      }
      case 'queue.call.answered': {
        const call = e.data.call_id
        for (const n of [timer.maxWait(call), timer.hangup(call), timer.callback(call), timer.ringEnd(call)]) fx.cancelTimer(n)
        const sim = callerSim(c, call)
        if (!sim) return
        toCall(fx, call, { type: 'ANSWER', user_id: e.data.agent_user, at: e.data.answered_at })
        const at = plus(e.data.answered_at, sim.talk_seconds)
        fx.schedule({ name: timer.complete(call), at, event: { type: 'CALL_COMPLETED', call_id: call, at } })
        return
      }
      case 'queue.call.completed':
        fx.cancelTimer(timer.complete(e.data.call_id))
        // The sandbox caller hangs up (a call already ended by other means drops this message).
        if (!callOver) toCall(fx, e.data.call_id, { type: 'HANGUP', side: 'caller', at: e.data.completed_at })
        return
      case 'queue.call.abandoned':
        for (const n of [timer.maxWait(e.data.call_id), timer.hangup(e.data.call_id), timer.callback(e.data.call_id), timer.ringEnd(e.data.call_id)])
          fx.cancelTimer(n)
        if (!callOver) toCall(fx, e.data.call_id, { type: 'HANGUP', side: 'caller', at: e.data.abandoned_at })
        return
      case 'queue.call.timed_out':
        for (const n of [timer.maxWait(e.data.call_id), timer.hangup(e.data.call_id), timer.callback(e.data.call_id), timer.ringEnd(e.data.call_id)])
          fx.cancelTimer(n)
        return
      case 'queue.call.callback_requested': {
        const call = c.callbacks[e.data.callback]
        if (!call) return
        // The caller keeps the place, not the line: no max wait, the call ends now.
        for (const n of [timer.maxWait(call), timer.hangup(call)]) fx.cancelTimer(n)
        toCall(fx, call, { type: 'HANGUP', side: 'caller', at: e.data.requested_at })
        return
      }
      case 'queue.call.callback_attempted':
        if (e.data.next_attempt_at)
          fx.schedule({
            name: timer.callbackRetry(e.data.callback),
            at: e.data.next_attempt_at,
            event: { type: 'TIMER', timer: 'callback_retry', callback_id: e.data.callback, at: e.data.next_attempt_at },
          })
        return
      default:
        return
    }
  }

  /** To the media role, as the step's last write (like the call actor's notices): a closed bus must not fail the step. */
  const tellMedia = (fx: Effects, notice: QueueCallerNotice) => {
    const notify = opts.onQueueCaller
    if (!notify) return
    fx.write(async () => {
      try {
        notify(notice)
      } catch {
        // best effort: the ring-end timer, or the caller's hang-up, ends what a lost notice leaves
      }
    })
  }

  /** The agents' phones ring for the caller; each reacts as the sandbox caller's outcomes say. */
  const ring = (fx: Effects, c: QueueContext, o: QueueOffer) => {
    if (sipAttachmentOf(o.attachment)) {
      // A real caller never asks for a callback (no key does it yet): only live offers reach here.
      if (o.callback_id !== null) return
      tellMedia(fx, { kind: 'offer', queue_id: c.config.queue_id, call_id: o.call_id, agents: o.agents.map((a) => a.user_id), offered_at: o.at })
      const end = plus(o.at, REAL_OFFER_END_SECONDS)
      fx.schedule({ name: timer.ringEnd(o.call_id), at: end, event: { type: 'OFFER_ENDED', call_id: o.call_id, offered_at: o.at, at: end } })
      return
    }
    const sim = simOf(o.attachment)
    if (!sim) return
    const call = o.call_id
    // A callback's caller is not on the line: only the agents' phones ring.
    if (o.callback_id === null) for (const a of o.agents) toCall(fx, call, { type: 'RING', user_id: a.user_id, at: o.at })
    const outcomeOf = (u: string, i: number) => (sim.outcomes ? (sim.outcomes[u] ?? 'no-answer') : i === 0 ? 'answer' : 'no-answer')
    // One agent picks up (the first willing one in offer order): who wins is then not up to timer order.
    let answered = false
    o.agents.forEach((a, i) => {
      const outcome = outcomeOf(a.user_id, i)
      if (outcome === 'answer' && !answered) {
        answered = true
        const at = plus(o.at, ANSWER_AFTER_SECONDS)
        fx.schedule({ name: timer.answer(call, a.user_id), at, event: { type: 'AGENT_ANSWERED', call_id: call, user_id: a.user_id, offered_at: o.at, at } })
      } else if (outcome === 'busy' || outcome === 'dnd') {
        const at = plus(o.at, BUSY_AFTER_SECONDS)
        fx.schedule({ name: timer.decline(call, a.user_id), at, event: { type: 'AGENT_DECLINED', call_id: call, user_id: a.user_id, offered_at: o.at, at } })
      }
    })
    const end = plus(o.at, QUEUE_OFFER_RING_SECONDS)
    // Each ring event names its offer: a late one of an earlier offer is dropped by the machine.
    fx.schedule({ name: timer.ringEnd(call), at: end, event: { type: 'OFFER_ENDED', call_id: call, offered_at: o.at, at: end } })
  }

  /** The caller leaves for the queue's timeout target: the rest of the plan runs on the call's own timers (and may reach another queue). */
  const timeOut = (fx: Effects, c: QueueContext, t: QueueTimeout) => {
    if (sipAttachmentOf(t.attachment)) return tellMedia(fx, { kind: 'timeout', queue_id: c.config.queue_id, call_id: t.call_id, at: t.at })
    const sim = simOf(t.attachment)
    if (!sim) return
    const next = planAfterQueue(sim, t.call_id, t.at, { command: newId('command') })
    writeCallTimers(fx, t.call_id, next.script)
    if (next.queue) {
      fx.spawnActor(next.queue.kind, next.queue.id, next.queue.input)
      fx.tell(next.queue.kind, next.queue.id, next.queue.command.arrival)
    }
  }

  /** An agent took the callback: they call the caller back, who picks up (the sandbox's callback always connects). */
  const callBack = (fx: Effects, b: QueueCallBack) => {
    const sim = simOf(b.attachment)
    if (!sim) return
    const leg = planCallbackCall({
      call_id: newId('call'),
      owner: sim.owner,
      account_number: sim.to_number,
      caller_number: sim.from_number,
      agent: b.agent.user_id,
      at: b.at,
      talkSeconds: sim.talk_seconds,
    })
    fx.spawnActor(CALL_KIND, leg.input.call_id, leg.input, leg.opts)
    const at = plus(b.at, CALLBACK_ANSWER_SECONDS)
    fx.schedule({ name: timer.callbackResult(b.callback_id), at, event: { type: 'CALLBACK_RESULT', callback_id: b.callback_id, result: 'answered', at } })
  }

  const kind = defineActorKind({
    kind: QUEUE_KIND,
    machines: QUEUE_MACHINES,
    actions: (fx: Effects) => ({
      emit: (args: Args, e: QueueEmitted) => {
        const c = ctxOf(args)
        const { owner } = c.runtime as QueueRuntime
        fx.emit({ platformId: owner.platformId, accountId: owner.accountId, mode: owner.mode, type: e.type, data: withQueueAliases(e) })
        follow(fx, c, e, args.event?.type)
      },
      offer: (args: Args, o: QueueOffer) => ring(fx, ctxOf(args), o),
      cancelOffer: (args: Args, x: QueueCancelOffer) => {
        // A real caller's agents ring on phones: the media role cancels theirs.
        if (sipAttachmentOf(x.attachment))
          return tellMedia(fx, { kind: 'cancel', queue_id: ctxOf(args).config.queue_id, call_id: x.call_id, agents: x.agents, at: x.at })
        for (const u of x.agents) {
          fx.cancelTimer(timer.answer(x.call_id, u))
          fx.cancelTimer(timer.decline(x.call_id, u))
        }
      },
      toTimeoutTarget: (args: Args, t: QueueTimeout) => timeOut(fx, ctxOf(args), t),
      callBack: (_: Args, b: QueueCallBack) => callBack(fx, b),
      wake: (_: Args, w: QueueWake) => {
        const call = (w.event as { call_id: string }).call_id
        fx.schedule({ name: timer.arrive(call), at: w.at, event: w.event as never })
      },
    }),
    commands: {
      admit: (m: QueueArrivalCommand, snapshot) => admitQueueCommand(m, snapshot !== undefined),
      outcome: () => [],
    },
  })
  return { kind }
}
