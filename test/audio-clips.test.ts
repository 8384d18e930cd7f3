/**
 * Audio clips end to end: uploads of real audio (WAV from our writer, any rate and
 * channel count; an MP3 made with a real encoder) are stored as 8 kHz mono 16-bit
 * WAV with their measured duration; bad uploads are refused with field details and
 * store nothing; another account's clip is 404.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { decodeWavHeader, encodeWav } from '../media/wav'
import { pcmWav } from './fixtures/pcm-wav'
import { type Caller, download, upload } from './fixtures/upload'
import { startTestService } from './support/service'

const t = await startTestService()
let c: Required<Caller>
let other: Required<Caller>
const mp3 = new Uint8Array(readFileSync(join(import.meta.dir, 'fixtures/tone-1500ms-22khz-stereo.mp3')))

beforeAll(async () => {
  const a = await t.account()
  c = { key: a.key, account: a.id }
  const b = await t.account()
  other = { key: b.key, account: b.id }
})

const count = async (who: Caller) => (await t.call('GET', '/v1/audio_clips?limit=100', who)).body.data.length

describe('POST /v1/audio_clips', () => {
  test('a 48 kHz stereo WAV is stored as 8 kHz mono 16-bit PCM with its duration', async () => {
    const r = await upload(t, '/v1/audio_clips', c, {
      form: { name: 'Welcome', file: { bytes: pcmWav({ sampleRate: 48_000, channels: 2, bits: 16, seconds: 2 }), name: 'welcome.wav', type: 'audio/wav' } },
    })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      object: 'audio_clip',
      account: c.account,
      name: 'Welcome',
      duration_seconds: 2,
      content_type: 'audio/wav',
      sample_rate: 8000,
      channels: 1,
      source: { filename: 'welcome.wav', format: 'wav', sample_rate: 48_000, channels: 2 },
    })
    const file = await download(r.body.url)
    expect(file.status).toBe(200)
    const info = decodeWavHeader(file.bytes)
    expect([info.format, info.sampleRate, info.channels, info.bitsPerSample]).toEqual([1, 8000, 1, 16])
    expect(Math.round(info.durationMs)).toBe(2000)
    expect(file.bytes.length).toBe(r.body.size)
  })

  test('8-bit mono WAV at 11.025 kHz, sent as the raw body', async () => {
    const r = await upload(t, '/v1/audio_clips', c, { raw: pcmWav({ sampleRate: 11_025, channels: 1, bits: 8, seconds: 0.5 }), type: 'audio/wav' })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ name: null, duration_seconds: 0.5, source: { filename: null, format: 'wav', sample_rate: 11_025, channels: 1 } })
  })

  test('an MP3 is decoded, and its duration measured from the decoded audio', async () => {
    const r = await upload(t, '/v1/audio_clips', c, { form: { file: { bytes: mp3, name: 'tone.mp3', type: 'audio/mpeg' } } })
    expect(r.status).toBe(200)
    expect(r.body.source).toMatchObject({ format: 'mp3', channels: 2 })
    expect(r.body.duration_seconds).toBeGreaterThan(1.4)
    expect(r.body.duration_seconds).toBeLessThan(1.7)
    const info = decodeWavHeader((await download(r.body.url)).bytes)
    expect([info.sampleRate, info.channels]).toEqual([8000, 1])
  })

  test('refused with 400 and details.file, nothing stored: not audio, empty, unsupported encoding, too large, no file', async () => {
    const before = await count(c)
    const aLaw = encodeWav(new Int16Array(800))
    new DataView(aLaw.buffer).setUint16(20, 6, true)
    const cases: [string, Parameters<typeof upload>[3], RegExp][] = [
      ['not audio', { form: { file: { bytes: new TextEncoder().encode('%PDF-1.4 hello'), name: 'x.wav', type: 'audio/wav' } } }, /^not_audio/],
      ['empty', { form: { file: { bytes: new Uint8Array(), name: 'empty.wav', type: 'audio/wav' } } }, /^empty/],
      ['unsupported encoding', { form: { file: { bytes: aLaw, name: 'alaw.wav', type: 'audio/wav' } } }, /^unsupported_encoding/],
      ['too large', { raw: new Uint8Array(3 * 1024 * 1024 + 1), type: 'audio/wav' }, /at most 3145728 bytes/],
      ['no file', { form: { name: 'nothing' } }, /is required/],
    ]
    for (const [what, body, reason] of cases) {
      const r = await upload(t, '/v1/audio_clips', c, body)
      expect({ what, status: r.status, code: r.body.code }).toEqual({ what, status: 400, code: 'validation_error' })
      expect(r.body.details.file).toMatch(reason)
    }
    const unknown = await upload(t, '/v1/audio_clips', c, {
      form: { title: 'x', file: { bytes: pcmWav({ sampleRate: 8000, channels: 1, bits: 16, seconds: 0.1 }), name: 'a.wav', type: 'audio/wav' } },
    })
    expect(unknown.status).toBe(400)
    expect(unknown.body.details).toEqual({ title: 'is not a field of this upload' })
    expect(await count(c)).toBe(before)
  })

  test('a form body is still refused on routes that take JSON', async () => {
    const res = await fetch(`${t.baseUrl}/v1/audio_clips/clip_x`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account, 'content-type': 'audio/wav' },
      body: new Uint8Array(10),
    })
    expect(res.status).toBe(415)
  })
})

describe('audio clip reads, updates and deletes', () => {
  test('get, list, rename, delete (the audio goes with it); another account sees 404', async () => {
    const made = await upload(t, '/v1/audio_clips', c, {
      form: { name: 'Hold', file: { bytes: pcmWav({ sampleRate: 16_000, channels: 1, bits: 16, seconds: 1 }), name: 'hold.wav', type: 'audio/wav' } },
    })
    const id = made.body.id
    expect((await t.call('GET', `/v1/audio_clips/${id}`, c)).body).toMatchObject({ id, name: 'Hold', duration_seconds: 1 })
    expect((await t.call('GET', '/v1/audio_clips', c)).body.data.map((x: { id: string }) => x.id)).toContain(id)
    const renamed = await t.call('POST', `/v1/audio_clips/${id}`, { ...c, body: { name: 'Hold music' } })
    expect(renamed.body).toMatchObject({ id, name: 'Hold music' })

    for (const [method, body] of [['GET'], ['POST', { name: 'x' }], ['DELETE']] as const) {
      const r = await t.call(method, `/v1/audio_clips/${id}`, { ...other, body })
      expect({ method, status: r.status, code: r.body.code }).toEqual({ method, status: 404, code: 'audio_clip_not_found' })
    }
    expect((await t.call('GET', '/v1/audio_clips', other)).body.data).toEqual([])

    const gone = await t.call('DELETE', `/v1/audio_clips/${id}`, c)
    expect(gone.body).toEqual({ id, object: 'audio_clip', deleted: true })
    expect((await t.call('GET', `/v1/audio_clips/${id}`, c)).status).toBe(404)
    expect((await download(made.body.url)).status).toBe(404)
  })

  test('409 audio_clip_in_use while the account’s hold music or a dial plan plays it; deletable once neither does', async () => {
    const made = await upload(t, '/v1/audio_clips', c, { raw: pcmWav({ sampleRate: 8000, channels: 1, bits: 16, seconds: 0.3 }), type: 'audio/wav' })
    const id = made.body.id
    const set = await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { hold_music_clip: id } })
    expect(set.body.hold_music_clip).toBe(id)
    const foreign = await t.call('POST', `/v1/accounts/${other.account}`, { key: other.key, body: { hold_music_clip: id } })
    expect(foreign.body.details).toEqual({ hold_music_clip: 'is not an audio clip of this account' })
    const refused = await t.call('DELETE', `/v1/audio_clips/${id}`, c)
    expect([refused.status, refused.body.code]).toEqual([409, 'audio_clip_in_use'])
    await t.call('POST', `/v1/accounts/${c.account}`, { key: c.key, body: { hold_music_clip: null } })
    // A dial plan that plays it holds it too.
    const plan = await t.call('POST', '/v1/dialplans', {
      ...c,
      body: { name: 'Closed', entry: 'say', nodes: { say: { kind: 'play', clip: id, next: 'bye' }, bye: { kind: 'hangup' } } },
    })
    expect(plan.status).toBe(200)
    expect((await t.call('DELETE', `/v1/audio_clips/${id}`, c)).body.code).toBe('audio_clip_in_use')
    await t.call('DELETE', `/v1/dialplans/${plan.body.id}`, c)
    expect((await t.call('DELETE', `/v1/audio_clips/${id}`, c)).status).toBe(200)
  })

  test('an Idempotency-Key replays the upload instead of storing a second clip', async () => {
    const bytes = pcmWav({ sampleRate: 8000, channels: 1, bits: 16, seconds: 0.2 })
    const send = () =>
      fetch(`${t.baseUrl}/v1/audio_clips`, {
        method: 'POST',
        headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account, 'content-type': 'audio/wav', 'idempotency-key': 'clip-upload-1' },
        body: bytes,
      })
    const before = await count(c)
    const first = await send()
    const again = await send()
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(((await again.json()) as { id: string }).id).toBe(((await first.json()) as { id: string }).id)
    expect(await count(c)).toBe(before + 1)
  })
})
