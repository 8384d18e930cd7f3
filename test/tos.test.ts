/**
 * The subscription agreement (TOS): reading it, accepting it with the
 * agreement_acceptance capability, the version and pricing preconditions,
 * idempotent re-acceptance, the pricing snapshot and server-derived evidence.
 */
import { describe, expect, test } from 'bun:test'
import { manualClock } from '../src/clock'
import { sampleAccount, startTestService } from './support/service'

const clock = manualClock('2026-02-10T09:00:00.000Z')
const t = await startTestService({}, { clock })

const UA = 'VoiceTests/1.0 (tos acceptance)'
const INITIAL = { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 }
const ZERO = { per_user_rate: 0, per_did_rate: 0, per_voiceai_location_rate: 0 }
const rates = (p: any) => ({ per_user_rate: p.per_user_rate, per_did_rate: p.per_did_rate, per_voiceai_location_rate: p.per_voiceai_location_rate })

const getTos = (a: { id: string }, key: string, query = '') => t.call('GET', `/v1/accounts/${a.id}/tos${query}`, { key })
const accept = (a: { id: string }, key: string, body: unknown, ua = UA) =>
  t.call('POST', `/v1/accounts/${a.id}/tos`, { key, body, headers: { 'user-agent': ua } })

async function currentVersion(a: { id: string; key: string }) {
  const r = await getTos(a, a.key)
  expect(r.status).toBe(200)
  return r.body.version as string
}

async function session(key: string, account: string, components: string[]) {
  const r = await t.call('POST', '/v1/account_sessions', {
    key,
    body: { account, components: Object.fromEntries(components.map((c) => [c, { enabled: true }])) },
  })
  expect(r.status).toBe(200)
  return r.body.client_secret as string
}

