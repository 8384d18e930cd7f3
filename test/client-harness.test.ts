/**
 * The typed client as the end-to-end tests use it (test/support/api-client.ts) is
 * held to the served document as `t.call` is: an answer off the documented schema
 * fails the request. A stand-in server serves the real document and a wrong body.
 */
import { afterAll, expect, test } from 'bun:test'
import { apiClient } from './support/api-client'
import { startTestService } from './support/service'

const t = await startTestService()
const doc = await (await fetch(`${t.baseUrl}/v1/openapi.json`)).text()
const envelope = { object: 'list', url: '/v1/users', next_page_url: null, previous_page_url: null }
let users: unknown[] = []
const standIn = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch: (req) =>
    new URL(req.url).pathname === '/v1/openapi.json'
      ? new Response(doc, { headers: { 'content-type': 'application/json' } })
      : Response.json({ ...envelope, data: users }),
})
afterAll(() => standIn.stop(true))

test('an answer the document describes passes; one off its schema fails the request', async () => {
  const api = apiClient({ baseUrl: `http://127.0.0.1:${standIn.port}` }, { key: 'sk_test_x', account: 'acct_x' })
  expect((await api.GET('/v1/users')).data?.data).toEqual([])
  users = [{ id: 7 }]
  await expect(api.GET('/v1/users')).rejects.toThrow('does not conform to the OpenAPI document')
})
