/**
 * Issue 13, "Must show": the black-box matrix of the auth rules. Every operation of
 * the served OpenAPI document (every method, not only GET) is called with every kind
 * of credential: none, an unknown key, the operator token, the platform's sandbox key
 * (with and without Service-Account), its live key on a sandbox account, another
 * platform's key, an account session of each component alone, another account's
 * session, and a user token. What each may reach is read from the document (its
 * Service-Account parameter, `x-session-components`, the "Credentials:" line), so the
 * document and the gateway are held to each other.
 *
 * Calls an operation allows carry path ids that name nothing and a body with an
 * unknown field: they end in 400 or 404 and change nothing, but never in 401 or 403.
 */
import { describe, expect, test } from 'bun:test'
import { SESSION_COMPONENTS } from '../src/schemas/platform'
import { ADMIN_TOKEN, startTestService } from './support/service'

const t = await startTestService()
const doc = (await t.call<any>('GET', '/v1/openapi.json')).body

interface Operation {
  method: string
  path: string
  operationId: string
  /** Secret keys: with Service-Account (account), without (platform), either (optional), never (none). */
  keys: 'account' | 'platform' | 'optional' | 'none'
  sessions: string[]
  user: boolean
  /** The path names the account a session must own. */
  accountParam: boolean
}

// The event stream never ends, so it is left to test/event-stream-caps.test.ts.
const operations: Operation[] = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([, o]) => Array.isArray(o.security) && path !== '/v1/events')
    .map(([method, o]) => {
      const credentials = String(o.description ?? '').match(/Credentials: ([^\n]*)\./)?.[1] ?? ''
      const header = (o.parameters ?? []).some((p: any) => p.name === 'Service-Account')
      const sessions: string[] = o['x-session-components'] ?? []
      const keys = header
        ? 'account'
        : credentials.includes('platform-wide')
          ? 'optional'
          : credentials.includes('platform secret key')
            ? 'platform'
            : credentials.includes('user token')
              ? 'none'
              : 'optional'
      return {
        method: method.toUpperCase(),
        path,
        operationId: o.operationId,
        keys,
        sessions,
        user: credentials.includes('user token'),
        accountParam: path.includes('{account_id}') && sessions.length > 0,
      }
    }),
)

const p = await t.platform()
const a = await t.account({ key: p.test_key })
const other = await t.account()
const user = await t.call<any>('POST', '/v1/users', { key: p.test_key, account: a.id, body: { email: 'matrix@example.com', name: 'Matrix User' } })
const userToken = (await t.call<any>('POST', '/v1/user_sessions', { key: p.test_key, body: { user: user.body.id } })).body.client_secret as string
const sessionOf = async (accountId: string, key: string, component: string) => {
  const r = await t.call<any>('POST', '/v1/account_sessions', { key, body: { account: accountId, components: { [component]: { enabled: true } } } })
  expect(r.status).toBe(200)
  return r.body.client_secret as string
}

/** Ids that name nothing, except the account of a session's own account-level route (the session must own it). */
const concrete = (o: Operation, account: string) => o.path.replace(/\{[^}]+\}/g, (m) => (m === '{account_id}' ? account : 'nothing_here'))

async function send(o: Operation, key: string | undefined, opts: { account?: string; pathAccount?: string } = {}) {
  const r = await t.call<any>(o.method, concrete(o, opts.pathAccount ?? 'nothing_here'), {
    key,
    account: opts.account,
    ...(o.method === 'GET' || o.method === 'HEAD' ? {} : { body: { matrix_probe_unknown_field: true } }),
  })
  return { op: `${o.method} ${o.path}`, status: r.status, code: r.body?.code as string | undefined }
}

/** Passed the gateway's auth: whatever comes next (400, 404, 409, 200) is not a refusal of the credential. */
const admitted = (r: { status: number }) => r.status !== 401 && r.status !== 403

describe('every operation × every credential kind', () => {
  test('the document lists every kind of rule', () => {
    expect(operations.length).toBeGreaterThan(150)
    for (const kind of ['account', 'platform', 'optional', 'none'] as const) expect(operations.some((o) => o.keys === kind)).toBe(true)
    expect(operations.some((o) => o.accountParam)).toBe(true)
  })

  test('no credential, an unknown key, a forged token and the operator token are 401 everywhere', async () => {
    const forged = `${userToken.split('.').slice(0, 2).join('.')}.${'A'.repeat(43)}`
    for (const o of operations) {
      for (const key of [undefined, 'sk_test_not_a_key_000000000000000', forged, ADMIN_TOKEN]) {
        const r = await send(o, key, { account: a.id })
        expect({ ...r, key: key?.slice(0, 8) }).toEqual({ op: r.op, status: 401, code: r.code, key: key?.slice(0, 8) })
      }
    }
  }, 120_000)

  test('the sandbox secret key: its own account, the platform, and never the user routes', async () => {
    for (const o of operations) {
      const withHeader = await send(o, p.test_key, { account: a.id })
      if (o.keys === 'none') expect(withHeader).toEqual({ op: withHeader.op, status: 403, code: 'forbidden' })
      else expect({ op: withHeader.op, admitted: admitted(withHeader), status: withHeader.status }).toMatchObject({ op: withHeader.op, admitted: true })
      if (o.keys === 'account') {
        const without = await send(o, p.test_key)
        expect(without).toEqual({ op: without.op, status: 400, code: 'account_header_required' })
        // Another platform's account, and this platform's account under the live key.
        const foreign = await send(o, p.test_key, { account: other.id })
        expect(foreign).toEqual({ op: foreign.op, status: 403, code: 'account_forbidden' })
        const live = await send(o, p.live_key, { account: a.id })
        expect(live).toEqual({ op: live.op, status: 403, code: 'account_mode_mismatch' })
      }
    }
  }, 120_000)

  for (const component of SESSION_COMPONENTS) {
    test(`an account session with ${component} alone`, async () => {
      const token = await sessionOf(a.id, p.test_key, component)
      for (const o of operations) {
        const r = await send(o, token, { pathAccount: a.id })
        if (o.sessions.includes(component)) expect({ op: r.op, admitted: admitted(r), status: r.status }).toMatchObject({ op: r.op, admitted: true })
        else expect(r).toEqual({ op: r.op, status: 403, code: o.sessions.length > 0 ? 'missing_capability' : 'forbidden' })
        if (!o.sessions.includes(component)) continue
        // Its own account only: another account named in the header or the path is refused.
        const elsewhere = o.accountParam
          ? await send(o, token, { pathAccount: other.id })
          : o.keys === 'account'
            ? await send(o, token, { account: other.id })
            : undefined
        if (elsewhere) expect(elsewhere).toEqual({ op: elsewhere.op, status: 403, code: 'account_forbidden' })
      }
    }, 120_000)
  }

  test("another account's session reaches nothing of this account", async () => {
    const token = await sessionOf(other.id, other.key, 'account_onboarding')
    for (const o of operations.filter((o) => o.keys === 'account' || o.accountParam)) {
      const r = o.accountParam ? await send(o, token, { pathAccount: a.id }) : await send(o, token, { account: a.id })
      expect({ op: r.op, status: r.status }).toEqual({ op: r.op, status: 403 })
    }
  }, 120_000)

  test('a user token reaches the user routes only', async () => {
    for (const o of operations) {
      const r = await send(o, userToken)
      if (o.user) expect({ op: r.op, admitted: admitted(r), status: r.status }).toMatchObject({ op: r.op, admitted: true })
      else expect({ op: r.op, status: r.status }).toEqual({ op: r.op, status: 403 })
    }
  }, 120_000)
})
