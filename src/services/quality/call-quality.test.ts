/**
 * Call quality against a real database (PGlite; PostgreSQL with DATABASE_URL): the row
 * kept for a call (the worse leg, a silent leg unmeasured, idempotent), the period
 * rules, the summary's buckets and figures, and the worst calls' order.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { manualClock } from '../../clock'
import { type Database, openDatabase } from '../../db/client'
import { accounts, callQuality, calls } from '../../db/schema'
import { ValidationError } from '../../errors'
import { newId } from '../../ids'
import { ensureBootstrapPlatform } from '../platform/platforms'
import {
  callQualityRow,
  type FinishedCallFigures,
  type LegMediaFigures,
  qualitySummary,
  qualitySummaryView,
  reportPeriod,
  storeCallQuality,
  worstCalls,
  worstCallsView,
} from './call-quality'

let database: Database
let accountId: string
let otherAccount: string
const clock = manualClock('2026-06-10T12:00:00.000Z')

beforeAll(async () => {
  database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
  await database.migrate()
  const { platformId } = await ensureBootstrapPlatform(database.db, clock, { liveEnabled: false })
  accountId = newId('account')
  otherAccount = newId('account')
  for (const id of [accountId, otherAccount])
    await database.db.insert(accounts).values({ id, platformId, mode: 'test', config: {} as never, createdAt: clock.now(), updatedAt: clock.now() })
})
afterAll(async () => {
  for (const id of [accountId, otherAccount]) if (id) await database.db.delete(accounts).where(eq(accounts.id, id))
  await database?.close()
})

const leg = (o: Partial<LegMediaFigures> = {}): LegMediaFigures => ({
  packetsReceived: 1000,
  packetsSent: 1000,
  packetsLost: 0,
  lossFraction: 0,
  jitterMs: 1,
  mos: 4.4,
  ...o,
})
const SILENT = leg({ packetsReceived: 0, lossFraction: 0, jitterMs: 0, mos: 4.41 })

/** A call in the call log and its figures, ended at `endedAt`. */
async function call(endedAt: string, caller: LegMediaFigures, callee: LegMediaFigures, account = accountId) {
  const id = newId('call')
  const end = new Date(endedAt)
  const start = new Date(end.getTime() - 60_000)
  await database.db.insert(calls).values({
    id,
    accountId: account,
    mode: 'test',
    direction: 'internal',
    fromNumber: '101',
    toNumber: '102',
    fromUserId: 'user_a',
    toUserId: 'user_b',
    status: 'completed',
    startedAt: start,
    answeredAt: new Date(start.getTime() + 5000),
    endedAt: end,
    durationSeconds: 55,
    createdAt: start,
    updatedAt: end,
  })
  const media: FinishedCallFigures = { call_id: id, caller, callee, owner: { accountId: account }, ended_at: end.toISOString() }
  await storeCallQuality(database.db, media, clock.now())
  return id
}

describe('the row kept for a call', () => {
  test('the call’s figures are the worse leg’s; a leg that received nothing has no loss, jitter or MOS', () => {
    const row = callQualityRow(
      {
        call_id: 'call_x',
        caller: leg({ lossFraction: 0.05, jitterMs: 3, mos: 3.9, packetsLost: 50 }),
        callee: leg({ lossFraction: 0.01, jitterMs: 12, mos: 4.2 }),
        owner: { accountId: 'acct' },
        ended_at: '2026-06-10T10:00:00.000Z',
      },
      clock.now(),
    )
    expect(row).toMatchObject({ mos: 3.9, packetLoss: 0.05, jitterMs: 12, missingAudio: false })
    const oneWay = callQualityRow(
      { call_id: 'call_y', caller: SILENT, callee: leg({ mos: 4.1 }), owner: { accountId: 'acct' }, ended_at: '2026-06-10T10:00:00.000Z' },
      clock.now(),
    )
    expect(oneWay).toMatchObject({ mos: 4.1, packetLoss: 0, jitterMs: 1, missingAudio: true })
    expect(oneWay.caller).toEqual({ packets_received: 0, packets_sent: 1000, packets_lost: 0, loss_fraction: null, jitter_ms: null, mos: null })
    const none = callQualityRow(
      { call_id: 'call_z', caller: SILENT, callee: SILENT, owner: { accountId: 'acct' }, ended_at: '2026-06-10T10:00:00.000Z' },
      clock.now(),
    )
    expect(none).toMatchObject({ mos: null, packetLoss: null, jitterMs: null, missingAudio: true })
  })

  test('figures out of range or not numbers are clamped or dropped', () => {
    const row = callQualityRow(
      {
        call_id: 'call_w',
        caller: leg({ lossFraction: 1.5, jitterMs: Number.NaN, mos: 7, packetsLost: -3 }),
        callee: leg({ mos: 0.2 }),
        owner: { accountId: 'acct' },
        ended_at: '2026-06-10T10:00:00.000Z',
      },
      clock.now(),
    )
    expect(row.caller).toMatchObject({ loss_fraction: 1, jitter_ms: null, mos: 4.5, packets_lost: 0 })
    expect(row.mos).toBe(1)
  })

  test('a second report of the same call changes nothing', async () => {
    const id = await call('2026-05-01T10:00:00.000Z', leg({ mos: 3 }), leg())
    await storeCallQuality(
      database.db,
      { call_id: id, caller: leg({ mos: 4.4 }), callee: leg(), owner: { accountId }, ended_at: '2026-05-01T11:00:00.000Z' },
      clock.now(),
    )
    const rows = await database.db.select().from(callQuality).where(eq(callQuality.callId, id))
    expect(rows.map((r) => [r.mos, r.endedAt.toISOString()])).toEqual([[3, '2026-05-01T10:00:00.000Z']])
  })
})

