/**
 * Accounts (platform-level): create, get, list, update, delete, and the computed
 * fields onboarding_complete and tos_status. Every test works under platforms of
 * its own. The clock is manual so that "newest first" and updated_at are exact.
 */
import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { manualClock } from '../src/clock'
import { outboundCallerId } from '../src/services/numbers/phone-numbers'
import { ADMIN_TOKEN, sampleAccount, startTestService } from './support/service'

const clock = manualClock('2026-03-10T09:00:00.000Z')
const t = await startTestService({}, { clock })
const db = t.service.database.db

const SECOND = 1000
const rowsOf = (r: any): any[] => (Array.isArray(r) ? r : r.rows)
const countWhere = async (query: ReturnType<typeof sql>) => Number(rowsOf(await db.execute(query))[0].n)
/** A next/previous page URL as a path on 127.0.0.1 (the service names itself localhost). */
const pathOf = (url: string) => {
  const u = new URL(url)
  return u.pathname + u.search
}
const otherAddress = { address_number: '7', street: 'Elm St', city: 'Austin', state: 'TX', postal_code: '73301', country: 'US' }

async function session(key: string, account: string, components: string[]) {
  const r = await t.call('POST', '/v1/account_sessions', {
    key,
    body: { account, components: Object.fromEntries(components.map((c) => [c, { enabled: true }])) },
  })
  expect(r.status).toBe(200)
  return r.body.client_secret as string
}

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

  test('the response carries every Account field; created_at and updated_at are the time of creation', async () => {
    const { account: a } = await t.account({ body: { phone: '+15551230001' } })
    for (const field of [
      'id',
      'email',
      'name',
      'phone',
      'primary_contact_name',
      'config',
      'default_outbound_did',
      'hold_music_clip',
      'main_location',
      'default_button_template',
      'provisioning_base_url',
      'billing_address',
      'onboarding_complete',
      'tos_status',
      'tos_accepted_at',
      'created_at',
      'updated_at',
    ]) {
      expect(a).toHaveProperty(field)
    }
    expect(a.name).toBe('Acme Dental')
    expect(a.phone).toBe('+15551230001')
    expect(a.primary_contact_name).toBe('Ada Owner')
    expect(a.default_outbound_did).toBeNull()
    expect(a.hold_music_clip).toBeNull()
    expect(a.default_button_template).toBeNull()
    expect(a.billing_address).toBeNull()
    expect(a.created_at).toBe(clock.now().toISOString())
    expect(a.updated_at).toBe(a.created_at)
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

  test('address and pricing are required on create (validation_error naming them); nothing is created', async () => {
    const p = await t.platform()
    const { address, pricing, ...rest } = sampleAccount()
    const r = await t.call('POST', '/v1/accounts', { key: p.test_key, body: rest })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details.address).toBe('is required')
    expect(r.body.details.pricing).toBe('is required')
    expect(r.body.details.email).toBeUndefined()

    // Pricing: all three rates required.
    const partial = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount({ pricing: { per_user_rate: 100 } }) })
    expect(partial.status).toBe(400)
    expect(partial.body.code).toBe('validation_error')
    expect(partial.body.details['pricing.per_did_rate']).toBe('is required')
    expect(partial.body.details['pricing.per_voiceai_location_rate']).toBe('is required')

    // Pricing: integers 0 to 1000000.
    const range = await t.call('POST', '/v1/accounts', {
      key: p.test_key,
      body: sampleAccount({ pricing: { per_user_rate: -1, per_did_rate: 1_000_001, per_voiceai_location_rate: 2.5 } }),
    })
    expect(range.status).toBe(400)
    expect(Object.keys(range.body.details).sort()).toEqual(['pricing.per_did_rate', 'pricing.per_user_rate', 'pricing.per_voiceai_location_rate'])

    // Address: city, state and postal_code required.
    const addr = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount({ address: { street: 'Main St' } }) })
    expect(addr.status).toBe(400)
    expect(addr.body.details['address.city']).toBe('is required')
    expect(addr.body.details['address.state']).toBe('is required')
    expect(addr.body.details['address.postal_code']).toBe('is required')

    const list = await t.call('GET', '/v1/accounts', { key: p.test_key })
    expect(list.body.data).toHaveLength(0)
  })

  test('email is required but may be null; a malformed email is a validation error', async () => {
    const p = await t.platform()
    const ok = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount({ email: null }) })
    expect(ok.status).toBe(200)
    expect(ok.body.email).toBeNull()
    const bad = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount({ email: 'not-an-email' }) })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('validation_error')
    expect(bad.body.details.email).toBeDefined()
    const blank = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount({ primary_contact_name: '' }) })
    expect(blank.status).toBe(400)
    expect(blank.body.details.primary_contact_name).toBeDefined()
  })

  test('unknown fields on create are a validation error', async () => {
    const p = await t.platform()
    const r = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount({ livemode: true, owner: 'x' }) })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details.livemode).toBe('is not a known field')
    expect(r.body.details.owner).toBe('is not a known field')
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

  test('an invalid billing_address is refused with field reasons under billing_address and nothing is created', async () => {
    const p = await t.platform()
    const r = await t.call('POST', '/v1/accounts', {
      key: p.test_key,
      body: sampleAccount({ billing_address: { city: 'Austin', state: 'TX', postal_code: 'nope' } }),
    })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details['billing_address.postal_code']).toBeDefined()
    expect((await t.call('GET', '/v1/accounts', { key: p.test_key })).body.data).toHaveLength(0)
  })

  test('a deprecated billing_address given on create is stored as a snapshot; the main location comes from address', async () => {
    const { account: a, key } = await t.account({ body: { billing_address: otherAddress } })
    expect(a.billing_address.city).toBe('Austin')
    expect(a.billing_address.state).toBe('TX')
    expect(typeof a.billing_address.place_id).toBe('string')
    const loc = await t.call('GET', `/v1/locations/${a.main_location}`, { key, account: a.id })
    expect(loc.body.address.city).toBe('Springfield')
  })

  test('address becomes the main location: the account has exactly one location, active, named after the account', async () => {
    const { account: a, key } = await t.account()
    const locs = await t.call('GET', '/v1/locations', { key, account: a.id })
    expect(locs.status).toBe(200)
    expect(locs.body.data).toHaveLength(1)
    expect(locs.body.data[0].id).toBe(a.main_location)
    expect(locs.body.data[0].status).toBe('active')
    expect(locs.body.data[0].account).toBe(a.id)
    expect(locs.body.data[0].address.state).toBe('IL')
    expect(locs.body.data[0].address.postal_code).toBe('62701')
  })

  test('account, main location and pricing are one transaction: a failure storing the pricing leaves nothing behind', async () => {
    // Fault injection: a trigger that refuses one magic pricing, so the failure
    // happens after the account and its location were inserted.
    const suffix = Math.random().toString(36).slice(2, 10)
    const fn = `test_fail_pricing_${suffix}`
    const magic = 999_917
    await db.execute(
      sql.raw(`create function ${fn}() returns trigger language plpgsql as $$ begin
        if new.per_user_rate = ${magic} and new.per_did_rate = ${magic} and new.per_voiceai_location_rate = ${magic} then
          raise exception 'injected pricing failure';
        end if;
        return new;
      end $$`),
    )
    await db.execute(sql.raw(`create trigger ${fn} before insert on pricing_agreements for each row execute function ${fn}()`))
    try {
      const p = await t.platform()
      const marker = `Atomic ${suffix}`
      const r = await t.call('POST', '/v1/accounts', {
        key: p.test_key,
        body: sampleAccount({ name: marker, pricing: { per_user_rate: magic, per_did_rate: magic, per_voiceai_location_rate: magic } }),
      })
      expect(r.status).toBe(500)
      expect((await t.call('GET', '/v1/accounts', { key: p.test_key })).body.data).toHaveLength(0)
      expect(await countWhere(sql`select count(*) as n from accounts where platform_id = ${p.id}`)).toBe(0)
      expect(await countWhere(sql`select count(*) as n from locations where name = ${marker}`)).toBe(0)
      // The same request with ordinary pricing goes through.
      const ok = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount({ name: marker }) })
      expect(ok.status).toBe(200)
      expect(await countWhere(sql`select count(*) as n from locations where name = ${marker}`)).toBe(1)
    } finally {
      await db.execute(sql.raw(`drop trigger if exists ${fn} on pricing_agreements`))
      await db.execute(sql.raw(`drop function if exists ${fn}()`))
    }
  })

  test('a live key creates a live account only when live mode is enabled on the platform', async () => {
    const off = await t.platform()
    const r = await t.call('POST', '/v1/accounts', { key: off.live_key, body: sampleAccount() })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('live_mode_disabled')
    expect((await t.call('GET', '/v1/accounts', { key: off.live_key })).body.data).toHaveLength(0)
    const on = await t.platform({ live_enabled: true })
    const ok = await t.call('POST', '/v1/accounts', { key: on.live_key, body: sampleAccount() })
    expect(ok.status).toBe(200)
    expect(ok.body.livemode).toBe(true)
    expect(ok.body.tos_status).toBe('unsigned')
  })

  test('mode follows the key: a test key creates a sandbox account even on a platform with live mode enabled', async () => {
    const on = await t.platform({ live_enabled: true })
    const r = await t.call('POST', '/v1/accounts', { key: on.test_key, body: sampleAccount() })
    expect(r.status).toBe(200)
    expect(r.body.livemode).toBe(false)
    expect(r.body.tos_status).toBe('not_required')
  })

  test('live account creation follows the platform setting when the operator turns live mode off', async () => {
    const on = await t.platform({ live_enabled: true })
    expect((await t.call('POST', '/v1/accounts', { key: on.live_key, body: sampleAccount() })).status).toBe(200)
    const upd = await t.call('POST', `/admin/platforms/${on.id}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: { live_enabled: false },
    })
    expect(upd.status).toBe(200)
    const r = await t.call('POST', '/v1/accounts', { key: on.live_key, body: sampleAccount() })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('live_mode_disabled')
    // And back on: the very next request may create a live account again.
    await t.call('POST', `/admin/platforms/${on.id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { live_enabled: true } })
    const again = await t.call('POST', '/v1/accounts', { key: on.live_key, body: sampleAccount() })
    expect(again.status).toBe(200)
    expect(again.body.livemode).toBe(true)
  })

  test('config defaults (max_phone_numbers 25, fax_inbound_per_hour 25, fax_outbound_per_hour 25, ...) and given config merged', async () => {
    const p = await t.platform()
    const plain = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount() })
    expect(plain.body.config).toEqual({
      region: 'us-east',
      extension_length: 3,
      transcription_enabled: true,
      recording_enabled: false,
      redaction_enabled: false,
      timezone: 'America/New_York',
      max_phone_numbers: 25,
      parking_timeout_seconds: 60,
      fax_inbound_per_hour: 25,
      fax_outbound_per_hour: 25,
      default_agent_visible: true,
      e911_notification: { emails: [] },
    })
    const given = await t.call('POST', '/v1/accounts', {
      key: p.test_key,
      body: sampleAccount({
        config: {
          timezone: 'America/Chicago',
          max_phone_numbers: 50,
          fax_outbound_per_hour: 5,
          recording_enabled: true,
          e911_notification: { emails: ['ops@example.com'] },
        },
      }),
    })
    expect(given.status).toBe(200)
    expect(given.body.config).toEqual({
      ...plain.body.config,
      timezone: 'America/Chicago',
      max_phone_numbers: 50,
      fax_outbound_per_hour: 5,
      recording_enabled: true,
      e911_notification: { emails: ['ops@example.com'] },
    })
    const again = await t.call('GET', `/v1/accounts/${given.body.id}`, { key: p.test_key })
    expect(again.body.config).toEqual(given.body.config)
  })

  test('invalid or unknown config fields are validation errors naming config.<field>', async () => {
    const p = await t.platform()
    const r = await t.call('POST', '/v1/accounts', {
      key: p.test_key,
      body: sampleAccount({ config: { extension_length: 99, max_phone_numbers: -1, e911_notification: { emails: ['nope'] }, colour: 'red' } }),
    })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details['config.extension_length']).toBeDefined()
    expect(r.body.details['config.max_phone_numbers']).toBeDefined()
    expect(r.body.details['config.e911_notification.emails[0]']).toBeDefined()
    expect(r.body.details['config.colour']).toBe('is not a known field')
  })

  test('only a platform secret key creates accounts: an account session is refused with 403', async () => {
    const a = await t.account()
    const token = await session(a.key, a.id, ['account_onboarding', 'agreement_acceptance'])
    const r = await t.call('POST', '/v1/accounts', { key: token, body: sampleAccount() })
    expect(r.status).toBe(403)
  })
})

