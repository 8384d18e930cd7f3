/**
 * Presence end to end over HTTP: GET/PUT /v1/me/presence (user tokens), GET
 * /v1/presence (user[]) and GET /v1/users/{user_id}/presence (secret key with
 * Service-Account), on_call during a simulated call and back after it.
 *
 * Devices do not register yet (the media plane is a later issue), so a user with no
 * registered device is offline. Where a test needs the manual state to show, it
 * registers a device for the user the way the media plane will: a DEVICE_REGISTERED
 * message to the user's presence actor (spawn + tell, as every writer does).
 *
 * The real server at VOICE_CLOCK_SPEED=50 (120 s of talk take 2.4 s real: slow
 * enough to see a call in progress, which a hangup then ends).
 */
import { describe, expect, test } from 'bun:test'
import { PRESENCE_KIND, presenceMessages, spawnInTx } from '../actors/client'
import { durableMessage } from '../actors/runtime/commands'
import { shardOf } from '../actors/runtime/shards'
import { scheduleTimer } from '../src/scheduler/durable-timers'
import { callSandboxes } from './support/call-sandbox'
import { until } from './support/polling'
import { startTestService } from './support/service'

const t = await startTestService({ VOICE_CLOCK_SPEED: '50', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const { sandbox, simulate, command } = callSandboxes(t)

type Ctx = { key: string; account: string }

async function ctx(key?: string): Promise<Ctx> {
  const a = await t.account(key ? { key } : {})
  return { key: a.key, account: a.id }
}

async function user(c: Ctx, email = 'someone@example.com') {
  const r = await t.call('POST', '/v1/users', { ...c, body: { email } })
  expect(r.status).toBe(200)
  return r.body as { id: string; created_at: string }
}

async function token(c: Ctx, userId: string) {
  const r = await t.call('POST', '/v1/user_sessions', { key: c.key, body: { user: userId } })
  expect(r.status).toBe(200)
  return r.body.client_secret as string
}

const putPresence = (tok: string, body: unknown, headers: Record<string, string> = {}) => t.call('PUT', '/v1/me/presence', { key: tok, body, headers })
const myPresence = (tok: string) => t.call('GET', '/v1/me/presence', { key: tok })
const userPresence = (c: Ctx, userId: string) => t.call('GET', `/v1/users/${userId}/presence`, c)

/** What the media plane will do when a phone of the user registers: a durable spawn + tell to the user's presence actor. */
async function registerDevice(userId: string, deviceId = 'dev_test_phone') {
  const { db } = t.service.database
  const clock = t.service.clock
  const at = clock.now().toISOString()
  const rows = await db.transaction(async (tx) => {
    const m = presenceMessages(userId, { type: 'DEVICE_REGISTERED', device_id: deviceId }, at)
    const tell = durableMessage.tell(m.event as typeof m.event & Record<string, unknown>)
    return [
      await spawnInTx(tx, clock, PRESENCE_KIND, userId, m.input),
      await scheduleTimer(tx, clock, {
        actorKind: PRESENCE_KIND,
        actorId: userId,
        name: tell.name,
        dueAt: clock.now(),
        event: tell.event,
        shard: shardOf(userId),
      }),
    ]
  })
  await t.service.actors!.client!.wake(PRESENCE_KIND, userId, rows)
}

/** The user's presence once it has this status (polled: calls move on their own). */
const untilStatus = (c: Ctx, userId: string, status: string) =>
  until(`presence ${status} for ${userId}`, async () => {
    const r = await userPresence(c, userId)
    return r.status === 200 && r.body.status === status ? r.body : undefined
  })

describe('GET /v1/me/presence', () => {
  test('a user whose presence never changed: offline (no registered device), no text, since the user’s creation, no WebRTC session', async () => {
    const c = await ctx()
    const u = await user(c)
    const r = await myPresence(await token(c, u.id))
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      object: 'presence_status',
      user: u.id,
      status: 'offline',
      status_text: null,
      updated_at: u.created_at,
      webrtc: { state: 'offline', sessions: 0 },
    })
  })
})

