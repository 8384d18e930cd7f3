/**
 * Webhook endpoints: platform-global (no account) or one account's. The key that
 * creates one fixes its mode; its secret is shown only in the create response and
 * stored sealed under the master key (src/auth/): delivery opens it to sign.
 */
import { and, eq, isNull, type SQL } from 'drizzle-orm'
import { sealSecret } from '../../auth/master-key'
import { sealedContext } from '../../auth/sealed-columns'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { webhookAttempts, webhookEndpoints } from '../../db/schema'
import { notFound, ValidationError } from '../../errors'
import { isEventType } from '../../events/catalog'
import { newWebhookSecret } from '../../events/signing'
import { urlRefusal } from '../../events/webhook-transport'
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

/** What an endpoint may target: whether delivery sends to private addresses (WEBHOOK_ALLOW_PRIVATE_TARGETS). */
export interface TargetPolicy {
  allowPrivateTargets: boolean
}

/** Names that always resolve to loopback (RFC 6761): `localhost`, and any name under it. */
const isLoopbackName = (host: string) => /(^|\.)localhost\.?$/i.test(host)

const PRIVATE_TARGETS_REFUSED = 'webhooks to private, loopback and link-local addresses are refused while WEBHOOK_ALLOW_PRIVATE_TARGETS is off'

/**
 * A URL delivery would refuse is refused here rather than accepted and never sent to:
 * the check delivery makes before sending (urlRefusal: a literal private, loopback,
 * link-local... address), and localhost names, which always resolve to loopback. Any
 * other name is judged by delivery on each address it resolves to, at send time.
 * Returns whether the URL was refused as a private target.
 */
function checkUrl(url: string, details: Record<string, string>, policy: TargetPolicy): boolean {
  let parsed: URL | undefined
  try {
    parsed = new URL(url)
  } catch {}
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) details.url = 'must be an http or https URL'
  else if (parsed.username || parsed.password) details.url = 'must not carry credentials'
  else if (!policy.allowPrivateTargets) {
    const refused = urlRefusal(url, policy) ?? (isLoopbackName(parsed.hostname) ? `${parsed.hostname} is a loopback name` : undefined)
    if (refused !== undefined) {
      details.url = `${refused}: ${PRIVATE_TARGETS_REFUSED}`
      return true
    }
  }
  return false
}

function invalid(details: Record<string, string>, privateTarget: boolean) {
  return privateTarget && Object.keys(details).length === 1
    ? new ValidationError(details, `The url is a private or loopback target, which webhook delivery refuses while WEBHOOK_ALLOW_PRIVATE_TARGETS is off.`)
    : new ValidationError(details)
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
  policy: TargetPolicy,
) {
  const details: Record<string, string> = {}
  const privateTarget = checkUrl(input.url, details, policy)
  const enabled = checkEvents(input.enabled_events, details) ?? ['*']
  if (Object.keys(details).length > 0) throw invalid(details, privateTarget)
  const now = clock.now()
  const id = newId('webhookEndpoint')
  const secret = newWebhookSecret()
  const [row] = await tx
    .insert(webhookEndpoints)
    .values({
      id,
      platformId: scope.platformId,
      accountId: scope.accountId,
      mode: scope.mode,
      url: input.url,
      secret: sealSecret(secret, sealedContext.webhookSecret(id)),
      enabledEvents: enabled,
      description: input.description ?? null,
      status: 'enabled',
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  // The one answer that shows the secret: the row with it in the clear.
  return { ...row!, secret }
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
  policy: TargetPolicy,
) {
  await getEndpoint(tx, scope, id)
  const details: Record<string, string> = {}
  const privateTarget = input.url !== undefined && checkUrl(input.url, details, policy)
  const enabled = checkEvents(input.enabled_events, details)
  if (Object.keys(details).length > 0) throw invalid(details, privateTarget)
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

export type AttemptRow = typeof webhookAttempts.$inferSelect

export function attemptView(row: AttemptRow) {
  return {
    id: row.id,
    object: 'webhook_attempt' as const,
    webhook_endpoint: row.endpointId,
    delivery: row.deliveryId,
    event_id: row.eventId,
    event: row.eventType,
    attempt: row.attempt,
    status: row.succeeded ? ('succeeded' as const) : ('failed' as const),
    status_code: row.statusCode,
    failure_reason: row.failureReason,
    duration_ms: row.durationMs,
    created_at: row.createdAt.toISOString(),
  }
}

/**
 * The endpoint's delivery attempts, newest first (extension). Kept as long as their
 * event is (src/events/retention.ts); a deleted endpoint's list is gone with it (404),
 * its rows with their events.
 */
export async function listAttempts(
  db: Db,
  scope: EndpointScope,
  endpointId: string,
  filters: { event?: string; status?: 'succeeded' | 'failed' },
  page: PageRequest,
) {
  if (filters.event !== undefined && !isEventType(filters.event)) throw new ValidationError({ event: 'is not a known event type' })
  await getEndpoint(db, scope, endpointId)
  const where = and(
    eq(webhookAttempts.endpointId, endpointId),
    filters.event === undefined ? undefined : eq(webhookAttempts.eventType, filters.event),
    filters.status === undefined ? undefined : eq(webhookAttempts.succeeded, filters.status === 'succeeded'),
  )
  return keysetPage<AttemptRow>(db, webhookAttempts, where, page)
}