describe('get and list accounts', () => {
  test('get returns the account as created', async () => {
    const a = await t.account()
    const r = await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect(r.status).toBe(200)
    expect(r.body).toEqual(a.account)
  })

  test('an unknown account id is 404 account_not_found', async () => {
    const p = await t.platform()
    const r = await t.call('GET', '/v1/accounts/acct_doesnotexist', { key: p.test_key })
    expect(r.status).toBe(404)
    expect(r.body.code).toBe('account_not_found')
  })

  test('list is newest first, in pages that follow next_page_url and previous_page_url', async () => {
    const p = await t.platform()
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      clock.advance(SECOND)
      const r = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount({ name: `Org ${i}` }) })
      expect(r.status).toBe(200)
      ids.push(r.body.id)
    }
    const newestFirst = [...ids].reverse()
    const all = await t.call('GET', '/v1/accounts', { key: p.test_key })
    expect(all.status).toBe(200)
    expect(all.body.object).toBe('list')
    expect(all.body.data.map((a: any) => a.id)).toEqual(newestFirst)
    expect(all.body.next_page_url).toBeNull()
    expect(all.body.previous_page_url).toBeNull()

    const first = await t.call('GET', '/v1/accounts?limit=2', { key: p.test_key })
    expect(first.body.data.map((a: any) => a.id)).toEqual(newestFirst.slice(0, 2))
    expect(first.body.previous_page_url).toBeNull()
    const second = await t.call('GET', pathOf(first.body.next_page_url), { key: p.test_key })
    expect(second.body.data.map((a: any) => a.id)).toEqual(newestFirst.slice(2, 4))
    const third = await t.call('GET', pathOf(second.body.next_page_url), { key: p.test_key })
    expect(third.body.data.map((a: any) => a.id)).toEqual(newestFirst.slice(4))
    expect(third.body.next_page_url).toBeNull()
    const back = await t.call('GET', pathOf(third.body.previous_page_url), { key: p.test_key })
    expect(back.body.data.map((a: any) => a.id)).toEqual(newestFirst.slice(2, 4))
  })

  test('list shows the key’s mode only and the platform’s own accounts only', async () => {
    const p = await t.platform({ live_enabled: true })
    const sandbox = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount() })
    clock.advance(SECOND)
    const live = await t.call('POST', '/v1/accounts', { key: p.live_key, body: sampleAccount() })
    expect(live.status).toBe(200)
    const other = await t.account() // another platform
    const test = await t.call('GET', '/v1/accounts', { key: p.test_key })
    expect(test.body.data.map((a: any) => a.id)).toEqual([sandbox.body.id])
    expect(test.body.data[0].livemode).toBe(false)
    const liveList = await t.call('GET', '/v1/accounts', { key: p.live_key })
    expect(liveList.body.data.map((a: any) => a.id)).toEqual([live.body.id])
    expect(liveList.body.data[0].livemode).toBe(true)
    const otherList = await t.call('GET', '/v1/accounts', { key: other.key })
    expect(otherList.body.data.map((a: any) => a.id)).toEqual([other.id])
  })

  test('list entries are the same Account objects as get', async () => {
    const a = await t.account()
    const list = await t.call('GET', '/v1/accounts', { key: a.key })
    expect(list.body.data).toEqual([a.account])
  })
})