describe('the period', () => {
  const now = new Date('2026-06-10T12:00:00.000Z')
  const fails = (q: { from?: string; to?: string }, g: 'hour' | 'day' = 'day') => {
    try {
      reportPeriod(q, now, g)
    } catch (err) {
      expect(err).toBeInstanceOf(ValidationError)
      return (err as ValidationError).details as Record<string, string>
    }
    throw new Error('no validation error')
  }

  test('defaults to the last 7 days; a date is a whole UTC day, to included', () => {
    expect(reportPeriod({}, now)).toEqual({ from: new Date('2026-06-03T12:00:00.000Z'), to: now })
    expect(reportPeriod({ from: '2026-06-01', to: '2026-06-07' }, now)).toEqual({
      from: new Date('2026-06-01T00:00:00.000Z'),
      to: new Date('2026-06-08T00:00:00.000Z'),
    })
    expect(reportPeriod({ from: '2026-06-01T09:30:00+02:00', to: '2026-06-01T10:00:00Z' }, now)).toEqual({
      from: new Date('2026-06-01T07:30:00.000Z'),
      to: new Date('2026-06-01T10:00:00.000Z'),
    })
    expect(reportPeriod({ to: '2026-06-05T00:00:00Z' }, now).from).toEqual(new Date('2026-05-29T00:00:00.000Z'))
  })

  test('from before to, at most 90 days (31 by the hour), ISO 8601 with a time zone', () => {
    expect(fails({ from: '2026-06-05', to: '2026-06-01' })).toEqual({ from: 'must be before to' })
    expect(fails({ from: '2026-06-01T10:00:00Z', to: '2026-06-01T10:00:00Z' })).toEqual({ from: 'must be before to' })
    expect(fails({ from: '2026-01-01', to: '2026-06-01' }).from).toContain('at most 90 days')
    expect(reportPeriod({ from: '2026-03-03', to: '2026-05-31' }, now).to).toEqual(new Date('2026-06-01T00:00:00.000Z'))
    expect(fails({ from: '2026-05-01', to: '2026-06-05' }, 'hour').from).toContain('at most 31 days with granularity hour')
    expect(fails({ from: '2026-01-01' }).from).toContain('at most 90 days')
    expect(Object.keys(fails({ from: 'yesterday', to: '2026-06-01T10:00:00' }))).toEqual(['to', 'from'])
    expect(fails({ from: '2026-02-30' })).toEqual({ from: expect.stringContaining('ISO 8601') })
  })
})

