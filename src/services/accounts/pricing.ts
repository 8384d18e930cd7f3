/**
 * Pricing: every agreement is kept. Account pricing is the latest agreed; effective
 * pricing is what is billed today. A change agreed after the first takes effect at
 * the start of the next month (UTC), and until then shows as `next`.
 */
import { and, desc, eq, gt, lte } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { pricingAgreements } from '../../db/schema'
import { newId } from '../../ids'
import type { PricingRates } from './account-types'
import { isoDate, monthStart, nextMonthStart } from './dates'

type Agreement = typeof pricingAgreements.$inferSelect

const rates = (a: Agreement): PricingRates => ({
  per_user_rate: a.perUserRate,
  per_did_rate: a.perDidRate,
  per_voiceai_location_rate: a.perVoiceaiLocationRate,
})

export function pricingView(a: Agreement) {
  return { object: 'account_pricing' as const, account: a.accountId, ...rates(a), agreed_at: a.agreedAt.toISOString(), effective_from: a.effectiveFrom }
}

export async function latestPricing(db: Db, accountId: string): Promise<Agreement | undefined> {
  const [row] = await db
    .select()
    .from(pricingAgreements)
    .where(eq(pricingAgreements.accountId, accountId))
    .orderBy(desc(pricingAgreements.agreedAt), desc(pricingAgreements.id))
    .limit(1)
  return row
}

/** Records an agreement. The first applies from this month's start; later ones from next month's. */
export async function agreePricing(db: Db, clock: Clock, accountId: string, input: PricingRates, first: boolean): Promise<Agreement> {
  const now = clock.now()
  const [row] = await db
    .insert(pricingAgreements)
    .values({
      id: newId('pricing'),
      accountId,
      perUserRate: input.per_user_rate,
      perDidRate: input.per_did_rate,
      perVoiceaiLocationRate: input.per_voiceai_location_rate,
      effectiveFrom: isoDate(first ? monthStart(now) : nextMonthStart(now)),
      agreedAt: now,
    })
    .returning()
  return row!
}

export async function effectivePricing(db: Db, clock: Clock, accountId: string) {
  const today = isoDate(clock.now())
  const newest = (where: ReturnType<typeof and>) =>
    db
      .select()
      .from(pricingAgreements)
      .where(where)
      .orderBy(desc(pricingAgreements.effectiveFrom), desc(pricingAgreements.agreedAt), desc(pricingAgreements.id))
      .limit(1)
  const [current] = await newest(and(eq(pricingAgreements.accountId, accountId), lte(pricingAgreements.effectiveFrom, today)))
  const [pending] = await newest(and(eq(pricingAgreements.accountId, accountId), gt(pricingAgreements.effectiveFrom, today)))
  const none = { per_user_rate: 0, per_did_rate: 0, per_voiceai_location_rate: 0 }
  return {
    object: 'effective_pricing' as const,
    ...(current ? rates(current) : none),
    effective_from: current ? current.effectiveFrom : isoDate(monthStart(clock.now())),
    next: pending ? { ...rates(pending), effective_from: pending.effectiveFrom } : null,
  }
}
