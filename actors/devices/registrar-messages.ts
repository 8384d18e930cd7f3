/**
 * The phone-facing servers' messages to device actors, many in one statement. A
 * REGISTER's binding or a configuration fetch is a durable tell like any other
 * (actors/runtime/commands: a timer row due now, named `$tell:<uuid>`, tagged with
 * the actor's shard), but phones register and fetch by the thousand per second: the
 * registrar and the provisioning server gather the tells of concurrent requests
 * (media/device-tell-batcher) and this writes them with one multi-row insert, the
 * text fixed whatever the batch size (jsonb_to_recordset), so PostgreSQL keeps it
 * prepared.
 */
import { randomUUID } from 'node:crypto'
import type { EventObject } from 'xstate'
import type { Clock } from '../../src/clock'
import type { Db } from '../../src/db/client'
import { statement } from '../../src/db/statements'
import { newId } from '../../src/ids'
import { durableMessage } from '../runtime/commands'
import { shardOf } from '../runtime/shards'
import { DEVICE_KIND } from './messages'

const INSERT_TELLS = statement(
  `insert into durable_timers (id, actor_kind, actor_id, name, token, due_at, event, shard, created_at)
    select id, actor_kind, actor_id, name, token, due_at, event, shard, created_at from jsonb_to_recordset($1::jsonb)
      as x(id text, actor_kind text, actor_id text, name text, token text, due_at timestamptz, event jsonb, shard integer, created_at timestamptz)`,
)

export interface DeviceTells {
  deviceId: string
  events: (EventObject & Record<string, unknown>)[]
}

/**
 * Writes the tells, in the order given, in one statement (in the caller's transaction,
 * or committed on its own). With `deferUntil`, they are deferred messages
 * (src/scheduler/deferred-messages): due at that deadline unless released sooner.
 */
export function deviceTellWriter(clock: Clock) {
  return async (db: Db, batch: DeviceTells[], deferUntil?: Date): Promise<void> => {
    const now = clock.now().toISOString()
    const due = deferUntil ? deferUntil.toISOString() : now
    const records = batch.flatMap((b) =>
      b.events.map((event) => {
        const m = deferUntil ? durableMessage.deferredTell(event) : durableMessage.tell(event)
        const actor = { actor_kind: DEVICE_KIND, actor_id: b.deviceId, shard: shardOf(b.deviceId) }
        return { id: newId('timer'), ...actor, name: m.name, token: randomUUID(), due_at: due, event: m.event, created_at: now }
      }),
    )
    if (records.length > 0) await INSERT_TELLS.rows(db, [JSON.stringify(records)])
  }
}
