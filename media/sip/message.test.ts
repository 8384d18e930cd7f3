import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { Grammar } from 'sip.js/lib/grammar/grammar.js'
import { SipStreamFramer } from './framing'
import { MAX_MESSAGE_BYTES, parseSipMessage, parseVia, splitHeaderList, tagOf, validateRequest } from './message'
import { buildResponse, reasonPhrase, responseDestination, stampTopVia } from './response'
import { captureNames, loadCapture } from './test-fixtures'

const bytes = (s: string) => Buffer.from(s, 'utf8')
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8')

function parsedRequest(s: string, transport: 'udp' | 'tcp' = 'udp') {
  const parsed = parseSipMessage(bytes(s), transport)
  if (parsed.kind !== 'request') throw new Error(`expected a request, got ${parsed.kind}: ${'reason' in parsed ? parsed.reason : ''}`)
  const invalid = validateRequest(parsed.message)
  if (invalid) throw new Error(`expected a valid request: ${invalid.reason}`)
  return parsed
}

/** The status the server answers a request with before its handler: 400, 416, 505, or 0 when the handler gets it. */
function verdict(s: string): number {
  const parsed = parseSipMessage(bytes(s), 'udp')
  if (parsed.kind === 'bad-request') return parsed.status
  if (parsed.kind !== 'request') throw new Error(parsed.kind)
  return validateRequest(parsed.message)?.status ?? 0
}

const OPTIONS = [
  'OPTIONS sip:service@127.0.0.1 SIP/2.0',
  'Via: SIP/2.0/UDP 10.0.0.5:5070;branch=z9hG4bKabc;rport, SIP/2.0/TCP proxy.example.com;branch=z9hG4bKdef',
  'Via: SIP/2.0/UDP 10.9.9.9;branch=z9hG4bKghi',
  'From: "A, B" <sip:a@example.com>;tag=1928301774',
  'To: <sip:service@127.0.0.1>',
  'Call-ID: a84b4c76e66710@pc33.example.com',
  'CSeq: 63104 OPTIONS',
  'Max-Forwards: 70',
  'Timestamp: 54',
  'Content-Length: 0',
  '',
  '',
].join('\r\n')

describe('captured requests of real phones', () => {
  for (const name of captureNames()) {
    test(`${name} parses with its method, Call-ID, CSeq, top Via and body`, () => {
      const capture = loadCapture(name)
      const { message, basis } = parsedRequest(capture, name.includes('tcp') ? 'tcp' : 'udp')
      expect(message.method).toBe(capture.slice(0, capture.indexOf(' ')))
      expect(message.callId.length).toBeGreaterThan(0)
      expect(message.cseq).toBeGreaterThan(0)
      expect(message.viaBranch.startsWith('z9hG4bK')).toBe(true)
      expect(basis.vias.length).toBe(1)
      const declared = Number(/\r\n(?:Content-Length|l): (\d+)/.exec(capture)![1])
      expect(Buffer.byteLength(message.body)).toBe(declared)
      if (message.method === 'INVITE') expect(message.body).toStartWith('v=0\r\n')
    })
  }

  test('compact header names are the full ones (Polycom)', () => {
    const { message } = parsedRequest(loadCapture('polycom-invite-compact.sip'))
    expect(message.getHeader('Supported')).toBe('100rel,replaces')
    expect(message.getHeader('Allow-Events')).toBe('conference,talk,hold')
    expect(message.getHeader('Content-Type')).toBe('application/sdp')
    expect(message.from.uri.user).toBe('1002')
  })

  test('a Yealink REGISTER keeps its Contact with the instance id and its Authorization', () => {
    const { message } = parsedRequest(loadCapture('yealink-register-auth.sip'))
    expect(message.getHeader('Contact')).toContain('+sip.instance')
    expect(message.getHeader('Authorization')).toStartWith('Digest username="1001"')
    expect(message.ruri?.host).toBe('pbx.example.com')
  })
})

