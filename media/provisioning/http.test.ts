/**
 * The provisioning endpoint as phones use it: a Yealink and a Polycom phone fetch
 * their files with their own User-Agents and file names, authenticate by HTTP digest
 * with their device's credentials, and get files that hold every line and button.
 * Security matrix: nothing is served, and nothing is recorded, without the device's
 * own credentials; an unknown MAC looks exactly like a wrong password.
 */
import { beforeEach, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { type DigestAlgorithm, digestResponse } from '../../src/auth/digest'
import { manualClock } from '../../src/clock'
import type { ProvisioningConfig } from './config'
import { type ConfigFailure, type ConfigFetch, type DeviceCredentials, provisioningHandler } from './http'
import { parseXml, parseYealinkCfg, sampleConfig } from './parsers.testkit'

const BASE = 'http://127.0.0.1:8080/provisioning/acct_1'
const YEALINK_MAC = '001565aabbcc'
const POLYCOM_MAC = '0004f2aabbcc'
const YEALINK_UA = 'Yealink SIP-T54W 96.86.0.100 00:15:65:aa:bb:cc'
const POLYCOM_UA = 'FileTransport PolycomVVX-VVX_450-UA/6.4.3.5018 Type/Application'
const YEALINK_CREDS = { username: 'prov_yealink', password: 'y-secret' }
const POLYCOM_CREDS = { username: 'prov_polycom', password: 'p-secret' }

let clock = manualClock()
let directory: Map<string, { config: ProvisioningConfig; credentials: DeviceCredentials }>
let lookups = 0
let fetches: ConfigFetch[]
let failures: ConfigFailure[]
let handle: (request: Request) => Promise<Response>

function makeHandler(extra: { allowBasicWithoutTls?: boolean } = {}) {
  return provisioningHandler({
    lookupByMac: (mac) => {
      lookups++
      return directory.get(mac)
    },
    recordFetch: (f) => {
      fetches.push(f)
    },
    recordFailure: (f) => {
      failures.push(f)
    },
    clock,
    nonceKey: 'test-nonce-key',
    clientAddress: () => '127.0.0.1',
    ...extra,
  })
}

beforeEach(() => {
  clock = manualClock('2026-03-01T10:00:00Z')
  directory = new Map([
    [YEALINK_MAC, { config: sampleConfig('yealink', YEALINK_MAC), credentials: YEALINK_CREDS }],
    [POLYCOM_MAC, { config: sampleConfig('polycom', POLYCOM_MAC), credentials: POLYCOM_CREDS }],
  ])
  fetches = []
  failures = []
  lookups = 0
  handle = makeHandler()
})

/** The WWW-Authenticate challenges of a 401, one per scheme/algorithm (fetch joins repeated headers with ", "). */
function challenges(response: Response): { scheme: string; params: Record<string, string> }[] {
  const joined = response.headers.get('www-authenticate') ?? ''
  const parts: string[] = []
  let current = ''
  let quoted = false
  for (let i = 0; i < joined.length; i++) {
    const c = joined[i]!
    if (c === '"' && joined[i - 1] !== '\\') quoted = !quoted
    if (!quoted && c === ',' && /^,\s*(Digest|Basic)\s/.test(joined.slice(i))) {
      parts.push(current.trim())
      current = ''
      continue
    }
    current += c
  }
  if (current.trim()) parts.push(current.trim())
  return parts.map((part) => {
    const [scheme, ...rest] = part.split(' ')
    const params: Record<string, string> = {}
    for (const m of rest.join(' ').matchAll(/([a-z]+)=(?:"((?:[^"\\]|\\.)*)"|([^,\s]+))/g)) params[m[1]!] = m[2] ?? m[3]!
    return { scheme: scheme!, params }
  })
}

function digestHeader(
  path: string,
  creds: { username: string; password: string },
  challenge: Record<string, string>,
  algorithm: DigestAlgorithm,
  nc = '00000001',
  method = 'GET',
) {
  const cnonce = randomBytes(8).toString('hex')
  const uri = new URL(BASE + path).pathname
  const response = digestResponse({
    algorithm,
    username: creds.username,
    realm: challenge.realm!,
    password: creds.password,
    method,
    uri,
    nonce: challenge.nonce!,
    nc,
    cnonce,
    qop: 'auth',
  })
  return `Digest username="${creds.username}", realm="${challenge.realm}", nonce="${challenge.nonce}", uri="${uri}", algorithm=${algorithm}, qop=auth, nc=${nc}, cnonce="${cnonce}", response="${response}"`
}

const get = (path: string, ua: string | undefined, authorization?: string, base = BASE) => {
  const headers: Record<string, string> = {}
  if (ua) headers['User-Agent'] = ua
  if (authorization) headers.Authorization = authorization
  return handle(new Request(base + path, { headers }))
}

/** What a phone does: ask, get challenged, answer the challenge for `algorithm`. */
async function phoneFetch(path: string, ua: string, creds: { username: string; password: string }, algorithm: DigestAlgorithm = 'MD5') {
  const first = await get(path, ua)
  expect(first.status).toBe(401)
  const challenge = challenges(first).find((c) => c.scheme === 'Digest' && c.params.algorithm === algorithm)!
  return get(path, ua, digestHeader(`${path}`, creds, challenge.params, algorithm))
}

describe('a Yealink phone provisions itself', () => {
  test('fetches the common file and its MAC file; every line and button is in them', async () => {
    const common = await phoneFetch('/y000000000000.cfg', YEALINK_UA, YEALINK_CREDS)
    expect(common.status).toBe(200)
    expect(common.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(parseYealinkCfg(await common.text()).get('local_time.time_zone')).toBe('-5')

    const own = await phoneFetch(`/${YEALINK_MAC}.cfg`, YEALINK_UA, YEALINK_CREDS, 'SHA-256')
    expect(own.status).toBe(200)
    const cfg = parseYealinkCfg(await own.text())
    const config = directory.get(YEALINK_MAC)!.config
    config.lines.forEach((line, i) => {
      expect(cfg.get(`account.${i + 1}.user_name`)).toBe(line.sipUsername)
      expect(cfg.get(`account.${i + 1}.password`)).toBe(line.sipPassword)
      expect(cfg.get(`account.${i + 1}.sip_server.1.address`)).toBe(line.registrarHost)
    })
    for (const button of config.buttons) {
      expect(cfg.has(`linekey.${button.key}.type`)).toBe(true)
      if (button.type !== 'line') expect(cfg.get(`linekey.${button.key}.value`)).toBe(button.value ?? '')
    }

    expect(fetches).toEqual([
      {
        deviceId: config.deviceId,
        mac: YEALINK_MAC,
        vendor: 'yealink',
        model: 'T54W',
        ipAddress: '127.0.0.1',
        file: 'y000000000000.cfg',
        kind: 'shared',
        fetchedAt: clock.now(),
      },
      expect.objectContaining({ file: `${YEALINK_MAC}.cfg`, kind: 'device' }),
    ])
    expect(failures).toEqual([])
  })
})

describe('a Polycom phone provisions itself', () => {
  test('fetches <mac>.cfg, follows its CONFIG_FILES to <mac>-phone.cfg; every line and button is in it', async () => {
    const master = await phoneFetch(`/${POLYCOM_MAC}.cfg`, POLYCOM_UA, POLYCOM_CREDS)
    expect(master.status).toBe(200)
    expect(master.headers.get('content-type')).toBe('application/xml; charset=utf-8')
    const next = parseXml(await master.text()).attributes.get('CONFIG_FILES')!
    expect(next).toBe(`${POLYCOM_MAC}-phone.cfg`)

    const phone = await phoneFetch(`/${next}`, POLYCOM_UA, POLYCOM_CREDS, 'SHA-256')
    expect(phone.status).toBe(200)
    const s = parseXml(await phone.text()).attributes
    const config = directory.get(POLYCOM_MAC)!.config
    config.lines.forEach((line, i) => {
      expect(s.get(`reg.${i + 1}.address`)).toBe(line.sipUsername)
      expect(s.get(`reg.${i + 1}.auth.password`)).toBe(line.sipPassword)
      expect(s.get(`reg.${i + 1}.server.1.address`)).toBe(line.registrarHost)
    })
    for (const button of config.buttons) {
      const category = s.get(`lineKey.${button.key}.category`)
      const index = s.get(`lineKey.${button.key}.index`)
      expect(category).toBeDefined()
      if (category === 'BLF') expect(s.get(`attendant.resourceList.${index}.address`)).toBe(button.value!)
      if (category === 'EFK') expect(s.get(`efk.efklist.${index}.action.string`)).toBe(`${button.value}$Tinvite$`)
    }
    expect(fetches.map((f) => [f.file, f.kind, f.model])).toEqual([
      [`${POLYCOM_MAC}.cfg`, 'shared', 'VVX450'],
      [`${POLYCOM_MAC}-phone.cfg`, 'device', 'VVX450'],
    ])
  })

  test('the shared 000000000000.cfg is served when the User-Agent names the phone', async () => {
    const ua = `FileTransport PolycomVVX-VVX_450-UA/6.4.3.5018 (SN:${POLYCOM_MAC}) Type/Application`
    const res = await phoneFetch('/000000000000.cfg', ua, POLYCOM_CREDS)
    expect(res.status).toBe(200)
    expect(parseXml(await res.text()).attributes.get('CONFIG_FILES')).toBe('[PHONE_MAC_ADDRESS]-phone.cfg')
  })
})

describe('security matrix: nothing without the device’s own credentials', () => {
  const path = `/${YEALINK_MAC}.cfg`

  test('no credentials: 401 offering digest SHA-256 then MD5 (and no Basic over plain HTTP), no event', async () => {
    const res = await get(path, YEALINK_UA)
    expect(res.status).toBe(401)
    expect(challenges(res).map((c) => [c.scheme, c.params.algorithm, c.params.qop])).toEqual([
      ['Digest', 'SHA-256', 'auth'],
      ['Digest', 'MD5', 'auth'],
    ])
    expect(await res.json()).toEqual({ error: 'Authentication required.', code: 'unauthorized' })
    expect([fetches, failures]).toEqual([[], []])
    // The challenge costs no lookup, for a known MAC as for any other.
    expect(lookups).toBe(0)
  })

  test('an unknown MAC is indistinguishable from a known one with a wrong password', async () => {
    const unknownUa = 'Yealink SIP-T54W 96.86.0.100 00:15:65:00:00:99'
    const unknown = await phoneFetch('/001565000099.cfg', unknownUa, YEALINK_CREDS)
    const wrong = await phoneFetch(path, YEALINK_UA, { ...YEALINK_CREDS, password: 'guess' })
    expect([unknown.status, wrong.status]).toEqual([401, 401])
    expect(await unknown.text()).toBe(await wrong.text())
    const shape = (r: Response) => challenges(r).map((c) => ({ ...c.params, nonce: '' }))
    expect(shape(unknown)).toEqual(shape(wrong))
    expect([...unknown.headers.keys()].sort()).toEqual([...wrong.headers.keys()].sort())
    expect([fetches, failures]).toEqual([[], []])
  })

  test("another device's credentials (of this or any other account) are refused", async () => {
    expect((await phoneFetch(path, YEALINK_UA, POLYCOM_CREDS)).status).toBe(401)
    expect((await phoneFetch(path, YEALINK_UA, { username: YEALINK_CREDS.username, password: POLYCOM_CREDS.password })).status).toBe(401)
    expect(fetches).toEqual([])
  })

  test('a replayed Authorization is refused; the next nonce count on the same nonce is accepted', async () => {
    const challenge = challenges(await get(path, YEALINK_UA))[0]!.params
    const authorization = digestHeader(path, YEALINK_CREDS, challenge, 'SHA-256')
    expect((await get(path, YEALINK_UA, authorization)).status).toBe(200)
    expect((await get(path, YEALINK_UA, authorization)).status).toBe(401)
    expect((await get(path, YEALINK_UA, digestHeader(path, YEALINK_CREDS, challenge, 'SHA-256', '00000002'))).status).toBe(200)
    expect(fetches).toHaveLength(2)
  })

  test('an expired nonce gets a new challenge marked stale, and no event', async () => {
    const challenge = challenges(await get(path, YEALINK_UA))[0]!.params
    clock.advance(5 * 60_000 + 1)
    const res = await get(path, YEALINK_UA, digestHeader(path, YEALINK_CREDS, challenge, 'SHA-256'))
    expect(res.status).toBe(401)
    expect(challenges(res)[0]!.params.stale).toBe('true')
    expect(fetches).toEqual([])
  })

  test('an answer naming the absolute URL as its uri is accepted too', async () => {
    const challenge = challenges(await get(path, YEALINK_UA))[0]!.params
    const uri = `${BASE}${path}`
    const cnonce = 'c0ffee'
    const response = digestResponse({
      algorithm: 'MD5',
      username: YEALINK_CREDS.username,
      realm: challenge.realm!,
      password: YEALINK_CREDS.password,
      method: 'GET',
      uri,
      nonce: challenge.nonce!,
      nc: '00000001',
      cnonce,
      qop: 'auth',
    })
    const header = `Digest username="${YEALINK_CREDS.username}", realm="${challenge.realm}", nonce="${challenge.nonce}", uri="${uri}", algorithm=MD5, qop=auth, nc=00000001, cnonce="${cnonce}", response="${response}"`
    expect((await get(path, YEALINK_UA, header)).status).toBe(200)
  })

  test('an answer computed for another file does not open this one', async () => {
    const challenge = challenges(await get(path, YEALINK_UA))[0]!.params
    const forOther = digestHeader('/y000000000000.cfg', YEALINK_CREDS, challenge, 'SHA-256')
    expect((await get(path, YEALINK_UA, forOther)).status).toBe(401)
  })

  test('a path naming another MAC than the User-Agent is forbidden before any lookup, with no event', async () => {
    const direct = await get(`/${POLYCOM_MAC}.cfg`, YEALINK_UA)
    expect(direct.status).toBe(403)
    expect([fetches, failures]).toEqual([[], []])
  })

  test('Basic is accepted over TLS only', async () => {
    const basic = `Basic ${Buffer.from(`${YEALINK_CREDS.username}:${YEALINK_CREDS.password}`).toString('base64')}`
    expect((await get(path, YEALINK_UA, basic)).status).toBe(401)
    const overTls = await get(path, YEALINK_UA, basic, 'https://127.0.0.1:8443/provisioning/acct_1')
    expect(overTls.status).toBe(200)
    const offered = await get(path, YEALINK_UA, undefined, 'https://127.0.0.1:8443/provisioning/acct_1')
    expect(challenges(offered).map((c) => c.scheme)).toEqual(['Digest', 'Digest', 'Basic'])
    const wrongBasic = `Basic ${Buffer.from(`${YEALINK_CREDS.username}:nope`).toString('base64')}`
    expect((await get(path, YEALINK_UA, wrongBasic, 'https://127.0.0.1:8443/p')).status).toBe(401)
    expect(fetches).toHaveLength(1)
  })
})

describe('failures of an identified device are recorded', () => {
  const setConfig = (mac: string, change: (c: ProvisioningConfig) => ProvisioningConfig) => {
    const entry = directory.get(mac)!
    directory.set(mac, { ...entry, config: change(entry.config) })
  }

  test('a device of an unsupported vendor: 400 unsupported_vendor and a provisioning_failed record', async () => {
    setConfig(YEALINK_MAC, (c) => ({ ...c, vendor: 'Cisco' }))
    const res = await phoneFetch(`/${YEALINK_MAC}.cfg`, YEALINK_UA, YEALINK_CREDS)
    expect(res.status).toBe(400)
    expect(((await res.json()) as { code: string }).code).toBe('unsupported_vendor')
    expect(failures).toEqual([
      { deviceId: `dev_${YEALINK_MAC}`, mac: YEALINK_MAC, vendor: 'cisco', errorCode: 'unsupported_vendor', file: `${YEALINK_MAC}.cfg`, failedAt: clock.now() },
    ])
  })

  test('an unknown vendor without a MAC gets unsupported_vendor and no record', async () => {
    const res = await get('/SEP001565aabbcc.cnf.xml', 'Cisco-CP8845/12.0')
    expect(res.status).toBe(400)
    expect(failures).toEqual([])
  })

  test('a configuration the format cannot carry: 400 invalid_configuration with field details, recorded', async () => {
    setConfig(YEALINK_MAC, (c) => ({ ...c, lines: c.lines.map((l) => ({ ...l, displayName: 'two\nlines' })) }))
    const res = await phoneFetch(`/${YEALINK_MAC}.cfg`, YEALINK_UA, YEALINK_CREDS)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ code: 'invalid_configuration', details: { 'lines[0].display_name': expect.any(String) } })
    expect(failures.map((f) => f.errorCode)).toEqual(['invalid_configuration'])
    expect(fetches).toEqual([])
  })

  test('a generator crash: 500 generation_failed, recorded', async () => {
    setConfig(POLYCOM_MAC, (c) => ({ ...c, buttons: undefined as never }))
    const res = await phoneFetch(`/${POLYCOM_MAC}-phone.cfg`, POLYCOM_UA, POLYCOM_CREDS)
    expect(res.status).toBe(500)
    expect(failures.map((f) => f.errorCode)).toEqual(['generation_failed'])
  })

  test('HEAD answers headers only (the digest covers the method); other methods 405', async () => {
    const path = `/${YEALINK_MAC}.cfg`
    const challenge = challenges(await get(path, YEALINK_UA))[0]!.params
    const head = (authorization: string) =>
      handle(new Request(BASE + path, { method: 'HEAD', headers: { 'User-Agent': YEALINK_UA, Authorization: authorization } }))
    expect((await head(digestHeader(path, YEALINK_CREDS, challenge, 'SHA-256'))).status).toBe(401)
    const ok = await head(digestHeader(path, YEALINK_CREDS, challenge, 'SHA-256', '00000002', 'HEAD'))
    expect(ok.status).toBe(200)
    expect(await ok.text()).toBe('')
    expect((await handle(new Request(`${BASE}/${YEALINK_MAC}.cfg`, { method: 'PUT', body: 'log' }))).status).toBe(405)
  })
})
