/**
 * Zero-touch provisioning end to end: a phone fetches its file under the account's
 * provisioning_base_url the way real Yealink and Polycom phones do (their
 * User-Agent, their file names, HTTP Digest with the device's own credentials),
 * the file parses in its vendor's format with every line's SIP account and every
 * button in it, and the device actor reports device.provisioned (leaving
 * pending_sync), device.config_fetched (every fetch) and device.provisioning_failed,
 * recorded in the device's provisioning history.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { type DigestAlgorithm, digestResponse } from '../src/auth/digest'
import { parseXml, parseYealinkCfg } from '../media/provisioning/parsers.testkit'
import { deviceFixtures, mac } from './device-fixtures'
import { until } from './support/polling'
import { startTestService } from './support/service'
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver'

const t = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' })
const f = deviceFixtures(t)
const receivers: WebhookReceiver[] = []
afterAll(async () => {
  for (const rx of receivers) await rx.stop()
})

const YEALINK_UA = (m: string) => `Yealink SIP-T54W 96.86.0.100 ${m.toLowerCase().match(/../g)!.join(':')}`
const POLYCOM_UA = 'FileTransport PolycomVVX-VVX_450-UA/6.4.3.5018 Type/Application'

async function setup() {
  const c = await f.ctx()
  const rx = await startWebhookReceiver({ autoStop: false })
  receivers.push(rx)
  f.ok(
    'endpoint',
    await t.call('POST', '/v1/webhook_endpoints', {
      ...c,
      body: { url: rx.url, enabled_events: ['device.provisioned', 'device.config_fetched', 'device.provisioning_failed'] },
    }),
  )
  const account = (await t.call<any>('GET', `/v1/accounts/${c.account}`, { key: c.key })).body
  return { c, rx, base: new URL(account.provisioning_base_url).pathname }
}

/** One GET as the phone: first without credentials, then answering the Digest challenge (SHA-256 unless told). */
async function fetchAsPhone(path: string, ua: string, creds?: { username: string; password: string }, algorithm: DigestAlgorithm = 'SHA-256') {
  const first = await fetch(t.baseUrl + path, { headers: { 'User-Agent': ua } })
  if (first.status !== 401 || !creds) return first
  const header = first.headers.get('www-authenticate') ?? ''
  const realm = /realm="([^"]+)"/.exec(header)![1]!
  const nonce = /nonce="([^"]+)"/.exec(header)![1]!
  const cnonce = randomBytes(8).toString('hex')
  const response = digestResponse({
    algorithm,
    username: creds.username,
    realm,
    password: creds.password,
    method: 'GET',
    uri: path,
    nonce,
    nc: '00000001',
    cnonce,
    qop: 'auth',
  })
  const authorization = `Digest username="${creds.username}", realm="${realm}", nonce="${nonce}", uri="${path}", algorithm=${algorithm}, qop=auth, nc=00000001, cnonce="${cnonce}", response="${response}"`
  return fetch(t.baseUrl + path, { headers: { 'User-Agent': ua, Authorization: authorization } })
}

const deviceEvents = (rx: WebhookReceiver, device: string) => rx.events().filter((e) => e.data?.device === device)

