/**
 * Faxes end to end over HTTP: POST /v1/faxes of a real PDF uploaded with POST
 * /v1/files (its pages counted from it, rendered to TIFF G3 at 204x196 when
 * ghostscript is on the host), the sandbox carrier's documented destinations on
 * durable timers (VOICE_CLOCK_SPEED compresses them) with exactly one fax.delivered
 * or fax.failed per fax (webhooks received and verified), GET /v1/faxes with every
 * filter, DELETE (in flight: cancelled, fax.failed cancelled), the inbound test
 * helper (fax.received), and the bad input (each a 400 with field details, nothing
 * stored). The per-hour limits: test/faxes-limits.test.ts.
 * PGlite, or PostgreSQL and NATS when DATABASE_URL and NATS_URL are set.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { until } from './support/polling'
import { sampleAccount, startTestService } from './support/service'
import { startWebhookReceiver } from './support/webhook-receiver'
import { makePdf } from './support/pdf'

const t = await startTestService({ VOICE_CLOCK_SPEED: '1000', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const rx = await startWebhookReceiver({ autoStop: false })
afterAll(() => rx.stop())
const a = await t.account()
const c = { key: a.key, account: a.id }
t.beforeStop(() => t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key }))
const ep = await t.call('POST', '/v1/webhook_endpoints', { ...c, body: { url: rx.url, enabled_events: ['fax.received', 'fax.delivered', 'fax.failed'] } })
expect(ep.status).toBe(200)

const post = (path: string, body: unknown = {}) => t.call('POST', path, { ...c, body })
const get = (path: string) => t.call('GET', path, c)

/** A sandbox number of the account (the shared database may hand the first offer to another run: retried). */
async function orderNumber(): Promise<string> {
  for (let i = 0; i < 5; i++) {
    const avail = await get('/v1/available-phone-numbers?quantity=5')
    const number = avail.body.data[Math.floor(Math.random() * avail.body.data.length)].phone_number
    if ((await post('/v1/phone-number-orders', { phone_numbers: [number] })).status === 200) return number
  }
  throw new Error('no sandbox number could be ordered')
}
const did = await orderNumber()
const gs = Bun.which('gs')