describe('account access', () => {
  test('a key of another platform gets 403 on every account operation; the account is untouched', async () => {
    const a = await t.account()
    const other = await t.platform()
    const r = await t.call('GET', `/v1/accounts/${a.id}`, { key: other.test_key })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('account_forbidden')
    const u = await t.call('POST', `/v1/accounts/${a.id}`, { key: other.test_key, body: { name: 'Hijacked' } })
    expect(u.status).toBe(403)
    const d = await t.call('DELETE', `/v1/accounts/${a.id}`, { key: other.test_key })
    expect(d.status).toBe(403)
    const h = await t.call('GET', '/v1/users', { key: other.test_key, account: a.id })
    expect(h.status).toBe(403)
    expect(h.body.code).toBe('account_forbidden')
    const still = await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect(still.status).toBe(200)
    expect(still.body.name).toBe('Acme Dental')
  })

  test('a key of the other mode gets 403 account_mode_mismatch', async () => {
    const p = await t.platform({ live_enabled: true })
    const sandbox = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount() })
    const live = await t.call('POST', '/v1/accounts', { key: p.live_key, body: sampleAccount() })
    const r1 = await t.call('GET', `/v1/accounts/${sandbox.body.id}`, { key: p.live_key })
    expect(r1.status).toBe(403)
    expect(r1.body.code).toBe('account_mode_mismatch')
    const r2 = await t.call('GET', `/v1/accounts/${live.body.id}`, { key: p.test_key })
    expect(r2.status).toBe(403)
    expect(r2.body.code).toBe('account_mode_mismatch')
    const r3 = await t.call('POST', `/v1/accounts/${live.body.id}`, { key: p.test_key, body: { name: 'x' } })
    expect(r3.status).toBe(403)
    expect(r3.body.code).toBe('account_mode_mismatch')
    const r4 = await t.call('DELETE', `/v1/accounts/${sandbox.body.id}`, { key: p.live_key })
    expect(r4.status).toBe(403)
    expect(r4.body.code).toBe('account_mode_mismatch')
    expect((await t.call('GET', `/v1/accounts/${sandbox.body.id}`, { key: p.test_key })).status).toBe(200)
  })

  test('missing or invalid key gives 401', async () => {
    expect((await t.call('GET', '/v1/accounts')).status).toBe(401)
    expect((await t.call('GET', '/v1/accounts', { key: 'sk_test_nope' })).status).toBe(401)
  })

  test('an account session may read its own account but not update or delete it, nor read another account', async () => {
    const a = await t.account()
    const token = await session(a.key, a.id, ['account_onboarding'])
    const own = await t.call('GET', `/v1/accounts/${a.id}`, { key: token })
    expect(own.status).toBe(200)
    expect(own.body.id).toBe(a.id)
    expect((await t.call('POST', `/v1/accounts/${a.id}`, { key: token, body: { name: 'x' } })).status).toBe(403)
    expect((await t.call('DELETE', `/v1/accounts/${a.id}`, { key: token })).status).toBe(403)
    expect((await t.call('GET', '/v1/accounts', { key: token })).status).toBe(403)
    const sibling = await t.call('POST', '/v1/accounts', { key: a.key, body: sampleAccount() })
    const r = await t.call('GET', `/v1/accounts/${sibling.body.id}`, { key: token })
    expect(r.status).toBe(403)
  })
})