describe('a Yealink desk phone fetches its configuration', () => {
  test('401 without credentials; with its Digest login the <mac>.cfg file has every line and key; device.provisioned then config_fetched', async () => {
    const { c, rx, base } = await setup()
    const user = await f.user(c)
    const ext = await f.extension(c, user)
    const template = await f.template(c, { models: ['T54W'] })
    f.ok(
      'button',
      await t.call('POST', `/v1/button_templates/${template.id}/buttons`, { ...c, body: { key: 1, type: 'blf', value: '201', label: 'Reception' } }),
    )
    f.ok(
      'button',
      await t.call('POST', `/v1/button_templates/${template.id}/buttons`, { ...c, body: { key: 2, type: 'speed_dial', value: '+15551230000', label: 'HQ' } }),
    )
    const m = mac()
    const phone = await f.deskphone(c, {
      mac_address: m,
      button_template: template.id,
      lines: [
        { line_number: 1, user, extension: ext },
        { line_number: 2, label: 'Shared' },
      ],
    })
    expect(phone.status).toBe('pending_sync')
    const creds = phone.provisioning_credentials as { username: string; password: string }
    expect(creds.username).toEqual(expect.any(String))
    const lines = (await t.call<any>('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data as any[]

    const path = `${base}${m.toLowerCase()}.cfg`
    const anonymous = await fetchAsPhone(path, YEALINK_UA(m))
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get('www-authenticate')).toContain('Digest')

    const r = await fetchAsPhone(path, YEALINK_UA(m), creds)
    expect(r.status).toBe(200)
    const cfg = parseYealinkCfg(await r.text())
    for (const line of lines) {
      const n = line.line_number
      expect(cfg.get(`account.${n}.enable`)).toBe('1')
      expect(cfg.get(`account.${n}.user_name`)).toBe(line.sip_credentials.username)
      expect(cfg.get(`account.${n}.password`)).toBe(line.sip_credentials.password)
    }
    // Phones register where the media role's SIP server listens (SIP_PORT=0 in tests: a free port).
    expect(cfg.get('account.1.sip_server.1.port')).toBe(String(t.service.sip?.udpPort ?? t.service.config.sipPort))
    expect(cfg.get('linekey.1.value')).toBe('201')
    expect(cfg.get('linekey.1.label')).toBe('Reception')
    expect(cfg.get('linekey.2.value')).toBe('+15551230000')

    const [provisioned, fetched] = (await rx.waitFor(2, { where: (w) => w.body?.data?.device === phone.id })).map((w) => w.body)
    expect(provisioned.type).toBe('device.provisioned')
    expect(provisioned.data).toEqual({
      device: phone.id,
      device_type: 'deskphone',
      mac_address: phone.mac_address,
      vendor: 'yealink',
      model: 'T54W',
      ip_address: '127.0.0.1',
      provisioned_at: expect.any(String),
    })
    expect(fetched.type).toBe('device.config_fetched')
    expect(fetched.data).toMatchObject({ device: phone.id, fetched_at: provisioned.data.provisioned_at, ip_address: '127.0.0.1' })
    const synced = await until('the device synced', async () => {
      const d = (await t.call<any>('GET', `/v1/deskphones/${phone.id}`, c)).body
      return d.status === 'synced' ? d : undefined
    })
    expect(synced.status).toBe('synced')

    // Fetching again is a config_fetched alone; check-sync makes the next fetch a provisioning again.
    expect((await fetchAsPhone(path, YEALINK_UA(m), creds)).status).toBe(200)
    await rx.waitFor(3, { where: (w) => w.body?.data?.device === phone.id })
    expect(deviceEvents(rx, phone.id).map((e) => e.type)).toEqual(['device.provisioned', 'device.config_fetched', 'device.config_fetched'])
    expect((await t.call<any>('POST', `/v1/devices/${phone.id}/status/check-sync`, c)).body.status).toBe('pending_sync')
    expect((await fetchAsPhone(path, YEALINK_UA(m), creds, 'MD5')).status).toBe(200)
    await rx.waitFor(5, { where: (w) => w.body?.data?.device === phone.id })
    expect(
      deviceEvents(rx, phone.id)
        .map((e) => e.type)
        .slice(3),
    ).toEqual(['device.provisioned', 'device.config_fetched'])

    const history = await until('the provisioning history', async () => {
      const h = (await t.call<any>('GET', `/v1/deskphones/${phone.id}/provisioning-events?limit=100`, c)).body.data as any[]
      return h.length >= 6 ? h : undefined
    })
    expect(history.map((e) => e.type).sort()).toEqual([
      'check_sync_requested',
      'config_fetched',
      'config_fetched',
      'config_fetched',
      'provisioned',
      'provisioned',
    ])
  }, 30_000) // five fetches and their events one after the other: more than the default 5 s on a busy machine

  test('fetches at the same moment (written together, one step): one provisioning, every fetch in the history, the device row as after the last', async () => {
    const { c, rx, base } = await setup()
    const m = mac()
    const phone = await f.deskphone(c, { mac_address: m, lines: [{ line_number: 1, label: 'Front desk' }] })
    const path = `${base}${m.toLowerCase()}.cfg`
    const answers = await Promise.all([1, 2, 3, 4].map(() => fetchAsPhone(path, YEALINK_UA(m), phone.provisioning_credentials)))
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200])
    const events = (await rx.waitFor(5, { where: (w) => w.body?.data?.device === phone.id })).map((w) => w.body)
    expect(events.map((e) => e.type).sort()).toEqual([
      'device.config_fetched',
      'device.config_fetched',
      'device.config_fetched',
      'device.config_fetched',
      'device.provisioned',
    ])
    const history = await until('the provisioning history', async () => {
      const h = (await t.call<any>('GET', `/v1/deskphones/${phone.id}/provisioning-events?limit=100`, c)).body.data as any[]
      return h.length >= 5 ? h : undefined
    })
    expect(history.map((e) => e.type).sort()).toEqual(['config_fetched', 'config_fetched', 'config_fetched', 'config_fetched', 'provisioned'])
    const device = (await t.call<any>('GET', `/v1/deskphones/${phone.id}`, c)).body
    const fetchedAt = events.filter((e) => e.type === 'device.config_fetched').map((e) => e.data.fetched_at as string)
    const provisioned = events.find((e) => e.type === 'device.provisioned')!
    expect(device).toMatchObject({ status: 'synced', ip_address: '127.0.0.1', provisioned_at: provisioned.data.provisioned_at })
    expect(device.last_fetched_at).toBe(fetchedAt.sort().at(-1))
  }, 30_000)
})

