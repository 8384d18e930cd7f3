/** Business days of port dates: weekends and observed US federal holidays (OPM's published dates). */
import { describe, expect, test } from 'bun:test'
import { addBusinessDays, businessDaysBetween, easternDate, federalHolidays, focDateProblem, focTimeProblem, holidayOn, isBusinessDay } from './business-days'

describe('US federal holidays', () => {
  test('2026 as OPM publishes them (Independence Day on a Saturday is observed Friday July 3)', () => {
    expect([...federalHolidays(2026).keys()].sort()).toEqual([
      '2026-01-01',
      '2026-01-19',
      '2026-02-16',
      '2026-05-25',
      '2026-06-19',
      '2026-07-03',
      '2026-09-07',
      '2026-10-12',
      '2026-11-11',
      '2026-11-26',
      '2026-12-25',
    ])
  })
  test('2027: Juneteenth and Christmas on Saturdays, observed the Fridays before', () => {
    expect(holidayOn('2027-06-18')).toContain('Juneteenth')
    expect(holidayOn('2027-12-24')).toBe('Christmas Day')
    expect(holidayOn('2027-12-25')).toBeUndefined()
  })
  test("New Year's Day 2022 on a Saturday was observed Friday December 31, 2021", () => {
    expect(holidayOn('2021-12-31')).toBe("New Year's Day")
  })
  test('a Sunday holiday is observed the Monday after (Veterans Day 2029, Independence Day 2027... July 4 2027 is a Sunday)', () => {
    expect(holidayOn('2027-07-05')).toBe('Independence Day')
    expect(holidayOn('2029-11-12')).toBe('Veterans Day')
  })
  test('Juneteenth only from 2021', () => {
    expect(holidayOn('2020-06-19')).toBeUndefined()
  })
})

describe('business days', () => {
  test('weekends and holidays do not count', () => {
    expect(isBusinessDay('2026-11-26')).toBe(false) // Thanksgiving
    expect(isBusinessDay('2026-11-28')).toBe(false) // Saturday
    expect(isBusinessDay('2026-11-27')).toBe(true)
    // From Monday Nov 23, 2026: Tue, Wed, (Thanksgiving), Fri, (weekend), Mon, Tue.
    expect(addBusinessDays('2026-11-23', 5)).toBe('2026-12-01')
    expect(businessDaysBetween('2026-11-23', '2026-12-01')).toBe(5)
  })
  test('the FOC date window: 5 business days to 30 calendar days', () => {
    const today = '2026-11-23'
    expect(focDateProblem('2026-11-30', today)).toContain('at least 5 business days')
    expect(focDateProblem('2026-11-26', today)).toContain('Thanksgiving Day, a federal holiday')
    expect(focDateProblem('2026-11-28', today)).toContain('a weekend day')
    expect(focDateProblem('2026-12-01', today)).toBeUndefined()
    expect(focDateProblem('2026-12-23', today)).toBeUndefined()
    expect(focDateProblem('2026-12-24', today)).toContain('at most 30 calendar days')
    expect(focDateProblem('2026-02-30', today)).toBe('must be a date (YYYY-MM-DD)')
  })
  test('the FOC time window: 08:00 to 20:00', () => {
    expect(focTimeProblem('08:00')).toBeUndefined()
    expect(focTimeProblem('20:00')).toBeUndefined()
    expect(focTimeProblem('07:59')).toContain('between 08:00 and 20:00')
    expect(focTimeProblem('20:01')).toContain('between 08:00 and 20:00')
    expect(focTimeProblem('8:00')).toContain('HH:MM')
  })
  test('today is the US Eastern date', () => {
    expect(easternDate(new Date('2026-11-24T03:00:00Z'))).toBe('2026-11-23')
    expect(easternDate(new Date('2026-11-24T06:00:00Z'))).toBe('2026-11-24')
  })
})