describe('update account', () => {
  test('omitted means unchanged: an empty update changes nothing but updated_at', async () => {
    const a = await t.account({ body: { phone: '+15551230002', billing_address: otherAddress } })
    clock.advance(5 * SECOND)
    const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: {} })
    expect(r.status).toBe(200)
    const { updated_at, ...rest } = r.body
    const { updated_at: before, ...restBefore } = a.account
    expect(rest).toEqual(restBefore)
    expect(updated_at).toBe(clock.now().toISOString())
    expect(r.body.created_at).toBe(a.account.created_at)
  })

  test('changing fields: name, phone, primary_contact_name and email change; the rest stay', async () => {
    const a = await t.account()
    const r = await t.call('POST', `/v1/accounts/${a.id}`, {
      key: a.key,
      body: { name: 'Acme Orthodontics', phone: '+15559870000', primary_contact_name: 'Grace Owner', email: 'grace@example.com' },
    })
    expect(r.status).toBe(200)
    expect(r.body.name).toBe('Acme Orthodontics')
    expect(r.body.phone).toBe('+15559870000')
    expect(r.body.primary_contact_name).toBe('Grace Owner')
    expect(r.body.email).toBe('grace@example.com')
    expect(r.body.main_location).toBe(a.account.main_location)
    expect(r.body.config).toEqual(a.account.config)
    const g = await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect(g.body).toEqual(r.body)
    // name and phone may be cleared with null.
    const cleared = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { name: null, phone: null } })
    expect(cleared.body.name).toBeNull()
    expect(cleared.body.phone).toBeNull()
    expect(cleared.body.primary_contact_name).toBe('Grace Owner')
  })

  test('email: null or empty string clears it', async () => {
    const a = await t.account()
    const r1 = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { email: null } })
    expect(r1.status).toBe(200)
    expect(r1.body.email).toBeNull()
    await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { email: 'back@example.com' } })
    const r2 = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { email: '' } })
    expect(r2.status).toBe(200)
    expect(r2.body.email).toBeNull()
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.email).toBeNull()
    const bad = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { email: 'nope' } })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('validation_error')
    expect(bad.body.details.email).toBeDefined()
  })

  test('changing email does not move the owner: team members are unchanged', async () => {
    const a = await t.account()
    const u = await t.call('POST', '/v1/users', { key: a.key, account: a.id, body: { name: 'Ada Owner', email: 'owner@example.com' } })
    expect(u.status).toBe(200)
    const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { email: 'billing@example.com' } })
    expect(r.body.email).toBe('billing@example.com')
    const users = await t.call('GET', '/v1/users', { key: a.key, account: a.id })
    expect(users.body.data.map((x: any) => x.email)).toEqual(['owner@example.com'])
  })

  test('config partial merge: given fields change, the others keep their values', async () => {
    const a = await t.account({ body: { config: { timezone: 'America/Denver', max_phone_numbers: 40 } } })
    const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { config: { recording_enabled: true, fax_inbound_per_hour: 3 } } })
    expect(r.status).toBe(200)
    expect(r.body.config).toEqual({ ...a.account.config, recording_enabled: true, fax_inbound_per_hour: 3 })
    expect(r.body.config.timezone).toBe('America/Denver')
    expect(r.body.config.max_phone_numbers).toBe(40)
    const r2 = await t.call('POST', `/v1/accounts/${a.id}`, {
      key: a.key,
      body: { config: { e911_notification: { emails: ['a@example.com', 'b@example.com'] } } },
    })
    expect(r2.body.config.e911_notification).toEqual({ emails: ['a@example.com', 'b@example.com'] })
    expect(r2.body.config.recording_enabled).toBe(true)
    const bad = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { config: { parking_timeout_seconds: 1, unknown_knob: 1 } } })
    expect(bad.status).toBe(400)
    expect(bad.body.details['config.parking_timeout_seconds']).toBeDefined()
    expect(bad.body.details['config.unknown_knob']).toBe('is not a known field')
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.config).toEqual(r2.body.config)
  })

  test('main_location is swapped to another active location of the account', async () => {
    const a = await t.account()
    const loc = await t.call('POST', '/v1/locations', { key: a.key, account: a.id, body: { name: 'Branch', address: otherAddress } })
    expect(loc.status).toBe(200)
    const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { main_location: loc.body.id } })
    expect(r.status).toBe(200)
    expect(r.body.main_location).toBe(loc.body.id)
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.main_location).toBe(loc.body.id)
    // The old main location is now an ordinary location (it may be deactivated); the new one is protected.
    const old = await t.call('POST', `/v1/locations/${a.account.main_location}`, { key: a.key, account: a.id, body: { status: 'inactive' } })
    expect(old.status).toBe(200)
    const cur = await t.call('POST', `/v1/locations/${loc.body.id}`, { key: a.key, account: a.id, body: { status: 'inactive' } })
    expect(cur.status).toBe(409)
    expect(cur.body.code).toBe('location_in_use')
  })

  test('main_location is never swapped to an inactive location (validation_error)', async () => {
    const a = await t.account()
    const loc = await t.call('POST', '/v1/locations', { key: a.key, account: a.id, body: { name: 'Closed', address: otherAddress } })
    const off = await t.call('POST', `/v1/locations/${loc.body.id}`, { key: a.key, account: a.id, body: { status: 'inactive' } })
    expect(off.status).toBe(200)
    expect(off.body.status).toBe('inactive')
    const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { main_location: loc.body.id } })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details.main_location).toBeDefined()
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.main_location).toBe(a.account.main_location)
    // Reactivated, it may become the main location.
    await t.call('POST', `/v1/locations/${loc.body.id}`, { key: a.key, account: a.id, body: { status: 'active' } })
    const ok = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { main_location: loc.body.id } })
    expect(ok.status).toBe(200)
    expect(ok.body.main_location).toBe(loc.body.id)
  })

  test('main_location cannot be cleared: null is a validation_error', async () => {
    const a = await t.account()
    const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { main_location: null } })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(r.body.details.main_location).toBeDefined()
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.main_location).toBe(a.account.main_location)
  })

  test('main_location refuses a location of another account and an unknown id', async () => {
    const a = await t.account()
    const b = await t.call('POST', '/v1/accounts', { key: a.key, body: sampleAccount({ name: 'Sibling' }) }) // same platform
    const foreign = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { main_location: b.body.main_location } })
    expect(foreign.status).toBe(400)
    expect(foreign.body.code).toBe('validation_error')
    expect(foreign.body.details.main_location).toBeDefined()
    const unknown = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { main_location: 'loc_doesnotexist' } })
    expect(unknown.status).toBe(400)
    expect(unknown.body.details.main_location).toBeDefined()
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.main_location).toBe(a.account.main_location)
  })

  test('a refused update changes nothing, not even the fields that were valid', async () => {
    const a = await t.account()
    clock.advance(SECOND)
    const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { name: 'Renamed', main_location: 'loc_doesnotexist' } })
    expect(r.status).toBe(400)
    const g = await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect(g.body).toEqual(a.account)
  })

  test('default_outbound_did names one of the account’s active numbers, which its calls out present; moved to another account, it clears', async () => {
    const a = await t.account()
    const b = await t.account({ key: a.key })
    const order = async (c: { id: string; key: string }) => {
      const avail = await t.call('GET', '/v1/available-phone-numbers?quantity=20', { key: c.key, account: c.id })
      const pick = avail.body.data[Math.floor(Math.random() * avail.body.data.length)].phone_number as string
      expect((await t.call('POST', '/v1/phone-number-orders', { key: c.key, account: c.id, body: { phone_numbers: [pick] } })).status).toBe(200)
      const list = await t.call('GET', '/v1/phone-numbers?limit=100', { key: c.key, account: c.id })
      return list.body.data.find((n: any) => n.number === pick) as { id: string; number: string }
    }
    const first = await order(a)
    const second = await order(a)
    const foreign = await order(b)
    const db = t.service.database.db
    // None set: the first active number.
    expect(await outboundCallerId(db, a.id)).toBe(first.number)
    const set = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { default_outbound_did: second.id } })
    expect(set.status).toBe(200)
    expect(set.body.default_outbound_did).toBe(second.id)
    expect(await outboundCallerId(db, a.id)).toBe(second.number)
    // Another account's number, or a number given by its digits: refused, nothing changed.
    for (const bad of [foreign.id, second.number]) {
      const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { default_outbound_did: bad, name: 'Renamed' } })
      expect(r.status).toBe(400)
      expect(r.body.details).toEqual({ default_outbound_did: 'is not an active phone number of this account' })
    }
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body).toMatchObject({ default_outbound_did: second.id, name: set.body.name })
    // Moved to another account: the default clears and calls out fall back to the first number.
    expect((await t.call('POST', `/v1/phone-numbers/${second.id}/reassign`, { key: a.key, account: a.id, body: { account: b.id } })).status).toBe(200)
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.default_outbound_did).toBeNull()
    expect(await outboundCallerId(db, a.id)).toBe(first.number)
  })

  test('default_outbound_did, hold_music_clip, default_button_template: null clears; an unknown id is a validation_error', async () => {
    const a = await t.account()
    const cleared = await t.call('POST', `/v1/accounts/${a.id}`, {
      key: a.key,
      body: { default_outbound_did: null, hold_music_clip: null, default_button_template: null },
    })
    expect(cleared.status).toBe(200)
    expect(cleared.body.default_outbound_did).toBeNull()
    expect(cleared.body.hold_music_clip).toBeNull()
    expect(cleared.body.default_button_template).toBeNull()
    for (const field of ['default_outbound_did', 'hold_music_clip', 'default_button_template']) {
      const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { [field]: 'xyz_unknown123' } })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(Object.keys(r.body.details)).toEqual([field])
    }
    const all = await t.call('POST', `/v1/accounts/${a.id}`, {
      key: a.key,
      body: { default_outbound_did: 'pn_x', hold_music_clip: 'clip_x', default_button_template: 'bt_x' },
    })
    expect(Object.keys(all.body.details).sort()).toEqual(['default_button_template', 'default_outbound_did', 'hold_music_clip'])
    const g = await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect(g.body.default_outbound_did).toBeNull()
    expect(g.body.hold_music_clip).toBeNull()
    expect(g.body.default_button_template).toBeNull()
  })

  test('billing_address: editing it does not move main_location or its address; null clears it', async () => {
    const a = await t.account()
    const r = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { billing_address: otherAddress } })
    expect(r.status).toBe(200)
    expect(r.body.billing_address.city).toBe('Austin')
    expect(r.body.billing_address.formatted_address).toContain('Austin')
    expect(typeof r.body.billing_address.latitude).toBe('number')
    expect(r.body.main_location).toBe(a.account.main_location)
    const loc = await t.call('GET', `/v1/locations/${a.account.main_location}`, { key: a.key, account: a.id })
    expect(loc.body.address.city).toBe('Springfield')
    const locs = await t.call('GET', '/v1/locations', { key: a.key, account: a.id })
    expect(locs.body.data).toHaveLength(1)
    const bad = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { billing_address: { city: 'Austin', state: 'QQ', postal_code: '73301' } } })
    expect(bad.status).toBe(400)
    expect(bad.body.details['billing_address.state']).toBeDefined()
    const cleared = await t.call('POST', `/v1/accounts/${a.id}`, { key: a.key, body: { billing_address: null } })
    expect(cleared.status).toBe(200)
    expect(cleared.body.billing_address).toBeNull()
    expect(cleared.body.main_location).toBe(a.account.main_location)
  })

  test('unknown fields are a validation_error (including read-only fields)', async () => {
    const a = await t.account()
    const r = await t.call('POST', `/v1/accounts/${a.id}`, {
      key: a.key,
      body: { name: 'X', tos_status: 'signed', onboarding_complete: true, provisioning_base_url: 'http://evil', pricing: {} },
    })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('validation_error')
    for (const f of ['tos_status', 'onboarding_complete', 'provisioning_base_url', 'pricing']) expect(r.body.details[f]).toBe('is not a known field')
    expect((await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })).body.name).toBe('Acme Dental')
  })

  test('updating an unknown account is 404 account_not_found', async () => {
    const p = await t.platform()
    const r = await t.call('POST', '/v1/accounts/acct_doesnotexist', { key: p.test_key, body: { name: 'x' } })
    expect(r.status).toBe(404)
    expect(r.body.code).toBe('account_not_found')
  })
})