async function upload(bytes: Uint8Array, purpose = 'fax_document', name = 'doc.pdf') {
  const form = new FormData()
  form.set('purpose', purpose)
  form.set('file', new Blob([bytes]), name)
  const r = await fetch(`${t.baseUrl}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account }, body: form })
  const body = (await r.json()) as any
  expect(r.status).toBe(200)
  return body.id as string
}

const faxOf = async (id: string) => {
  const list = (await get('/v1/faxes?limit=100')).body.data as any[]
  return list.find((f) => f.id === id)
}
const reaches = (id: string, status: string) => until(`fax ${id} to be ${status}`, async () => (await faxOf(id))?.status === status, 15_000)
/** The fax's webhooks, verified, once each (delivery is at least once). */
async function hooksOf(id: string, n: number) {
  const distinct = () => new Set(rx.requests.filter((r) => r.body?.data?.fax_id === id).map((r) => r.body.id)).size
  await until(`${n} webhooks of ${id}`, () => distinct() >= n, 15_000)
  const seen = new Map<string, any>()
  for (const r of rx.requests.filter((r) => r.body?.data?.fax_id === id)) {
    const e = await rx.verify(r, ep.body.secret)
    seen.set(e.id, e)
  }
  return [...seen.values()]
}
const settle = () => Bun.sleep(500)

async function send(to: string, pages = 2) {
  const file = await upload(makePdf(pages, `to ${to}`))
  const r = await post('/v1/faxes', { file, to_number: to })
  expect(r.status).toBe(200)
  expect(r.body).toMatchObject({ object: 'fax', direction: 'outbound', status: 'queued', did, from_number: did, to_number: to, file, pages, is_read: true })
  return r.body
}

describe('POST /v1/faxes', () => {
  test('delivered over T.38: pages from the PDF, rendered to TIFF G3, exactly one fax.delivered', async () => {
    const f = await send('+14155550123', 3)
    if (gs) {
      expect(f.rendering).toMatchObject({ status: 'rendered', format: 'tiff_g3', resolution: '204x196', pages: 3 })
      const dl = await fetch(f.rendering.url)
      if (dl.status !== 200) throw new Error(`${f.rendering.url} ${dl.status} ${await dl.text()}`)
      const tiff = new Uint8Array(await dl.arrayBuffer())
      expect(String.fromCharCode(tiff[0]!, tiff[1]!)).toMatch(/II|MM/)
      // First IFD: compression 3 (CCITT G3), 204x196 dpi.
      const v = new DataView(tiff.buffer)
      const le = tiff[0] === 0x49
      const ifd = v.getUint32(4, le)
      const tags = new Map<number, number>()
      for (let i = 0; i < v.getUint16(ifd, le); i++) {
        const e = ifd + 2 + i * 12
        const tag = v.getUint16(e, le)
        const type = v.getUint16(e + 2, le)
        if (type === 5) {
          const o = v.getUint32(e + 8, le)
          tags.set(tag, v.getUint32(o, le) / v.getUint32(o + 4, le))
        } else tags.set(tag, type === 3 ? v.getUint16(e + 8, le) : v.getUint32(e + 8, le))
      }
      expect(tags.get(259)).toBe(3)
      expect(tags.get(282)).toBe(204)
      expect(tags.get(283)).toBe(196)
    } else {
      console.warn('[faxes] ghostscript (gs) is not installed: the TIFF G3 rendering assertions are skipped')
      expect(f.rendering).toMatchObject({ status: 'skipped' })
      expect(f.rendering.reason).toContain('ghostscript')
    }
    await reaches(f.id, 'delivered')
    const done = await faxOf(f.id)
    expect(done).toMatchObject({ status: 'delivered', pages: 3, pages_transmitted: 3, transport: 't38', error_code: null })
    expect(done.completed_at).not.toBeNull()
    await settle()
    const hooks = await hooksOf(f.id, 1)
    expect(hooks).toHaveLength(1)
    expect(hooks[0]).toMatchObject({ type: 'fax.delivered', data: { fax_id: f.id, from_number: did, to_number: '+14155550123', pages: 3, transport: 't38' } })
  })

  test('delivered over G.711 (+15005550205)', async () => {
    const f = await send('+15005550205', 1)
    await reaches(f.id, 'delivered')
    expect((await hooksOf(f.id, 1))[0]).toMatchObject({ type: 'fax.delivered', data: { pages: 1, transport: 'g711' } })
  })

  const failures: [string, string, number | null, string | null, number][] = [
    ['+15005550200', 'dial_busy', null, null, 2],
    ['+15005550201', 'dial_no_answer', null, null, 2],
    ['+15005550202', 'fax_failed', 0, 't38', 2],
    ['+15005550203', 'fax_failed', 2, 'g711', 3],
    ['+15005550204', 'max_attempts_exceeded', null, null, 1],
  ]
  for (const [to, code, pages, transport, docPages] of failures) {
    test(`failed: ${to} gives fax.failed ${code}, pages ${pages}`, async () => {
      const f = await send(to, docPages)
      await reaches(f.id, 'failed')
      expect(await faxOf(f.id)).toMatchObject({ status: 'failed', error_code: code, pages_transmitted: pages, transport })
      await settle()
      const hooks = await hooksOf(f.id, 1)
      expect(hooks).toHaveLength(1)
      expect(hooks[0]).toMatchObject({ type: 'fax.failed', data: { fax_id: f.id, from_number: did, to_number: to, pages, transport, error_code: code } })
    })
  }

  test('bad input: each a 400 with field details, nothing stored', async () => {
    const before = (await get('/v1/faxes?limit=100')).body.data.length
    const pdf = await upload(makePdf(1))
    const tiff = await upload(new Uint8Array([0x49, 0x49, 0x2a, 0, 8, 0, 0, 0, 0, 0, 0, 0]), 'fax_document', 'doc.tif')
    const notPdf = await post('/v1/faxes', { file: tiff, to_number: '+14155550123' })
    expect(notPdf.status).toBe(400)
    expect(notPdf.body.code).toBe('validation_error')
    expect(notPdf.body.details.file).toContain('not_pdf')
    const unknown = await post('/v1/faxes', { file: 'file_doesnotexist', to_number: '+14155550123' })
    expect(unknown.status).toBe(400)
    expect(unknown.body.details.file).toContain('not a file of this account')
    for (const bad of ['4155550123', '+0123', 'fax me', '+1415555012345678']) {
      const r = await post('/v1/faxes', { file: pdf, to_number: bad })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('validation_error')
      expect(Object.keys(r.body.details)).toEqual(['to_number'])
    }
    const notOurs = await post('/v1/faxes', { file: pdf, to_number: '+14155550123', from_number: '+14155550999' })
    expect(notOurs.status).toBe(400)
    expect(notOurs.body.details.from_number).toContain('not an active phone number')
    const broken = await upload(new TextEncoder().encode('%PDF-1.4\nnot really a pdf\n%%EOF\n'))
    const unreadable = await post('/v1/faxes', { file: broken, to_number: '+14155550123' })
    expect(unreadable.status).toBe(400)
    expect(unreadable.body.details.file).toContain('unreadable_pdf')
    const both = await post('/v1/faxes', { file: 'file_nope', to_number: 'nope' })
    expect(Object.keys(both.body.details).sort()).toEqual(['file', 'to_number'])
    // A non-PDF refused at upload already (POST /v1/files).
    const form = new FormData()
    form.set('purpose', 'fax_document')
    form.set('file', new Blob([new TextEncoder().encode('hello, not a document')]), 'doc.txt')
    const up = await fetch(`${t.baseUrl}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account }, body: form })
    expect(up.status).toBe(400)
    expect((await get('/v1/faxes?limit=100')).body.data.length).toBe(before)
  })
})

