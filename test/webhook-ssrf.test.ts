/**
 * Webhook targets on loopback and private networks, with the service as an
 * operator runs it in production (WEBHOOK_ALLOW_PRIVATE_TARGETS unset): each
 * delivery is refused before anything leaves (a receiver listening on loopback
 * sees nothing), counts as a failed delivery (a dead letter with a "refused"
 * reason, each attempt in the endpoint's attempt log), and five of them make the
 * endpoint unhealthy.
 *
 * Such URLs are refused when an endpoint is created or updated through the API
 * (test/webhook-private-targets.test.ts), so the endpoints here are written straight
 * into the database: as one made before that check, or whose name resolves to a
 * private address only later, would be. What is proven is delivery's own guard.
 *
 * Time runs 200 times faster: the 60 s retry interval is 0.3 s of real time.
 * Data: PGlite in memory; with DATABASE_URL, a fresh database on that server
 * (created here, dropped after), whose delivery lock this file's process holds alone.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { sealSecret } from '../src/auth/master-key'
import { sealedContext } from '../src/auth/sealed-columns'
import { webhookEndpoints } from '../src/db/schema'
import { newWebhookSecret } from '../src/events/signing'
import { newId } from '../src/ids'
import { ADMIN_TOKEN, startTestService } from './support/service'
import { startWebhookReceiver } from './support/webhook-receiver'
import { scratchPostgres } from './support/scratch-postgres'
import { until } from './support/polling'
import { pendingDeliveriesTo } from './support/quiescence'

const SPEED = 200
const ATTEMPTS = 6

const pg = await scratchPostgres('ssrf')
// No WEBHOOK_ALLOW_PRIVATE_TARGETS: the production default.
const t = await startTestService({ ...pg.env, VOICE_CLOCK_SPEED: String(SPEED), WEBHOOK_RETRY_INTERVAL_S: '60', WEBHOOK_TIMEOUT_S: '100' })
afterAll(() => pg.dispose())
expect(t.service.config.webhookAllowPrivateTargets).toBe(false)

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

async function platformAndAccount(adminEmails?: string[]) {
  const p = await t.call('POST', '/admin/platforms', { headers: admin, body: { name: 'SSRF platform', ...(adminEmails ? { admin_emails: adminEmails } : {}) } })
  expect(p.status).toBe(200)
  const key = p.body.test_key as string
  const a = await t.call('POST', '/v1/accounts', {
    key,
    body: {
      email: 'owner@example.com',
      primary_contact_name: 'Ada Owner',
      name: 'Acme Dental',
      address: { address_number: '100', street: 'Main St', city: 'Springfield', state: 'IL', postal_code: '62701', country: 'US' },
      pricing: { per_user_rate: 1500, per_did_rate: 300, per_voiceai_location_rate: 0 },
    },
  })
  expect(a.status).toBe(200)
  return { key, account: a.body.id as string, platform: p.body.id as string }
}

type Scope = { key: string; account: string; platform: string }

/** An enabled endpoint of the account, written straight into the database (the API refuses these URLs). */
async function endpoint(scope: Scope, url: string) {
  const id = newId('webhookEndpoint')
  const now = t.service.clock.now()
  await t.service.database.db.insert(webhookEndpoints).values({
    id,
    platformId: scope.platform,
    accountId: scope.account,
    mode: 'test',
    url,
    secret: sealSecret(newWebhookSecret(), sealedContext.webhookSecret(id)),
    enabledEvents: ['*'],
    description: null,
    status: 'enabled',
    createdAt: now,
    updatedAt: now,
  })
  // Delivery sees it as any other endpoint.
  const r = await t.call('GET', `/v1/webhook_endpoints/${id}`, { key: scope.key, account: scope.account })
  expect(r.status).toBe(200)
  expect(r.body.url).toBe(url)
  return { id, url }
}

async function fire(key: string, account: string) {
  const r = await t.call('POST', '/v1/test_helpers/events', { key, account, body: { event: 'fax.received' } })
  expect(r.status).toBe(200)
  return r.body.id as string
}

async function deadLetters(): Promise<any[]> {
  const r = await t.call('GET', '/admin/dead-letters?limit=500', { headers: admin })
  expect(r.status).toBe(200)
  return r.body.data
}