describe('delete account', () => {
  test('irreversible: removes the account and its data (users, locations, pricing)', async () => {
    const a = await t.account()
    const u = await t.call('POST', '/v1/users', { key: a.key, account: a.id, body: { name: 'Team', email: 'team@example.com' } })
    expect(u.status).toBe(200)
    const extra = await t.call('POST', '/v1/locations', { key: a.key, account: a.id, body: { address: otherAddress } })
    expect(extra.status).toBe(200)
    const token = await session(a.key, a.id, ['account_onboarding'])

    const d = await t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key })
    expect(d.status).toBe(200)
    expect(d.body).toEqual({ id: a.id, object: 'account', deleted: true })

    const g = await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect(g.status).toBe(404)
    expect(g.body.code).toBe('account_not_found')
    expect((await t.call('GET', '/v1/accounts', { key: a.key })).body.data).toHaveLength(0)
    // Account-scoped reads name an account the platform no longer has.
    const users = await t.call('GET', `/v1/users/${u.body.id}`, { key: a.key, account: a.id })
    expect(users.status).toBe(403)
    expect(users.body.code).toBe('account_forbidden')
    const loc = await t.call('GET', `/v1/locations/${extra.body.id}`, { key: a.key, account: a.id })
    expect(loc.status).toBe(403)
    const pricing = await t.call('GET', `/v1/accounts/${a.id}/pricing`, { key: a.key })
    expect(pricing.status).toBe(404)
    expect(pricing.body.code).toBe('account_not_found')
    // A session of the account dies with it.
    const s = await t.call('GET', `/v1/accounts/${a.id}`, { key: token })
    expect(s.status).toBe(401)
    // The rows are gone, not hidden.
    expect(await countWhere(sql`select count(*) as n from users where account_id = ${a.id}`)).toBe(0)
    expect(await countWhere(sql`select count(*) as n from locations where account_id = ${a.id}`)).toBe(0)
    expect(await countWhere(sql`select count(*) as n from pricing_agreements where account_id = ${a.id}`)).toBe(0)
  })

  test('deleting again is 404 account_not_found', async () => {
    const a = await t.account()
    expect((await t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key })).status).toBe(200)
    const again = await t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key })
    expect(again.status).toBe(404)
    expect(again.body.code).toBe('account_not_found')
  })

  test('deleting one account leaves the platform’s other accounts alone', async () => {
    const a = await t.account()
    clock.advance(SECOND)
    const b = await t.call('POST', '/v1/accounts', { key: a.key, body: sampleAccount({ name: 'Keeper' }) })
    await t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key })
    const g = await t.call('GET', `/v1/accounts/${b.body.id}`, { key: a.key })
    expect(g.status).toBe(200)
    expect(g.body).toEqual(b.body)
    const locs = await t.call('GET', '/v1/locations', { key: a.key, account: b.body.id })
    expect(locs.body.data).toHaveLength(1)
  })
})

