/**
 * Webhook endpoints: platform-global (no account) or one account's. The key that
 * creates one fixes its mode; its secret is shown only in the create response.
 */
import { and, eq, isNull, type SQL } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { webhookEndpoints } from '../../db/schema'
import { notFound, ValidationError } from '../../errors'
import { isEventType } from '../../events/catalog'
import { newWebhookSecret } from '../../events/signing'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import type { Mode } from '../platform/platforms'

export type EndpointRow = typeof webhookEndpoints.$inferSelect

/** Whose endpoints: the platform's global ones (account null) or one account's, in one mode. */
export interface EndpointScope {
  platformId: string
  mode: Mode
  accountId: string | null
}

export function endpointView(row: EndpointRow, opts: { withSecret?: boolean } = {}) {
  return {
    id: row.id,
    object: 'webhook_endpoint' as const,
    account: row.accountId,
    url: row.url,
    ...(opts.withSecret ? { secret: row.secret } : {}),
    enabled_events: row.enabledEvents,
    description: row.description,
    status: row.status,
    livemode: row.mode === 'live',
    healthy: row.unhealthySince === null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

function checkUrl(url: string, details: Record<string, string>) {
  let parsed: URL | undefined
  try {
    parsed = new URL(url)
  } catch {}
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) details.url = 'must be an http or https URL'
  else if (parsed.username || parsed.password) details.url = 'must not carry credentials'
}

function checkEvents(list: string[] | undefined, details: Record<string, string>): string[] | undefined {
  if (list === undefined) return undefined
  list.forEach((e, i) => {
    if (e !== '*' && !isEventType(e)) details[`enabled_events[${i}]`] = 'is not a known event type'
  })
  return [...new Set(list)]
}

const scopeWhere = (s: EndpointScope): SQL =>
  and(
    eq(webhookEndpoints.platformId, s.platformId),
    eq(webhookEndpoints.mode, s.mode),
    s.accountId === null ? isNull(webhookEndpoints.accountId) : eq(webhookEndpoints.accountId, s.accountId),
  )!

export async function createEndpoint(
  tx: Db,
  clock: Clock,
  scope: EndpointScope,
  input: { url: string; enabled_events?: string[]; description?: string | null },
) {
  const details: Record<string, string> = {}
  checkUrl(input.url, details)
  const enabled = checkEvents(input.enabled_events, details) ?? ['*']
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const now = clock.now()
  const [row] = await tx
    .insert(webhookEndpoints)
    .values({
      id: newId('webhookEndpoint'),
      platformId: scope.platformId,
      accountId: scope.accountId,
      mode: scope.mode,
      url: input.url,
      secret: newWebhookSecret(),
      enabledEvents: enabled,
      description: input.description ?? null,
      status: 'enabled',
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  return row!
}

export async function getEndpoint(db: Db, scope: EndpointScope, id: string): Promise<EndpointRow> {
  const [row] = await db
    .select()
    .from(webhookEndpoints)
    .where(and(scopeWhere(scope), eq(webhookEndpoints.id, id)))
  if (!row) throw notFound('webhook_endpoint', id)
  return row
}

export function listEndpoints(db: Db, scope: EndpointScope, page: PageRequest) {
  return keysetPage<EndpointRow>(db, webhookEndpoints, scopeWhere(scope), page)
}

export async function updateEndpoint(
  tx: Db,
  clock: Clock,
  scope: EndpointScope,
  id: string,
  input: { url?: string; enabled_events?: string[]; description?: string | null; status?: 'enabled' | 'disabled' },
) {
  await getEndpoint(tx, scope, id)
  const details: Record<string, string> = {}
  if (input.url !== undefined) checkUrl(input.url, details)
  const enabled = checkEvents(input.enabled_events, details)
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const set: Partial<typeof webhookEndpoints.$inferInsert> = { updatedAt: clock.now() }
  if (input.url !== undefined) set.url = input.url
  if (enabled !== undefined) set.enabledEvents = enabled
  if (input.description !== undefined) set.description = input.description
  if (input.status !== undefined) set.status = input.status
  const [row] = await tx
    .update(webhookEndpoints)
    .set(set)
    .where(and(scopeWhere(scope), eq(webhookEndpoints.id, id)))
    .returning()
  return row!
}

export async function deleteEndpoint(tx: Db, scope: EndpointScope, id: string) {
  await getEndpoint(tx, scope, id)
  await tx.delete(webhookEndpoints).where(and(scopeWhere(scope), eq(webhookEndpoints.id, id)))
}