describe('parsing', () => {
  test('every Via of a comma list is kept in order and the top one is read from its own entry', () => {
    const { message, basis } = parsedRequest(OPTIONS)
    expect(basis.vias).toEqual([
      'SIP/2.0/UDP 10.0.0.5:5070;branch=z9hG4bKabc;rport',
      'SIP/2.0/TCP proxy.example.com;branch=z9hG4bKdef',
      'SIP/2.0/UDP 10.9.9.9;branch=z9hG4bKghi',
    ])
    expect(message.viaBranch).toBe('z9hG4bKabc')
    expect(basis.topVia).toEqual({ transport: 'UDP', host: '10.0.0.5', port: 5070, branch: 'z9hG4bKabc' })
  })

  test('folded header lines are unfolded', () => {
    const folded = OPTIONS.replace('Max-Forwards: 70', 'Subject: I know you are there,\r\n     pick up the phone')
    expect(parsedRequest(folded).message.getHeader('Subject')).toBe('I know you are there, pick up the phone')
  })

  test('UDP: bytes beyond Content-Length are discarded; a body shorter than it is a 400', () => {
    const withBody = OPTIONS.replace('Content-Length: 0', 'Content-Length: 5')
    expect(parsedRequest(`${withBody}hello and more`).message.body).toBe('hello')
    const short = parseSipMessage(bytes(`${withBody}hel`), 'udp')
    expect(short).toMatchObject({ kind: 'bad-request', status: 400, reason: 'body shorter than Content-Length' })
  })

  test('Content-Length counts bytes, not characters', () => {
    const body = 'héllo €'
    const m = OPTIONS.replace('Content-Length: 0', `Content-Length: ${Buffer.byteLength(body)}`)
    expect(parsedRequest(`${m}${body}tail`).message.body).toBe(body)
  })

  test('UDP without Content-Length: the body is the rest of the datagram; TCP requires it', () => {
    const noLength = OPTIONS.replace('Content-Length: 0\r\n', '')
    expect(parsedRequest(`${noLength}abc`).message.body).toBe('abc')
    expect(parseSipMessage(bytes(noLength), 'tcp')).toMatchObject({ kind: 'bad-request', reason: 'Content-Length is required over TCP' })
  })

  test.each([
    ['a missing Call-ID', 'garbage', OPTIONS.replace('Call-ID: a84b4c76e66710@pc33.example.com\r\n', '')],
    ['a status line', 'response', OPTIONS.replace('OPTIONS sip:service@127.0.0.1 SIP/2.0', 'SIP/2.0 200 OK')],
    ['no end of headers', 'garbage', OPTIONS.slice(0, 80)],
    ['random text', 'garbage', 'hello world\r\n\r\n'],
  ])('%s is %s', (_what, kind, message) => {
    expect(parseSipMessage(bytes(message), 'udp').kind).toBe(kind as never)
  })

  test.each([
    ['a CSeq method unlike the request method', 400, OPTIONS.replace('CSeq: 63104 OPTIONS', 'CSeq: 63104 INVITE')],
    ['a CSeq number of 2^31', 400, OPTIONS.replace('CSeq: 63104', 'CSeq: 2147483648')],
    ['a malformed header line', 400, OPTIONS.replace('Max-Forwards: 70', 'this is not a header')],
    ['a malformed From', 400, OPTIONS.replace('From: "A, B" <sip:a@example.com>;tag=1928301774', 'From: <<<')],
    ['a malformed top Via', 400, OPTIONS.replace('SIP/2.0/UDP 10.0.0.5:5070;', 'garbage ')],
    ['two different Content-Lengths', 400, OPTIONS.replace('Max-Forwards: 70', 'Content-Length: 3')],
    ['SIP/3.0', 505, OPTIONS.replace('127.0.0.1 SIP/2.0', '127.0.0.1 SIP/3.0')],
    ['a tel: Request-URI', 416, OPTIONS.replace('sip:service@127.0.0.1', 'tel:+15555550123')],
  ])('%s gets a %d', (_what, status, message) => {
    expect(verdict(message)).toBe(status)
  })

  test('Contact is parsed by sip.js on first read: each entry a NameAddrHeader, a malformed one undefined', () => {
    const two = parsedRequest(OPTIONS.replace('Max-Forwards: 70', 'Contact: "Desk, 1" <sip:1001@10.0.0.5:5070;transport=tcp>;expires=60, <sip:1001@10.0.0.6>'))
    expect(two.message.getHeaders('contact').length).toBe(2)
    expect(two.message.parseHeader('contact', 0).uri.host).toBe('10.0.0.5')
    expect(two.message.parseHeader('contact', 0).getParam('expires')).toBe('60')
    expect(two.message.parseHeader('contact', 1).uri.host).toBe('10.0.0.6')
    const bad = parsedRequest(OPTIONS.replace('Max-Forwards: 70', 'Contact: <sip:'))
    expect(bad.message.parseHeader('contact')).toBeUndefined()
  })

  test('From and To read with the tag set aside (and the grammar cache) equal what the grammar reads of the whole value', () => {
    const token = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9-]{0,8}$/)
    const fromValue = fc
      .record({
        display: fc.option(
          fc.oneof(
            token,
            token.map((t) => `"${t}, ${t}"`),
          ),
          { nil: undefined },
        ),
        user: token,
        host: fc.constantFrom('pbx.example.com', '10.0.0.1', 'b.example.org'),
        angle: fc.boolean(),
        tag: fc.option(token, { nil: undefined }),
        other: fc.option(fc.constantFrom(';x-foo=bar', ';expires=60'), { nil: undefined }),
      })
      .map((f) => {
        const uri = `sip:${f.user}@${f.host}`
        const addr = f.angle || f.display ? `${f.display ? `${f.display} ` : ''}<${uri};transport=udp>` : uri
        return `${addr}${f.tag ? `;tag=${f.tag}` : ''}${f.other ?? ''}`
      })
    fc.assert(
      fc.property(fromValue, fromValue, (from, to) => {
        const { message } = parsedRequest(OPTIONS.replace('"A, B" <sip:a@example.com>;tag=1928301774', from).replace('<sip:service@127.0.0.1>', to))
        for (const [ours, raw, rule] of [
          [message.from, from, 'From'],
          [message.to, to, 'To'],
        ] as const) {
          const theirs = Grammar.parse(raw, rule) as any
          expect(ours.toString()).toBe(theirs.toString())
          expect(ours.parameters).toEqual(theirs.parameters)
          expect(ours.displayName).toBe(theirs.displayName)
        }
        expect<string | null | undefined>(message.fromTag).toBe(message.from.getParam('tag'))
      }),
      { numRuns: 150 },
    )
  })

  test('the hand-read Via and tags agree with what the RFC grammar reads', () => {
    expect(parseVia('SIP / 2.0 / tcp [2001:db8::1] : 5070 ;branch=z9hG4bKx;received=1.2.3.4;rport')).toEqual({
      transport: 'TCP',
      host: '[2001:db8::1]',
      port: 5070,
      branch: 'z9hG4bKx',
    })
    expect(parseVia('SIP/2.0/UDP host.example.com;branch')).toEqual({ transport: 'UDP', host: 'host.example.com', port: undefined, branch: undefined })
    for (const bad of ['SIP/2.0/UDP', 'SIP/2.0/UDP a b', 'SIP/2.0/UDP a:99999', 'SIP/2.0/UDP a;;', 'HTTP/1.1/UDP a']) expect(parseVia(bad)).toBeUndefined()
    expect(tagOf('"x;tag=no" <sip:a@b;tag=no>;tag=yes')).toBe('yes')
    const token = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9-]{0,8}$/)
    const viaParm = fc.record({
      transport: fc.constantFrom('UDP', 'TCP', 'TLS', 'WS'),
      // RFC 3261 hostname: the top label starts with a letter.
      host: fc.oneof(
        fc.ipV4(),
        fc.tuple(fc.array(token, { maxLength: 2 }), fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,6}$/)).map(([l, top]) => [...l, top].join('.')),
      ),
      port: fc.option(fc.integer({ min: 1, max: 65_535 }), { nil: undefined }),
      branch: fc.option(
        token.map((t) => `z9hG4bK${t}`),
        { nil: undefined },
      ),
      extra: fc.array(fc.tuple(fc.constantFrom('rport', 'received=10.1.2.3', 'ttl=16', 'x-foo=bar'), fc.boolean()), { maxLength: 3 }),
    })
    fc.assert(
      fc.property(viaParm, (v) => {
        const text = `SIP/2.0/${v.transport} ${v.host}${v.port ? `:${v.port}` : ''}${v.branch ? `;branch=${v.branch}` : ''}${v.extra.map(([p]) => `;${p}`).join('')}`
        const ours = parseVia(text)
        const theirs = Grammar.parse(text, 'Via') as { host: string; port?: number; branch?: string }
        expect(ours).toBeDefined()
        expect(theirs).not.toBe(-1)
        expect([ours!.host, ours!.port, ours!.branch]).toEqual([theirs.host, theirs.port, theirs.branch])
      }),
      { numRuns: 200 },
    )
    expect(tagOf('<sip:a@b;tag=no>')).toBeUndefined()
  })

  test('an oversized message is dropped', () => {
    const huge = OPTIONS.replace('Content-Length: 0', `Content-Length: ${MAX_MESSAGE_BYTES}`) + 'x'.repeat(MAX_MESSAGE_BYTES)
    expect(parseSipMessage(bytes(huge), 'udp')).toMatchObject({ kind: 'garbage', reason: 'message too large' })
  })

  test('header lists split on commas outside quotes and angle brackets', () => {
    expect(splitHeaderList('"A, B" <sip:a@b;x=1,2>;q=1, <sip:c@d>')).toEqual(['"A, B" <sip:a@b;x=1,2>;q=1', '<sip:c@d>'])
  })

  test('fuzz: the parser never throws and classifies every input', () => {
    const lines = OPTIONS.split('\r\n')
    const mutated = fc
      .tuple(
        fc.array(fc.nat({ max: lines.length - 1 }), { maxLength: 4 }),
        fc.array(fc.string({ maxLength: 40 }), { maxLength: 4 }),
        fc.nat({ max: OPTIONS.length }),
      )
      .map(([drop, inserts, cut]) => {
        const kept = lines.filter((_, i) => !drop.includes(i) || i === 0)
        for (const [i, s] of inserts.entries()) kept.splice(1 + ((i * 3) % kept.length), 0, s)
        return kept.join('\r\n').slice(0, Math.max(cut, 20))
      })
    const input = fc.oneof(fc.uint8Array({ maxLength: 600 }), fc.string({ maxLength: 400 }).map(bytes), mutated.map(bytes))
    fc.assert(
      fc.property(input, fc.constantFrom('udp' as const, 'tcp' as const), (b, transport) => {
        const parsed = parseSipMessage(b, transport)
        expect(['request', 'response', 'bad-request', 'garbage']).toContain(parsed.kind)
        if (parsed.kind === 'request') validateRequest(parsed.message)
        if (parsed.kind === 'bad-request') {
          // Whatever is answerable must build into a response without throwing.
          const out = text(buildResponse(parsed.basis, { status: parsed.status }, { transport, address: '127.0.0.1', port: 5999 }, { toTag: 't' }))
          expect(out).toStartWith(`SIP/2.0 ${parsed.status} `)
        }
      }),
      { numRuns: 3000 },
    )
  })
})