describe('summary and worst calls', () => {
  let ids: Record<'good' | 'poor' | 'fair' | 'oneWay' | 'silent' | 'before' | 'other', string>
  beforeAll(async () => {
    ids = {
      good: await call('2026-06-01T09:10:00.000Z', leg({ mos: 4.4, jitterMs: 2 }), leg({ mos: 4.3, jitterMs: 4 })),
      poor: await call('2026-06-01T09:50:00.000Z', leg({ mos: 3.2, lossFraction: 0.04, jitterMs: 10 }), leg({ mos: 4.0, jitterMs: 30 })),
      fair: await call('2026-06-01T11:00:00.000Z', leg({ mos: 3.6, lossFraction: 0.02 }), leg({ mos: 4.2 })),
      oneWay: await call('2026-06-03T23:59:59.999Z', SILENT, leg({ mos: 4.1, jitterMs: 6 })),
      silent: await call('2026-06-03T08:00:00.000Z', SILENT, SILENT),
      // outside the period, and another account's
      before: await call('2026-05-31T23:59:59.999Z', leg({ mos: 1.5 }), leg()),
      other: await call('2026-06-02T10:00:00.000Z', leg({ mos: 1.2 }), leg(), otherAccount),
    }
  })
  const period = { from: new Date('2026-06-01T00:00:00.000Z'), to: new Date('2026-06-04T00:00:00.000Z') }

  test('by day: every day of the period, empty ones included, with totals', async () => {
    const s = qualitySummaryView(await qualitySummary(database.db, accountId, period, 'day'))
    expect(s).toMatchObject({
      object: 'quality_summary',
      from: '2026-06-01T00:00:00.000Z',
      to: '2026-06-04T00:00:00.000Z',
      granularity: 'day',
      poor_mos_threshold: 3.5,
    })
    expect(s.buckets.map((b) => [b.start, b.end, b.calls])).toEqual([
      ['2026-06-01T00:00:00.000Z', '2026-06-02T00:00:00.000Z', 3],
      ['2026-06-02T00:00:00.000Z', '2026-06-03T00:00:00.000Z', 0],
      ['2026-06-03T00:00:00.000Z', '2026-06-04T00:00:00.000Z', 2],
    ])
    // day 1: MOS 4.3, 3.2, 3.6; jitter (worse leg) 4, 30, 1; loss 0, 4 %, 2 %
    expect(s.buckets[0]).toMatchObject({
      calls_missing_audio: 0,
      poor_calls: 1,
      average_mos: 3.7,
      min_mos: 3.2,
      average_jitter_ms: 11.67,
      average_packet_loss_percent: 2,
    })
    // percentile_cont over 1, 4, 30: 4 + 0.9 × 26
    expect(s.buckets[0]!.p95_jitter_ms).toBeCloseTo(27.4, 5)
    expect(s.buckets[1]).toEqual({
      start: '2026-06-02T00:00:00.000Z',
      end: '2026-06-03T00:00:00.000Z',
      calls: 0,
      calls_missing_audio: 0,
      poor_calls: 0,
      average_mos: null,
      min_mos: null,
      average_jitter_ms: null,
      p95_jitter_ms: null,
      average_packet_loss_percent: null,
    })
    // day 3: the one-way call is measured on its other leg; the silent one has no figures
    expect(s.buckets[2]).toMatchObject({ calls: 2, calls_missing_audio: 2, poor_calls: 0, average_mos: 4.1, min_mos: 4.1, average_jitter_ms: 6 })
    expect(s.totals).toMatchObject({ calls: 5, calls_missing_audio: 2, poor_calls: 1, average_mos: 3.8, min_mos: 3.2, average_packet_loss_percent: 1.5 })
  })

  test('by hour, with from and to off the boundaries: the first and last buckets are cut to the period', async () => {
    const p = { from: new Date('2026-06-01T09:30:00.000Z'), to: new Date('2026-06-01T11:15:00.000Z') }
    const s = qualitySummaryView(await qualitySummary(database.db, accountId, p, 'hour'))
    expect(s.buckets.map((b) => [b.start, b.end, b.calls, b.min_mos])).toEqual([
      ['2026-06-01T09:30:00.000Z', '2026-06-01T10:00:00.000Z', 1, 3.2],
      ['2026-06-01T10:00:00.000Z', '2026-06-01T11:00:00.000Z', 0, null],
      ['2026-06-01T11:00:00.000Z', '2026-06-01T11:15:00.000Z', 1, 3.6],
    ])
    expect(s.totals.calls).toBe(2)
  })

  test('a period without calls: zero totals, every bucket empty', async () => {
    const p = { from: new Date('2026-04-01T00:00:00.000Z'), to: new Date('2026-04-03T00:00:00.000Z') }
    const s = qualitySummaryView(await qualitySummary(database.db, accountId, p, 'day'))
    expect(s.totals).toMatchObject({ calls: 0, poor_calls: 0, average_mos: null, p95_jitter_ms: null })
    expect(s.buckets.map((b) => b.calls)).toEqual([0, 0])
  })

  test('worst calls: lowest MOS first, the account’s calls of the period, silent calls not ranked, with both legs', async () => {
    const w = worstCallsView(period, await worstCalls(database.db, accountId, period, 10))
    expect(w.data.map((c) => c.call_id)).toEqual([ids.poor, ids.fair, ids.oneWay, ids.good])
    expect(w.data[0]).toEqual({
      object: 'call_quality',
      call_id: ids.poor,
      direction: 'internal',
      from_number: '101',
      to_number: '102',
      user_id: null,
      from_user_id: 'user_a',
      to_user_id: 'user_b',
      started_at: '2026-06-01T09:49:00.000Z',
      answered_at: '2026-06-01T09:49:05.000Z',
      ended_at: '2026-06-01T09:50:00.000Z',
      duration_seconds: 55,
      mos: 3.2,
      packet_loss_percent: 4,
      jitter_ms: 30,
      poor: true,
      missing_audio: false,
      caller: { packets_received: 1000, packets_sent: 1000, packets_lost: 0, packet_loss_percent: 4, jitter_ms: 10, mos: 3.2 },
      callee: { packets_received: 1000, packets_sent: 1000, packets_lost: 0, packet_loss_percent: 0, jitter_ms: 30, mos: 4 },
    })
    expect(w.data[2]!.caller).toEqual({ packets_received: 0, packets_sent: 1000, packets_lost: 0, packet_loss_percent: null, jitter_ms: null, mos: null })
    const two = await worstCalls(database.db, accountId, period, 2)
    expect(two.map((r) => r.quality.callId)).toEqual([ids.poor, ids.fair])
  })

  test('deleting the account deletes its figures', async () => {
    const rows = () => database.db.select().from(callQuality).where(eq(callQuality.accountId, otherAccount))
    expect(await rows()).toHaveLength(1)
    await database.db.delete(accounts).where(eq(accounts.id, otherAccount))
    expect(await rows()).toHaveLength(0)
  })
})
