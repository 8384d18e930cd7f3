/**
 * Deferred durable messages: bookkeeping that may wait while the process serves
 * something more urgent. The provisioning server defers the device actors' fetch
 * messages while phones fetch in numbers (media/provisioning/deferred-tells.ts),
 * so that their steps do not take the cores the phones are waiting for.
 *
 * A deferred message is an ordinary durable message row (actors/runtime/commands)
 * whose name starts with DEFERRED_PREFIX and whose due time is its deadline: it is
 * due then whatever happens, so a crash or a busy spell that never ends delays it
 * by that bound and no more. Releasing it makes it due when it was written
 * (`due_at = created_at`), not "now": messages written for the same actor after it
 * (a device update, a removal) have later due times and are taken after it, as if
 * it had never been deferred.
 */
import type { Db } from '../db/client'
import { statement } from '../db/statements'

/** The name prefix of a deferred message's row: `$deferred:<uuid>` (one row per message, as a tell). */
export const DEFERRED_PREFIX = '$deferred:'

/** Every deferred message of one kind with its deadline in (now, until]: the due-time index bounds the scan. */
const RELEASE_KIND = statement<{ n: number }>(
  `with released as (
     update durable_timers set due_at = created_at
      where due_at > $2::timestamptz and due_at <= $3::timestamptz and actor_kind = $1 and name like '${DEFERRED_PREFIX}%'
      returning 1)
   select count(*)::int as n from released`,
)

/** One actor's deferred messages (the actor-and-name unique index finds them). */
const RELEASE_ACTOR = statement<{ id: string }>(
  `update durable_timers set due_at = created_at
    where actor_kind = $1 and actor_id = $2 and name like '${DEFERRED_PREFIX}%' and due_at > $3::timestamptz
    returning id`,
)

/**
 * Makes every deferred message of `kind` whose deadline is at most `until` due
 * now (when it was written). Answers how many were released.
 */
export async function releaseDeferred(db: Db, kind: string, now: Date, until: Date): Promise<number> {
  const [row] = await RELEASE_KIND.rows(db, [kind, now.toISOString(), until.toISOString()])
  return row?.n ?? 0
}

/**
 * Makes one actor's deferred messages due now, in the caller's transaction: called
 * before writing a message that must be taken after them.
 */
export async function releaseDeferredOf(tx: Db, kind: string, id: string, now: Date): Promise<number> {
  return (await RELEASE_ACTOR.rows(tx, [kind, id, now.toISOString()])).length
}
