/**
 * A SIGKILL of the process holding a call's legs (the media role; embedded here, so
 * the whole service) while the call talks (and, for comparison, a clean SIGTERM: the
 * media role hangs the call up, BYE to both phones, and it ends completed). Nothing will ever report what the phones
 * do, so once the process is restarted on the same data, the media watchdog sees
 * that the dead process's heartbeat stopped and tells the call FAIL: the call ends
 * `failed` with its complete event set (initiated, ringing, answered, end), each
 * event delivered once, and the call actor is finished (a command finds nothing).
 * On PostgreSQL (DATABASE_URL) the service runs on a scratch database of its own.
 */
import { afterAll, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { mac } from './device-fixtures'
import { until } from './support/polling'
import { freshDataDir } from './support/data-dir'
import { freeSipPort, scratchPostgres } from './support/scratch-postgres'
import { sipTemporaryFolder } from './support/sip-phones'
import { callApi, sampleAccount } from './support/service'
import { type ServiceProcess, startServiceProcess } from './support/service-process'
import { startWebhookReceiver } from './support/webhook-receiver'

const sipp = Bun.which('sipp')
const sox = Bun.which('sox')
const ADMIN = 'media-crash-admin-token-0123456789'
const SCENARIOS = join(import.meta.dir, 'sip')
const work = sipTemporaryFolder('sip-media-crash-')
// What the answering phone plays (test/sip/answer.xml): 1 kHz, A-law.
if (sox) Bun.spawnSync([sox, '-n', '-r', '8000', '-c', '1', '-e', 'a-law', join(work, 'tone.wav'), 'synth', '4', 'sine', '1000'])
const running = new Set<ServiceProcess>()
const peers = new Set<{ kill(): void; exited: Promise<number> }>()
const stores: { dispose(): Promise<void> }[] = []

afterAll(async () => {
  for (const p of peers) p.kill()
  for (const r of running) await r.kill()
  for (const s of stores) await s.dispose().catch(() => {})
}, 30_000)

async function store(): Promise<Record<string, string>> {
  const pg = await scratchPostgres('media_crash')
  if (pg.url) {
    stores.push(pg)
    return { ...pg.env, DATA_DIR: 'memory://' }
  }
  const dir = freshDataDir('media-crash')
  stores.push(dir)
  return { DATA_DIR: dir.dataDir }
}

/** A sipp run in the background (killed at the end of the file if still running). */
function sippRun(sipPort: number, scenario: string, fields: string[], args: string[]) {
  const csv = join(work, `${crypto.randomUUID()}.csv`)
  writeFileSync(csv, `SEQUENTIAL\n${fields.join(';')};\n`)
  const child = Bun.spawn(
    [
      sipp!,
      `127.0.0.1:${sipPort}`,
      '-sf',
      join(SCENARIOS, scenario),
      '-inf',
      csv,
      '-t',
      'u1',
      '-i',
      '127.0.0.1',
      '-m',
      '1',
      '-timeout',
      '60s',
      '-nostdin',
      ...args,
    ],
    { cwd: work, stdout: 'ignore', stderr: 'ignore' },
  )
  peers.add(child)
  return child
}

if (!sipp || !sox)
  test.skip(`SIGKILL and SIGTERM of the media process mid-call (skipped: ${sipp ? 'sox' : 'sipp (Debian package sip-tester)'} is not installed)`, () => {})

for (const [signal, status] of [
  ['SIGKILL', 'failed'],
  ['SIGTERM', 'completed'],
] as const)
  test.skipIf(!sipp || !sox)(
    `${signal} of the media process mid-call: ${signal === 'SIGKILL' ? 'after the restart the call ends failed' : 'both phones get a BYE, the call ends completed'}, with every event once`,
    async () => {
      const settings = { ...(await store()), VOICE_ADMIN_TOKEN: ADMIN, WEBHOOK_ALLOW_PRIVATE_TARGETS: '1', SIP_PORT: String(await freeSipPort()) }
      const sipPort = Number(settings.SIP_PORT)
      const first = await startServiceProcess(settings)
      running.add(first)
      const api = (r: ServiceProcess, method: string, path: string, o: { key?: string; account?: string; body?: unknown } = {}) =>
        callApi(r.url, method, path, o)

      // A platform, an account, two users with an extension and a desk phone line each, and a webhook receiver.
      const platform = await callApi(first.url, 'POST', '/admin/platforms', { headers: { authorization: `Bearer ${ADMIN}` }, body: { name: 'Crash' } })
      expect(platform.status).toBe(200)
      const key = platform.body.test_key as string
      const account = (await api(first, 'POST', '/v1/accounts', { key, body: sampleAccount() })).body.id as string
      const c = { key, account }
      const line = async (ext: string) => {
        const user = (await api(first, 'POST', '/v1/users', { ...c, body: { email: `u${ext}-${crypto.randomUUID().slice(0, 8)}@example.com` } })).body
          .id as string
        const extension = (await api(first, 'POST', '/v1/extensions', { ...c, body: { number: ext, target: user } })).body.id as string
        const phone = await api(first, 'POST', '/v1/deskphones', {
          ...c,
          body: { vendor: 'yealink', model: 'T54W', mac_address: mac(), lines: [{ user, extension }] },
        })
        expect(phone.status).toBe(200)
        const lines = await api(first, 'GET', `/v1/deskphones/${phone.body.id}/lines`, c)
        return { user, ext, account: lines.body.data[0].sip_credentials as { username: string; password: string; domain: string } }
      }
      const caller = await line('201')
      const callee = await line('202')
      const rx = await startWebhookReceiver()
      const endpoint = await api(first, 'POST', '/v1/webhook_endpoints', { ...c, body: { url: rx.url, enabled_events: ['*'] } })
      expect(endpoint.status).toBe(200)
      const auth = (a: { username: string; password: string }) => `[authentication username=${a.username} password=${a.password}]`

      // The callee's phone registers, then answers on that port; the caller calls and talks until a BYE that never comes.
      const calleePort = await freeSipPort()
      const registered = sippRun(
        sipPort,
        'register.xml',
        [callee.account.username, callee.account.domain, auth(callee.account), '600'],
        ['-p', String(calleePort), '-auth_uri', callee.account.domain],
      )
      expect(await registered.exited).toBe(0)
      await until('the callee available', async () => (await api(first, 'GET', `/v1/users/${callee.user}/presence`, c)).body.status === 'available')
      const calleePhone = sippRun(sipPort, 'answer.xml', ['unused'], ['-p', String(calleePort), '-mi', '127.0.0.1', '-mp', String(await freeSipPort())])
      await Bun.sleep(300)
      const callerPhone = sippRun(
        sipPort,
        'call-extension-wait-bye.xml',
        [caller.account.username, caller.account.domain, callee.ext, auth(caller.account)],
        [
          '-p',
          String(await freeSipPort()),
          '-mi',
          '127.0.0.1',
          '-mp',
          String(await freeSipPort()),
          '-rtp_echo',
          '-auth_uri',
          `${callee.ext}@${caller.account.domain}`,
        ],
      )
      const callId = await until('the call answered', async () => {
        const call = (await api(first, 'GET', '/v1/calls', c)).body.data?.[0]
        return call?.answered_at ? (call.id as string) : undefined
      })

      if (signal === 'SIGKILL') await first.kill()
      else {
        // A clean stop: the media role hangs its calls up (BYE to both phones) and writes their events first.
        first.proc.kill('SIGTERM')
        expect(await first.proc.exited).toBe(0)
        expect([await callerPhone.exited, await calleePhone.exited]).toEqual([0, 0])
      }
      const second = await startServiceProcess(settings)
      running.add(second)

      const log = await until(
        `the call to end ${status}`,
        async () => {
          const call = (await api(second, 'GET', `/v1/calls/${callId}`, c)).body
          return call?.status ? call : undefined
        },
        60_000,
      )
      expect(log).toMatchObject({ id: callId, status, direction: 'internal' })
      expect(log.answered_at).toBeTruthy()

      // Every event of the call, once each (delivery is at least once: counted by id), in order.
      const secret = endpoint.body.secret as string
      const events = await until('call.end delivered', async () => {
        const byId = new Map<string, any>()
        for (const r of rx.requests) {
          const e = await rx.verify(r, secret)
          if (e.data?.call_id === callId) byId.set(e.id, e)
        }
        const all = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : 1))
        return all.some((e) => e.type === 'call.end') ? all : undefined
      })
      expect(events.map((e) => e.type)).toEqual(['call.initiated', 'call.ringing', 'call.answered', 'call.end'])
      expect(events[3].data).toMatchObject({ status })
      // Nothing is left half-open: the call actor has finished, so a command finds no call going on.
      const hangup = await api(second, 'POST', `/v1/calls/${callId}`, { ...c, body: { action: 'hangup' } })
      expect(hangup.status).toBe(409)
    },
    150_000,
  )