describe('GET /v1/faxes', () => {
  test('every filter: direction, status, did, number, is_read; expand[]=file', async () => {
    const out = await send('+15005550200', 1)
    await reaches(out.id, 'failed')
    const file = await upload(makePdf(2, 'inbound'))
    const inn = await post('/v1/test_helpers/faxes/inbound', { file, from_number: '+12125550177' })
    expect(inn.status).toBe(200)
    const ids = async (q: string) => ((await get(`/v1/faxes?limit=100&${q}`)).body.data as any[]).map((f) => f.id)
    expect(await ids('direction=inbound')).toContain(inn.body.id)
    expect(await ids('direction=inbound')).not.toContain(out.id)
    expect(await ids('direction=outbound')).toContain(out.id)
    expect(await ids('status=failed')).toContain(out.id)
    expect(await ids('status=failed')).not.toContain(inn.body.id)
    expect(await ids('status=received')).toEqual(expect.arrayContaining([inn.body.id]))
    expect(await ids(`did=${encodeURIComponent(did)}`)).toEqual(expect.arrayContaining([inn.body.id, out.id]))
    expect(await ids('did=%2B19995550000')).toEqual([])
    expect(await ids('number=%2B12125550177')).toEqual([inn.body.id])
    expect(await ids('number=%2B15005550200')).toContain(out.id)
    expect(await ids('is_read=false')).toEqual([inn.body.id])
    expect(await ids('is_read=true')).toContain(out.id)
    const expanded = (await get('/v1/faxes?limit=1&direction=inbound&expand[]=file')).body.data[0]
    expect(expanded.file).toMatchObject({ id: file, object: 'file', purpose: 'fax_document', content_type: 'application/pdf' })
    const page = await get('/v1/faxes?limit=1')
    expect(page.body.data).toHaveLength(1)
    expect((await get('/v1/faxes?status=nope')).status).toBe(400)
  })
})

