/**
 * A webhook URL that delivery would refuse is refused when the endpoint is created or
 * updated, with 400 validation_error and `details.url` naming
 * WEBHOOK_ALLOW_PRIVATE_TARGETS, instead of being accepted and never sent to: literal
 * loopback, private, link-local... addresses (the check delivery makes before sending)
 * and localhost names. Other names are judged at delivery, on the addresses they
 * resolve to (test/webhook-ssrf.test.ts). With the setting on, all of them are accepted.
 * The calls go through the typed client (client/).
 */
import { describe, expect, test } from 'bun:test'
import { apiClient } from './support/api-client'
import { startTestService } from './support/service'

const strict = await startTestService()
const open = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
expect(strict.service.config.webhookAllowPrivateTargets).toBe(false)
const endpoint = (webhook_endpoint: string) => ({ params: { path: { webhook_endpoint } } })

const REFUSED = [
  'http://127.0.0.1:8080/hook',
  'http://127.1/hook',
  'http://2130706433/hook',
  'http://0.0.0.0/hook',
  'http://localhost:3000/hook',
  'http://LOCALHOST./hook',
  'https://app.localhost/hook',
  'http://[::1]/hook',
  'http://[::ffff:127.0.0.1]/hook',
  'http://10.1.2.3/hook',
  'http://172.16.0.10/hook',
  'http://192.168.1.10/hook',
  'http://169.254.169.254/latest/meta-data/',
  'http://100.64.0.1/hook',
  'http://[fd00:ec2::254]/hook',
  'http://[fe80::1]/hook',
]

const ACCEPTED = ['https://hooks.example.com/voice', 'http://93.184.215.14/hook', 'https://[2606:4700::1111]/hook', 'https://localhost.example.com/hook']

describe('private webhook targets, WEBHOOK_ALLOW_PRIVATE_TARGETS off', () => {
  test('create refuses each with 400 validation_error, details.url naming the setting; nothing is made', async () => {
    const { key, id: account } = await strict.account()
    const api = apiClient(strict, { key, account })
    for (const url of REFUSED) {
      const r = await api.POST('/v1/webhook_endpoints', { body: { url } })
      expect({ url, status: r.response.status, code: r.error?.code }).toEqual({ url, status: 400, code: 'validation_error' })
      expect(r.error?.details?.url).toContain('WEBHOOK_ALLOW_PRIVATE_TARGETS')
      expect(r.error?.error).toContain('WEBHOOK_ALLOW_PRIVATE_TARGETS')
    }
    const list = await api.GET('/v1/webhook_endpoints', { params: { query: { limit: 100 } } })
    expect(list.data?.data).toEqual([])
  })

  test('the detail says what the address is', async () => {
    const { key } = await strict.account()
    const api = apiClient(strict, { key })
    const loop = await api.POST('/v1/webhook_endpoints', { body: { url: 'http://127.0.0.1:9/x' } })
    expect(loop.error?.details?.url).toMatch(/^127\.0\.0\.1 is a loopback address: /)
    const name = await api.POST('/v1/webhook_endpoints', { body: { url: 'http://localhost:9/x' } })
    expect(name.error?.details?.url).toMatch(/^localhost is a loopback name: /)
    // Other problems are reported beside it.
    const both = await api.POST('/v1/webhook_endpoints', { body: { url: 'http://10.0.0.1/x', enabled_events: ['no.such'] } })
    expect(both.response.status).toBe(400)
    expect(Object.keys(both.error?.details ?? {}).sort()).toEqual(['enabled_events[0]', 'url'])
  })

  test('public addresses and names are accepted (a name is judged at delivery, on the addresses it resolves to)', async () => {
    const { key, id: account } = await strict.account()
    const api = apiClient(strict, { key, account })
    for (const url of ACCEPTED) {
      const r = await api.POST('/v1/webhook_endpoints', { body: { url } })
      expect({ url, status: r.response.status }).toEqual({ url, status: 200 })
    }
  })

  test('update refuses a private url and leaves the endpoint as it was; other fields still update', async () => {
    const { key, id: account } = await strict.account()
    const api = apiClient(strict, { key, account })
    const made = await api.POST('/v1/webhook_endpoints', { body: { url: 'https://hooks.example.com/a' } })
    expect(made.response.status).toBe(200)
    const id = made.data!.id
    for (const url of ['http://localhost:8080/hook', 'http://192.168.0.2/hook', 'http://[::1]:3000/']) {
      const r = await api.POST('/v1/webhook_endpoints/{webhook_endpoint}', { ...endpoint(id), body: { url } })
      expect({ url, status: r.response.status, code: r.error?.code }).toEqual({ url, status: 400, code: 'validation_error' })
      expect(r.error?.details?.url).toContain('WEBHOOK_ALLOW_PRIVATE_TARGETS')
    }
    const after = await api.GET('/v1/webhook_endpoints/{webhook_endpoint}', endpoint(id))
    expect(after.data?.url).toBe('https://hooks.example.com/a')
    const renamed = await api.POST('/v1/webhook_endpoints/{webhook_endpoint}', { ...endpoint(id), body: { description: 'still fine' } })
    expect(renamed.response.status).toBe(200)
    const moved = await api.POST('/v1/webhook_endpoints/{webhook_endpoint}', { ...endpoint(id), body: { url: 'https://hooks.example.com/b' } })
    expect(moved.response.status).toBe(200)
    expect(moved.data?.url).toBe('https://hooks.example.com/b')
  })
})

describe('WEBHOOK_ALLOW_PRIVATE_TARGETS on', () => {
  test('every one of them is accepted, at create and at update', async () => {
    const { key, id: account } = await open.account()
    const api = apiClient(open, { key, account })
    for (const url of REFUSED) {
      const r = await api.POST('/v1/webhook_endpoints', { body: { url } })
      expect({ url, status: r.response.status }).toEqual({ url, status: 200 })
      const u = await api.POST('/v1/webhook_endpoints/{webhook_endpoint}', { ...endpoint(r.data!.id), body: { url: 'http://127.0.0.1:1/other' } })
      expect(u.response.status).toBe(200)
    }
  })
})
