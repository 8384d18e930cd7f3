/**
 * Operator mail over SMTP: with SMTP_URL set, the mail that an unhealthy webhook
 * endpoint triggers goes to the platform's administrators through a real SMTP
 * server (smtp-server on loopback), not to the recorded mailbox.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { SMTPServer } from 'smtp-server'
import { smtpMail } from '../src/events/mail'
import { ADMIN_TOKEN, startTestService } from './support/service'
import { startWebhookReceiver } from './support/webhook-receiver'

interface Received {
  from: string
  to: string[]
  data: string
}

async function startSmtp() {
  const received: Received[] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let data = ''
      stream.on('data', (c: Buffer) => (data += c.toString()))
      stream.on('end', () => {
        received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), data })
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as { port: number }).port
  afterAll(() => new Promise<void>((r) => server.close(() => r())))
  return { port, received }
}

const smtp = await startSmtp()
const t = await startTestService({
  SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
  MAIL_FROM: 'Voice Ops <ops@voice.test>',
  WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
  VOICE_CLOCK_SPEED: '1000',
  WEBHOOK_RETRY_INTERVAL_S: '60',
})

async function until<T>(what: string, read: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = read()
    if (v !== undefined) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(20)
  }
}

describe('operator mail goes out over SMTP when SMTP_URL is set', () => {
  test('the SMTP transport delivers a message to every recipient with the configured sender', async () => {
    await smtpMail(`smtp://127.0.0.1:${smtp.port}`, 'Voice Ops <ops@voice.test>').send({
      to: ['a@example.com', 'b@example.com'],
      subject: 'Hello',
      text: 'Body text',
    })
    const m = await until('the direct mail', () => smtp.received.find((r) => r.data.includes('Subject: Hello')))
    expect(m.from).toBe('ops@voice.test')
    expect(m.to.sort()).toEqual(['a@example.com', 'b@example.com'])
    expect(m.data).toContain('Body text')
  })

  test('after 5 consecutive failed deliveries the platform administrators are emailed over SMTP, and the recorded mailbox stays empty', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const p = await t.call('POST', '/admin/platforms', { headers: admin, body: { name: 'SMTP platform', admin_emails: ['oncall@platform.example'] } })
    const a = await t.account({ key: p.body.test_key })
    const rx = await startWebhookReceiver()
    rx.respond(500)
    const ep = await t.call('POST', '/v1/webhook_endpoints', { key: a.key, body: { url: rx.url } })
    for (let i = 0; i < 5; i++) {
      const ev = await t.call('POST', '/v1/test_helpers/events', { key: a.key, account: a.id, body: { event: 'fax.received' } })
      expect(ev.status).toBe(200)
    }
    const mail = await until('the unhealthy-endpoint mail', () => smtp.received.find((r) => r.data.includes(ep.body.id)))
    expect(mail.to).toEqual(['oncall@platform.example'])
    expect(mail.data).toMatch(/unhealthy/i)
    const box = await t.call('GET', '/admin/mail', { headers: admin })
    expect(box.body.data.filter((m: { body: string }) => m.body.includes(ep.body.id))).toHaveLength(0)
  })
})