describe('a Polycom phone fetches its configuration', () => {
  test('<mac>-phone.cfg is Polycom XML with every line as reg.N', async () => {
    const { c, rx, base } = await setup()
    const user = await f.user(c)
    const m = mac()
    const phone = await f.deskphone(c, { vendor: 'polycom', model: 'VVX 450', mac_address: m, lines: [{ line_number: 1, user }, { line_number: 2 }] })
    const lines = (await t.call<any>('GET', `/v1/deskphones/${phone.id}/lines`, c)).body.data as any[]
    const r = await fetchAsPhone(`${base}${m.toLowerCase()}-phone.cfg`, POLYCOM_UA, phone.provisioning_credentials)
    expect(r.status).toBe(200)
    const root = parseXml(await r.text())
    expect(root.name).toBe('polycomConfig')
    for (const line of lines) {
      expect(root.attributes.get(`reg.${line.line_number}.address`)).toBe(line.sip_credentials.username)
      expect(root.attributes.get(`reg.${line.line_number}.auth.password`)).toBe(line.sip_credentials.password)
    }
    const events = await rx.waitFor(2, { where: (w) => w.body?.data?.device === phone.id })
    expect(events.map((w) => w.body.type)).toEqual(['device.provisioned', 'device.config_fetched'])
    expect(events[0]!.body.data.vendor).toBe('polycom')
  })
})

describe('a Yealink DECT base fetches its configuration', () => {
  test('<mac>.cfg has every handset line as an account, and handset.N says which handset uses which accounts', async () => {
    const { c, rx, base } = await setup()
    const dect = await f.base(c)
    const handset = async (body: Record<string, unknown>) =>
      f.ok('handset', await t.call('POST', `/v1/dect-bases/${dect.id}/handsets`, { ...c, body: { model: 'W56H', ...body } }))
    const extensionOn = async (h: { id: string }) => {
      const ext = await f.extension(c, await f.user(c))
      const line = f.ok('handset extension', await t.call('POST', `/v1/dect-bases/${dect.id}/handsets/${h.id}/extensions`, { ...c, body: { extension: ext } }))
      return line.sip_credentials.username as string
    }
    const front = await handset({ name: 'Front desk' })
    const yard = await handset({ model: 'W73H', name: 'Yard' })
    // Lines made in this order: the base's accounts 1, 2, 3.
    const frontFirst = await extensionOn(front)
    const yardOnly = await extensionOn(yard)
    const frontSecond = await extensionOn(front)

    const m = dect.mac_address as string
    const r = await fetchAsPhone(
      `${base}${m.toLowerCase()}.cfg`,
      `Yealink W60B 77.83.0.85 ${m.toLowerCase().match(/../g)!.join(':')}`,
      dect.provisioning_credentials,
    )
    expect(r.status).toBe(200)
    const cfg = parseYealinkCfg(await r.text())
    const accountOf = (username: string) => [...cfg.keys()].find((k) => /^account\.\d+\.user_name$/.test(k) && cfg.get(k) === username)!.split('.')[1]!
    const accounts = { frontFirst: accountOf(frontFirst), yardOnly: accountOf(yardOnly), frontSecond: accountOf(frontSecond) }
    for (const n of Object.values(accounts)) expect(cfg.get(`account.${n}.enable`)).toBe('1')
    // Handsets are numbered on the base in the order they were added.
    expect(cfg.get('handset.1.name')).toBe('Front desk')
    expect(cfg.get('handset.1.incoming_lines')).toBe(`${accounts.frontFirst},${accounts.frontSecond}`)
    expect(cfg.get('handset.1.dial_out_lines')).toBe(`${accounts.frontFirst},${accounts.frontSecond}`)
    expect(cfg.get('handset.1.dial_out_default_line')).toBe(accounts.frontFirst)
    expect(cfg.get('handset.2.name')).toBe('Yard')
    expect(cfg.get('handset.2.incoming_lines')).toBe(accounts.yardOnly)
    expect(cfg.get('handset.2.dial_out_default_line')).toBe(accounts.yardOnly)
    expect(cfg.has('handset.3.name')).toBe(false)

    const events = await rx.waitFor(2, { where: (w) => w.body?.data?.device === dect.id })
    expect(events.map((w) => w.body.type)).toEqual(['device.provisioned', 'device.config_fetched'])
  })
})

