/**
 * The set-up the call-control tests share: a sandbox account with a user, a phone
 * number and a webhook endpoint whose receiver verifies signatures, plus helpers to
 * simulate calls, send commands and wait for a call's events.
 */
import { expect } from 'bun:test'
import type { TestService } from './service'
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver'

export type CallSandbox = { key: string; account: string; user: string; number: string; rx: WebhookReceiver; secret: string }

export function callSandboxes(t: TestService) {
  const receivers: WebhookReceiver[] = []
  const created: { key: string; account: string }[] = []
  t.beforeStop(async () => {
    for (const rx of receivers) await rx.stop()
    for (const c of created) await t.call('DELETE', `/v1/accounts/${c.account}`, { key: c.key })
  })

  async function sandbox(): Promise<CallSandbox> {
    const a = await t.account()
    const c = { key: a.key, account: a.id }
    created.push(c)
    const u = await t.call('POST', '/v1/users', { ...c, body: { email: 'agent@example.com', name: 'Agent' } })
    expect(u.status).toBe(200)
    const avail = await t.call('GET', '/v1/available-phone-numbers?quantity=1', c)
    const number = avail.body.data[0].phone_number
    expect((await t.call('POST', '/v1/phone-number-orders', { ...c, body: { phone_numbers: [number] } })).status).toBe(200)
    const rx = await startWebhookReceiver({ autoStop: false })
    receivers.push(rx)
    const ep = await t.call('POST', '/v1/webhook_endpoints', { ...c, body: { url: rx.url, enabled_events: ['*'] } })
    expect(ep.status).toBe(200)
    return { ...c, user: u.body.id, number, rx, secret: ep.body.secret }
  }

  /** Starts a simulated inbound call (unless `extra` says otherwise) to the sandbox's user; returns its id. */
  const simulate = async (c: CallSandbox, scenario: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const r = await t.call('POST', '/v1/test_helpers/calls', {
      key: c.key,
      account: c.account,
      body: { user: c.user, from_number: '+15551234567', scenario, ...extra },
    })
    expect(r.status).toBe(200)
    return r.body.id as string
  }

  const command = (c: CallSandbox, id: string, body: Record<string, unknown>) => t.call('POST', `/v1/calls/${id}`, { key: c.key, account: c.account, body })

  /** The verified event of this type for this call (the n-th, from 1), waiting for it. */
  async function eventOf(c: CallSandbox, callId: string, type: string, n = 1, timeoutMs = 10_000) {
    const hits = await c.rx.waitFor(n, { timeoutMs, where: (r) => r.body?.type === type && r.body?.data?.call_id === callId })
    return c.rx.verify(hits[n - 1]!, c.secret)
  }

  return { sandbox, simulate, command, eventOf }
}