describe('private webhook targets are refused', () => {
  test('loopback, private, link-local, CGNAT, multicast, unique-local and v4-mapped targets: refused, never reached, dead-lettered', async () => {
    const rx = await startWebhookReceiver()
    const { port, pathname } = new URL(rx.url)
    // A second loopback listener on ::1, when this machine has IPv6 loopback.
    let v6Hits = 0
    let v6: ReturnType<typeof Bun.serve> | undefined
    try {
      v6 = Bun.serve({
        hostname: '::1',
        port: 0,
        fetch() {
          v6Hits++
          return new Response('ok')
        },
      })
    } catch {}
    try {
      const targets = [
        rx.url, // 127.0.0.1
        `http://localhost:${port}${pathname}`, // a name that resolves to loopback
        `http://127.1:${port}${pathname}`,
        `http://2130706433:${port}${pathname}`,
        `http://0.0.0.0:${port}${pathname}`, // reaches local listeners on Linux
        `http://[::ffff:127.0.0.1]:${port}${pathname}`,
        `http://[::1]:${v6?.port ?? port}${pathname}`,
        `http://10.0.0.1:${port}/hook`,
        `http://172.16.0.10/hook`,
        `http://192.168.1.10/hook`,
        `http://169.254.169.254/latest/meta-data/`,
        `http://100.64.0.1/hook`,
        `http://224.0.0.1/hook`,
        `http://[ff02::1]/hook`,
        `http://[fc00::1]/hook`,
        `https://[fd00:ec2::254]/latest/meta-data/`,
        `http://[fe80::1]/hook`,
        `http://[::ffff:10.0.0.1]/hook`,
      ]
      const scope = await platformAndAccount()
      const { key, account } = scope
      const endpoints: { id: string; url: string }[] = []
      for (const url of targets) {
        // The API refuses every one of them, naming the setting.
        const made = await t.call('POST', '/v1/webhook_endpoints', { key, account, body: { url } })
        expect({ url, status: made.status, detail: made.body.details?.url }).toEqual({
          url,
          status: 400,
          detail: expect.stringContaining('WEBHOOK_ALLOW_PRIVATE_TARGETS'),
        })
        endpoints.push(await endpoint(scope, url))
      }
      const id = await fire(key, account)

      const dead = await until('a dead letter for every target', async () => {
        const mine = (await deadLetters()).filter((d) => d.event === id)
        return mine.length === endpoints.length ? mine : undefined
      })
      for (const ep of endpoints) {
        const d = dead.find((x) => x.endpoint === ep.id)
        expect({ url: ep.url, error: d?.last_error }).toEqual({ url: ep.url, error: expect.stringMatching(/^refused: /) })
        expect(d.attempts).toBe(ATTEMPTS) // a refusal is a failed attempt like any other, retried
        expect(d.last_status).toBeNull()
      }
      expect(dead.find((d) => d.endpoint === endpoints[1]!.id).last_error).toContain('localhost resolves to')
      // Every refused attempt is in the endpoint's attempt log.
      const log = await t.call('GET', `/v1/webhook_endpoints/${endpoints[1]!.id}/attempts?limit=100`, { key, account })
      expect(log.status).toBe(200)
      expect(log.body.data).toHaveLength(ATTEMPTS)
      for (const a of log.body.data) {
        expect(a).toMatchObject({ event_id: id, event: 'fax.received', status: 'failed', status_code: null })
        expect(a.failure_reason).toContain('refused: localhost resolves to')
      }
      expect(log.body.data.map((a: any) => a.attempt)).toEqual([6, 5, 4, 3, 2, 1])
      // Nothing reached a loopback listener, and nothing more can be sent.
      for (const ep of endpoints) await until(`no delivery to ${ep.url} pending`, async () => (await pendingDeliveriesTo(t.service.database.db, ep.url)) === 0)
      expect(rx.requests).toEqual([])
      expect(v6Hits).toBe(0)
      // One failed delivery each: still healthy.
      const r = await t.call('GET', `/v1/webhook_endpoints/${endpoints[0]!.id}`, { key, account })
      expect(r.body.healthy).toBe(true)
    } finally {
      await v6?.stop(true)
    }
  }, 45_000)

  test('refused deliveries count as failures: 5 make the endpoint unhealthy, then one attempt each', async () => {
    const mailbox = `ssrf-${randomUUID()}@example.com`
    const rx = await startWebhookReceiver()
    const { port, pathname } = new URL(rx.url)
    const scope = await platformAndAccount([mailbox])
    const { key, account } = scope
    const ep = await endpoint(scope, `http://localhost:${port}${pathname}`)
    const ids: string[] = []
    for (let i = 0; i < 5; i++) ids.push(await fire(key, account))
    await until('five refused dead letters', async () => {
      const mine = (await deadLetters()).filter((d) => d.endpoint === ep.id)
      return mine.length === 5 ? mine : undefined
    })
    const view = await t.call('GET', `/v1/webhook_endpoints/${ep.id}`, { key, account })
    expect(view.body.healthy).toBe(false)
    const mail = await until('the unhealthy-endpoint mail', async () => {
      const r = await t.call('GET', '/admin/mail?limit=500', { headers: admin })
      return (r.body.data as any[]).find((m) => m.to.includes(mailbox))
    })
    expect(mail.subject).toContain(ep.id)
    expect(mail.body).toContain('refused')

    const once = await fire(key, account)
    const d = await until('the single refused attempt', async () => (await deadLetters()).find((x) => x.event === once && x.endpoint === ep.id))
    expect(d.attempts).toBe(1)
    expect(d.last_error).toMatch(/^refused: /)
    expect(rx.requests).toEqual([])
  }, 45_000)
})
