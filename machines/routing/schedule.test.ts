import { describe, expect, test } from 'bun:test'
import type { Schedule } from './config'
import { isScheduleOpen, localTime } from './schedule'

const at = (iso: string) => Date.parse(iso)
const schedule = (s: Partial<Schedule> & Pick<Schedule, 'timeZone'>): Schedule => ({ id: 'sch', hours: [], holidays: [], hold: null, ...s })

describe('schedules are read in the location time zone', () => {
  test('local date, weekday and minute of an instant', () => {
    expect(localTime(at('2026-11-23T12:00:00Z'), 'Asia/Tokyo')).toEqual({ date: '2026-11-23', day: 'mon', minute: 21 * 60 })
    expect(localTime(at('2026-11-23T03:30:00Z'), 'America/Los_Angeles')).toEqual({ date: '2026-11-22', day: 'sun', minute: 19 * 60 + 30 })
    // Chatham is UTC+13:45 in (southern) summer: the memo must not assume whole hours.
    expect(localTime(at('2026-11-23T00:00:00Z'), 'Pacific/Chatham')).toEqual({ date: '2026-11-23', day: 'mon', minute: 13 * 60 + 45 })
  })

  test('midnight: an open day starts at 00:00 and ends before the next day 00:00', () => {
    const s = schedule({ timeZone: 'Asia/Tokyo', hours: [{ day: 'mon', open: '00:00', close: '24:00' }] })
    expect(isScheduleOpen(s, at('2026-11-22T14:59:00Z'))).toBe(false) // Sun 23:59 Tokyo
    expect(isScheduleOpen(s, at('2026-11-22T15:00:00Z'))).toBe(true) // Mon 00:00
    expect(isScheduleOpen(s, at('2026-11-23T14:59:59Z'))).toBe(true) // Mon 23:59:59
    expect(isScheduleOpen(s, at('2026-11-23T15:00:00Z'))).toBe(false) // Tue 00:00
  })

  test('close is exclusive, open inclusive', () => {
    const s = schedule({ timeZone: 'UTC', hours: [{ day: 'mon', open: '09:00', close: '17:00' }] })
    expect(isScheduleOpen(s, at('2026-11-23T08:59:59Z'))).toBe(false)
    expect(isScheduleOpen(s, at('2026-11-23T09:00:00Z'))).toBe(true)
    expect(isScheduleOpen(s, at('2026-11-23T16:59:59Z'))).toBe(true)
    expect(isScheduleOpen(s, at('2026-11-23T17:00:00Z'))).toBe(false)
  })

  test('DST starts: the skipped local hour (New York, 8 March 2026, 02:00 → 03:00)', () => {
    const s = schedule({ timeZone: 'America/New_York', hours: [{ day: 'sun', open: '01:00', close: '03:00' }] })
    expect(isScheduleOpen(s, at('2026-03-08T06:59:00Z'))).toBe(true) // 01:59 EST
    expect(isScheduleOpen(s, at('2026-03-08T07:00:00Z'))).toBe(false) // 03:00 EDT: the window is over after one real hour
    const late = schedule({ timeZone: 'America/New_York', hours: [{ day: 'sun', open: '03:00', close: '04:00' }] })
    expect(isScheduleOpen(late, at('2026-03-08T07:00:00Z'))).toBe(true)
  })

  test('DST ends: the repeated local hour is open both times (New York, 1 November 2026)', () => {
    const s = schedule({ timeZone: 'America/New_York', hours: [{ day: 'sun', open: '01:00', close: '02:00' }] })
    expect(isScheduleOpen(s, at('2026-11-01T05:30:00Z'))).toBe(true) // 01:30 EDT
    expect(isScheduleOpen(s, at('2026-11-01T06:30:00Z'))).toBe(true) // 01:30 EST
    expect(isScheduleOpen(s, at('2026-11-01T07:00:00Z'))).toBe(false) // 02:00 EST
  })

  test('a holiday is the local date, closed all day', () => {
    const s = schedule({
      timeZone: 'Europe/Paris',
      hours: ['thu', 'fri'].map((day) => ({ day: day as 'thu' | 'fri', open: '00:00', close: '24:00' })),
      holidays: ['2026-12-25'],
    })
    expect(isScheduleOpen(s, at('2026-12-24T22:59:00Z'))).toBe(true) // Thu 24th 23:59 Paris
    expect(isScheduleOpen(s, at('2026-12-24T23:00:00Z'))).toBe(false) // Fri 25th 00:00 Paris, still the 24th in UTC
    expect(isScheduleOpen(s, at('2026-12-25T22:59:00Z'))).toBe(false)
    expect(isScheduleOpen(s, at('2026-12-25T23:00:00Z'))).toBe(false) // Sat: no hours
  })

  test('hold open opens a closed time; hold closed closes an open time, holidays included', () => {
    const base = { timeZone: 'UTC', hours: [{ day: 'mon' as const, open: '09:00', close: '17:00' }], holidays: ['2026-11-23'] }
    expect(isScheduleOpen(schedule(base), at('2026-11-23T10:00:00Z'))).toBe(false)
    expect(isScheduleOpen(schedule({ ...base, hold: 'open' }), at('2026-11-23T10:00:00Z'))).toBe(true)
    expect(isScheduleOpen(schedule({ ...base, hold: 'open' }), at('2026-11-24T03:00:00Z'))).toBe(true)
    expect(isScheduleOpen(schedule({ ...base, holidays: [], hold: 'closed' }), at('2026-11-23T10:00:00Z'))).toBe(false)
  })

  test('an unknown time zone reads as closed rather than throwing at call time', () => {
    expect(isScheduleOpen(schedule({ timeZone: 'Mars/Olympus', hours: [{ day: 'mon', open: '00:00', close: '24:00' }] }), 0)).toBe(false)
  })
})
