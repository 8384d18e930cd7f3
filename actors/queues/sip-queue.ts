/**
 * The queue actors of real callers (media/b2bua): a routed SIP call reaching a
 * queue enters it here, and the B2BUA reports what the agents' phones did with each
 * offer. Durable messages, each committed before the promise resolves. The queue
 * rings agents for such a caller by notices to the media role (queue-actor.ts), and
 * takes its end from the call (CALL_ENDED).
 */
import type { EventObject } from 'xstate'
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import type { TimerRow } from '../../src/scheduler/durable-timers'
import { presenceStates } from '../../src/services/accounts/presence'
import { getQueue, queueAgentStandings } from '../../src/services/routing/queues'
import type { QueueSipAttachment } from '../../src/services/routing/queue-caller-notices'
import { newId } from '../../src/ids'
import { statement } from '../../src/db/statements'
import type { CallOwner } from '../calls/messages'
import { PRESENCE_KIND } from '../presence/messages'
import { durableMessage, durableMessageSender, sendCommand, spawnInTx } from '../runtime/commands'
import { type CallerArrived, memberStatus, QUEUE_KIND, queueHandoff } from './messages'

/** Where a queue's actor has a caller, by its last committed step. */
export type QueueStanding = 'waiting' | 'connected' | 'departed' | 'unknown'

// In the database, from the persisted snapshot: a queue of a thousand callers is not shipped here to find one.
const STANDING = statement<{ waiting: boolean; connected: boolean; departed: boolean }>(
  `select
      exists (select 1 from jsonb_array_elements(s.snapshot->'context'->'lanes') l, jsonb_array_elements(l->'entries') e
        where e->>'call_id' = $2) as waiting,
      coalesce((s.snapshot->'context'->'connected') ? $2, false) as connected,
      coalesce((s.snapshot->'context'->'departed') ? $2, false) as departed
    from actor_snapshots s where s.kind = $3 and s.id = $1`,
)

export interface SipQueueCallersDeps {
  db: Db
  clock: Clock
  /** Runs the actor's due messages now (ActorClient.wake); absent: the owner's poll delivers them. */
  wake?(kind: string, id: string, rows: TimerRow[]): Promise<void>
}

export interface SipQueueArrival {
  call: { call_id: string; owner: CallOwner; from_number: string; from_name: string | null; to_number: string; media_node: string }
  queue: { queue_id: string; max_wait_seconds: number; agents: readonly string[]; unreachable: readonly string[] }
}

export function sipQueueCallers(deps: SipQueueCallersDeps) {
  const wake = (id: string, rows: TimerRow[]) => {
    deps.wake?.(QUEUE_KIND, id, rows).catch(() => {})
  }
  const send = durableMessageSender(deps.db, deps.clock)
  return {
    /**
     * The caller enters the queue with its members as they stand now (queue-agent
     * standing, presence); a member with no registered phone cannot take a real call
     * and counts as logged out for it.
     */
    async arrive({ call, queue }: SipQueueArrival): Promise<void> {
      const row = await getQueue(deps.db, call.owner.accountId, queue.queue_id)
      const [standings, presence] = await Promise.all([queueAgentStandings(deps.db, queue.agents), presenceStates(deps.db, PRESENCE_KIND, queue.agents)])
      const unreachable = new Set(queue.unreachable)
      const agents = queue.agents.map((user_id, i) => ({
        user_id,
        status: unreachable.has(user_id) ? ('offline' as const) : memberStatus(standings[i]!, presence.get(user_id)?.snapshot),
      }))
      const at = deps.clock.now().toISOString()
      const attachment: QueueSipAttachment = { sip: { media_node: call.media_node } }
      const arrival: CallerArrived = {
        type: 'CALLER_ARRIVED',
        call_id: call.call_id,
        from_number: call.from_number,
        from_name: call.from_name,
        to_number: call.to_number,
        attachment,
        agents,
        config: { queue_name: row.name, max_wait_seconds: queue.max_wait_seconds },
        at,
      }
      const h = queueHandoff({ queue_id: row.id, queue_name: row.name, max_wait_seconds: queue.max_wait_seconds }, call.owner, arrival, newId('command'))
      // The spawn carries the arrival for a queue with no actor yet, the command for one that has (the machine takes a caller once).
      const rows = await deps.db.transaction(async (tx) => [
        await spawnInTx(tx, deps.clock, h.kind, h.id, h.input),
        await sendCommand(tx, deps.clock, h.kind, h.id, h.command),
      ])
      wake(h.id, rows)
    },
    /**
     * Whether the queue still holds the caller (`waiting`, offered included), took it to
     * an agent (`connected`), let it go (`departed`: timed out, abandoned, answered),
     * or has no word of it (`unknown`: no such queue, its arrival not taken yet, or a
     * departure older than the last DEPARTED_KEPT).
     */
    async standing(queueId: string, callId: string): Promise<QueueStanding> {
      const [row] = await STANDING.rows(deps.db, [queueId, callId, QUEUE_KIND])
      if (!row) return 'unknown'
      return row.waiting ? 'waiting' : row.connected ? 'connected' : row.departed ? 'departed' : 'unknown'
    },
    async tell(queueId: string, event: EventObject & Record<string, unknown>): Promise<void> {
      wake(queueId, [await send(QUEUE_KIND, queueId, durableMessage.tell(event))])
    },
  }
}