describe('PUT /v1/me/presence', () => {
  test('available, dnd and away are set by hand and read back, by the user and by the platform', async () => {
    const c = await ctx()
    const u = await user(c)
    const tok = await token(c, u.id)
    await registerDevice(u.id)
    expect((await myPresence(tok)).body.status).toBe('available')

    const dnd = await putPresence(tok, { status: 'dnd', status_text: 'In a meeting' })
    expect(dnd.status).toBe(200)
    expect(dnd.body).toMatchObject({ object: 'presence_status', user: u.id, status: 'dnd', status_text: 'In a meeting' })
    expect((await myPresence(tok)).body).toEqual(dnd.body)
    expect((await userPresence(c, u.id)).body).toEqual(dnd.body)

    // status_text omitted keeps the text
    const away = await putPresence(tok, { status: 'away' })
    expect(away.body).toMatchObject({ status: 'away', status_text: 'In a meeting' })
    expect((await myPresence(tok)).body).toEqual(away.body)

    // null clears it
    const back = await putPresence(tok, { status: 'available', status_text: null })
    expect(back.body).toMatchObject({ status: 'available', status_text: null })
    expect((await userPresence(c, u.id)).body).toEqual(back.body)
  })

  test('with no registered device the user stays offline; the text shows and the manual choice is kept for when a device registers', async () => {
    const c = await ctx()
    const u = await user(c)
    const tok = await token(c, u.id)
    const r = await putPresence(tok, { status: 'dnd', status_text: 'Back at 3' })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ status: 'offline', status_text: 'Back at 3' })
    expect((await myPresence(tok)).body).toEqual(r.body)
    await registerDevice(u.id)
    expect((await myPresence(tok)).body).toMatchObject({ status: 'dnd', status_text: 'Back at 3' })
  })

  test('refusals: on_call and offline (set by the service), an unknown status, status_text over 100 characters, no status; nothing is stored', async () => {
    const c = await ctx()
    const u = await user(c)
    const tok = await token(c, u.id)
    await registerDevice(u.id)
    const before = await putPresence(tok, { status: 'dnd', status_text: 'x'.repeat(100) })
    expect(before.status).toBe(200)
    for (const status of ['on_call', 'offline']) {
      const r = await putPresence(tok, { status })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(r.body.details.status).toMatch(/set by the service/)
    }
    for (const [body, field] of [
      [{ status: 'busy' }, 'status'],
      [{ status: 'away', status_text: 'x'.repeat(101) }, 'status_text'],
      [{ status: 'away', status_text: 7 }, 'status_text'],
      [{ status_text: 'hello' }, 'status'],
      [{ status: 'away', mood: 'happy' }, 'mood'],
    ] as const) {
      const r = await putPresence(tok, body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(Object.keys(r.body.details ?? {}).join(' ')).toContain(field)
    }
    expect((await myPresence(tok)).body).toEqual(before.body)
  })

  test('a retried PUT with the same Idempotency-Key replays the answer; with another body the key is refused', async () => {
    const c = await ctx()
    const u = await user(c)
    const tok = await token(c, u.id)
    await registerDevice(u.id)
    const headers = { 'idempotency-key': `presence-${u.id}` }
    const first = await putPresence(tok, { status: 'away', status_text: 'Lunch' }, headers)
    expect(first.status).toBe(200)
    const again = await putPresence(tok, { status: 'away', status_text: 'Lunch' }, headers)
    expect(again.status).toBe(200)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.body).toEqual(first.body)
    expect((await myPresence(tok)).body).toEqual(first.body)
    const other = await putPresence(tok, { status: 'dnd' }, headers)
    expect(other.status).toBe(422)
    expect(other.body.code).toBe('idempotency_key_reused')
    // the same change without a key is harmless too: nothing visible changes, updated_at stays
    const plain = await putPresence(tok, { status: 'away', status_text: 'Lunch' })
    expect(plain.body).toEqual(first.body)
  })
})

