/**
 * Call quality: the per-leg RTP figures of answered SIP calls (packet loss, jitter,
 * an E-model MOS), kept with the call when it ends, and the two reports built on
 * them: a summary in UTC hour or day buckets, and the worst calls of a period.
 *
 * A leg's figures describe what the platform received from that side's phone: the
 * caller leg is the audio the callee heard (before the relay), and the other way
 * round. A leg that received no RTP at all has no loss, jitter or MOS (a MOS of
 * silence would read as perfect); the call's figures are those of its worse leg.
 */
import { and, asc, desc, eq, gte, isNotNull, lt, sql } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { queryRows } from '../../db/client'
import { callQuality, calls, type StoredLegQuality } from '../../db/schema'
import { ValidationError } from '../../errors'

/** One leg's figures as the media plane reports them (media/b2bua/ports.ts LegMediaStats). */
export interface LegMediaFigures {
  packetsReceived: number
  packetsSent: number
  packetsLost: number
  lossFraction: number
  jitterMs: number
  mos: number
}

/** What the B2BUA reports when an answered call ends (its onMediaFinished). */
export interface FinishedCallFigures {
  call_id: string
  caller: LegMediaFigures
  callee: LegMediaFigures
  owner: { accountId: string }
  ended_at: string
}

/** Below this MOS a call counts as poor (ITU-T G.107: under R 70, "many users dissatisfied"). */
export const POOR_MOS = 3.5

const count = (n: number) => (Number.isFinite(n) && n > 0 ? Math.round(n) : 0)
const within = (n: number, min: number, max: number) => (Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : null)

export function storedLeg(s: LegMediaFigures): StoredLegQuality {
  const received = count(s.packetsReceived)
  const heard = received > 0
  return {
    packets_received: received,
    packets_sent: count(s.packetsSent),
    packets_lost: count(s.packetsLost),
    loss_fraction: heard ? within(s.lossFraction, 0, 1) : null,
    jitter_ms: heard ? within(s.jitterMs, 0, 60_000) : null,
    mos: heard ? within(s.mos, 1, 4.5) : null,
  }
}

const worst = (values: (number | null)[], pick: (...n: number[]) => number) => {
  const present = values.filter((v): v is number => v !== null)
  return present.length === 0 ? null : pick(...present)
}

/** The row kept for a call: both legs, and the call's own figures from the worse leg. */
export function callQualityRow(m: FinishedCallFigures, now: Date): typeof callQuality.$inferInsert {
  const caller = storedLeg(m.caller)
  const callee = storedLeg(m.callee)
  const legs = [caller, callee]
  return {
    callId: m.call_id,
    accountId: m.owner.accountId,
    endedAt: new Date(m.ended_at),
    caller,
    callee,
    mos: worst(
      legs.map((l) => l.mos),
      Math.min,
    ),
    packetLoss: worst(
      legs.map((l) => l.loss_fraction),
      Math.max,
    ),
    jitterMs: worst(
      legs.map((l) => l.jitter_ms),
      Math.max,
    ),
    missingAudio: legs.some((l) => l.packets_received === 0),
    createdAt: now,
  }
}

/** Keeps an ended call's figures; a second report of the same call changes nothing. */
export async function storeCallQuality(db: Db, media: FinishedCallFigures, now = new Date()): Promise<void> {
  await db.insert(callQuality).values(callQualityRow(media, now)).onConflictDoNothing({ target: callQuality.callId })
}

// ---------------------------------------------------------------------------------------------
// The period of a report

export type Granularity = 'hour' | 'day'

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
/** The longest period of a report, and of an hourly summary (744 buckets at most). */
export const MAX_PERIOD_DAYS = 90
export const MAX_HOURLY_PERIOD_DAYS = 31
export const DEFAULT_PERIOD_DAYS = 7

export interface Period {
  from: Date
  /** Exclusive. */
  to: Date
}

/** `from`/`to`: an ISO 8601 date-time, or a date (a whole UTC day: `to` includes it). */
function parseInstant(value: string, end: boolean): Date | undefined {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value)
  if (!dateOnly && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(value)) return undefined
  // The calendar date as written must exist (no 2026-02-30 rolled over into March).
  const day = Date.parse(`${value.slice(0, 10)}T00:00:00.000Z`)
  if (Number.isNaN(day) || new Date(day).toISOString().slice(0, 10) !== value.slice(0, 10)) return undefined
  const t = Date.parse(dateOnly ? `${value}T00:00:00.000Z` : value)
  if (Number.isNaN(t)) return undefined
  return new Date(dateOnly && end ? t + DAY_MS : t)
}

