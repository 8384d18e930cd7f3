/**
 * Schedules: weekly open hours in a time zone, closed holidays, and a hold that
 * forces open or closed until cleared. Dial plan schedule nodes read them; the
 * routing guard checks hours, dates and the zone (machines/routing validate).
 */
import { and, eq } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { schedules } from '../../db/schema'
import type { OpenIntervalRow } from '../../db/schema/routing'
import { type FieldDetails, notFound, ValidationError } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { guardedDelete, guardedWrite, type RoutingCheck } from './config'

export type ScheduleRow = typeof schedules.$inferSelect

export function scheduleView(row: ScheduleRow) {
  return {
    id: row.id,
    object: 'schedule' as const,
    account: row.accountId,
    name: row.name,
    time_zone: row.timeZone,
    hours: row.hours,
    holidays: row.holidays,
    hold: row.hold,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export interface ScheduleInput {
  name?: string
  time_zone?: string
  hours?: OpenIntervalRow[]
  holidays?: string[]
}

/** A holiday must be a real calendar date (the pattern alone lets 2026-02-31 through). */
function checkHolidays(holidays: string[] | undefined) {
  const details: FieldDetails = {}
  holidays?.forEach((d, i) => {
    const date = new Date(`${d}T00:00:00Z`)
    if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== d) details[`holidays.${i}`] = 'a holiday is a real date YYYY-MM-DD'
  })
  if (Object.keys(details).length > 0) throw new ValidationError(details)
}

/**
 * `account.timeZone` (config.timezone) stands in for a zone the request leaves out:
 * a business's hours are its own local time, and the routing check still refuses a
 * zone the engine cannot read, naming time_zone.
 */
export async function createSchedule(
  tx: Db,
  clock: Clock,
  check: RoutingCheck,
  account: { id: string; timeZone: string },
  input: ScheduleInput & { name: string },
) {
  checkHolidays(input.holidays)
  const accountId = account.id
  const id = newId('schedule')
  const now = clock.now()
  return guardedWrite(tx, check, accountId, { collection: 'schedules', id }, async () => {
    const [row] = await tx
      .insert(schedules)
      .values({
        id,
        accountId,
        name: input.name,
        timeZone: input.time_zone ?? account.timeZone,
        hours: input.hours ?? [],
        holidays: input.holidays ?? [],
        hold: null,
        createdAt: now,
        updatedAt: now,
      })
      .returning()
    return row!
  })
}

export async function getSchedule(db: Db, accountId: string, id: string): Promise<ScheduleRow> {
  const [row] = await db
    .select()
    .from(schedules)
    .where(and(eq(schedules.accountId, accountId), eq(schedules.id, id)))
  if (!row) throw notFound('schedule', id)
  return row
}

export function listSchedules(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<ScheduleRow>(db, schedules, eq(schedules.accountId, accountId), page)
}

async function store(tx: Db, clock: Clock, accountId: string, id: string, set: Partial<typeof schedules.$inferInsert>) {
  const [row] = await tx
    .update(schedules)
    .set({ ...set, updatedAt: clock.now() })
    .where(and(eq(schedules.accountId, accountId), eq(schedules.id, id)))
    .returning()
  return row!
}

/** Fields given replace the stored ones (hours and holidays as whole lists). */
export async function updateSchedule(tx: Db, clock: Clock, check: RoutingCheck, accountId: string, id: string, input: ScheduleInput) {
  await getSchedule(tx, accountId, id)
  checkHolidays(input.holidays)
  const set: Partial<typeof schedules.$inferInsert> = {}
  if (input.name !== undefined) set.name = input.name
  if (input.time_zone !== undefined) set.timeZone = input.time_zone
  if (input.hours !== undefined) set.hours = input.hours
  if (input.holidays !== undefined) set.holidays = input.holidays
  return guardedWrite(tx, check, accountId, { collection: 'schedules', id }, () => store(tx, clock, accountId, id, set))
}

/** POST .../hold sets it (open or closed, overriding hours and holidays); DELETE .../hold clears it (null). */
export async function setScheduleHold(tx: Db, clock: Clock, accountId: string, id: string, hold: 'open' | 'closed' | null) {
  await getSchedule(tx, accountId, id)
  return store(tx, clock, accountId, id, { hold })
}

export async function deleteSchedule(tx: Db, check: RoutingCheck, accountId: string, id: string) {
  await getSchedule(tx, accountId, id)
  await guardedDelete(tx, check, accountId, `schedule ${id}`, async () => {
    await tx.delete(schedules).where(and(eq(schedules.accountId, accountId), eq(schedules.id, id)))
  })
}
