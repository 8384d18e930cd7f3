/**
 * WebRTC softphone support over HTTP (spec "WebRTC"): the ICE servers with their
 * time-limited TURN credential, the Web Push key, push subscriptions; user tokens
 * only; bad subscriptions refused field by field with nothing stored; the
 * subscription's secret sealed at rest.
 */
import { describe, expect, test } from 'bun:test'
import { createECDH, createHmac, randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { pushSubscriptions } from '../src/db/schema'
import { deviceFixtures } from './device-fixtures'
import { startTestService } from './support/service'

const TURN_SECRET = 'turn-shared-secret-for-tests'
const t = await startTestService({
  STUN_URLS: 'stun:127.0.0.1:3478',
  TURN_URLS: 'turn:127.0.0.1:3478?transport=udp,turns:127.0.0.1:5349',
  TURN_SECRET,
  TURN_CREDENTIAL_TTL_S: '3600',
})
const f = deviceFixtures(t)

/** A subscription as a browser makes one: a P-256 key pair's public point and a 16-byte secret. */
function browserSubscription(endpoint = `https://push.example.com/send/${randomBytes(8).toString('hex')}`) {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  return { endpoint, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') } }
}

async function signedIn() {
  const c = await f.ctx()
  const user = await f.user(c)
  return { c, user, token: await f.userToken(c, user) }
}

const rowsOf = (userId: string) => t.service.database.db.select().from(pushSubscriptions).where(eq(pushSubscriptions.userId, userId))

describe('ICE servers', () => {
  test('STUN as configured; TURN with a credential for the user that the TURN server can check, expiring after the TTL', async () => {
    const { user, token } = await signedIn()
    const before = Math.floor(Date.now() / 1000)
    const r = await t.call('GET', '/v1/webrtc/ice-servers', { key: token })
    expect(r.status).toBe(200)
    const [stun, turn] = r.body.ice_servers
    expect(stun).toEqual({ urls: ['stun:127.0.0.1:3478'] })
    expect(turn.urls).toEqual(['turn:127.0.0.1:3478?transport=udp', 'turns:127.0.0.1:5349'])
    const [expiry, named] = turn.username.split(':')
    expect(named).toBe(user)
    expect(Number(expiry)).toBeGreaterThanOrEqual(before + 3600)
    expect(Number(expiry)).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600)
    // What coturn (use-auth-secret) computes from the username it is given.
    expect(turn.credential).toBe(createHmac('sha1', TURN_SECRET).update(turn.username).digest('base64'))
    expect(new Date(r.body.expires_at).getTime()).toBe(Number(expiry) * 1000)
  })
})

describe('credentials: a softphone is a user’s', () => {
  test('user tokens only: a platform key and an account session are refused, no token is 401', async () => {
    const { c } = await signedIn()
    const session = await f.session(c)
    for (const [method, path, body] of [
      ['GET', '/v1/webrtc/ice-servers', undefined],
      ['GET', '/v1/webrtc/push-key', undefined],
      ['POST', '/v1/webrtc/push-subscriptions', browserSubscription()],
    ] as const) {
      expect([path, (await t.call(method, path, { ...c, body })).status]).toEqual([path, 403])
      expect([path, (await t.call(method, path, { key: session, body })).status]).toEqual([path, 403])
      expect([path, (await t.call(method, path, { body })).status]).toEqual([path, 401])
    }
  })
})

describe('Web Push', () => {
  test('the push key is a P-256 public key, the same for every user', async () => {
    const a = await signedIn()
    const b = await signedIn()
    const ka = (await t.call('GET', '/v1/webrtc/push-key', { key: a.token })).body.vapid_public_key
    const kb = (await t.call('GET', '/v1/webrtc/push-key', { key: b.token })).body.vapid_public_key
    expect(ka).toBe(kb)
    const point = Buffer.from(ka, 'base64url')
    expect([point.length, point[0]]).toEqual([65, 4])
    // A browser can agree a secret with it: it is a point on the curve.
    const browser = createECDH('prime256v1')
    browser.generateKeys()
    expect(browser.computeSecret(point)).toHaveLength(32)
  })

  test('a subscription is stored for the user, its secret sealed at rest and never shown back', async () => {
    const { user, token } = await signedIn()
    const sub = browserSubscription()
    const r = await t.call('POST', '/v1/webrtc/push-subscriptions', { key: token, body: sub })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(['created_at', 'endpoint', 'id', 'object'])
    expect(r.body).toMatchObject({ object: 'push_subscription', endpoint: sub.endpoint })
    expect(r.body.id).toStartWith('psub_')
    const [row] = await rowsOf(user)
    expect(row!.p256dh).toBe(sub.keys.p256dh)
    expect(row!.auth).toStartWith('sealed.v1.')
    expect(row!.auth).not.toContain(sub.keys.auth)
    expect(JSON.stringify(r.body)).not.toContain(sub.keys.auth)
  })

  test('the same browser again keeps its id with its new keys; another user signing in to it takes it over', async () => {
    const a = await signedIn()
    const sub = browserSubscription()
    const first = await t.call('POST', '/v1/webrtc/push-subscriptions', { key: a.token, body: sub })
    const again = await t.call('POST', '/v1/webrtc/push-subscriptions', { key: a.token, body: { ...sub, keys: browserSubscription().keys } })
    expect(again.status).toBe(200)
    expect(again.body.id).toBe(first.body.id)
    expect(await rowsOf(a.user)).toHaveLength(1)

    const b = await signedIn()
    const moved = await t.call('POST', '/v1/webrtc/push-subscriptions', { key: b.token, body: sub })
    expect(moved.status).toBe(200)
    expect(moved.body.id).toBe(first.body.id)
    expect(await rowsOf(a.user)).toHaveLength(0)
    expect((await rowsOf(b.user)).map((r) => r.accountId)).toEqual([b.c.account])
  })

  test('a user keeps the 20 browsers subscribed last', async () => {
    const { user, token } = await signedIn()
    const endpoints: string[] = []
    for (let i = 0; i < 22; i++) {
      const sub = browserSubscription()
      endpoints.push(sub.endpoint)
      expect((await t.call('POST', '/v1/webrtc/push-subscriptions', { key: token, body: sub })).status).toBe(200)
    }
    expect((await rowsOf(user)).map((r) => r.endpoint).sort()).toEqual(endpoints.slice(2).sort())
  })

  test('bad subscriptions: 400 with the field named, nothing stored', async () => {
    const { user, token } = await signedIn()
    const good = browserSubscription()
    const notOnCurve = Buffer.from(good.keys.p256dh, 'base64url')
    notOnCurve[64] = notOnCurve[64]! ^ 1
    const cases: [unknown, string][] = [
      [{ ...good, endpoint: 'http://push.example.com/x' }, 'endpoint'],
      [{ ...good, endpoint: 'not a url' }, 'endpoint'],
      [{ ...good, endpoint: 'https://user:pw@push.example.com/x' }, 'endpoint'],
      [{ ...good, keys: { ...good.keys, p256dh: randomBytes(33).toString('base64url') } }, 'keys.p256dh'],
      [{ ...good, keys: { ...good.keys, p256dh: notOnCurve.toString('base64url') } }, 'keys.p256dh'],
      [{ ...good, keys: { ...good.keys, p256dh: 'not base64url!' } }, 'keys.p256dh'],
      [{ ...good, keys: { ...good.keys, auth: randomBytes(8).toString('base64url') } }, 'keys.auth'],
    ]
    for (const [body, field] of cases) {
      const r = await t.call('POST', '/v1/webrtc/push-subscriptions', { key: token, body })
      expect([field, r.status, r.body.code, Object.keys(r.body.details ?? {})]).toEqual([field, 400, 'validation_error', [field]])
    }
    // Schema errors: a missing key, an unknown field (toJSON()'s expirationTime must be left out).
    for (const body of [{ endpoint: good.endpoint }, { ...good, expirationTime: null }, { ...good, keys: { p256dh: good.keys.p256dh } }]) {
      const r = await t.call('POST', '/v1/webrtc/push-subscriptions', { key: token, body })
      expect([r.status, r.body.code]).toEqual([400, 'validation_error'])
    }
    expect(await rowsOf(user)).toHaveLength(0)
  })

  test('a deleted user’s subscriptions go with them', async () => {
    const { c, user, token } = await signedIn()
    expect((await t.call('POST', '/v1/webrtc/push-subscriptions', { key: token, body: browserSubscription() })).status).toBe(200)
    expect((await t.call('DELETE', `/v1/users/${user}`, c)).status).toBe(200)
    expect(await rowsOf(user)).toHaveLength(0)
  })
})