/**
 * The period a report covers: `to` defaults to now, `from` to seven days before `to`.
 * From must come before to, and the period be at most 90 days (31 by the hour).
 */
export function reportPeriod(q: { from?: string; to?: string }, now: Date, granularity: Granularity = 'day'): Period {
  const details: Record<string, string> = {}
  const bad = 'must be an ISO 8601 date-time with a time zone (2026-06-01T09:00:00Z) or a date (2026-06-01, a whole UTC day)'
  const to = q.to === undefined ? now : parseInstant(q.to, true)
  if (!to) details.to = bad
  const from = q.from === undefined ? (to ? new Date(to.getTime() - DEFAULT_PERIOD_DAYS * DAY_MS) : undefined) : parseInstant(q.from, false)
  // A default from follows to: only its own errors are reported.
  if (!from && q.from !== undefined) details.from = bad
  if (from && to) {
    const maxDays = granularity === 'hour' ? MAX_HOURLY_PERIOD_DAYS : MAX_PERIOD_DAYS
    if (from.getTime() >= to.getTime()) details.from = 'must be before to'
    else if (to.getTime() - from.getTime() > maxDays * DAY_MS)
      details[q.from === undefined ? 'to' : 'from'] =
        `the period from from to to must be at most ${maxDays} days${granularity === 'hour' ? ' with granularity hour' : ''}`
  }
  if (Object.keys(details).length > 0 || !from || !to) throw new ValidationError(details)
  return { from, to }
}

// ---------------------------------------------------------------------------------------------
// The summary

export interface QualityFigures {
  calls: number
  calls_missing_audio: number
  poor_calls: number
  average_mos: number | null
  min_mos: number | null
  average_jitter_ms: number | null
  p95_jitter_ms: number | null
  average_packet_loss_percent: number | null
}

const round = (n: number | null, digits: number) => (n === null ? null : Math.round(n * 10 ** digits) / 10 ** digits)

interface FiguresRow {
  /** Epoch milliseconds of the bucket's start; null on the totals row. */
  bucket: number | string | null
  total: boolean
  calls: number
  calls_missing_audio: number
  poor_calls: number
  average_mos: number | null
  min_mos: number | null
  average_jitter_ms: number | null
  p95_jitter_ms: number | null
  average_loss: number | null
}

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))

const figuresOf = (r: FiguresRow | undefined): QualityFigures => ({
  calls: r ? Number(r.calls) : 0,
  calls_missing_audio: r ? Number(r.calls_missing_audio) : 0,
  poor_calls: r ? Number(r.poor_calls) : 0,
  average_mos: round(num(r?.average_mos), 2),
  min_mos: round(num(r?.min_mos), 2),
  average_jitter_ms: round(num(r?.average_jitter_ms), 2),
  p95_jitter_ms: round(num(r?.p95_jitter_ms), 2),
  average_packet_loss_percent: round(num(r?.average_loss) === null ? null : num(r?.average_loss)! * 100, 3),
})

/** The start of the UTC hour or day `t` falls in. */
export function bucketStart(t: Date, granularity: Granularity): Date {
  const step = granularity === 'hour' ? HOUR_MS : DAY_MS
  return new Date(Math.floor(t.getTime() / step) * step)
}

export interface QualitySummary {
  from: Date
  to: Date
  granularity: Granularity
  totals: QualityFigures
  buckets: (QualityFigures & { start: Date; end: Date })[]
}

/**
 * The account's calls that ended in the period, by UTC hour or day: every bucket of
 * the period in order, those without calls included (0 calls, null figures); the
 * first and last are cut to the period when from or to is not on a boundary.
 */