describe('who may fetch what', () => {
  test('another device’s login, another account’s path (same platform or another), a wrong password: the same 401, and no event', async () => {
    const { c, rx, base } = await setup()
    // setup() makes each account on a platform of its own; the sibling shares c's platform.
    const other = await setup()
    const sibling = await f.ctx(c.key)
    const siblingBase = new URL((await t.call<any>('GET', `/v1/accounts/${sibling.account}`, { key: c.key })).body.provisioning_base_url).pathname
    const m1 = mac()
    const m2 = mac()
    const mine = await f.deskphone(c, { mac_address: m1, lines: [{ line_number: 1 }] })
    const theirs = await f.deskphone(c, { mac_address: m2, lines: [{ line_number: 1 }] })
    const path = `${base}${m1.toLowerCase()}.cfg`
    expect((await fetchAsPhone(path, YEALINK_UA(m1), theirs.provisioning_credentials)).status).toBe(401)
    expect((await fetchAsPhone(path, YEALINK_UA(m1), { ...mine.provisioning_credentials, password: 'wrong' })).status).toBe(401)
    expect((await fetchAsPhone(`${other.base}${m1.toLowerCase()}.cfg`, YEALINK_UA(m1), mine.provisioning_credentials)).status).toBe(401)
    expect((await fetchAsPhone(`${siblingBase}${m1.toLowerCase()}.cfg`, YEALINK_UA(m1), mine.provisioning_credentials)).status).toBe(401)
    expect((await fetchAsPhone(`/provisioning/acct_nothing/${m1.toLowerCase()}.cfg`, YEALINK_UA(m1), mine.provisioning_credentials)).status).toBe(401)
    // the right login works, and only it produced events
    expect((await fetchAsPhone(path, YEALINK_UA(m1), mine.provisioning_credentials)).status).toBe(200)
    await rx.waitFor(2, { where: (w) => w.body?.data?.device === mine.id })
    expect(deviceEvents(rx, theirs.id)).toEqual([])
    expect(
      rx
        .events()
        .filter((e) => e.data?.device === mine.id)
        .map((e) => e.type),
    ).toEqual(['device.provisioned', 'device.config_fetched'])
  })

  test('an identified phone of the wrong vendor is device.provisioning_failed (unsupported_vendor); the device stays pending_sync', async () => {
    const { c, rx, base } = await setup()
    const m = mac()
    const phone = await f.deskphone(c, { mac_address: m })
    const r = await fetchAsPhone(`${base}${m.toLowerCase()}-phone.cfg`, POLYCOM_UA, phone.provisioning_credentials)
    expect(r.status).toBe(400)
    const [failed] = await rx.waitFor(1, { where: (w) => w.body?.data?.device === phone.id })
    expect(failed!.body.type).toBe('device.provisioning_failed')
    expect(failed!.body.data).toEqual({
      device: phone.id,
      device_type: 'deskphone',
      mac_address: phone.mac_address,
      vendor: 'yealink',
      error_code: 'unsupported_vendor',
      failed_at: expect.any(String),
    })
    expect((await t.call<any>('GET', `/v1/deskphones/${phone.id}`, c)).body.status).toBe('pending_sync')
  })
})