describe('responses', () => {
  const source = { transport: 'udp' as const, address: '203.0.113.9', port: 40123 }

  test('copy every Via in order (the top one stamped), From, To with a tag, Call-ID and CSeq, then the extra headers', () => {
    const { basis } = parsedRequest(OPTIONS)
    const out = text(buildResponse(basis, { status: 200, headers: [['Allow', 'OPTIONS']] }, source, { toTag: 'xyz' }))
    expect(out.split('\r\n')).toEqual([
      'SIP/2.0 200 OK',
      'Via: SIP/2.0/UDP 10.0.0.5:5070;branch=z9hG4bKabc;rport=40123;received=203.0.113.9',
      'Via: SIP/2.0/TCP proxy.example.com;branch=z9hG4bKdef',
      'Via: SIP/2.0/UDP 10.9.9.9;branch=z9hG4bKghi',
      'From: "A, B" <sip:a@example.com>;tag=1928301774',
      'To: <sip:service@127.0.0.1>;tag=xyz',
      'Call-ID: a84b4c76e66710@pc33.example.com',
      'CSeq: 63104 OPTIONS',
      'Server: business-voice',
      'Allow: OPTIONS',
      'Content-Length: 0',
      '',
      '',
    ])
    // rport asked: the answer goes to the packet's source port, not the Via's.
    expect(responseDestination(basis, source)).toEqual(source)
  })

  test('a 100 Trying has no To tag and echoes Timestamp', () => {
    const { basis } = parsedRequest(OPTIONS)
    const out = text(buildResponse(basis, { status: 100 }, source, { toTag: 'xyz' }))
    expect(out).toContain('\r\nTo: <sip:service@127.0.0.1>\r\n')
    expect(out).toContain('\r\nTimestamp: 54\r\n')
  })

  test('a To that has a tag keeps it', () => {
    const { basis } = parsedRequest(OPTIONS.replace('To: <sip:service@127.0.0.1>', 'To: <sip:service@127.0.0.1>;tag=abc'))
    expect(text(buildResponse(basis, { status: 200 }, source, { toTag: 'xyz' }))).toContain('\r\nTo: <sip:service@127.0.0.1>;tag=abc\r\n')
  })

  test('received is added only when the sent-by differs from the source (RFC 3261 §18.2.1) or rport was asked (RFC 3581)', () => {
    const here = { transport: 'udp' as const, address: '10.0.0.5', port: 5070 }
    expect(stampTopVia('SIP/2.0/UDP 10.0.0.5:5070;branch=z9hG4bK1', here).via).toBe('SIP/2.0/UDP 10.0.0.5:5070;branch=z9hG4bK1')
    expect(stampTopVia('SIP/2.0/UDP phone.example.com;branch=z9hG4bK1', here).via).toBe('SIP/2.0/UDP phone.example.com;branch=z9hG4bK1;received=10.0.0.5')
    expect(stampTopVia('SIP/2.0/UDP 10.0.0.5:5070;rport;branch=z9hG4bK1', here).via).toBe(
      'SIP/2.0/UDP 10.0.0.5:5070;rport=5070;branch=z9hG4bK1;received=10.0.0.5',
    )
  })

  test('without rport a UDP answer goes to the source address at the sent-by port (5060 by default)', () => {
    const { basis } = parsedRequest(OPTIONS.replace(';rport', '').replace('10.0.0.5:5070', '10.0.0.5'))
    expect(responseDestination(basis, source)).toEqual({ transport: 'udp', address: '203.0.113.9', port: 5060 })
  })

  test('a body gets its Content-Type and a byte Content-Length', () => {
    const { basis } = parsedRequest(OPTIONS)
    const out = text(buildResponse(basis, { status: 200, body: 'v=0 é\r\n', contentType: 'application/sdp' }, source, { toTag: 't' }))
    expect(out).toContain('\r\nContent-Type: application/sdp\r\nContent-Length: 8\r\n\r\nv=0 é\r\n')
  })

  test.each([
    ['a line break in a header value', { status: 200, headers: [['Contact', '<sip:a@b>\r\nX-Injected: 1']] as const }],
    ['a header the server writes', { status: 200, headers: [['Call-ID', 'other']] as const }],
    ['a status outside 100..699', { status: 99 }],
  ])('refuses a response spec with %s', (_what, spec) => {
    const { basis } = parsedRequest(OPTIONS)
    expect(() => buildResponse(basis, spec, source, { toTag: 't' })).toThrow()
  })

  test('standard reason phrases', () => {
    expect([reasonPhrase(200), reasonPhrase(405), reasonPhrase(501), reasonPhrase(499)]).toEqual([
      'OK',
      'Method Not Allowed',
      'Not Implemented',
      'Client Error',
    ])
  })
})