describe('GET /v1/presence and GET /v1/users/{user_id}/presence', () => {
  test('every user of the account, or those of user[], as a paginated list', async () => {
    const c = await ctx()
    const a = await user(c, 'a@example.com')
    const b = await user(c, 'b@example.com')
    const d = await user(c, 'd@example.com')
    await putPresence(await token(c, b.id), { status: 'dnd', status_text: 'Focus' })

    const all = await t.call('GET', '/v1/presence?limit=100', c)
    expect(all.status).toBe(200)
    expect(all.body.object).toBe('list')
    expect(all.body.data.map((p: any) => p.user).sort()).toEqual([a.id, b.id, d.id].sort())
    expect(all.body.data.find((p: any) => p.user === b.id)).toMatchObject({ status: 'offline', status_text: 'Focus' })

    const some = await t.call('GET', `/v1/presence?user[]=${a.id}&user[]=${b.id}&limit=100`, c)
    expect(some.status).toBe(200)
    expect(some.body.data.map((p: any) => p.user).sort()).toEqual([a.id, b.id].sort())
    for (const p of some.body.data) expect(p).toEqual((await userPresence(c, p.user)).body)
    const one = await t.call('GET', `/v1/presence?user[]=${d.id}`, c)
    expect(one.status).toBe(200)
    expect(one.body.data.map((p: any) => p.user)).toEqual([d.id])

    // pages follow the list convention
    const first = await t.call('GET', `/v1/presence?user[]=${a.id}&user[]=${b.id}&limit=1`, c)
    expect(first.body.data).toHaveLength(1)
    expect(first.body.next_page_url).toBeString()
    const second = await t.call('GET', first.body.next_page_url, c)
    expect(second.status).toBe(200)
    expect(second.body.data).toHaveLength(1)
    expect([first.body.data[0].user, second.body.data[0].user].sort()).toEqual([a.id, b.id].sort())
  })

  test('user[]: at most 100; an unknown user or another account’s is refused naming user[]', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const other = await ctx(p.test_key)
    const mine = await user(c)
    const theirs = await user(other)
    const many = Array.from({ length: 101 }, (_, i) => `user[]=usr_${i}`).join('&')
    const tooMany = await t.call('GET', `/v1/presence?${many}`, c)
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.code).toBe('validation_error')
    for (const id of [theirs.id, 'usr_does_not_exist']) {
      const r = await t.call('GET', `/v1/presence?user[]=${mine.id}&user[]=${id}`, c)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(r.body.details['user[]']).toContain(id)
    }
  })

  test('another account’s user (same platform or another) is not found', async () => {
    const p = await t.platform()
    const c = await ctx(p.test_key)
    const sibling = await ctx(p.test_key)
    const foreign = await ctx()
    for (const o of [sibling, foreign]) {
      const u = await user(o)
      expect((await userPresence(o, u.id)).status).toBe(200)
      const r = await userPresence(c, u.id)
      expect(r.status).toBe(404)
      expect(r.body.code).toBe('user_not_found')
    }
    // another platform's key does not reach the account at all
    const u = await user(c)
    const r = await userPresence({ key: foreign.key, account: c.account }, u.id)
    expect(r.status).toBe(403)
  })

  test('credentials: user tokens on /v1/me/presence only; secret keys with Service-Account on the others; account sessions on none', async () => {
    const c = await ctx()
    const u = await user(c)
    const tok = await token(c, u.id)
    const s = await t.call('POST', '/v1/account_sessions', {
      key: c.key,
      body: { account: c.account, components: { call_logs: { enabled: true }, voicemails: { enabled: true }, account_onboarding: { enabled: true } } },
    })
    expect(s.status).toBe(200)
    const session = s.body.client_secret as string

    expect((await t.call('GET', '/v1/presence', { key: tok })).status).toBe(403)
    expect((await t.call('GET', `/v1/users/${u.id}/presence`, { key: tok })).status).toBe(403)
    for (const method of ['GET', 'PUT']) {
      const body = method === 'PUT' ? { status: 'away' } : undefined
      expect((await t.call(method, '/v1/me/presence', { ...c, body })).status).toBe(403)
      expect((await t.call(method, '/v1/me/presence', { key: session, body })).status).toBe(403)
      expect((await t.call(method, '/v1/me/presence', { body })).status).toBe(401)
    }
    const bySession = await t.call('GET', '/v1/presence', { key: session })
    expect(bySession.status).toBe(403)
    // no session component grants presence (gateway/session-components.ts): a platform acts for its users here
    expect(bySession.body.code).toBe('forbidden')
    expect((await t.call('GET', `/v1/users/${u.id}/presence`, { key: session })).status).toBe(403)
    expect((await t.call('GET', '/v1/presence', { key: c.key })).status).toBe(400) // no Service-Account
    expect((await t.call('GET', '/v1/presence', c)).status).toBe(200)
  })
})

