/**
 * What the delivery parts' unit tests share: a database of their own (PGlite in
 * memory; with DATABASE_URL a scratch database on that server, dropped after, so
 * that dispatch never takes other runs' events), rows to start from, a fake
 * WebhookTransport and a logger that keeps what it logs. Used by tests only.
 */
import pino from 'pino'
import { eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import { type Database, openDatabase } from '../../db/client'
import { eventOutbox, events, platforms, webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema'
import { newId } from '../../ids'
import type { Logger } from '../../logger'
import { scratchPostgres } from '../../../test/support/scratch-postgres'
import type { WebhookRequest, WebhookResult, WebhookTransport } from '../webhook-transport'
import type { DeliveryRow, EndpointRow } from './types'

export { until } from '../../../test/support/polling'

export async function openTestDatabase(label: string): Promise<{ database: Database; dispose(): Promise<void> }> {
  const scratch = await scratchPostgres(label)
  const database = await openDatabase({ databaseUrl: scratch.url, dataDir: 'memory://' })
  await database.migrate()
  return {
    database,
    async dispose() {
      await database.close()
      await scratch.dispose()
    },
  }
}

/** Empties the tables delivery reads and writes, between tests of one file. */
export async function clearDeliveryTables(database: Database) {
  await database.db.delete(webhookAttempts)
  await database.db.delete(webhookDeliveries)
  await database.db.delete(events)
  await database.db.delete(eventOutbox)
  await database.db.delete(webhookEndpoints)
}

/** A logger that keeps every line (parsed) instead of printing it. */
export function recordingLogger(): { log: Logger; lines: { level: number; msg: string; [k: string]: unknown }[] } {
  const lines: { level: number; msg: string }[] = []
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) })
  return { log, lines }
}

/** Something that can be settled from outside: for answers the test decides when to give. */
export function deferred<T = void>() {
  let resolve!: (v: T) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** A WebhookTransport that records each request and answers with `respond` (200 unless told). */
export function fakeTransport(respond: (req: WebhookRequest) => WebhookResult | Promise<WebhookResult> = () => ({ kind: 'acknowledged', status: 200 })) {
  const sent: WebhookRequest[] = []
  const transport: WebhookTransport & { sent: WebhookRequest[]; closed: boolean; respond: typeof respond } = {
    sent,
    closed: false,
    respond,
    send(req) {
      sent.push(req)
      return Promise.resolve(transport.respond(req))
    },
    close() {
      transport.closed = true
    },
  }
  return transport
}

export async function insertPlatform(database: Database, clock: Clock, adminEmails: string[] = []) {
  const id = newId('platform')
  await database.db.insert(platforms).values({ id, name: `Platform ${id}`, adminEmails, createdAt: clock.now(), updatedAt: clock.now() })
  return id
}

export async function insertEndpoint(database: Database, clock: Clock, values: Partial<EndpointRow> & { platformId: string }): Promise<EndpointRow> {
  const row: EndpointRow = {
    id: newId('webhookEndpoint'),
    accountId: null,
    mode: 'test',
    url: 'https://hooks.example.com/in',
    secret: 'whsec_test',
    enabledEvents: ['*'],
    description: null,
    status: 'enabled',
    consecutiveFailures: 0,
    unhealthySince: null,
    createdAt: clock.now(),
    updatedAt: clock.now(),
    ...values,
  }
  await database.db.insert(webhookEndpoints).values(row)
  return row
}

export async function insertEvent(
  database: Database,
  clock: Clock,
  values: { platformId: string; accountId: string; type?: string; mode?: 'test' | 'live'; dispatched?: boolean },
) {
  const id = newId('event')
  const type = values.type ?? 'user.created'
  const body = JSON.stringify({ id, type, created_at: clock.now().toISOString(), account_id: values.accountId, data: {} })
  const [row] = await database.db
    .insert(events)
    .values({
      id,
      platformId: values.platformId,
      accountId: values.accountId,
      mode: values.mode ?? 'test',
      type,
      body,
      createdAt: clock.now(),
    })
    .returning()
  // A new event is undispatched (the database puts it in the outbox); a dispatched one leaves it.
  if (values.dispatched) await database.db.delete(eventOutbox).where(eq(eventOutbox.seq, row!.seq))
  return row!
}

/** A delivery row as dispatch makes it (not inserted). */
export function deliveryRow(clock: Clock, values: Partial<DeliveryRow> & { endpointId: string; accountId: string }): DeliveryRow {
  return {
    id: newId('webhookDelivery'),
    eventSeq: 1,
    eventId: newId('event'),
    state: 'pending',
    attempts: 0,
    maxAttempts: 6,
    nextAttemptAt: clock.now(),
    lastStatus: null,
    lastError: null,
    committedAt: clock.now(),
    firstAttemptAt: null,
    deliveredAt: null,
    createdAt: clock.now(),
    updatedAt: clock.now(),
    ...values,
  }
}

/** An event and its delivery row to `endpoint`, both inserted (the event already dispatched). */
export async function insertDelivery(database: Database, clock: Clock, endpoint: EndpointRow, values: Partial<DeliveryRow> & { accountId?: string } = {}) {
  const accountId = values.accountId ?? 'acct_1'
  const event = await insertEvent(database, clock, { platformId: endpoint.platformId, accountId, dispatched: true })
  const row = deliveryRow(clock, { endpointId: endpoint.id, accountId, eventId: event.id, eventSeq: event.seq, committedAt: event.createdAt, ...values })
  await database.db.insert(webhookDeliveries).values(row)
  return { delivery: row, body: event.body }
}

/** Lets everything already scheduled run (promise callbacks and a turn of the event loop): no timer, no wall-clock wait. */
export const settle = () => new Promise<void>((r) => setImmediate(r))
