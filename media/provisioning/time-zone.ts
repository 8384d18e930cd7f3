/**
 * Phones do not know IANA zone names: they want a UTC offset and, where the zone
 * observes daylight saving, a rule ("second Sunday of March at 02:00"). We derive
 * both from the runtime's time zone database for a given year, so a file generated
 * today carries this year's rule (phones refetch their files regularly).
 */

export interface DstTransition {
  month: number // 1-12
  /** 1-4: that occurrence of `weekday` in the month; 5: the last one. */
  week: number
  /** 0 = Sunday … 6 = Saturday. */
  weekday: number
  /** Local wall-clock hour at which the change happens (before the change). */
  hour: number
  /** Day of the month, for phones that take a fixed date. */
  day: number
}

export interface ZoneRules {
  /** Standard (winter) offset from UTC, in minutes east. */
  standardOffsetMinutes: number
  dst?: { start: DstTransition; end: DstTransition; savingMinutes: number }
}

const formatters = new Map<string, Intl.DateTimeFormat>()
const rulesCache = new Map<string, ZoneRules>()

function offsetMinutes(timeZone: string, utcMs: number): number {
  let f = formatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' })
    formatters.set(timeZone, f)
  }
  const name = f.formatToParts(utcMs).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT'
  const m = /^GMT(?:([+-])(\d{1,2})(?::?(\d{2}))?)?$/.exec(name)
  if (!m?.[1]) return 0
  const minutes = Number(m[2]) * 60 + Number(m[3] ?? 0)
  return m[1] === '-' ? -minutes : minutes
}

/** The zone's offset and daylight-saving rule in `year`. Throws a RangeError for an unknown zone. */
export function zoneRules(timeZone: string, year: number): ZoneRules {
  const cacheKey = `${timeZone}@${year}`
  const cached = rulesCache.get(cacheKey)
  if (cached) return cached
  const hour = 3_600_000
  const start = Date.UTC(year, 0, 1)
  const end = Date.UTC(year + 1, 0, 1)
  // Offsets at each day's start; a change between two days is then pinned to the hour.
  const changes: { at: number; before: number; after: number }[] = []
  let previous = offsetMinutes(timeZone, start)
  const offsets = new Set([previous])
  for (let t = start + 24 * hour; t <= end; t += 24 * hour) {
    const current = offsetMinutes(timeZone, t)
    if (current !== previous) {
      let at = t - 24 * hour
      while (offsetMinutes(timeZone, at + hour) === previous) at += hour
      changes.push({ at: at + hour, before: previous, after: current })
      offsets.add(current)
      previous = current
    }
  }
  const standard = Math.min(...offsets)
  const forward = changes.find((c) => c.after > c.before)
  const back = changes.find((c) => c.after < c.before)
  const rules: ZoneRules =
    forward && back && changes.length === 2
      ? {
          standardOffsetMinutes: standard,
          dst: { start: transition(forward.at, forward.before), end: transition(back.at, back.before), savingMinutes: forward.after - forward.before },
        }
      : // No DST this year (or a one-off offset change): the offset in force at the year's end is what the phone should use.
        { standardOffsetMinutes: offsetMinutes(timeZone, end) }
  rulesCache.set(cacheKey, rules)
  return rules
}

function transition(utcMs: number, offsetBefore: number): DstTransition {
  const local = new Date(utcMs + offsetBefore * 60_000)
  const day = local.getUTCDate()
  const daysInMonth = new Date(Date.UTC(local.getUTCFullYear(), local.getUTCMonth() + 1, 0)).getUTCDate()
  return {
    month: local.getUTCMonth() + 1,
    week: day + 7 > daysInMonth ? 5 : Math.ceil(day / 7),
    weekday: local.getUTCDay(),
    hour: local.getUTCHours(),
    day,
  }
}
