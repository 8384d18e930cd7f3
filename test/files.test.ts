/** POST /v1/files end to end: audio and fax documents kept as sent, checked by their bytes; bad uploads refused. */
import { beforeAll, describe, expect, test } from 'bun:test'
import { pcmWav } from './fixtures/pcm-wav'
import { type Caller, download, upload } from './fixtures/upload'
import { startTestService } from './support/service'

const t = await startTestService()
let c: Caller

beforeAll(async () => {
  const a = await t.account()
  c = { key: a.key, account: a.id }
})

const pdf = new TextEncoder().encode('%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n')

describe('POST /v1/files', () => {
  test('a fax document and an audio file are stored as sent, with a signed download URL', async () => {
    const doc = await upload(t, '/v1/files', c, { form: { purpose: 'fax_document', file: { bytes: pdf, name: 'menu.pdf', type: 'application/pdf' } } })
    expect(doc.status).toBe(200)
    expect(doc.body).toMatchObject({
      object: 'file',
      account: c.account,
      purpose: 'fax_document',
      filename: 'menu.pdf',
      content_type: 'application/pdf',
      size: pdf.length,
    })
    const got = await download(doc.body.url)
    expect([got.status, got.type]).toEqual([200, 'application/pdf'])
    expect(new TextDecoder().decode(got.bytes)).toBe(new TextDecoder().decode(pdf))

    const wav = pcmWav({ sampleRate: 44_100, channels: 2, bits: 16, seconds: 0.2 })
    const audio = await upload(t, '/v1/files', c, { form: { purpose: 'audio', file: { bytes: wav, name: 'a.wav', type: 'application/octet-stream' } } })
    expect(audio.body).toMatchObject({ purpose: 'audio', content_type: 'audio/wav', size: wav.length })
  })

  test('refused with field details: missing or unknown purpose, no file, empty, wrong kind, too large', async () => {
    const cases: [Parameters<typeof upload>[3], Record<string, RegExp>][] = [
      [{ form: { file: { bytes: pdf, name: 'x.pdf', type: 'application/pdf' } } }, { purpose: /is required/ }],
      [{ form: { purpose: 'poster', file: { bytes: pdf, name: 'x.pdf', type: 'application/pdf' } } }, { purpose: /must be one of/ }],
      [{ form: { purpose: 'audio' } }, { file: /is required/ }],
      [{ form: { purpose: 'fax_document', file: { bytes: new Uint8Array(), name: 'x.pdf', type: 'application/pdf' } } }, { file: /^empty/ }],
      [{ form: { purpose: 'audio', file: { bytes: pdf, name: 'x.mp3', type: 'audio/mpeg' } } }, { file: /^not_audio/ }],
      [
        {
          form: {
            purpose: 'fax_document',
            file: { bytes: pcmWav({ sampleRate: 8000, channels: 1, bits: 16, seconds: 0.1 }), name: 'x.pdf', type: 'application/pdf' },
          },
        },
        { file: /^not_document/ },
      ],
      [
        { form: { purpose: 'fax_document', file: { bytes: new Uint8Array(3 * 1024 * 1024 + 1), name: 'big.pdf', type: 'application/pdf' } } },
        { file: /at most/ },
      ],
    ]
    for (const [body, details] of cases) {
      const r = await upload(t, '/v1/files', c, body)
      expect([r.status, r.body.code]).toEqual([400, 'validation_error'])
      for (const [field, reason] of Object.entries(details)) expect(r.body.details[field]).toMatch(reason)
    }
    const json = await t.call('POST', '/v1/files', { ...c, body: { purpose: 'audio' } })
    expect([json.status, json.body.code]).toEqual([400, 'validation_error'])
  })
})
