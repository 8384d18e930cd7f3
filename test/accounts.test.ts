import { describe, expect, test } from 'bun:test'
import { sampleAccount, startTestService } from './support/service'

const t = await startTestService()

describe('create account', () => {
  test('creates a sandbox account with its main location and pricing, config defaults applied', async () => {
    const p = await t.platform()
    const r = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount() })
    expect(r.status).toBe(200)
    const a = r.body
    expect(a.id).toMatch(/^acct_/)
    expect(a.object).toBe('account')
    expect(a.livemode).toBe(false)
    expect(a.email).toBe('owner@example.com')
    expect(a.config.max_phone_numbers).toBe(25)
    expect(a.config.fax_inbound_per_hour).toBe(25)
    expect(a.config.fax_outbound_per_hour).toBe(25)
    expect(a.main_location).toMatch(/^loc_/)
    expect(a.tos_status).toBe('not_required')
    expect(a.tos_accepted_at).toBeNull()
    expect(a.onboarding_complete).toBe(false)
    const loc = await t.call('GET', `/v1/locations/${a.main_location}`, { key: p.test_key, account: a.id })
    expect(loc.status).toBe(200)
    expect(loc.body.address.city).toBe('Springfield')
    expect(loc.body.address.formatted_address).toContain('Springfield')
    expect(typeof loc.body.address.latitude).toBe('number')
    const pricing = await t.call('GET', `/v1/accounts/${a.id}/pricing`, { key: p.test_key })
    expect(pricing.status).toBe(200)
    expect(pricing.body.per_user_rate).toBe(1500)
  })

  test('missing email or primary_contact_name is a validation error naming the fields', async () => {
    const p = await t.platform()
    const { email, primary_contact_name, ...rest } = sampleAccount()
    const r = await t.call('POST', '/v1/accounts', { key: p.test_key, body: rest })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details.email).toBe('is required')
    expect(r.body.details.primary_contact_name).toBe('is required')
  })

  test('an invalid address is refused with field reasons and nothing is created', async () => {
    const p = await t.platform()
    const r = await t.call('POST', '/v1/accounts', {
      key: p.test_key,
      body: sampleAccount({ address: { city: 'X', state: 'ZZ', postal_code: 'abc' } }),
    })
    expect(r.status).toBe(400)
    expect(r.body.details['address.state']).toBeDefined()
    const list = await t.call('GET', '/v1/accounts', { key: p.test_key })
    expect(list.body.data).toHaveLength(0)
  })

  test('a live key creates a live account only when live mode is enabled on the platform', async () => {
    const off = await t.platform()
    const r = await t.call('POST', '/v1/accounts', { key: off.live_key, body: sampleAccount() })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('live_mode_disabled')
    const on = await t.platform({ live_enabled: true })
    const ok = await t.call('POST', '/v1/accounts', { key: on.live_key, body: sampleAccount() })
    expect(ok.status).toBe(200)
    expect(ok.body.livemode).toBe(true)
    expect(ok.body.tos_status).toBe('unsigned')
  })
})

describe('account access', () => {
  test('a key of another platform gets 403; a key of the other mode gets 403', async () => {
    const a = await t.account()
    const other = await t.platform()
    const r = await t.call('GET', `/v1/accounts/${a.id}`, { key: other.test_key })
    expect(r.status).toBe(403)
    const h = await t.call('GET', '/v1/users', { key: other.test_key, account: a.id })
    expect(h.status).toBe(403)
    expect(h.body.code).toBe('account_forbidden')
  })

  test('missing or invalid key gives 401', async () => {
    expect((await t.call('GET', '/v1/accounts')).status).toBe(401)
    expect((await t.call('GET', '/v1/accounts', { key: 'sk_test_nope' })).status).toBe(401)
  })
})