describe('presence during a call', () => {
  test('the answering user is on_call while the call lasts (a PUT then answers on_call) and back to the manual choice after call.end', async () => {
    const c = await sandbox()
    const tok = await token(c, c.user)
    await registerDevice(c.user)
    expect((await putPresence(tok, { status: 'dnd', status_text: 'Do not disturb' })).body.status).toBe('dnd')

    const id = await simulate(c, { ring_seconds: 2, talk_seconds: 120 })
    const during = await untilStatus(c, c.user, 'on_call')
    expect(during).toMatchObject({ status: 'on_call', status_text: 'Do not disturb' })
    // the manual choice changes, the status stays on_call while the call lasts
    const put = await putPresence(tok, { status: 'away', status_text: 'Lunch' })
    expect(put.status).toBe(200)
    expect(put.body).toMatchObject({ status: 'on_call', status_text: 'Lunch' })
    expect((await myPresence(tok)).body).toEqual(put.body)

    expect((await command(c, id, { action: 'hangup' })).status).toBe(202)
    expect(await untilStatus(c, c.user, 'away')).toMatchObject({ status: 'away', status_text: 'Lunch' })
  })

  test('the calling user of an outbound call is on_call from its initiation, even while it rings, and released when it ends', async () => {
    const c = await sandbox()
    const id = await simulate(c, { outcome: 'no-answer', ring_seconds: 120 }, { direction: 'outbound', to_number: '+15551239876', from_number: undefined })
    await untilStatus(c, c.user, 'on_call')
    expect((await command(c, id, { action: 'hangup' })).status).toBe(202)
    // no registered device: back to offline
    await untilStatus(c, c.user, 'offline')
  })
})

describe('POST /v1/me/presence/activity (extension: the idle timeout)', () => {
  const report = (tok: string, body?: unknown) => t.call('POST', '/v1/me/presence/activity', { key: tok, ...(body === undefined ? {} : { body }) })

  test('no report for idle_timeout_seconds shows an available user away; the next report brings them back; a manual away stays', async () => {
    const c = await ctx()
    const u = await user(c)
    const tok = await token(c, u.id)
    await registerDevice(u.id)
    await untilStatus(c, u.id, 'available')
    const first = await report(tok, { idle_timeout_seconds: 60 })
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ object: 'presence_status', user: u.id, status: 'available' })
    // 60 s at VOICE_CLOCK_SPEED=50: 1.2 s.
    await untilStatus(c, u.id, 'away')
    const back = await report(tok, { idle_timeout_seconds: 60 })
    expect(back.body.status).toBe('available')
    expect((await myPresence(tok)).body.status).toBe('available')

    expect((await putPresence(tok, { status: 'away', status_text: 'Lunch' })).status).toBe(200)
    expect((await report(tok, { idle_timeout_seconds: 0 })).body).toMatchObject({ status: 'away', status_text: 'Lunch' })
    expect((await putPresence(tok, { status: 'available' })).status).toBe(200)
    // Off (0): nothing turns the user away any more.
    await Bun.sleep(1500)
    expect((await userPresence(c, u.id)).body.status).toBe('available')
  })

  test('without a body the default applies; a bad timeout is a 400 naming it and changes nothing; user tokens only', async () => {
    const c = await ctx()
    const u = await user(c)
    const tok = await token(c, u.id)
    expect((await report(tok)).status).toBe(200)
    for (const bad of [-1, 1.5, 86_401, 'soon']) {
      const r = await report(tok, { idle_timeout_seconds: bad })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(Object.keys(r.body.details ?? {})).toContain('idle_timeout_seconds')
    }
    expect((await report(tok, { idle_timeout_seconds: 60, extra: true })).status).toBe(400)
    const platform = await t.call('POST', '/v1/me/presence/activity', { ...c, body: {} })
    expect(platform.status).toBe((await t.call('PUT', '/v1/me/presence', { ...c, body: { status: 'dnd' } })).status)
    expect(platform.status).toBeGreaterThanOrEqual(400)
  })
})