describe('computed fields', () => {
  test('onboarding_complete is false while numbers and devices do not exist, even with a business profile and a team member', async () => {
    const a = await t.account()
    expect(a.account.onboarding_complete).toBe(false)
    // Business profile: a name and a main location. Team member: one user.
    expect(a.account.name).not.toBeNull()
    expect(a.account.main_location).not.toBeNull()
    const u = await t.call('POST', '/v1/users', { key: a.key, account: a.id, body: { name: 'Team', email: 'team@example.com' } })
    expect(u.status).toBe(200)
    const g = await t.call('GET', `/v1/accounts/${a.id}`, { key: a.key })
    expect(g.body.onboarding_complete).toBe(false)
    const list = await t.call('GET', '/v1/accounts', { key: a.key })
    expect(list.body.data[0].onboarding_complete).toBe(false)
  })

  test('tos_status: not_required for sandbox, unsigned for live, until signed; tos_accepted_at null until then', async () => {
    const p = await t.platform({ live_enabled: true })
    const sandbox = await t.call('POST', '/v1/accounts', { key: p.test_key, body: sampleAccount() })
    const live = await t.call('POST', '/v1/accounts', { key: p.live_key, body: sampleAccount() })
    expect(sandbox.body.tos_status).toBe('not_required')
    expect(sandbox.body.tos_accepted_at).toBeNull()
    expect(live.body.tos_status).toBe('unsigned')
    expect(live.body.tos_accepted_at).toBeNull()
    const tos = await t.call('GET', `/v1/accounts/${live.body.id}/tos`, { key: p.live_key })
    clock.advance(SECOND)
    const acc = await t.call('POST', `/v1/accounts/${live.body.id}/tos`, { key: p.live_key, body: { version: tos.body.version } })
    expect(acc.status).toBe(200)
    const g = await t.call('GET', `/v1/accounts/${live.body.id}`, { key: p.live_key })
    expect(g.body.tos_status).toBe('signed')
    expect(g.body.tos_accepted_at).toBe(clock.now().toISOString())
    expect(g.body.tos_accepted_at).toBe(acc.body.acceptance.accepted_at)
  })
})