export async function qualitySummary(db: Db, accountId: string, period: Period, granularity: Granularity): Promise<QualitySummary> {
  const step = granularity === 'hour' ? HOUR_MS : DAY_MS
  const rows = await queryRows<FiguresRow>(
    db,
    sql`select bucket, grouping(bucket) = 1 as total,
          count(*)::int as calls,
          (count(*) filter (where missing_audio))::int as calls_missing_audio,
          (count(*) filter (where mos < ${POOR_MOS}::float8))::int as poor_calls,
          avg(mos)::float8 as average_mos,
          min(mos)::float8 as min_mos,
          avg(jitter_ms)::float8 as average_jitter_ms,
          (percentile_cont(0.95) within group (order by jitter_ms))::float8 as p95_jitter_ms,
          avg(packet_loss)::float8 as average_loss
        from (
          select (floor(extract(epoch from ${callQuality.endedAt}) * 1000 / ${step}::numeric) * ${step}::numeric)::float8 as bucket,
            ${callQuality.missingAudio} as missing_audio, ${callQuality.mos} as mos,
            ${callQuality.jitterMs} as jitter_ms, ${callQuality.packetLoss} as packet_loss
          from ${callQuality}
          where ${callQuality.accountId} = ${accountId}
            and ${callQuality.endedAt} >= ${period.from.toISOString()}::timestamptz
            and ${callQuality.endedAt} < ${period.to.toISOString()}::timestamptz
        ) q
        group by grouping sets ((bucket), ())`,
  )
  const byStart = new Map<number, FiguresRow>()
  let totals: FiguresRow | undefined
  for (const r of rows) {
    if (r.total) totals = r
    else if (r.bucket !== null) byStart.set(Number(r.bucket), r)
  }
  const buckets: QualitySummary['buckets'] = []
  for (let s = bucketStart(period.from, granularity).getTime(); s < period.to.getTime(); s += step) {
    const start = new Date(Math.max(s, period.from.getTime()))
    const end = new Date(Math.min(s + step, period.to.getTime()))
    buckets.push({ start, end, ...figuresOf(byStart.get(s)) })
  }
  return { from: period.from, to: period.to, granularity, totals: figuresOf(totals), buckets }
}

export function qualitySummaryView(s: QualitySummary) {
  const { totals, buckets } = s
  return {
    object: 'quality_summary' as const,
    from: s.from.toISOString(),
    to: s.to.toISOString(),
    granularity: s.granularity,
    poor_mos_threshold: POOR_MOS,
    totals,
    buckets: buckets.map(({ start, end, ...figures }) => ({ start: start.toISOString(), end: end.toISOString(), ...figures })),
  }
}

// ---------------------------------------------------------------------------------------------
// The worst calls

export const DEFAULT_WORST_CALLS = 10

/**
 * The account's calls that ended in the period, lowest MOS first (then highest loss,
 * then the most recent). Calls in which neither phone sent audio have no MOS and are
 * not ranked; calls not yet in the call log are not shown until they are.
 */
export async function worstCalls(db: Db, accountId: string, period: Period, limit = DEFAULT_WORST_CALLS) {
  return db
    .select({ quality: callQuality, call: calls })
    .from(callQuality)
    .innerJoin(calls, and(eq(calls.id, callQuality.callId), eq(calls.accountId, callQuality.accountId)))
    .where(and(eq(callQuality.accountId, accountId), gte(callQuality.endedAt, period.from), lt(callQuality.endedAt, period.to), isNotNull(callQuality.mos)))
    .orderBy(asc(callQuality.mos), sql`${callQuality.packetLoss} desc nulls last`, desc(callQuality.endedAt), asc(callQuality.callId))
    .limit(limit)
}

export function legView(l: StoredLegQuality) {
  return {
    packets_received: l.packets_received,
    packets_sent: l.packets_sent,
    packets_lost: l.packets_lost,
    packet_loss_percent: l.loss_fraction === null ? null : round(l.loss_fraction * 100, 3),
    jitter_ms: round(l.jitter_ms, 2),
    mos: round(l.mos, 2),
  }
}

type WorstCallRow = Awaited<ReturnType<typeof worstCalls>>[number]

export function callQualityView({ quality: q, call: c }: WorstCallRow) {
  return {
    object: 'call_quality' as const,
    call_id: q.callId,
    direction: c.direction,
    from_number: c.fromNumber,
    to_number: c.toNumber,
    user_id: c.userId,
    from_user_id: c.fromUserId,
    to_user_id: c.toUserId,
    started_at: c.startedAt.toISOString(),
    answered_at: c.answeredAt ? c.answeredAt.toISOString() : null,
    ended_at: q.endedAt.toISOString(),
    duration_seconds: c.durationSeconds,
    mos: round(q.mos, 2),
    packet_loss_percent: q.packetLoss === null ? null : round(q.packetLoss * 100, 3),
    jitter_ms: round(q.jitterMs, 2),
    poor: q.mos !== null && q.mos < POOR_MOS,
    missing_audio: q.missingAudio,
    caller: legView(q.caller),
    callee: legView(q.callee),
  }
}

export function worstCallsView(period: Period, rows: WorstCallRow[]) {
  return {
    object: 'quality_worst_calls' as const,
    from: period.from.toISOString(),
    to: period.to.toISOString(),
    poor_mos_threshold: POOR_MOS,
    data: rows.map(callQualityView),
  }
}
