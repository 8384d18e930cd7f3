/**
 * Webhook voice apps as delivery targets. A call routed to a voice app (or through a
 * notify-mode node naming one) carries the app in its events' `voice_apps`; dispatch
 * gives each such event one delivery per webhook app, exactly as to an endpoint, with
 * the app standing in for the endpoint row: its URL, its sealed secret, every event
 * type. So retries, the attempt log, dead letters and replay work the same, and the
 * app's id (va_…) names the target in webhook_deliveries.endpoint_id.
 *
 * Endpoint health does not apply: an app has no webhook_endpoints row to count
 * failures on, so it is never marked unhealthy and its deliveries always get their
 * retries. An app deleted, or turned into an ai_agent app, gets nothing more.
 */
import { and, eq, inArray } from 'drizzle-orm'
import { sealedContext } from '../../auth/sealed-columns'
import type { Db } from '../../db/client'
import { accounts, voiceApps } from '../../db/schema'
import { idKind } from '../../ids'
import type { EndpointRow } from './types'

/** Whether a delivery's target id names a voice app (not a webhook endpoint). */
export const isVoiceAppTarget = (id: string): boolean => idKind(id) === 'voiceApp'

/** The context a target's secret is sealed under. */
export const targetSecretContext = (id: string): string => (isVoiceAppTarget(id) ? sealedContext.voiceAppSecret(id) : sealedContext.webhookSecret(id))

/** The webhook apps among `ids` that have a URL, as endpoint rows. */
export async function loadVoiceAppTargets(db: Db, ids: readonly string[]): Promise<EndpointRow[]> {
  if (ids.length === 0) return []
  const rows = await db
    .select({ app: voiceApps, platformId: accounts.platformId, mode: accounts.mode })
    .from(voiceApps)
    .innerJoin(accounts, eq(accounts.id, voiceApps.accountId))
    .where(and(inArray(voiceApps.id, [...ids]), eq(voiceApps.kind, 'webhook')))
  return rows.flatMap(({ app, platformId, mode }) =>
    app.url
      ? [
          {
            id: app.id,
            platformId,
            accountId: app.accountId,
            mode,
            url: app.url,
            secret: app.secret,
            enabledEvents: ['*'],
            description: null,
            status: 'enabled' as const,
            consecutiveFailures: 0,
            unhealthySince: null,
            createdAt: app.createdAt,
            updatedAt: app.updatedAt,
          },
        ]
      : [],
  )
}
