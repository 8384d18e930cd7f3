/**
 * "Nothing more happens", checked instead of guessed: wait until the work that could
 * still produce events is provably finished, then assert.
 *
 * The tests run the service in process, so they read its database. A set of actors of
 * an account is quiescent when
 *   - each actor is done or absent (actor_snapshots.status),
 *   - none has a durable timer row (scripted steps, and the `tell`/spawn rows another
 *     actor writes for it, are timers of the target),
 *   - every outbox event of the account is dispatched, and
 *   - none of the account's webhook deliveries is still pending.
 * All four are read in ONE statement, so they describe one committed state (an actor
 * step commits its snapshot, its events and its timer rows together; dispatch marks
 * events dispatched together with their delivery rows). Once quiescent, no step of
 * these actors can run again, and every event they committed has reached (or been
 * given up by) the account's endpoints: a receiver has recorded a delivered request
 * before it answered.
 *
 *   await quiescence(t, c.account, callActors(callId))   // the call and its follow-up
 *   expect(typesOf(c, callId)).toEqual([...])
 *
 * Bounded like `until()`; on timeout the error says what was still going on.
 */
import { and, eq, type SQL, sql } from 'drizzle-orm'
import { actorSnapshots, durableTimers, events, webhookDeliveries, webhookEndpoints } from '../../src/db/schema'
import { until } from './polling'
import type { TestService } from './service'

export interface ActorRef {
  kind: string
  id: string
}

/** A call actor's kind; a transfer leg or consultation call is one too. */
export const CALL_KIND = 'call'
/** The kind of a call's follow-up actor (recording or voicemail steps). */
export const FOLLOW_UP_KIND = 'call_sim'

/** The actors of these calls: each call and its follow-up (which exists only for a recorded call or a stored voicemail). */
export const callActors = (...callIds: string[]): ActorRef[] =>
  callIds.flatMap((id) => [
    { kind: CALL_KIND, id },
    { kind: FOLLOW_UP_KIND, id: `${id}_followup` },
  ])

/** Which actors: a list, or every actor of the account (any snapshot or timer whose JSON names the account id). */
export type ActorScope = readonly ActorRef[] | 'every actor of the account'

export interface QuiescenceState {
  /** Actors of the scope not done yet. */
  active: ActorRef[]
  /** Durable timer rows of actors of the scope (kind, id, timer name). */
  timers: (ActorRef & { name: string })[]
  /** Outbox events of the account not dispatched yet. */
  undispatched: number
  /** Webhook deliveries of the account still pending. */
  pending: number
}

const rowsOf = (r: unknown): any[] => (Array.isArray(r) ? r : ((r as { rows?: any[] }).rows ?? []))
const parsed = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v)

/** JSON (an actor snapshot, a timer's event) that names the account. */
const namesAccount = (json: SQL | unknown, accountId: string) => sql`strpos(${json}::text, ${`"${accountId}"`}) > 0`

function scopeOf(accountId: string, actors: ActorScope) {
  if (actors === 'every actor of the account') {
    const accountActors = sql`select ${actorSnapshots.kind}, ${actorSnapshots.id} from ${actorSnapshots} where ${namesAccount(actorSnapshots.snapshot, accountId)}`
    return {
      snapshots: namesAccount(actorSnapshots.snapshot, accountId),
      timers: sql`((${durableTimers.actorKind}, ${durableTimers.actorId}) in (${accountActors}) or ${namesAccount(durableTimers.event, accountId)})`,
    }
  }
  if (actors.length === 0) return { snapshots: sql`false`, timers: sql`false` }
  const refs = sql.join(
    actors.map((a) => sql`(${a.kind}::text, ${a.id}::text)`),
    sql`, `,
  )
  return {
    snapshots: sql`(${actorSnapshots.kind}, ${actorSnapshots.id}) in (${refs})`,
    timers: sql`(${durableTimers.actorKind}, ${durableTimers.actorId}) in (${refs})`,
  }
}

/** What is still going on for these actors and the account, read in one statement. */
export async function quiescenceState(t: TestService, accountId: string, actors: ActorScope): Promise<QuiescenceState> {
  const scope = scopeOf(accountId, actors)
  const [row] = rowsOf(
    await t.service.database.db.execute(sql`
      select
        (select coalesce(json_agg(json_build_object('kind', ${actorSnapshots.kind}, 'id', ${actorSnapshots.id})), '[]'::json)
           from ${actorSnapshots} where ${actorSnapshots.status} <> 'done' and ${scope.snapshots}) as active,
        (select coalesce(json_agg(json_build_object('kind', ${durableTimers.actorKind}, 'id', ${durableTimers.actorId}, 'name', ${durableTimers.name})), '[]'::json)
           from ${durableTimers} where ${scope.timers}) as timers,
        (select count(*)::int from ${events} join event_outbox o on o.seq = ${events.seq} where ${events.accountId} = ${accountId}) as undispatched,
        (select count(*)::int from ${webhookDeliveries} where ${webhookDeliveries.accountId} = ${accountId} and ${webhookDeliveries.state} = 'pending') as pending
    `),
  )
  return { active: parsed(row.active), timers: parsed(row.timers), undispatched: Number(row.undispatched), pending: Number(row.pending) }
}

const isQuiescent = (s: QuiescenceState) => s.active.length === 0 && s.timers.length === 0 && s.undispatched === 0 && s.pending === 0

/** Waits until the actors are quiescent (see the file header); fails after `timeoutMs` with what was still going on. */
export async function quiescence(t: TestService, accountId: string, actors: ActorScope, timeoutMs = 10_000): Promise<void> {
  let last: QuiescenceState | undefined
  try {
    await until(
      `quiescence of ${actors === 'every actor of the account' ? `every actor of ${accountId}` : actors.map((a) => `${a.kind}/${a.id}`).join(', ')}`,
      async () => isQuiescent((last = await quiescenceState(t, accountId, actors))),
      timeoutMs,
    )
  } catch (e) {
    throw new Error(`${(e as Error).message}; still going on: ${JSON.stringify(last)}`)
  }
}

/** Every actor of the account that exists or is about to be spawned (a snapshot, or a timer row naming the account). */
export async function actorsOfAccount(t: TestService, accountId: string): Promise<ActorRef[]> {
  const rows = rowsOf(
    await t.service.database.db.execute(sql`
      select ${actorSnapshots.kind} as kind, ${actorSnapshots.id} as id from ${actorSnapshots} where ${namesAccount(actorSnapshots.snapshot, accountId)}
      union
      select ${durableTimers.actorKind} as kind, ${durableTimers.actorId} as id from ${durableTimers} where ${namesAccount(durableTimers.event, accountId)}
    `),
  )
  return rows.map((r) => ({ kind: r.kind, id: r.id }))
}

/** Deliveries still pending (a first attempt or a retry to come) to the endpoints whose URL is `url`. */
export async function pendingDeliveriesTo(db: TestService['service']['database']['db'], url: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(and(eq(webhookEndpoints.url, url), eq(webhookDeliveries.state, 'pending')))
  return row?.n ?? 0
}
