import { bigint, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { ts } from './columns'

/**
 * The last persisted snapshot of each actor, keyed by kind and id, with the
 * machine version it runs (a persisted actor keeps the version it started with).
 * Written in the same transaction as the events its step caused.
 */
export const actorSnapshots = pgTable(
  'actor_snapshots',
  {
    kind: text('kind').notNull(),
    id: text('id').notNull(),
    machineVersion: text('machine_version').notNull(),
    snapshot: jsonb('snapshot').notNull(),
    /** 'active' until the machine reaches a final state. */
    status: text('status', { enum: ['active', 'done'] }).notNull(),
    /** Shard the actor lives on (placement over NATS). */
    shard: integer('shard').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.id] }), index('actor_snapshots_active_idx').on(t.shard, t.status)],
)

/**
 * Durable timers: delays that must survive a restart (ring timeouts, simulated
 * durations). A fire whose token no longer matches the row (replaced or
 * cancelled) is dropped.
 */
export const durableTimers = pgTable(
  'durable_timers',
  {
    id: text('id').primaryKey(),
    actorKind: text('actor_kind').notNull(),
    actorId: text('actor_id').notNull(),
    /** Name of the timer within its actor (one live timer per name). */
    name: text('name').notNull(),
    token: text('token').notNull(),
    dueAt: ts('due_at').notNull(),
    /** The event sent to the actor when the timer fires. */
    event: jsonb('event').notNull(),
    /** Shard of the actor the timer fires to: a worker polls only the shards it holds. */
    shard: integer('shard').notNull().default(0),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [
    index('durable_timers_due_idx').on(t.dueAt),
    index('durable_timers_shard_due_idx').on(t.shard, t.dueAt),
    // One live timer per name per actor, as a key: schedules are upserts on it.
    uniqueIndex('durable_timers_actor_name_uq').on(t.actorKind, t.actorId, t.name),
  ],
)

/**
 * The fencing epoch of each shard (placement over NATS): a worker that gains a
 * shard's lease raises the shard's epoch here before it serves the shard, and every
 * actor step checks, inside its transaction, that the epoch it runs under is still
 * the shard's. A step started by an owner whose lease ran out therefore rolls back
 * instead of committing beside the new owner's.
 */
export const shardFences = pgTable('shard_fences', {
  shard: integer('shard').primaryKey(),
  epoch: bigint('epoch', { mode: 'number' }).notNull(),
})
