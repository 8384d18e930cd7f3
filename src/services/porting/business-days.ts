/**
 * Business days for port dates (spec, Limits: requested_foc_date from 5 business days
 * to 30 calendar days ahead; time 08:00 to 20:00 Eastern). A business day is a weekday
 * that is not a US federal holiday as observed (5 U.S.C. 6103): New Year's Day,
 * Birthday of Martin Luther King Jr. (third Monday of January), Washington's Birthday
 * (third Monday of February), Memorial Day (last Monday of May), Juneteenth (June 19,
 * from 2021), Independence Day (July 4), Labor Day (first Monday of September),
 * Columbus Day (second Monday of October), Veterans Day (November 11), Thanksgiving
 * (fourth Thursday of November) and Christmas (December 25). A fixed-date holiday on
 * a Saturday is observed the Friday before (New Year's Day on a Saturday: December 31
 * of the year before), on a Sunday the Monday after.
 *
 * Dates are calendar dates (YYYY-MM-DD), computed in UTC arithmetic; "today" is the
 * date in US Eastern time (the carriers' clock for port times).
 */

const pad = (n: number) => String(n).padStart(2, '0')
const iso = (y: number, m: number, d: number) => `${y}-${pad(m)}-${pad(d)}`
/** Day of week of a date, 0 = Sunday. */
const weekday = (y: number, m: number, d: number) => new Date(Date.UTC(y, m - 1, d)).getUTCDay()
const daysInMonth = (y: number, m: number) => new Date(Date.UTC(y, m, 0)).getUTCDate()

/** The n-th (1-based) `dow` of a month; n = -1: the last one. */
function nthWeekday(y: number, m: number, dow: number, n: number): string {
  if (n > 0) {
    const first = weekday(y, m, 1)
    return iso(y, m, 1 + ((dow - first + 7) % 7) + (n - 1) * 7)
  }
  const last = daysInMonth(y, m)
  return iso(y, m, last - ((weekday(y, m, last) - dow + 7) % 7))
}

/** A fixed-date holiday as observed: Saturday → the Friday before, Sunday → the Monday after. */
function observed(y: number, m: number, d: number): string {
  const t = new Date(Date.UTC(y, m - 1, d))
  const dow = t.getUTCDay()
  if (dow === 6) t.setUTCDate(t.getUTCDate() - 1)
  if (dow === 0) t.setUTCDate(t.getUTCDate() + 1)
  return t.toISOString().slice(0, 10)
}

/** The observed federal holidays of a year, by date, with their names (may include December 31 of the year before). */
export function federalHolidays(year: number): Map<string, string> {
  const y = year
  const list: [string, string][] = [
    [observed(y, 1, 1), "New Year's Day"],
    [nthWeekday(y, 1, 1, 3), 'Birthday of Martin Luther King, Jr.'],
    [nthWeekday(y, 2, 1, 3), "Washington's Birthday"],
    [nthWeekday(y, 5, 1, -1), 'Memorial Day'],
    ...(y >= 2021 ? [[observed(y, 6, 19), 'Juneteenth National Independence Day'] as [string, string]] : []),
    [observed(y, 7, 4), 'Independence Day'],
    [nthWeekday(y, 9, 1, 1), 'Labor Day'],
    [nthWeekday(y, 10, 1, 2), 'Columbus Day'],
    [observed(y, 11, 11), 'Veterans Day'],
    [nthWeekday(y, 11, 4, 4), 'Thanksgiving Day'],
    [observed(y, 12, 25), 'Christmas Day'],
  ]
  return new Map(list)
}

/** The federal holiday observed on this date, if any. */
export function holidayOn(date: string): string | undefined {
  const y = Number(date.slice(0, 4))
  // New Year's Day of the next year may be observed on December 31.
  return federalHolidays(y).get(date) ?? (date.endsWith('-12-31') ? federalHolidays(y + 1).get(date) : undefined)
}

export function isWeekend(date: string): boolean {
  const dow = new Date(`${date}T00:00:00Z`).getUTCDay()
  return dow === 0 || dow === 6
}

export const isBusinessDay = (date: string) => !isWeekend(date) && holidayOn(date) === undefined

export function addDays(date: string, days: number): string {
  const t = new Date(`${date}T00:00:00Z`)
  t.setUTCDate(t.getUTCDate() + days)
  return t.toISOString().slice(0, 10)
}

/** Calendar days from `from` to `to` (negative when `to` is earlier). */
export const daysBetween = (from: string, to: string) => Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000)

/** Business days after `from` up to and including `to` (0 when `to` is not later). */
export function businessDaysBetween(from: string, to: string): number {
  let n = 0
  for (let d = addDays(from, 1); d <= to; d = addDays(d, 1)) if (isBusinessDay(d)) n++
  return n
}

/** The n-th business day after `from`. */
export function addBusinessDays(from: string, n: number): string {
  let d = from
  for (let left = n; left > 0; ) {
    d = addDays(d, 1)
    if (isBusinessDay(d)) left--
  }
  return d
}

/** The calendar date in US Eastern time at this instant. */
export function easternDate(at: Date): string {
  // en-CA formats as YYYY-MM-DD.
  return new Intl.DateTimeFormat('en-CA', { timeZone: 'America/New_York', year: 'numeric', month: '2-digit', day: '2-digit' }).format(at)
}

export const PORT_MIN_BUSINESS_DAYS = 5
export const PORT_MAX_CALENDAR_DAYS = 30
export const PORT_EARLIEST_TIME = '08:00'
export const PORT_LATEST_TIME = '20:00'

/** Why a requested FOC date is refused, or undefined when it is within the window (today: the Eastern date now). */
export function focDateProblem(date: string, today: string): string | undefined {
  const parsed = new Date(`${date}T00:00:00Z`)
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== date) return 'must be a date (YYYY-MM-DD)'
  const earliest = addBusinessDays(today, PORT_MIN_BUSINESS_DAYS)
  const latest = addDays(today, PORT_MAX_CALENDAR_DAYS)
  if (date < earliest) {
    const why = isWeekend(date) ? ' (a weekend day)' : holidayOn(date) ? ` (${holidayOn(date)}, a federal holiday)` : ''
    return `must be at least ${PORT_MIN_BUSINESS_DAYS} business days ahead (weekends and US federal holidays do not count): ${earliest} or later, today being ${today} US Eastern; ${date}${why} is too soon`
  }
  if (date > latest) return `must be at most ${PORT_MAX_CALENDAR_DAYS} calendar days ahead: ${latest} or earlier, today being ${today} US Eastern`
  return undefined
}

/** Why a requested FOC time is refused (HH:MM, US Eastern, 08:00 to 20:00), or undefined. */
export function focTimeProblem(time: string): string | undefined {
  if (!/^([01]\d|2[0-3]):[0-5]\d$/.test(time)) return 'must be a time HH:MM (24-hour, US Eastern)'
  if (time < PORT_EARLIEST_TIME || time > PORT_LATEST_TIME) return `must be between ${PORT_EARLIEST_TIME} and ${PORT_LATEST_TIME} US Eastern`
  return undefined
}
