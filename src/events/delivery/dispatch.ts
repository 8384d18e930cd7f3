/**
 * Claiming committed events. Dispatch turns committed, undispatched outbox events
 * into one delivery row per matching endpoint (same mode, enabled_events match,
 * platform-global or the event's account) and per webhook voice app the event names
 * (voice-app-targets.ts), in one transaction with taking the
 * events out of the outbox (event_outbox); only after commit are the first attempts handed to their lanes,
 * in commit order. Resume hands back, after a restart, the first attempts that were
 * pending (rows with no attempt yet), in the same order.
 */
import { asc, eq, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { pgArray, selectRowsText, statement } from '../../db/statements'
import { events, webhookDeliveries, webhookEndpoints } from '../../db/schema'
import { newId } from '../../ids'
import type { EndpointCache } from './attempt'
import { MAX_RETRIES } from './retries'
import type { DeliveryRow, EndpointRow, Job } from './types'
import { loadVoiceAppTargets } from './voice-app-targets'

/** Most events taken by one dispatch transaction. */
export const DISPATCH_BATCH = 500
/** Most delivery rows inserted by one statement. */
const INSERT_BATCH = 1000

/** New delivery rows; every one starts pending with no attempt, so only what varies travels. */
const INSERT_DELIVERIES = statement(
  `insert into webhook_deliveries (id, event_seq, event_id, endpoint_id, account_id, state, attempts, max_attempts, next_attempt_at,
      committed_at, created_at, updated_at)
    select id, event_seq, event_id, endpoint_id, account_id, 'pending', 0, max_attempts, at, committed_at, at, at
    from jsonb_to_recordset($1::jsonb) as x(id text, event_seq bigint, event_id text, endpoint_id text, account_id text,
      max_attempts integer, at timestamptz, committed_at timestamptz)`,
)
/**
 * Takes the oldest undispatched events out of the outbox (event_outbox) that no other
 * dispatcher holds, in one statement: the rows stay locked, and come back if this
 * transaction does not commit.
 */
const TAKE_FROM_OUTBOX = statement<{ seq: number | string }>(
  'delete from event_outbox where seq = any(array(select seq from event_outbox order by seq limit $1 for update skip locked)) returning seq',
)

const deliveryRecord = (d: DeliveryRow) => ({
  id: d.id,
  event_seq: d.eventSeq,
  event_id: d.eventId,
  endpoint_id: d.endpointId,
  account_id: d.accountId,
  max_attempts: d.maxAttempts,
  at: d.createdAt.toISOString(),
  committed_at: d.committedAt.toISOString(),
})

export function matchesEndpoint(
  endpoint: Pick<EndpointRow, 'enabledEvents' | 'status' | 'mode' | 'accountId'>,
  event: { type: string; mode: string; accountId: string },
) {
  return (
    endpoint.status === 'enabled' &&
    endpoint.mode === event.mode &&
    (endpoint.accountId === null || endpoint.accountId === event.accountId) &&
    (endpoint.enabledEvents.includes('*') || endpoint.enabledEvents.includes(event.type))
  )
}

export interface Dispatcher {
  /** Moves committed, undispatched events into delivery rows; returns how many it took out of the outbox. */
  dispatch(): Promise<number>
  /** First attempts that were pending when the process stopped, back in their lanes in order. */
  resume(): Promise<void>
}

export function createDispatcher(deps: {
  db: Db
  clock: Clock
  /** Refreshed with the endpoint rows each dispatch reads: the first attempts of the batch use them. */
  endpoints: EndpointCache
  /** Hands a first attempt to its lane. */
  enqueue: (job: Job) => void
}): Dispatcher {
  const { db, clock, endpoints: endpointCache, enqueue } = deps

  return {
    async dispatch() {
      const jobs: Job[] = []
      const taken = await db.transaction(async (tx) => {
        const seqs = (await TAKE_FROM_OUTBOX.rows(tx, [DISPATCH_BATCH])).map((r) => Number(r.seq))
        if (seqs.length === 0) return 0
        const batch = await selectRowsText(tx, events, 'where seq = any($1::bigint[]) order by seq', [pgArray(seqs)])
        const platformIds = [...new Set(batch.map((e) => e.platformId))]
        const endpoints = await selectRowsText(tx, webhookEndpoints, "where platform_id = any($1::text[]) and status = 'enabled'", [pgArray(platformIds)])
        // Webhook voice apps following a call get its events too (voice-app-targets.ts).
        const apps = await loadVoiceAppTargets(tx, [...new Set(batch.flatMap((e) => e.voiceApps ?? []))])
        endpointCache.replacePlatforms(platformIds, [...endpoints, ...apps])
        const appById = new Map(apps.map((a) => [a.id, a]))
        const now = clock.now()
        const rows: DeliveryRow[] = []
        const deliver = (e: (typeof batch)[number], ep: EndpointRow) => {
          rows.push({
            id: newId('webhookDelivery'),
            eventSeq: e.seq,
            eventId: e.id,
            endpointId: ep.id,
            accountId: e.accountId,
            state: 'pending',
            attempts: 0,
            // An unhealthy endpoint gets each event once, without retries.
            maxAttempts: ep.unhealthySince ? 1 : 1 + MAX_RETRIES,
            nextAttemptAt: now,
            lastStatus: null,
            lastError: null,
            committedAt: e.createdAt,
            firstAttemptAt: null,
            deliveredAt: null,
            createdAt: now,
            updatedAt: now,
          })
          jobs.push({ delivery: rows[rows.length - 1]!, body: e.body })
        }
        for (const e of batch) {
          for (const ep of endpoints) if (ep.platformId === e.platformId && matchesEndpoint(ep, e)) deliver(e, ep)
          for (const id of e.voiceApps ?? []) {
            const app = appById.get(id)
            if (app?.accountId === e.accountId) deliver(e, app)
          }
        }
        for (let i = 0; i < rows.length; i += INSERT_BATCH)
          await INSERT_DELIVERIES.rows(tx, [JSON.stringify(rows.slice(i, i + INSERT_BATCH).map(deliveryRecord))])
        // What was taken, events or not: an outbox row whose event is gone is dropped with the rest.
        return seqs.length
      })
      // Only after commit: the rows exist, so a crash from here on is recovered by resume().
      for (const job of jobs) enqueue(job)
      return taken
    },

    async resume() {
      const pending = await db
        .select({ d: webhookDeliveries, body: events.body })
        .from(webhookDeliveries)
        .innerJoin(events, eq(events.id, webhookDeliveries.eventId))
        // The predicate of webhook_deliveries_fresh_idx written out, so that every plan can use that index.
        .where(sql`${webhookDeliveries.state} = 'pending' and ${webhookDeliveries.attempts} = 0`)
        .orderBy(asc(webhookDeliveries.eventSeq))
      for (const p of pending) enqueue({ delivery: p.d, body: p.body })
    },
  }
}
