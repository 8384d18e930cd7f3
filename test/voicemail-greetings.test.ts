/**
 * Voicemail greetings end to end: GET/POST/DELETE /v1/voicemail_greetings/{owner}/{type}
 * for a user and a shared voicemail box; the audio is converted as clips are; a
 * refused upload keeps the previous greeting; foreign owners are 404.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { voicemailGreetings } from '../src/db/schema'
import { decodeWavHeader } from '../media/wav'
import { pcmWav } from './fixtures/pcm-wav'
import { type Caller, download, upload } from './fixtures/upload'
import { startTestService } from './support/service'

const t = await startTestService()
let c: Caller
let other: Caller
let user: string
let box: string

beforeAll(async () => {
  const a = await t.account()
  c = { key: a.key, account: a.id }
  const b = await t.account()
  other = { key: b.key, account: b.id }
  user = (await t.call('POST', '/v1/users', { ...c, body: { email: 'greeter@example.com', name: 'Greeter' } })).body.id
  box = (await t.call('POST', '/v1/shared_voicemail_boxes', { ...c, body: { name: 'Front desk' } })).body.id
  expect([user, box].every(Boolean)).toBe(true)
})

const wav = (seconds: number) => pcmWav({ sampleRate: 22_050, channels: 2, bits: 16, seconds })

describe('voicemail greetings', () => {
  test('a user’s unavailable greeting: set, read, replace, delete', async () => {
    const path = `/v1/voicemail_greetings/${user}/unavailable`
    expect((await t.call('GET', path, c)).body.code).toBe('voicemail_greeting_not_found')
    const set = await upload(t, path, c, { form: { file: { bytes: wav(1.5), name: 'hello.wav', type: 'audio/wav' } } })
    expect(set.status).toBe(200)
    expect(set.body).toMatchObject({ object: 'voicemail_greeting', owner: user, type: 'unavailable', duration_seconds: 1.5, sample_rate: 8000, channels: 1 })
    const info = decodeWavHeader((await download(set.body.url)).bytes)
    expect([info.sampleRate, info.channels, info.bitsPerSample]).toEqual([8000, 1, 16])

    const replaced = await upload(t, path, c, { raw: wav(0.75), type: 'audio/wav' })
    expect(replaced.body).toMatchObject({ id: set.body.id, duration_seconds: 0.75 })
    expect((await download(set.body.url)).status).toBe(404) // the replaced audio is gone
    expect((await t.call('GET', path, c)).body.duration_seconds).toBe(0.75)

    const refused = await upload(t, path, c, { raw: new TextEncoder().encode('not audio'), type: 'audio/wav' })
    expect(refused.status).toBe(400)
    expect(refused.body.details.file).toMatch(/^not_audio/)
    expect((await t.call('GET', path, c)).body.duration_seconds).toBe(0.75)

    expect((await t.call('DELETE', path, c)).body).toEqual({ object: 'voicemail_greeting', owner: user, type: 'unavailable', deleted: true })
    expect((await t.call('GET', path, c)).status).toBe(404)
    expect((await download(replaced.body.url)).status).toBe(404)
  })

  test('a shared voicemail box has greetings too; types are unavailable, busy and name', async () => {
    for (const type of ['busy', 'name']) {
      const r = await upload(t, `/v1/voicemail_greetings/${box}/${type}`, c, { form: { file: { bytes: wav(0.5), name: 'g.wav', type: 'audio/wav' } } })
      expect({ type, status: r.status, owner: r.body.owner }).toEqual({ type, status: 200, owner: box })
    }
    const bad = await t.call('GET', `/v1/voicemail_greetings/${box}/weekend`, c)
    expect([bad.status, bad.body.code]).toEqual([400, 'validation_error'])
  })

  test('404 voicemail_owner_not_found for an unknown owner or another account’s user; nothing stored', async () => {
    for (const who of [c, other]) {
      const owner = who === c ? 'usr_nobody' : user
      const r = await upload(t, `/v1/voicemail_greetings/${owner}/busy`, who, { raw: wav(0.2), type: 'audio/wav' })
      expect([r.status, r.body.code]).toEqual([404, 'voicemail_owner_not_found'])
      const g = await t.call('GET', `/v1/voicemail_greetings/${owner}/busy`, who)
      expect([g.status, g.body.code]).toEqual([404, 'voicemail_owner_not_found'])
      expect((await t.call('DELETE', `/v1/voicemail_greetings/${owner}/busy`, who)).status).toBe(404)
    }
  })

  test('an account session with the voicemails component manages greetings; other components may not', async () => {
    const session = async (component: string) => {
      const r = await t.call('POST', '/v1/account_sessions', { key: c.key, body: { account: c.account, components: { [component]: { enabled: true } } } })
      return { key: r.body.client_secret as string }
    }
    const path = `/v1/voicemail_greetings/${user}/name`
    const vm = await session('voicemails')
    expect((await upload(t, path, vm, { raw: wav(0.4), type: 'audio/wav' })).status).toBe(200)
    expect((await t.call('GET', path, vm)).status).toBe(200)
    const logs = await session('call_logs')
    const refused = await upload(t, path, logs, { raw: wav(0.4), type: 'audio/wav' })
    expect([refused.status, refused.body.code]).toEqual([403, 'missing_capability'])
    expect((await t.call('DELETE', path, logs)).status).toBe(403)
    expect((await t.call('DELETE', path, vm)).status).toBe(200)
  })

  test('deleting a shared voicemail box deletes its greetings; a greeting of a deleted box is 404 voicemail_owner_not_found', async () => {
    const doomed = (await t.call('POST', '/v1/shared_voicemail_boxes', { ...c, body: { name: 'Night line' } })).body.id as string
    const path = `/v1/voicemail_greetings/${doomed}/unavailable`
    const greeting = await upload(t, path, c, { raw: wav(0.3), type: 'audio/wav' })
    expect(greeting.status).toBe(200)
    expect((await t.call('DELETE', `/v1/shared_voicemail_boxes/${doomed}`, c)).status).toBe(200)
    expect(await t.service.database.db.select().from(voicemailGreetings).where(eq(voicemailGreetings.ownerId, doomed))).toEqual([])
    expect((await download(greeting.body.url)).status).toBe(404) // its audio went with it
    const late = await upload(t, path, c, { raw: wav(0.3), type: 'audio/wav' })
    expect([late.status, late.body.code]).toEqual([404, 'voicemail_owner_not_found'])
  })

  test('the database holds every greeting to an owner: a greeting naming no existing user or box cannot be stored', async () => {
    const now = new Date()
    const row = {
      accountId: c.account!,
      type: 'busy' as const,
      storageKey: 'greetings/none.wav',
      durationMs: 100,
      sizeBytes: 44,
      sourceFormat: 'wav' as const,
      sourceSampleRate: 8000,
      sourceChannels: 1,
      createdAt: now,
      updatedAt: now,
    }
    const insert = async (values: { id: string; ownerId: string; userId?: string }) => {
      await t.service.database.db.insert(voicemailGreetings).values({ ...row, ...values })
    }
    // A missing user (foreign key), no owner column at all, and an owner_id that is not the key set (check).
    await expect(insert({ id: 'vmg_fk_user', ownerId: 'usr_missing', userId: 'usr_missing' })).rejects.toThrow()
    await expect(insert({ id: 'vmg_no_owner', ownerId: user })).rejects.toThrow()
    await expect(insert({ id: 'vmg_mismatch', ownerId: box, userId: user })).rejects.toThrow()
    expect(await t.service.database.db.select().from(voicemailGreetings).where(eq(voicemailGreetings.storageKey, 'greetings/none.wav'))).toEqual([])
  })
})
