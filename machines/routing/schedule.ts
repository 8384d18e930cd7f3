// Is a schedule open at an instant? Read in the schedule's IANA time zone with
// Intl.DateTimeFormat (no time zone library), so DST days are the platform's.
import { type Schedule, WEEKDAYS, type Weekday } from './config'

/** Wall-clock reading of an instant in a time zone. */
export interface LocalTime {
  /** "YYYY-MM-DD" */
  date: string
  day: Weekday
  /** Minutes since local midnight, 0..1439. */
  minute: number
}

const formatters = new Map<string, Intl.DateTimeFormat>()

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
    })
    formatters.set(timeZone, f)
  }
  return f
}

const SHORT_DAYS: Record<string, Weekday> = { Mon: 'mon', Tue: 'tue', Wed: 'wed', Thu: 'thu', Fri: 'fri', Sat: 'sat', Sun: 'sun' }

// Formatting is the costly part of a routing decision. Offsets only change on whole
// minutes, so the reading of one minute in one zone is remembered (a pure memo:
// the same inputs give the same answer with or without it).
const lastMinute = new Map<string, { minute: number; local: LocalTime }>()

/** Throws RangeError for an unknown time zone (validation reports it before storing). */
export function localTime(epochMs: number, timeZone: string): LocalTime {
  const minuteOfEpoch = Math.floor(epochMs / 60_000)
  const memo = lastMinute.get(timeZone)
  if (memo && memo.minute === minuteOfEpoch) return memo.local
  let year = ''
  let month = ''
  let dayOfMonth = ''
  let weekday = ''
  let hour = 0
  let minute = 0
  for (const part of formatterFor(timeZone).formatToParts(minuteOfEpoch * 60_000)) {
    if (part.type === 'year') year = part.value
    else if (part.type === 'month') month = part.value
    else if (part.type === 'day') dayOfMonth = part.value
    else if (part.type === 'weekday') weekday = part.value
    else if (part.type === 'hour') hour = Number(part.value)
    else if (part.type === 'minute') minute = Number(part.value)
  }
  const local: LocalTime = { date: `${year}-${month}-${dayOfMonth}`, day: SHORT_DAYS[weekday] ?? 'mon', minute: (hour % 24) * 60 + minute }
  lastMinute.set(timeZone, { minute: minuteOfEpoch, local })
  return local
}

/** "HH:MM" (00:00..24:00) as minutes since midnight; NaN when malformed. */
export function clockMinutes(hhmm: string): number {
  const m = /^(\d{2}):(\d{2})$/.exec(hhmm)
  if (!m) return Number.NaN
  const h = Number(m[1])
  const min = Number(m[2])
  if (min > 59 || h > 24 || (h === 24 && min !== 0)) return Number.NaN
  return h * 60 + min
}

export function isValidTimeZone(timeZone: string): boolean {
  try {
    formatterFor(timeZone)
    return true
  } catch {
    return false
  }
}

export const isWeekday = (s: string): s is Weekday => (WEEKDAYS as readonly string[]).includes(s)

/**
 * Hold wins; then a holiday (local date) is closed all day; then the weekly hours
 * of the local weekday. A schedule whose zone is unknown reads as closed.
 */
export function isScheduleOpen(schedule: Schedule, epochMs: number): boolean {
  if (schedule.hold === 'open') return true
  if (schedule.hold === 'closed') return false
  let local: LocalTime
  try {
    local = localTime(epochMs, schedule.timeZone)
  } catch {
    return false
  }
  if (schedule.holidays.includes(local.date)) return false
  for (const interval of schedule.hours) {
    if (interval.day !== local.day) continue
    if (local.minute >= clockMinutes(interval.open) && local.minute < clockMinutes(interval.close)) return true
  }
  return false
}
