/**
 * The presence actor: binds the pure `presence.v1` machine (one per user) to its
 * effects. It has no projection and no outbox event: the spec names no presence
 * event, and the routes read the persisted snapshot itself (actors/presence/messages).
 *
 * Commands (PUT /v1/me/presence) are durable `$command` messages judged again by the
 * machine when they arrive; calls reach it as CALL_STARTED / CALL_ENDED tells from
 * the call actor (actors/presence/call-presence).
 *
 * Queues: when a step changes what the user is to the queues (free, on a call, or not
 * taking calls: actors/queues/messages queueAgentStatus), the step tells the queue
 * actor of every queue the user is a member of. The memberships are read in the
 * step's transaction, only on such a change, and for all the presence steps of one
 * transaction at once (a batch writer): a busy user's calls change their standing at
 * nearly every start and end, and a read per change, each a round trip inside the
 * shared transaction, held every other step of it back.
 */
import { enqueueActions } from 'xstate'
import { admitPresenceCommand, idleDeadline, type PresenceContext, type PresenceSnapshot, presenceMachine } from '../../machines/presence'
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import { queueMembershipsOfUsers } from '../../src/services/routing/queues'
import { QUEUE_KIND, queueAgentStatus } from '../queues/messages'
import { durableActorMessages } from '../runtime/commands'
import { defineActorKind, type Effects } from '../runtime/kinds'
import { PRESENCE_KIND, PRESENCE_MACHINES, type PresenceCommandMessage } from './messages'

export interface PresenceKindOptions {
  /** Without a clock the actor tells no queue (tests of presence alone). */
  clock?: Clock
}

/** The machine's own `apply` (the inputs and the published record); the kind runs it unchanged, then looks at what changed. */
const machineApply = (presenceMachine.implementations.actions as Record<string, unknown>).apply

/** A change of a user's standing to the queues, as one message of a step left it. */
interface StandingChange {
  user: string
  after: PresenceContext
  at: string
}
const STANDING_CHANGES = 'queueStanding'

/** The idle timeout's durable timer, at the machine's deadline; one per user, the last scheduled wins (a stale fire is dropped by the machine). */
const IDLE_TIMER = 'idle_timeout'
function scheduleIdle(fx: Effects, before: PresenceContext, after: PresenceContext) {
  const deadline = idleDeadline(after)
  if (deadline === null || deadline === idleDeadline(before)) return
  fx.schedule({ name: IDLE_TIMER, at: deadline, event: { type: 'TIMER', timer: 'idle_timeout', at: deadline } })
}

export function createPresenceKind(opts: PresenceKindOptions = {}) {
  const clock = opts.clock
  const tellQueues = (fx: Effects, user: string, before: PresenceContext, after: PresenceContext, at: string) => {
    if (!clock) return
    if (queueAgentStatus('available', before) === queueAgentStatus('available', after)) return
    fx.batch(STANDING_CHANGES, { user, after, at } satisfies StandingChange)
  }

  /** Every change of the transaction, in step order, told to each queue of its user (one read for all the users). */
  const writeStandingChanges = async (tx: Db, items: unknown[]) => {
    const changes = items as StandingChange[]
    const memberships = await queueMembershipsOfUsers(tx, [...new Set(changes.map((c) => c.user))])
    if (memberships.length === 0 || !clock) return
    const messages = durableActorMessages(clock)
    for (const c of changes)
      for (const m of memberships) {
        if (m.user_id !== c.user) continue
        const status = queueAgentStatus(m.standing, c.after)
        await messages.tell(tx, QUEUE_KIND, m.queue_id, { type: 'AGENT_STATUS', user_id: c.user, status, at: c.at })
      }
  }

  const kind = defineActorKind({
    kind: PRESENCE_KIND,
    machines: PRESENCE_MACHINES,
    actions: (fx: Effects) => ({
      // Nothing to publish: the record is read from the snapshot.
      emit: () => {},
      apply: enqueueActions(({ context, event, enqueue }) => {
        const before = context as PresenceContext
        enqueue(machineApply as never)
        enqueue(({ context: after }) => tellQueues(fx, before.user_id, before, after as PresenceContext, (event as unknown as { at: string }).at))
        enqueue(({ context: after }) => scheduleIdle(fx, before, after as PresenceContext))
      }) as never,
    }),
    batchWriters: { [STANDING_CHANGES]: writeStandingChanges },
    commands: {
      // No actor yet: the spawn written with the command carries the same change, so the command has nothing left to do.
      admit: (m: PresenceCommandMessage, snapshot) =>
        snapshot
          ? admitPresenceCommand(snapshot as PresenceSnapshot, m.command, m.at)
          : { refused: { code: 'presence_not_started', reason: 'the presence actor does not exist yet' } },
      outcome: () => [],
    },
  })
  return { kind }
}
