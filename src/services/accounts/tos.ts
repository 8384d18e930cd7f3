/**
 * The subscription agreement. The current version is date-based; accepting it is
 * recorded once per version with server-derived evidence and a pricing snapshot.
 */
import { and, eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { tosAcceptances } from '../../db/schema'
import { conflict, unprocessable } from '../../errors'
import { latestPricing } from './pricing'

export const TOS_VERSION = '2026-01-01'

export const TOS_CONTENT =
  'I agree to the Subscription Agreement, including its pricing, and I acknowledge the 911 emergency calling ' +
  'limitations: 911 calls may not work during power or internet outages, and the registered emergency address ' +
  'of each device and location must be kept current so that emergency services can be sent to the right place.'

export const TOS_BODY = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Subscription Agreement (${TOS_VERSION})</title></head>
<body>
<h1>Subscription Agreement</h1>
<p>Version ${TOS_VERSION}.</p>
<h2>1. Service</h2>
<p>The provider supplies business voice service (numbers, calling, voicemail, fax, recordings) to the customer through the platform.</p>
<h2>2. Fees</h2>
<p>The customer pays the per-user, per-number and per-location rates agreed in the customer's pricing, billed monthly. A change of rates takes effect at the start of the next calendar month.</p>
<h2>3. Emergency calling (911)</h2>
<p>Emergency calls are routed using the emergency address registered for the calling device or location. 911 may be unavailable during power, internet or network outages. The customer keeps every emergency address current and informs its users of these limitations.</p>
<h2>4. Acceptable use</h2>
<p>No unlawful, fraudulent or abusive calling; the customer complies with recording-consent laws where it records calls.</p>
</body></html>`

export function tosUrl(baseUrl: string) {
  return `${baseUrl}/legal/subscription-agreement/${TOS_VERSION}`
}

type Acceptance = typeof tosAcceptances.$inferSelect

export async function currentAcceptance(db: Db, accountId: string): Promise<Acceptance | undefined> {
  const [row] = await db
    .select()
    .from(tosAcceptances)
    .where(and(eq(tosAcceptances.accountId, accountId), eq(tosAcceptances.version, TOS_VERSION)))
  return row
}

export function acceptanceView(a: Acceptance | undefined) {
  if (!a) return null
  return { version: a.version, accepted_at: a.acceptedAt.toISOString(), ip: a.ip, user_agent: a.userAgent, pricing: a.pricing }
}

/**
 * Accepts the current version. Re-accepting it returns the first acceptance
 * unchanged (idempotent). Rates of 0 mean nothing agreed, so all-zero pricing
 * counts as no pricing.
 */
export async function acceptTos(
  db: Db,
  clock: Clock,
  accountId: string,
  input: { version: string; ip: string | null; userAgent: string | null },
): Promise<Acceptance> {
  if (input.version !== TOS_VERSION) {
    throw conflict(`Version ${input.version} is not the current agreement version (${TOS_VERSION}).`, 'tos_version_stale')
  }
  const existing = await currentAcceptance(db, accountId)
  if (existing) return existing
  const pricing = await latestPricing(db, accountId)
  if (!pricing || (pricing.perUserRate === 0 && pricing.perDidRate === 0 && pricing.perVoiceaiLocationRate === 0)) {
    throw unprocessable('Pricing must be agreed before the subscription agreement can be accepted.', 'pricing_required')
  }
  const [row] = await db
    .insert(tosAcceptances)
    .values({
      accountId,
      version: TOS_VERSION,
      acceptedAt: clock.now(),
      ip: input.ip,
      userAgent: input.userAgent,
      pricing: { per_user_rate: pricing.perUserRate, per_did_rate: pricing.perDidRate, per_voiceai_location_rate: pricing.perVoiceaiLocationRate },
    })
    .onConflictDoNothing()
    .returning()
  return row ?? (await currentAcceptance(db, accountId))!
}
