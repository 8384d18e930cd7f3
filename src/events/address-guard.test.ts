/**
 * Which addresses a webhook may go to (refusalReason), and the transport's use
 * of it: literal addresses judged before connecting, names judged on what they
 * resolve to (the address connected to), nothing sent when refused.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { lookup } from 'node:dns/promises'
import { readFileSync } from 'node:fs'
import { refusalReason } from './address-guard'
import { httpWebhookTransport } from './webhook-transport'

describe('refusalReason', () => {
  const refusedV4: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['198.18.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
  ]
  test.each(refusedV4)('IPv4 %s is refused (%s)', (address, range) => {
    expect(refusalReason(address)).toBe(`${range} address`)
  })

  test('IPv4 written the odd ways (short, hex, decimal, octal) is judged as the address it is', () => {
    for (const a of ['127.1', '0x7f.0.0.1', '2130706433', '017700000001']) expect(refusalReason(a)).toBe('loopback address')
    expect(refusalReason('10.1')).toBe('private address')
    expect(refusalReason('1.2.3')).toBeUndefined() // 1.2.0.3
  })

  test.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '11.0.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '192.169.0.1',
    '223.255.255.254',
  ])('public IPv4 %s is allowed', (a) => {
    expect(refusalReason(a)).toBeUndefined()
  })

  const refusedV6: [string, string][] = [
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['febf::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['fdff:ffff::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['ff05::2', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['64:ff9b::7f00:1', 'rfc6052'],
    ['2002:7f00:1::', '6to4'],
    ['2001::1', 'teredo'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['100::1', 'discard'],
    ['::a00:1', 'ipv4Compatible'],
    ['::7f00:1', 'ipv4Compatible'],
  ]
  test.each(refusedV6)('IPv6 %s is refused (%s)', (address, range) => {
    expect(refusalReason(address)).toBe(`${range} address`)
  })

  test.each(['2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e'])('public IPv6 %s is allowed', (a) => {
    expect(refusalReason(a)).toBeUndefined()
  })

  test('IPv4-mapped IPv6 is judged as the IPv4 address it reaches', () => {
    expect(refusalReason('::ffff:127.0.0.1')).toBe('loopback address')
    expect(refusalReason('::ffff:7f00:1')).toBe('loopback address') // the form URL parsing gives
    expect(refusalReason('0:0:0:0:0:ffff:127.0.0.1')).toBe('loopback address')
    expect(refusalReason('::ffff:10.0.0.1')).toBe('private address')
    expect(refusalReason('::ffff:a00:1')).toBe('private address')
    expect(refusalReason('::ffff:169.254.169.254')).toBe('linkLocal address')
    expect(refusalReason('::ffff:100.64.0.1')).toBe('carrierGradeNat address')
    expect(refusalReason('::ffff:192.168.1.1')).toBe('private address')
    expect(refusalReason('::ffff:224.0.0.1')).toBe('multicast address')
    expect(refusalReason('::ffff:8.8.8.8')).toBeUndefined()
    // The dotted "IPv4-compatible" text (as inet_ntop prints ::7f00:1) is judged as its IPv4 address too.
    expect(refusalReason('::127.0.0.1')).toBe('loopback address')
    expect(refusalReason('::10.1.2.3')).toBe('private address')
  })

  test('what is not an address is refused', () => {
    for (const a of ['', 'example.com', 'localhost', '::g', '300.1.1.1', '[::1]']) expect(refusalReason(a)).toBe('not an IP address')
  })
})

// ---------------------------------------------------------------- the transport

describe('httpWebhookTransport', () => {
  const hits: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      await req.text()
      hits.push(new URL(req.url).pathname)
      return new Response('ok')
    },
  })
  const port = server.port
  const guarded = httpWebhookTransport({ allowPrivateTargets: false })
  const open = httpWebhookTransport({ allowPrivateTargets: true })
  afterAll(async () => {
    guarded.close()
    open.close()
    await server.stop(true)
  })
  const send = (t: typeof guarded, url: string) => t.send({ url, body: '{"id":"evt_x"}', headers: { 'content-type': 'application/json' }, timeoutMs: 5000 })

  /** Names this machine resolves to a loopback address: localhost, plus any others /etc/hosts gives it. */
  async function loopbackNames(): Promise<string[]> {
    const names = new Set(['localhost'])
    try {
      for (const line of readFileSync('/etc/hosts', 'utf8').split('\n')) {
        const [addr, ...rest] = line.replace(/#.*/, '').trim().split(/\s+/)
        if (addr && (addr.startsWith('127.') || addr === '::1')) for (const n of rest) if (n) names.add(n)
      }
    } catch {}
    const out: string[] = []
    for (const n of names) {
      const all = await lookup(n, { all: true }).catch(() => [])
      // Only names whose every address is loopback (and reachable on 127.0.0.1 for the control send).
      if (all.length > 0 && all.every((a) => refusalReason(a.address) === 'loopback address') && all.some((a) => a.address.startsWith('127.'))) out.push(n)
    }
    return out
  }

  test('a name that resolves to loopback is refused at lookup; the receiver sees nothing; allowed, it arrives', async () => {
    const names = await loopbackNames()
    expect(names).toContain('localhost')
    for (const name of names) {
      const path = `/guarded-${name}`
      const r = await send(guarded, `http://${name}:${port}${path}`)
      expect(r.kind).toBe('refused')
      if (r.kind === 'refused') expect(r.reason).toContain('loopback')
      expect(hits).not.toContain(path)
      // Control: the same URL with private targets allowed does arrive, so the refusal was the guard's.
      const allowed = await send(open, `http://${name}:${port}/open-${name}`)
      if (allowed.kind === 'acknowledged') expect(hits).toContain(`/open-${name}`)
      else expect(name).not.toBe('localhost') // localhost must work; an odd /etc/hosts name may resolve to ::1 first
    }
  })

  test('literal private addresses are refused before connecting', async () => {
    const urls = [
      `http://127.0.0.1:${port}/lit-1`,
      `http://127.1:${port}/lit-2`,
      `http://2130706433:${port}/lit-3`,
      `http://0.0.0.0:${port}/lit-4`,
      `http://[::ffff:127.0.0.1]:${port}/lit-5`,
      `http://[::1]:${port}/lit-6`,
      `http://10.0.0.1:${port}/`,
      `http://192.168.1.1/`,
      `http://169.254.169.254/latest/meta-data/`,
      `http://100.64.0.1/`,
      `http://224.0.0.1/`,
      `http://[fc00::1]/`,
      `http://[fe80::1]/`,
      `https://[fd00:ec2::254]/`,
    ]
    for (const url of urls) {
      const r = await send(guarded, url)
      expect({ url, kind: r.kind }).toEqual({ url, kind: 'refused' })
    }
    expect(hits.filter((h) => h.startsWith('/lit-'))).toEqual([])
  })

  test('only http and https URLs are sent', async () => {
    for (const url of ['ftp://example.com/x', 'file:///etc/passwd', 'gopher://127.0.0.1:70/', 'not a url']) {
      const r = await send(open, url)
      expect(r.kind).toBe('refused')
    }
  })

  test('with private targets allowed, loopback literals are sent', async () => {
    expect(await send(open, `http://127.0.0.1:${port}/open-literal`)).toEqual({ kind: 'acknowledged', status: 200 })
    expect(hits).toContain('/open-literal')
  })
})
