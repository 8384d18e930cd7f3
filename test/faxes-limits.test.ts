/**
 * The spec's per-hour fax limits (fax_outbound_per_hour, fax_inbound_per_hour in the
 * account config) over HTTP: the next fax over the limit is 429 fax_limit_exceeded
 * with Retry-After, nothing stored; deleted faxes still count. Real time (no
 * VOICE_CLOCK_SPEED): the hour must not pass during the test. The faxes still in
 * flight are deleted (cancelled) before the account is.
 */
import { expect, test } from 'bun:test'
import { startTestService } from './support/service'
import { makePdf } from './support/pdf'

const t = await startTestService()
const a = await t.account({ body: { config: { fax_outbound_per_hour: 2, fax_inbound_per_hour: 1 } } })
const c = { key: a.key, account: a.id }
const post = (path: string, body: unknown = {}) => t.call('POST', path, { ...c, body })
const get = (path: string) => t.call('GET', path, c)
const sent: string[] = []
t.beforeStop(async () => {
  for (const id of sent) await t.call('DELETE', `/v1/faxes/${id}`, c)
  // The cancels are the actors' to apply (one fax.failed each) while the account still exists.
  await Bun.sleep(1000)
  await t.call('DELETE', `/v1/accounts/${a.id}`, { key: a.key })
})

async function orderNumber(): Promise<string> {
  for (let i = 0; i < 5; i++) {
    const avail = await get('/v1/available-phone-numbers?quantity=5')
    const number = avail.body.data[Math.floor(Math.random() * avail.body.data.length)].phone_number
    if ((await post('/v1/phone-number-orders', { phone_numbers: [number] })).status === 200) return number
  }
  throw new Error('no sandbox number could be ordered')
}
await orderNumber()

async function upload(bytes: Uint8Array) {
  const form = new FormData()
  form.set('purpose', 'fax_document')
  form.set('file', new Blob([bytes]), 'doc.pdf')
  const r = await fetch(`${t.baseUrl}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${c.key}`, 'service-account': c.account }, body: form })
  expect(r.status).toBe(200)
  return ((await r.json()) as any).id as string
}
const count = async (direction: string) => (await get(`/v1/faxes?limit=100&direction=${direction}`)).body.data.length as number

test('fax_outbound_per_hour: the third fax in the hour is 429 fax_limit_exceeded with Retry-After; deleted faxes count', async () => {
  expect(a.account.config).toMatchObject({ fax_outbound_per_hour: 2, fax_inbound_per_hour: 1 })
  const file = await upload(makePdf(1))
  for (let i = 0; i < 2; i++) {
    const r = await post('/v1/faxes', { file, to_number: '+14155550123' })
    expect(r.status).toBe(200)
    sent.push(r.body.id)
  }
  const over = await post('/v1/faxes', { file, to_number: '+14155550123' })
  expect(over.status).toBe(429)
  expect(over.body.code).toBe('fax_limit_exceeded')
  expect(over.body.error).toContain('fax_outbound_per_hour')
  const wait = Number(over.headers.get('retry-after'))
  expect(wait > 3500 && wait <= 3600).toBe(true)
  expect(await count('outbound')).toBe(2)
  // Deleting a fax does not give its place back.
  expect((await t.call('DELETE', `/v1/faxes/${sent[0]}`, c)).status).toBe(200)
  expect((await post('/v1/faxes', { file, to_number: '+14155550123' })).status).toBe(429)
  expect(await count('outbound')).toBe(1)
})

test('fax_inbound_per_hour: the second received fax in the hour is 429 fax_limit_exceeded, nothing stored', async () => {
  const file = await upload(makePdf(2))
  expect((await post('/v1/test_helpers/faxes/inbound', { file, from_number: '+13125550142' })).status).toBe(200)
  const over = await post('/v1/test_helpers/faxes/inbound', { file, from_number: '+13125550142' })
  expect([over.status, over.body.code]).toEqual([429, 'fax_limit_exceeded'])
  expect(over.body.error).toContain('fax_inbound_per_hour')
  expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0)
  expect(await count('inbound')).toBe(1)
})
