/** What the device tests share: an account to work in, its users, extensions and locations, fresh MAC addresses. */
import { randomBytes } from 'node:crypto'
import { expect } from 'bun:test'
import type { Reply, TestService } from './support/service'

export type Ctx = { key: string; account: string }

export function deviceFixtures(t: TestService) {
  const ok = (what: string, r: Reply) => {
    if (r.status !== 200) throw new Error(`${what} failed: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }
  return {
    async ctx(key?: string): Promise<Ctx> {
      const a = await t.account(key ? { key } : {})
      return { key: a.key, account: a.id }
    },
    async user(c: Ctx): Promise<string> {
      return ok('user', await t.call('POST', '/v1/users', { ...c, body: { email: `u${randomBytes(5).toString('hex')}@example.com` } })).id
    },
    async extension(c: Ctx, target: string): Promise<string> {
      const number = String(100 + (randomBytes(2).readUInt16BE() % 900))
      const r = await t.call('POST', '/v1/extensions', { ...c, body: { number, target } })
      // A rare clash of random numbers: try another.
      if (r.status === 409) return this.extension(c, target)
      return ok('extension', r).id
    },
    async location(c: Ctx): Promise<string> {
      const address = { address_number: '1', street: 'Elm St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' }
      return ok('location', await t.call('POST', '/v1/locations', { ...c, body: { name: 'Branch', address } })).id
    },
    /** An account session token (the account_onboarding component reaches devices). */
    async session(c: Ctx): Promise<string> {
      const body = { account: c.account, components: { account_onboarding: { enabled: true } } }
      return ok('account session', await t.call('POST', '/v1/account_sessions', { key: c.key, body })).client_secret
    },
    async userToken(c: Ctx, user: string): Promise<string> {
      return ok('user session', await t.call('POST', '/v1/user_sessions', { key: c.key, body: { user } })).client_secret
    },
    async deskphone(c: Ctx, body: Record<string, unknown> = {}) {
      return ok('deskphone', await t.call('POST', '/v1/deskphones', { ...c, body: { vendor: 'yealink', model: 'T54W', mac_address: mac(), ...body } }))
    },
    async base(c: Ctx, body: Record<string, unknown> = {}) {
      return ok('dect base', await t.call('POST', '/v1/dect-bases', { ...c, body: { vendor: 'yealink', model: 'W60B', mac_address: mac(), ...body } }))
    },
    async template(c: Ctx, body: Record<string, unknown> = {}) {
      return ok('button template', await t.call('POST', '/v1/button_templates', { ...c, body: { name: 'Reception', vendor: 'yealink', ...body } }))
    },
    ok,
  }
}

/** A fresh unicast MAC (first octet even), 12 uppercase hex digits. */
export function mac(): string {
  const b = randomBytes(6)
  b[0] = b[0]! & 0xfe
  return b.toString('hex').toUpperCase()
}

export function expectValidation(r: Reply, ...fields: string[]) {
  expect({ status: r.status, code: r.body.code }).toEqual({ status: 400, code: 'validation_error' })
  for (const f of fields) expect({ field: f, reason: typeof r.body.details?.[f] }).toEqual({ field: f, reason: 'string' })
}
