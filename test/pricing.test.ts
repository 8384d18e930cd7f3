/**
 * Account pricing (latest agreed) and effective pricing (what is billed now), with
 * the month-start rule: a change takes effect at the start of the next month (UTC).
 * The clock is manual; each test sets it before it starts.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { sampleAccount, startTestService } from './support/service'

const clock = manualClock()
const t = await startTestService({}, { clock })

const INITIAL = { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 }
const rates = (p: any) => ({ per_user_rate: p.per_user_rate, per_did_rate: p.per_did_rate, per_voiceai_location_rate: p.per_voiceai_location_rate })

async function accountAt(when: string, body: Record<string, unknown> = {}) {
  clock.set(when)
  return t.account({ body })
}
const getPricing = (a: { id: string; key: string }) => t.call('GET', `/v1/accounts/${a.id}/pricing`, { key: a.key })
const setPricing = (a: { id: string; key: string }, body: unknown) => t.call('POST', `/v1/accounts/${a.id}/pricing`, { key: a.key, body })
const effective = (a: { id: string; key: string }) => t.call('GET', `/v1/accounts/${a.id}/effective-pricing`, { key: a.key })

async function session(key: string, account: string, components: string[]) {
  const r = await t.call('POST', '/v1/account_sessions', {
    key,
    body: { account, components: Object.fromEntries(components.map((c) => [c, { enabled: true }])) },
  })
  expect(r.status).toBe(200)
  return r.body.client_secret as string
}

describe('account pricing', () => {
  test('GET returns the pricing agreed at creation (AccountPricing)', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    const r = await getPricing(a)
    expect(r.status).toBe(200)
    expect(r.body.object).toBe('account_pricing')
    expect(r.body.account).toBe(a.id)
    expect(rates(r.body)).toEqual(INITIAL)
    expect(r.body.agreed_at).toBe('2026-01-15T12:00:00.000Z')
    expect(r.body.effective_from).toBe('2026-01-01')
  })

  test('POST creates or replaces: GET then returns the latest agreed', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    clock.set('2026-01-20T08:30:00.000Z')
    const next = { per_user_rate: 2000, per_did_rate: 250, per_voiceai_location_rate: 9900 }
    const r = await setPricing(a, next)
    expect(r.status).toBe(200)
    expect(r.body.object).toBe('account_pricing')
    expect(r.body.account).toBe(a.id)
    expect(rates(r.body)).toEqual(next)
    expect(r.body.agreed_at).toBe('2026-01-20T08:30:00.000Z')
    expect(r.body.effective_from).toBe('2026-02-01')
    const g = await getPricing(a)
    expect(g.status).toBe(200)
    expect(g.body).toEqual(r.body)
    // Replacing again: the latest agreed wins.
    clock.advance(60_000)
    const third = { per_user_rate: 1800, per_did_rate: 200, per_voiceai_location_rate: 0 }
    await setPricing(a, third)
    expect(rates((await getPricing(a)).body)).toEqual(third)
  })

  test('all three rates are required: a missing rate is a validation_error naming it', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    const empty = await setPricing(a, {})
    expect(empty.status).toBe(400)
    expect(empty.body.code).toBe('validation_error')
    expect(empty.body.details).toEqual({ per_user_rate: 'is required', per_did_rate: 'is required', per_voiceai_location_rate: 'is required' })
    for (const missing of ['per_user_rate', 'per_did_rate', 'per_voiceai_location_rate'] as const) {
      const body: Record<string, number> = { per_user_rate: 1, per_did_rate: 2, per_voiceai_location_rate: 3 }
      delete body[missing]
      const r = await setPricing(a, body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(r.body.details).toEqual({ [missing]: 'is required' })
    }
    expect(rates((await getPricing(a)).body)).toEqual(INITIAL)
  })

  test('rates are integers 0 to 1000000: out of range, fractional, text or null is a validation_error', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    for (const bad of [-1, 1_000_001, 12.5, '100', null, true]) {
      const r = await setPricing(a, { per_user_rate: bad, per_did_rate: 0, per_voiceai_location_rate: 0 })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(Object.keys(r.body.details)).toEqual(['per_user_rate'])
    }
    const all = await setPricing(a, { per_user_rate: -5, per_did_rate: 2_000_000, per_voiceai_location_rate: 0.1 })
    expect(Object.keys(all.body.details).sort()).toEqual(['per_did_rate', 'per_user_rate', 'per_voiceai_location_rate'])
    // Nothing was agreed by the refused requests.
    const g = await getPricing(a)
    expect(rates(g.body)).toEqual(INITIAL)
    expect(g.body.agreed_at).toBe('2026-01-15T12:00:00.000Z')
    // The bounds themselves are accepted.
    const edge = await setPricing(a, { per_user_rate: 0, per_did_rate: 1_000_000, per_voiceai_location_rate: 0 })
    expect(edge.status).toBe(200)
    expect(rates(edge.body)).toEqual({ per_user_rate: 0, per_did_rate: 1_000_000, per_voiceai_location_rate: 0 })
  })

  test('unknown fields are a validation_error', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    const r = await setPricing(a, { ...INITIAL, per_fax_rate: 5, effective_from: '2026-01-01' })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details.per_fax_rate).toBe('is not a known field')
    expect(r.body.details.effective_from).toBe('is not a known field')
  })

  test('an unknown account is 404 account_not_found; another platform 403; the other mode 403 account_mode_mismatch', async () => {
    clock.set('2026-01-15T12:00:00.000Z')
    const p = await t.platform({ live_enabled: true })
    const missing = await t.call('GET', '/v1/accounts/acct_doesnotexist/pricing', { key: p.test_key })
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe('account_not_found')
    const missingPost = await t.call('POST', '/v1/accounts/acct_doesnotexist/pricing', { key: p.test_key, body: INITIAL })
    expect(missingPost.status).toBe(404)
    expect((await t.call('GET', '/v1/accounts/acct_doesnotexist/effective-pricing', { key: p.test_key })).status).toBe(404)

    const live = await t.call('POST', '/v1/accounts', { key: p.live_key, body: sampleAccount() })
    expect(live.status).toBe(200)
    for (const path of [`/v1/accounts/${live.body.id}/pricing`, `/v1/accounts/${live.body.id}/effective-pricing`]) {
      const r = await t.call('GET', path, { key: p.test_key })
      expect(r.status).toBe(403)
      expect(r.body.code).toBe('account_mode_mismatch')
    }
    const wrongMode = await t.call('POST', `/v1/accounts/${live.body.id}/pricing`, { key: p.test_key, body: { ...INITIAL, per_user_rate: 1 } })
    expect(wrongMode.status).toBe(403)
    expect(wrongMode.body.code).toBe('account_mode_mismatch')

    const other = await t.platform()
    for (const path of [`/v1/accounts/${live.body.id}/pricing`, `/v1/accounts/${live.body.id}/effective-pricing`]) {
      expect((await t.call('GET', path, { key: other.live_key })).status).toBe(403)
    }
    const foreign = await t.call('POST', `/v1/accounts/${live.body.id}/pricing`, { key: other.live_key, body: { ...INITIAL, per_user_rate: 1 } })
    expect(foreign.status).toBe(403)
    expect(rates((await t.call('GET', `/v1/accounts/${live.body.id}/pricing`, { key: p.live_key })).body)).toEqual(INITIAL)
  })

  test('an account session reads its own pricing and effective pricing but cannot set pricing or read another account’s', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    const token = await session(a.key, a.id, ['account_onboarding', 'agreement_acceptance'])
    const g = await t.call('GET', `/v1/accounts/${a.id}/pricing`, { key: token })
    expect(g.status).toBe(200)
    expect(rates(g.body)).toEqual(INITIAL)
    const e = await t.call('GET', `/v1/accounts/${a.id}/effective-pricing`, { key: token })
    expect(e.status).toBe(200)
    expect(rates(e.body)).toEqual(INITIAL)
    const post = await t.call('POST', `/v1/accounts/${a.id}/pricing`, { key: token, body: { ...INITIAL, per_user_rate: 1 } })
    expect(post.status).toBe(403)
    expect(rates((await getPricing(a)).body)).toEqual(INITIAL)
    const sibling = await t.call('POST', '/v1/accounts', { key: a.key, body: sampleAccount() })
    expect((await t.call('GET', `/v1/accounts/${sibling.body.id}/pricing`, { key: token })).status).toBe(403)
    expect((await t.call('GET', `/v1/accounts/${sibling.body.id}/effective-pricing`, { key: token })).status).toBe(403)
  })
})

describe('effective pricing', () => {
  test('the pricing agreed at creation is in force from the month the account was created; next is null', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    const r = await effective(a)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ object: 'effective_pricing', ...INITIAL, effective_from: '2026-01-01', next: null })
  })

  test('a rate change takes effect at the start of the next month: agreed mid-month it shows in next, the old rates stay effective', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    clock.set('2026-01-20T10:00:00.000Z')
    const change = { per_user_rate: 2500, per_did_rate: 400, per_voiceai_location_rate: 1000 }
    expect((await setPricing(a, change)).status).toBe(200)
    // Account pricing is the latest agreed ...
    expect(rates((await getPricing(a)).body)).toEqual(change)
    // ... effective pricing is what is billed now.
    const r = await effective(a)
    expect(r.body).toEqual({
      object: 'effective_pricing',
      ...INITIAL,
      effective_from: '2026-01-01',
      next: { ...change, effective_from: '2026-02-01' },
    })
    // Still so on the last millisecond of the month (UTC).
    clock.set('2026-01-31T23:59:59.999Z')
    expect((await effective(a)).body).toEqual(r.body)
  })

  test('after the clock passes the month start, the new rates are effective and next is null', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    clock.set('2026-01-20T10:00:00.000Z')
    const change = { per_user_rate: 2500, per_did_rate: 400, per_voiceai_location_rate: 1000 }
    await setPricing(a, change)
    clock.set('2026-02-01T00:00:00.000Z')
    const r = await effective(a)
    expect(r.body).toEqual({ object: 'effective_pricing', ...change, effective_from: '2026-02-01', next: null })
    clock.set('2026-04-10T00:00:00.000Z')
    const later = await effective(a)
    expect(later.body).toEqual({ object: 'effective_pricing', ...change, effective_from: '2026-02-01', next: null })
  })

  test('two changes in one month: the latest wins', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    const first = { per_user_rate: 2000, per_did_rate: 300, per_voiceai_location_rate: 0 }
    const second = { per_user_rate: 1700, per_did_rate: 350, per_voiceai_location_rate: 500 }
    clock.set('2026-01-18T10:00:00.000Z')
    await setPricing(a, first)
    clock.set('2026-01-25T10:00:00.000Z')
    await setPricing(a, second)
    const pending = await effective(a)
    expect(rates(pending.body)).toEqual(INITIAL)
    expect(pending.body.next).toEqual({ ...second, effective_from: '2026-02-01' })
    expect(rates((await getPricing(a)).body)).toEqual(second)
    clock.set('2026-02-03T00:00:00.000Z')
    const now = await effective(a)
    expect(now.body).toEqual({ object: 'effective_pricing', ...second, effective_from: '2026-02-01', next: null })
  })

  test('two changes agreed at the same instant: the one agreed last wins', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    clock.set('2026-01-18T10:00:00.000Z')
    const first = { per_user_rate: 2000, per_did_rate: 300, per_voiceai_location_rate: 0 }
    const second = { per_user_rate: 1700, per_did_rate: 350, per_voiceai_location_rate: 500 }
    await setPricing(a, first)
    await setPricing(a, second)
    expect(rates((await getPricing(a)).body)).toEqual(second)
    expect((await effective(a)).body.next).toEqual({ ...second, effective_from: '2026-02-01' })
    clock.set('2026-02-01T00:00:00.000Z')
    expect(rates((await effective(a)).body)).toEqual(second)
  })

  test('a change agreed on the first day of a month takes effect at the start of the following month', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    clock.set('2026-03-01T00:00:00.000Z')
    const change = { per_user_rate: 100, per_did_rate: 100, per_voiceai_location_rate: 100 }
    const r = await setPricing(a, change)
    expect(r.body.effective_from).toBe('2026-04-01')
    const e = await effective(a)
    expect(rates(e.body)).toEqual(INITIAL)
    expect(e.body.effective_from).toBe('2026-01-01')
    expect(e.body.next).toEqual({ ...change, effective_from: '2026-04-01' })
  })

  test('a change agreed in December takes effect on 1 January of the next year', async () => {
    const a = await accountAt('2026-12-02T12:00:00.000Z')
    expect((await effective(a)).body.effective_from).toBe('2026-12-01')
    clock.set('2026-12-31T23:00:00.000Z')
    const change = { per_user_rate: 3000, per_did_rate: 0, per_voiceai_location_rate: 0 }
    await setPricing(a, change)
    expect((await effective(a)).body.next).toEqual({ ...change, effective_from: '2027-01-01' })
    clock.set('2027-01-01T00:00:00.000Z')
    expect((await effective(a)).body).toEqual({ object: 'effective_pricing', ...change, effective_from: '2027-01-01', next: null })
  })

  test('changes in consecutive months: each takes effect at its own month start', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    const feb = { per_user_rate: 2000, per_did_rate: 300, per_voiceai_location_rate: 0 }
    const mar = { per_user_rate: 2100, per_did_rate: 310, per_voiceai_location_rate: 0 }
    clock.set('2026-01-20T00:00:00.000Z')
    await setPricing(a, feb)
    clock.set('2026-02-10T00:00:00.000Z')
    await setPricing(a, mar)
    const inFeb = await effective(a)
    expect(inFeb.body).toEqual({ object: 'effective_pricing', ...feb, effective_from: '2026-02-01', next: { ...mar, effective_from: '2026-03-01' } })
    clock.set('2026-03-01T00:00:00.000Z')
    expect((await effective(a)).body).toEqual({ object: 'effective_pricing', ...mar, effective_from: '2026-03-01', next: null })
  })

  test('a change back to the rates in force is still a change that waits for the month start', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    const raise = { per_user_rate: 9000, per_did_rate: 300, per_voiceai_location_rate: 0 }
    clock.set('2026-01-20T00:00:00.000Z')
    await setPricing(a, raise)
    clock.set('2026-02-05T00:00:00.000Z')
    await setPricing(a, INITIAL)
    const e = await effective(a)
    expect(rates(e.body)).toEqual(raise)
    expect(e.body.next).toEqual({ ...INITIAL, effective_from: '2026-03-01' })
  })

  test('all-zero rates may be agreed (0 means no rate agreed) and follow the same rule', async () => {
    const a = await accountAt('2026-01-15T12:00:00.000Z')
    const zero = { per_user_rate: 0, per_did_rate: 0, per_voiceai_location_rate: 0 }
    const r = await setPricing(a, zero)
    expect(r.status).toBe(200)
    expect((await effective(a)).body.next).toEqual({ ...zero, effective_from: '2026-02-01' })
    clock.set('2026-02-01T00:00:00.000Z')
    expect(rates((await effective(a)).body)).toEqual(zero)
  })

  test('an account created with zero rates shows zero effective rates from its creation month', async () => {
    const zero = { per_user_rate: 0, per_did_rate: 0, per_voiceai_location_rate: 0 }
    const a = await accountAt('2026-05-20T12:00:00.000Z', { pricing: zero })
    expect((await effective(a)).body).toEqual({ object: 'effective_pricing', ...zero, effective_from: '2026-05-01', next: null })
    expect(rates((await getPricing(a)).body)).toEqual(zero)
  })
})