describe('DELETE /v1/faxes/{fax}', () => {
  test('a finished fax is removed; a fax in flight is cancelled first (one fax.failed, cancelled)', async () => {
    const done = await send('+15005550200', 1)
    await reaches(done.id, 'failed')
    const d = await t.call('DELETE', `/v1/faxes/${done.id}`, c)
    expect(d.status).toBe(200)
    expect(d.body).toEqual({ id: done.id, object: 'fax', deleted: true })
    expect(await faxOf(done.id)).toBeUndefined()
    expect((await t.call('DELETE', `/v1/faxes/${done.id}`, c)).body.code).toBe('fax_not_found')
    if (done.rendering.status === 'rendered') expect((await fetch(done.rendering.url)).status).toBe(404)
    // +15005550206 rings an hour (simulated) before failing: still in flight when deleted.
    const flying = await send('+15005550206', 1)
    const x = await t.call('DELETE', `/v1/faxes/${flying.id}`, c)
    expect(x.status).toBe(200)
    await settle()
    const hooks = await hooksOf(flying.id, 1)
    await Bun.sleep(1000)
    expect(await hooksOf(flying.id, 1)).toHaveLength(1)
    expect(hooks[0]).toMatchObject({ type: 'fax.failed', data: { fax_id: flying.id, error_code: 'cancelled', pages: null } })
    expect(await faxOf(flying.id)).toBeUndefined()
    expect((await t.call('DELETE', '/v1/faxes/fax_unknown', c)).status).toBe(404)
  })
})

describe('POST /v1/test_helpers/faxes/inbound', () => {
  test('delivers a real document: stored received and unread, fax.received with the spec’s fields', async () => {
    const file = await upload(makePdf(4, 'hello'))
    const r = await post('/v1/test_helpers/faxes/inbound', { file, from_number: '+13125550142', transport: 'g711' })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      object: 'fax',
      direction: 'inbound',
      status: 'received',
      did,
      to_number: did,
      from_number: '+13125550142',
      pages: 4,
      pages_transmitted: 4,
      transport: 'g711',
      is_read: false,
    })
    if (gs) expect(r.body.rendering).toMatchObject({ status: 'rendered', pages: 4 })
    else console.warn('[faxes] ghostscript (gs) is not installed: the inbound rendering assertion is skipped')
    const hooks = await hooksOf(r.body.id, 1)
    expect(hooks[0]).toMatchObject({
      type: 'fax.received',
      data: { fax_id: r.body.id, from_number: '+13125550142', to_number: did, pages: 4, transport: 'g711' },
    })
    const doc = await fetch((await get(`/v1/faxes?limit=1&direction=inbound&expand[]=file`)).body.data[0].file.url)
    expect(Buffer.from(await doc.arrayBuffer()).equals(Buffer.from(makePdf(4, 'hello')))).toBe(true)
  })

  test('bad input: 400 with field details, nothing stored', async () => {
    const before = (await get('/v1/faxes?limit=100&direction=inbound')).body.data.length
    const audio = await post('/v1/test_helpers/faxes/inbound', { file: 'file_nope', from_number: 'x' })
    expect(audio.status).toBe(400)
    expect(Object.keys(audio.body.details).sort()).toEqual(['file', 'from_number'])
    const pdf = await upload(makePdf(1))
    const wrongDid = await post('/v1/test_helpers/faxes/inbound', { file: pdf, from_number: '+13125550142', to_number: '+19995550000' })
    expect(wrongDid.body.details.to_number).toContain('not an active phone number')
    expect((await get('/v1/faxes?limit=100&direction=inbound')).body.data.length).toBe(before)
  })
})

describe('live accounts', () => {
  test('no fax carrier: 502 fax_carrier_unavailable; the test helper is sandbox only', async () => {
    const p = await t.platform({ live_enabled: true })
    const live = await t.call('POST', '/v1/accounts', { key: p.live_key, body: sampleAccount() })
    if (live.status !== 200) {
      console.warn(`[faxes] live account not created (${live.status}): live assertions skipped`)
      return
    }
    const lc = { key: p.live_key, account: live.body.id }
    t.beforeStop(() => t.call('DELETE', `/v1/accounts/${live.body.id}`, { key: p.live_key }))
    const r = await t.call('POST', '/v1/faxes', { ...lc, body: { file: 'file_x', to_number: '+14155550123' } })
    expect([r.status, r.body.code]).toEqual([502, 'fax_carrier_unavailable'])
    const h = await t.call('POST', '/v1/test_helpers/faxes/inbound', { ...lc, body: { file: 'file_x', from_number: '+14155550123' } })
    expect([h.status, h.body.code]).toEqual([400, 'sandbox_only'])
  })
})