describe('reading the agreement', () => {
  test('GET shows the current date-based version, url, content with the 911 acknowledgement, HTML body, acceptance null', async () => {
    const a = await t.account()
    const r = await getTos(a, a.key)
    expect(r.status).toBe(200)
    expect(r.body.object).toBe('account_tos')
    expect(r.body.account).toBe(a.id)
    expect(r.body.version).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(Number.isNaN(Date.parse(r.body.version))).toBe(false)
    expect(typeof r.body.url).toBe('string')
    expect(r.body.url).toMatch(/^https?:\/\//)
    expect(r.body.url).toContain(r.body.version)
    expect(typeof r.body.content).toBe('string')
    expect(r.body.content).toContain('911')
    expect(r.body.content.length).toBeLessThan(1000)
    expect(r.body.body).toMatch(/<html[\s>]/i)
    expect(r.body.body).toMatch(/<\/html>/i)
    expect(r.body.body).toContain('911')
    expect(r.body.body).toContain(r.body.version)
    expect(r.body.acceptance).toBeNull()
    expect('pricing' in r.body).toBe(false)
  })

  test('expand[]=pricing includes the latest agreed pricing; absent without expand', async () => {
    const a = await t.account()
    const r = await getTos(a, a.key, '?expand[]=pricing')
    expect(r.status).toBe(200)
    const pricing = await t.call('GET', `/v1/accounts/${a.id}/pricing`, { key: a.key })
    expect(r.body.pricing).toEqual(pricing.body)
    expect(rates(r.body.pricing)).toEqual(INITIAL)
    clock.advance(1000)
    const change = { per_user_rate: 2222, per_did_rate: 333, per_voiceai_location_rate: 44 }
    await t.call('POST', `/v1/accounts/${a.id}/pricing`, { key: a.key, body: change })
    expect(rates((await getTos(a, a.key, '?expand[]=pricing')).body.pricing)).toEqual(change)
    expect('pricing' in (await getTos(a, a.key)).body).toBe(false)
  })

  test('an unknown expand[] value is a validation_error', async () => {
    const a = await t.account()
    const r = await getTos(a, a.key, '?expand[]=users')
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
  })

  test('an unknown account is 404 account_not_found; another platform 403; the other mode 403 account_mode_mismatch', async () => {
    const p = await t.platform({ live_enabled: true })
    const missing = await t.call('GET', '/v1/accounts/acct_doesnotexist/tos', { key: p.test_key })
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe('account_not_found')
    const missingPost = await accept({ id: 'acct_doesnotexist' }, p.test_key, { version: '2026-01-01' })
    expect(missingPost.status).toBe(404)
    expect(missingPost.body.code).toBe('account_not_found')

    const live = await t.call('POST', '/v1/accounts', { key: p.live_key, body: sampleAccount() })
    const mode = await getTos(live.body, p.test_key)
    expect(mode.status).toBe(403)
    expect(mode.body.code).toBe('account_mode_mismatch')
    const version = (await getTos(live.body, p.live_key)).body.version
    const modePost = await accept(live.body, p.test_key, { version })
    expect(modePost.status).toBe(403)
    expect(modePost.body.code).toBe('account_mode_mismatch')

    const other = await t.platform({ live_enabled: true })
    expect((await getTos(live.body, other.live_key)).status).toBe(403)
    const foreign = await accept(live.body, other.live_key, { version })
    expect(foreign.status).toBe(403)
    expect((await getTos(live.body, p.live_key)).body.acceptance).toBeNull()
  })
})

describe('accepting the agreement', () => {
  test('a platform secret key holds agreement_acceptance: accepting records the acceptance with server-derived evidence', async () => {
    const a = await t.account()
    const version = await currentVersion(a)
    clock.set('2026-02-11T10:20:30.400Z')
    const r = await accept(a, a.key, { version })
    expect(r.status).toBe(200)
    expect(r.body.object).toBe('account_tos')
    expect(r.body.account).toBe(a.id)
    expect(r.body.version).toBe(version)
    expect(r.body.acceptance).toEqual({
      version,
      accepted_at: '2026-02-11T10:20:30.400Z',
      ip: '127.0.0.1',
      user_agent: UA,
      pricing: INITIAL,
    })
    const g = await getTos(a, a.key)
    expect(g.body.acceptance).toEqual(r.body.acceptance)
  })

  test('tos_status: not_required for a sandbox account until signed, then signed with tos_accepted_at', async () => {
    const a = await t.account()
    expect(a.account.tos_status).toBe('not_required')
    expect(a.account.tos_accepted_at).toBeNull()
    clock.set('2026-02-12T08:00:00.000Z')
    const r = await accept(a, a.key, { version: await currentVersion(a) })
    expect(r.status).toBe(200)
    const g = await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect(g.body.tos_status).toBe('signed')
    expect(g.body.tos_accepted_at).toBe('2026-02-12T08:00:00.000Z')
    const list = await t.call('GET', '/v1/accounts', { key: a.key })
    expect(list.body.data[0].tos_status).toBe('signed')
    expect(list.body.data[0].tos_accepted_at).toBe('2026-02-12T08:00:00.000Z')
  })

  test('tos_status: unsigned for a live account until signed, then signed with tos_accepted_at', async () => {
    const p = await t.platform({ live_enabled: true })
    const live = await t.call('POST', '/v1/accounts', { key: p.live_key, body: sampleAccount() })
    expect(live.body.tos_status).toBe('unsigned')
    expect(live.body.tos_accepted_at).toBeNull()
    clock.set('2026-02-13T08:00:00.000Z')
    const version = (await getTos(live.body, p.live_key)).body.version
    const r = await accept(live.body, p.live_key, { version })
    expect(r.status).toBe(200)
    const g = await t.call('GET', `/v1/accounts/${live.body.id}`, { key: p.live_key })
    expect(g.body.tos_status).toBe('signed')
    expect(g.body.tos_accepted_at).toBe('2026-02-13T08:00:00.000Z')
    expect(g.body.tos_accepted_at).toBe(r.body.acceptance.accepted_at)
  })

  test('an account session minted with agreement_acceptance may accept', async () => {
    const a = await t.account()
    const token = await session(a.key, a.id, ['agreement_acceptance'])
    const g = await getTos(a, token)
    expect(g.status).toBe(200)
    const r = await accept(a, token, { version: g.body.version })
    expect(r.status).toBe(200)
    expect(r.body.acceptance.ip).toBe('127.0.0.1')
    expect(r.body.acceptance.user_agent).toBe(UA)
    expect(r.body.acceptance.pricing).toEqual(INITIAL)
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.tos_status).toBe('signed')
  })

  test('a session with only account_onboarding can read the agreement but gets 403 accepting it', async () => {
    const a = await t.account()
    const token = await session(a.key, a.id, ['account_onboarding'])
    const g = await getTos(a, token)
    expect(g.status).toBe(200)
    expect(g.body.acceptance).toBeNull()
    const withPricing = await getTos(a, token, '?expand[]=pricing')
    expect(withPricing.status).toBe(200)
    expect(rates(withPricing.body.pricing)).toEqual(INITIAL)
    const r = await accept(a, token, { version: g.body.version })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('missing_capability')
    expect((await getTos(a, a.key)).body.acceptance).toBeNull()
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.tos_status).toBe('not_required')
  })

  test('a session with neither component can neither read nor accept the agreement', async () => {
    const a = await t.account()
    const token = await session(a.key, a.id, ['call_logs', 'voicemails'])
    expect((await getTos(a, token)).status).toBe(403)
    const r = await accept(a, token, { version: await currentVersion(a) })
    expect(r.status).toBe(403)
    expect((await getTos(a, a.key)).body.acceptance).toBeNull()
  })

  test('a session of another account gets 403, even with agreement_acceptance', async () => {
    const a = await t.account()
    const b = await t.call('POST', '/v1/accounts', { key: a.key, body: sampleAccount({ name: 'Neighbour' }) }) // same platform
    const token = await session(a.key, b.body.id, ['agreement_acceptance', 'account_onboarding'])
    const version = await currentVersion(a)
    const g = await getTos(a, token)
    expect(g.status).toBe(403)
    expect(g.body.code).toBe('account_forbidden')
    const r = await accept(a, token, { version })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('account_forbidden')
    expect((await getTos(a, a.key)).body.acceptance).toBeNull()
    expect((await getTos(b.body, a.key)).body.acceptance).toBeNull()
  })

  test('a version that is not current gets 409 tos_version_stale and nothing is recorded', async () => {
    const a = await t.account()
    const version = await currentVersion(a)
    for (const stale of ['2025-01-01', '2099-12-31', `${version}x`, 'latest']) {
      const r = await accept(a, a.key, { version: stale })
      expect(r.status).toBe(409)
      expect(r.body.code).toBe('tos_version_stale')
    }
    expect((await getTos(a, a.key)).body.acceptance).toBeNull()
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.tos_status).toBe('not_required')
  })

  test('version is required: a missing or empty version is a validation_error', async () => {
    const a = await t.account()
    const missing = await accept(a, a.key, {})
    expect(missing.status).toBe(400)
    expect(missing.body.code).toBe('validation_error')
    expect(missing.body.details.version).toBe('is required')
    const empty = await accept(a, a.key, { version: '' })
    expect(empty.status).toBe(400)
    expect(empty.body.details.version).toBeDefined()
    const wrongType = await accept(a, a.key, { version: 20260101 })
    expect(wrongType.status).toBe(400)
    expect(wrongType.body.details.version).toBeDefined()
  })

  test('pricing not yet set (all three rates 0) gets 422 pricing_required; once agreed, acceptance works', async () => {
    const a = await t.account({ body: { pricing: ZERO } })
    const version = await currentVersion(a)
    const r = await accept(a, a.key, { version })
    expect(r.status).toBe(422)
    expect(r.body.code).toBe('pricing_required')
    expect((await getTos(a, a.key)).body.acceptance).toBeNull()
    // The same refusal for a session holding the capability.
    const token = await session(a.key, a.id, ['agreement_acceptance'])
    expect((await accept(a, token, { version })).status).toBe(422)

    const agreed = { per_user_rate: 1200, per_did_rate: 0, per_voiceai_location_rate: 0 }
    expect((await t.call('POST', `/v1/accounts/${a.id}/pricing`, { key: a.key, body: agreed })).status).toBe(200)
    const ok = await accept(a, token, { version })
    expect(ok.status).toBe(200)
    expect(ok.body.acceptance.pricing).toEqual(agreed)
  })

  test('a stale version is refused before pricing is looked at (409, not 422)', async () => {
    const a = await t.account({ body: { pricing: ZERO } })
    const r = await accept(a, a.key, { version: '2000-01-01' })
    expect(r.status).toBe(409)
    expect(r.body.code).toBe('tos_version_stale')
  })

  test('re-accepting the same version is idempotent: the first acceptance is returned unchanged', async () => {
    clock.set('2026-02-14T08:00:00.000Z')
    const a = await t.account()
    const version = await currentVersion(a)
    clock.set('2026-02-14T09:00:00.000Z')
    const first = await accept(a, a.key, { version })
    expect(first.status).toBe(200)
    clock.set('2026-02-20T17:45:00.000Z')
    await t.call('POST', `/v1/accounts/${a.id}/pricing`, { key: a.key, body: { per_user_rate: 9999, per_did_rate: 9, per_voiceai_location_rate: 9 } })
    const token = await session(a.key, a.id, ['agreement_acceptance'])
    const second = await accept(a, token, { version }, 'AnotherBrowser/2.0')
    expect(second.status).toBe(200)
    expect(second.body.acceptance).toEqual(first.body.acceptance)
    expect(second.body.acceptance.accepted_at).toBe('2026-02-14T09:00:00.000Z')
    expect(second.body.acceptance.user_agent).toBe(UA)
    expect(second.body.acceptance.pricing).toEqual(INITIAL)
    const g = await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect(g.body.tos_accepted_at).toBe('2026-02-14T09:00:00.000Z')
  })

  test('the pricing snapshot equals the pricing at the time and does not change when pricing changes later', async () => {
    clock.set('2026-02-15T09:00:00.000Z')
    const a = await t.account()
    clock.advance(60_000)
    const agreed = { per_user_rate: 1750, per_did_rate: 275, per_voiceai_location_rate: 600 }
    await t.call('POST', `/v1/accounts/${a.id}/pricing`, { key: a.key, body: agreed })
    const atTheTime = await t.call('GET', `/v1/accounts/${a.id}/pricing`, { key: a.key })
    const r = await accept(a, a.key, { version: await currentVersion(a) })
    expect(r.body.acceptance.pricing).toEqual(rates(atTheTime.body))
    expect(r.body.acceptance.pricing).toEqual(agreed)

    clock.set('2026-03-05T09:00:00.000Z')
    const later = { per_user_rate: 1, per_did_rate: 2, per_voiceai_location_rate: 3 }
    await t.call('POST', `/v1/accounts/${a.id}/pricing`, { key: a.key, body: later })
    const g = await getTos(a, a.key, '?expand[]=pricing')
    expect(g.body.acceptance.pricing).toEqual(agreed)
    expect(rates(g.body.pricing)).toEqual(later)
  })

  test('evidence is derived from the request: ip is the caller’s address, user_agent the User-Agent header; forwarded headers are not evidence', async () => {
    const a = await t.account()
    const r = await t.call('POST', `/v1/accounts/${a.id}/tos`, {
      key: a.key,
      body: { version: await currentVersion(a) },
      headers: { 'user-agent': 'Mozilla/5.0 (Evidence Test)', 'x-forwarded-for': '203.0.113.9', 'x-real-ip': '203.0.113.9' },
    })
    expect(r.status).toBe(200)
    expect(r.body.acceptance.ip).toBe('127.0.0.1')
    expect(r.body.acceptance.user_agent).toBe('Mozilla/5.0 (Evidence Test)')
  })

  test('client-sent evidence (ip, user_agent, accepted_at, pricing) is refused as unknown fields and nothing is recorded', async () => {
    const a = await t.account()
    const version = await currentVersion(a)
    const r = await accept(a, a.key, {
      version,
      ip: '198.51.100.7',
      user_agent: 'Forged/1.0',
      accepted_at: '2020-01-01T00:00:00.000Z',
      pricing: { per_user_rate: 1, per_did_rate: 1, per_voiceai_location_rate: 1 },
    })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details.ip).toBe('is not a known field')
    expect(r.body.details.user_agent).toBe('is not a known field')
    expect(r.body.details.accepted_at).toBe('is not a known field')
    expect(r.body.details.pricing).toBe('is not a known field')
    expect((await getTos(a, a.key)).body.acceptance).toBeNull()
    const only = await accept(a, a.key, { version, ip: '198.51.100.7' })
    expect(only.status).toBe(400)
    expect(Object.keys(only.body.details)).toEqual(['ip'])
  })

  test('the acceptance is the account’s own: accepting for one account does not sign another', async () => {
    const a = await t.account()
    const b = await t.call('POST', '/v1/accounts', { key: a.key, body: sampleAccount({ name: 'Other' }) })
    await accept(a, a.key, { version: await currentVersion(a) })
    expect((await getTos(b.body, a.key)).body.acceptance).toBeNull()
    expect((await t.call('GET', `/v1/accounts/${b.body.id}`, { key: a.key })).body.tos_status).toBe('not_required')
  })
})
