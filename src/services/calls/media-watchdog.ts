/**
 * Calls lost with their media process. A SIP call's legs (dialogs, RTP sockets) live
 * in one media process, which writes a heartbeat (`media_nodes`) every few seconds;
 * the call's actor, on any worker, names that process in its input. When a process
 * stops beating (SIGKILL, a lost machine) nobody will ever report what its phones
 * do, so the watchdog tells each of its calls still going `FAIL`: the call machine
 * ends it `failed` with its complete event set (call.end), and presence, the call
 * log and the queues follow as for any end.
 *
 * Safe to run on several workers at once: the tell is named (`media_lost`), so a
 * second sweep replaces the first's pending message, and a FAIL reaching an ended
 * call is dropped by its machine.
 */
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { statement } from '../../db/statements'
import type { Logger } from '../../logger'
import type { ActorMessages } from '../deps'

/** The call actor's kind (actors/calls/messages.ts CALL_KIND; src/ cannot import actors/). */
export const CALL_ACTOR = 'call'

/** How often a media process writes its heartbeat (real time). */
export const MEDIA_HEARTBEAT_MS = 5_000
/** A process this long without a heartbeat is gone: three missed beats. */
export const MEDIA_LOST_AFTER_MS = 3 * MEDIA_HEARTBEAT_MS

const BEAT = statement(
  `insert into media_nodes (id, started_at, heartbeat_at) values ($1, $2::timestamptz, $2::timestamptz)
    on conflict (id) do update set heartbeat_at = excluded.heartbeat_at`,
)
const FORGET = statement(`delete from media_nodes where id = $1`)

/** This process is alive (wall time: heartbeats are real seconds). */
export async function mediaHeartbeat(db: Db, node: string, wallNow: Date): Promise<void> {
  await BEAT.rows(db, [node, wallNow.toISOString()])
}

/** A process that stops cleanly leaves no row; its calls ended with it (it hung them up). */
export async function forgetMediaNode(db: Db, node: string): Promise<void> {
  await FORGET.rows(db, [node])
}

// The call actors still going whose media process has no recent heartbeat (or no row at all).
const LOST_CALLS = statement<{ id: string; node: string }>(
  `select s.id, s.snapshot->'context'->'input'->'sip'->>'media_node' as node
     from actor_snapshots s
     left join media_nodes n on n.id = s.snapshot->'context'->'input'->'sip'->>'media_node'
    where s.kind = $2 and s.status = 'active'
      and s.snapshot->'context'->'input'->'sip'->>'media_node' is not null
      and (n.id is null or n.heartbeat_at < $1::timestamptz)
    limit 500`,
)
// Rows of processes gone for a day: nothing refers to them any more.
const PRUNE = statement(`delete from media_nodes where heartbeat_at < $1::timestamptz`)

/** The calls whose media process is gone, by the wall clock now. */
export async function lostSipCalls(db: Db, wallNow: Date): Promise<{ id: string; node: string }[]> {
  return LOST_CALLS.rows(db, [new Date(wallNow.getTime() - MEDIA_LOST_AFTER_MS).toISOString(), CALL_ACTOR])
}

export interface MediaWatchdogOptions {
  db: Db
  clock: Clock
  actorMessages: ActorMessages
  log?: Logger
  /** Runs the told actors' messages now (ActorClient.wake), when this process can. */
  wake?(kind: string, id: string): Promise<void> | void
  intervalMs?: number
}

/** One sweep: every lost call told FAIL (committed); returns how many. */
export async function failLostCalls(o: Pick<MediaWatchdogOptions, 'db' | 'clock' | 'actorMessages' | 'log' | 'wake'>): Promise<number> {
  const lost = await lostSipCalls(o.db, o.clock.wallNow())
  if (lost.length === 0) return 0
  const at = o.clock.now().toISOString()
  await o.db.transaction(async (tx) => {
    for (const call of lost) await o.actorMessages.tell(tx, CALL_ACTOR, call.id, { type: 'FAIL', reason: 'media_lost', at }, 'media_lost')
  })
  for (const call of lost) {
    o.log?.warn({ call_id: call.id, media_node: call.node }, 'call lost with its media process: ended failed')
    Promise.resolve(o.wake?.(CALL_ACTOR, call.id)).catch(() => {})
  }
  return lost.length
}

/** Sweeps every `intervalMs` (default the heartbeat interval) until stopped. */
export function startMediaWatchdog(o: MediaWatchdogOptions): { stop(): void } {
  let running = false
  const sweep = async () => {
    if (running) return
    running = true
    try {
      await failLostCalls(o)
      await PRUNE.rows(o.db, [new Date(o.clock.wallNow().getTime() - 86_400_000).toISOString()])
    } catch (err) {
      o.log?.error({ err }, 'media watchdog sweep failed')
    } finally {
      running = false
    }
  }
  const timer = setInterval(sweep, o.intervalMs ?? MEDIA_HEARTBEAT_MS)
  return { stop: () => clearInterval(timer) }
}