describe('TCP stream framing', () => {
  const a = OPTIONS
  const b = `${OPTIONS.replace('Content-Length: 0', 'Content-Length: 4').replace('CSeq: 63104', 'CSeq: 63105')}body`

  test('two messages in one chunk come out as two', () => {
    const events = new SipStreamFramer().push(bytes(a + b))
    expect(events.map((e) => (e.kind === 'message' ? text(e.bytes) : e.kind))).toEqual([a, b])
  })

  test('a message split in three comes out once, when complete', () => {
    const framer = new SipStreamFramer()
    const whole = bytes(b)
    expect(framer.push(whole.subarray(0, 30))).toEqual([])
    expect(framer.push(whole.subarray(30, whole.length - 2))).toEqual([])
    const events = framer.push(whole.subarray(whole.length - 2))
    expect(events.map((e) => (e.kind === 'message' ? text(e.bytes) : e.kind))).toEqual([b])
  })

  test('a CRLF CRLF keep-alive is a ping; a lone CRLF is skipped', () => {
    const events = new SipStreamFramer().push(bytes(`\r\n\r\n\r\n${a}`))
    expect(events.map((e) => e.kind)).toEqual(['ping', 'message'])
  })

  test('a header section that never ends, or a message without Content-Length, breaks the stream', () => {
    expect(new SipStreamFramer(1000).push(bytes('x'.repeat(1001)))).toEqual([{ kind: 'broken', reason: 'header section too long' }])
    const events = new SipStreamFramer().push(bytes(a.replace('Content-Length: 0\r\n', '')))
    expect(events[0]).toMatchObject({ kind: 'broken', reason: 'Content-Length is required over TCP' })
  })

  test('fuzz: any chunking of a stream of messages yields the same messages', () => {
    const stream = bytes(a + b + a)
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 8 }), (cuts) => {
        const framer = new SipStreamFramer()
        const points = [0, ...cuts.sort((x, y) => x - y), stream.length]
        const out: string[] = []
        for (let i = 1; i < points.length; i++)
          for (const e of framer.push(stream.subarray(points[i - 1], points[i]))) if (e.kind === 'message') out.push(text(e.bytes))
        expect(out).toEqual([a, b, a])
      }),
      { numRuns: 500 },
    )
  })
})
