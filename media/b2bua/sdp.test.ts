import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { loadCapture } from '../sip/test-fixtures'
import { answerDirection, type Direction, type G711, readAudio, writeAudio } from './sdp'

/** The SDP body of a captured INVITE. */
const bodyOf = (capture: string) => {
  const text = loadCapture(capture)
  return text.slice(text.indexOf('\r\n\r\n') + 4)
}

const sdp = (...lines: string[]) => `${lines.join('\r\n')}\r\n`
const HEAD = ['v=0', 'o=- 1 1 IN IP4 192.0.2.1', 's=-']

describe('readAudio on captured phone offers', () => {
  test('Yealink: PCMU, PCMA (G722 and G729 skipped), telephone-event 101, sendrecv', () => {
    expect(readAudio(bodyOf('yealink-invite.sip'))).toEqual({
      address: '192.168.1.23',
      port: 11796,
      codecs: ['PCMU', 'PCMA'],
      dtmfPayloadType: 101,
      direction: 'sendrecv',
    })
  })

  test('Polycom (compact headers): G722 first is skipped, session-level a=sendrecv', () => {
    expect(readAudio(bodyOf('polycom-invite-compact.sip'))).toEqual({
      address: '10.20.30.41',
      port: 2222,
      codecs: ['PCMU', 'PCMA'],
      dtmfPayloadType: 101,
      direction: 'sendrecv',
    })
  })

  test('baresip: rtcp-mux and ssrc lines do not disturb it', () => {
    expect(readAudio(bodyOf('baresip-invite.sip'))).toEqual({
      address: '172.16.5.9',
      port: 10246,
      codecs: ['PCMU', 'PCMA'],
      dtmfPayloadType: 101,
      direction: 'sendrecv',
    })
  })

  test('LF line ends (some phones) read the same as CRLF', () => {
    expect(readAudio(bodyOf('yealink-invite.sip').replace(/\r\n/g, '\n'))).toEqual(readAudio(bodyOf('yealink-invite.sip')))
  })
})

describe('readAudio details', () => {
  test('the offerer order of the laws is kept: PCMA before PCMU', () => {
    const offer = readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', 'm=audio 4000 RTP/AVP 8 0 101', 'a=rtpmap:101 telephone-event/8000'))
    expect(offer?.codecs).toEqual(['PCMA', 'PCMU'])
  })

  test('static payload types without rtpmap; a dynamic PT mapped to PCMU counts, a static number remapped to another codec does not', () => {
    expect(readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', 'm=audio 4000 RTP/AVP 0 8'))?.codecs).toEqual(['PCMU', 'PCMA'])
    expect(
      readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', 'm=audio 4000 RTP/AVP 96 8', 'a=rtpmap:96 pcmu/8000', 'a=rtpmap:8 opus/48000/2'))?.codecs,
    ).toEqual(['PCMU'])
  })

  test('telephone-event: its payload type whatever the number; absent → undefined; the first one listed', () => {
    const with_ = (pts: string, ...rtpmaps: string[]) =>
      readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', `m=audio 4000 RTP/AVP ${pts}`, ...rtpmaps))?.dtmfPayloadType
    expect(with_('0 96', 'a=rtpmap:96 telephone-event/8000')).toBe(96)
    expect(with_('0 127', 'a=rtpmap:127 TELEPHONE-EVENT/8000')).toBe(127)
    expect(with_('0 8')).toBeUndefined()
    expect(with_('0 97 96', 'a=rtpmap:96 telephone-event/8000', 'a=rtpmap:97 telephone-event/8000')).toBe(97)
  })

  // Opus phones (Linphone) offer one telephone-event per clock rate; G.711's is the 8000 Hz one (RFC 4733 §2.1).
  test('telephone-event: the 8000 Hz one is chosen when the offer lists several rates (Linphone)', () => {
    const linphone = sdp(
      'v=0',
      'o=1001 2816 1543 IN IP4 192.0.2.7',
      's=Talk',
      'c=IN IP4 192.0.2.7',
      't=0 0',
      'm=audio 7078 RTP/AVP 96 0 8 101 100',
      'a=rtpmap:96 opus/48000/2',
      'a=fmtp:96 useinbandfec=1',
      'a=rtpmap:101 telephone-event/48000',
      'a=rtpmap:100 telephone-event/8000',
    )
    const offer = readAudio(linphone)
    expect(offer?.codecs).toEqual(['PCMU', 'PCMA'])
    expect(offer?.dtmfPayloadType).toBe(100)
  })

  test('direction: media-level wins over session-level; default sendrecv', () => {
    const read = (...extra: string[]) => readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', ...extra))?.direction
    expect(read('m=audio 4000 RTP/AVP 0')).toBe('sendrecv')
    expect(read('m=audio 4000 RTP/AVP 0', 'a=sendonly')).toBe('sendonly')
    expect(read('m=audio 4000 RTP/AVP 0', 'a=recvonly')).toBe('recvonly')
    expect(read('m=audio 4000 RTP/AVP 0', 'a=inactive')).toBe('inactive')
    expect(read('a=sendonly', 'm=audio 4000 RTP/AVP 0')).toBe('sendonly')
    expect(read('a=sendonly', 'm=audio 4000 RTP/AVP 0', 'a=sendrecv')).toBe('sendrecv')
  })

  test('c=0.0.0.0 (RFC 2543 hold) reads as inactive, whatever the direction attribute says', () => {
    const held = readAudio(sdp(...HEAD, 'c=IN IP4 0.0.0.0', 't=0 0', 'm=audio 4000 RTP/AVP 0', 'a=sendonly'))
    expect(held).toMatchObject({ address: '0.0.0.0', port: 4000, direction: 'inactive' })
    const mediaLevel = readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', 'm=audio 4000 RTP/AVP 0', 'c=IN IP4 0.0.0.0'))
    expect(mediaLevel?.direction).toBe('inactive')
  })

  test('the address: media-level c= over session-level; session-level alone; none at all → undefined; IPv6', () => {
    expect(readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', 'm=audio 4000 RTP/AVP 0', 'c=IN IP4 198.51.100.9'))?.address).toBe('198.51.100.9')
    expect(readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', 'm=audio 4000 RTP/AVP 0'))?.address).toBe('192.0.2.1')
    expect(readAudio(sdp(...HEAD, 't=0 0', 'm=audio 4000 RTP/AVP 0'))).toBeUndefined()
    expect(readAudio(sdp(...HEAD, 'c=IN IP6 2001:db8::7', 't=0 0', 'm=audio 4000 RTP/AVP 0'))?.address).toBe('2001:db8::7')
  })

  test('the first audio stream is read; video before it is skipped', () => {
    const offer = readAudio(
      sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', 'm=video 5000 RTP/AVP 96', 'a=rtpmap:96 H264/90000', 'm=audio 4002 RTP/AVP 8', 'm=audio 4004 RTP/AVP 0'),
    )
    expect(offer).toMatchObject({ port: 4002, codecs: ['PCMA'] })
  })

  test('no G.711 → an offer with no codecs (the B2BUA answers 488); no audio stream, no m=, nothing → undefined', () => {
    const opusOnly = readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', 'm=audio 4000 RTP/AVP 96 9', 'a=rtpmap:96 opus/48000/2', 'a=rtpmap:9 G722/8000'))
    expect(opusOnly).toEqual({ address: '192.0.2.1', port: 4000, codecs: [], dtmfPayloadType: undefined, direction: 'sendrecv' })
    expect(readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0', 'm=video 5000 RTP/AVP 96'))).toBeUndefined()
    expect(readAudio(sdp(...HEAD, 'c=IN IP4 192.0.2.1', 't=0 0'))).toBeUndefined()
    expect(readAudio('')).toBeUndefined()
    expect(readAudio(undefined)).toBeUndefined()
    expect(readAudio('m=')).toBeUndefined()
  })
})

describe('writeAudio', () => {
  test('an answer with one law: origin, connection, PT list, rtpmaps, fmtp 0-15, ptime, direction', () => {
    const text = writeAudio({ address: '203.0.113.5', port: 30000, codecs: ['PCMA'], dtmfPayloadType: 101, direction: 'recvonly', sessionId: 42, version: 3 })
    const lines = text.split('\r\n')
    expect(lines).toContain('v=0')
    expect(lines).toContain('o=- 42 3 IN IP4 203.0.113.5')
    expect(lines).toContain('c=IN IP4 203.0.113.5')
    expect(lines).toContain('t=0 0')
    expect(lines).toContain('m=audio 30000 RTP/AVP 8 101')
    expect(lines).toContain('a=rtpmap:8 PCMA/8000')
    expect(lines).toContain('a=rtpmap:101 telephone-event/8000')
    expect(lines).toContain('a=fmtp:101 0-15')
    expect(lines).toContain('a=ptime:20')
    expect(lines).toContain('a=recvonly')
    expect(text.endsWith('\r\n')).toBe(true)
  })

  test('IPv6 addresses get IP6', () => {
    const text = writeAudio({ address: '2001:db8::1', port: 30002, codecs: ['PCMU'], dtmfPayloadType: 101, sessionId: 1, version: 1 })
    expect(text).toContain('c=IN IP6 2001:db8::1\r\n')
    expect(text).toContain('o=- 1 1 IN IP6 2001:db8::1\r\n')
    expect(text).toContain('a=sendrecv\r\n')
  })

  test('answerDirection mirrors sendonly/recvonly (RFC 3264 §6.1)', () => {
    expect(answerDirection('sendonly')).toBe('recvonly')
    expect(answerDirection('recvonly')).toBe('sendonly')
    expect(answerDirection('sendrecv')).toBe('sendrecv')
    expect(answerDirection('inactive')).toBe('inactive')
  })
})

describe('properties', () => {
  const laws = fc.oneof(
    fc.constant<G711[]>([]),
    fc.constant<G711[]>(['PCMU']),
    fc.constant<G711[]>(['PCMA']),
    fc.constant<G711[]>(['PCMU', 'PCMA']),
    fc.constant<G711[]>(['PCMA', 'PCMU']),
  )
  const direction = fc.constantFrom<Direction>('sendrecv', 'sendonly', 'recvonly', 'inactive')
  const address = fc.oneof(fc.ipV4(), fc.ipV6())

  test('readAudio(writeAudio(x)) gives x back (round trip over addresses, ports, laws, DTMF PTs and directions)', () => {
    fc.assert(
      fc.property(
        address,
        fc.integer({ min: 1, max: 65_535 }),
        laws,
        fc.integer({ min: 96, max: 127 }),
        fc.option(direction, { nil: undefined }),
        fc.nat(),
        fc.nat(),
        (addr, port, codecs, dtmfPayloadType, dir, sessionId, version) => {
          const read = readAudio(writeAudio({ address: addr, port, codecs, dtmfPayloadType, direction: dir, sessionId, version }))
          expect(read).toEqual({
            address: addr,
            port,
            codecs,
            dtmfPayloadType,
            direction: addr === '0.0.0.0' ? 'inactive' : (dir ?? 'sendrecv'),
          })
        },
      ),
      { numRuns: 500 },
    )
  })

  test('readAudio never throws: arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400, unit: 'binary' }), (s) => {
        readAudio(s)
        readAudio(`m=${s}`)
      }),
      { numRuns: 2_000 },
    )
  })

  test('readAudio never throws: SDP-shaped noise (known line types with random values, shuffled, truncated)', () => {
    const kinds = ['v', 'o', 's', 'c', 't', 'm', 'a', 'b', 'i', 'k', 'z', 'r', 'e', 'u', 'p']
    const value = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.constantFrom(
        'audio 4000 RTP/AVP 0 8 101',
        'audio x RTP/AVP',
        'audio 99999999999999999999 RTP/AVP 0',
        'audio 4000/2 RTP/AVP 0',
        'audio 4000 RTP/AVP',
        'audio -1 RTP/AVP 0',
        'IN IP4 0.0.0.0',
        'IN IP4',
        'IN IP6 ::',
        'rtpmap:0',
        'rtpmap: PCMU/8000',
        'rtpmap:101 telephone-event',
        'rtpmap:__proto__ PCMU/8000',
        'rtpmap:constructor telephone-event/8000',
        'fmtp:101',
        'sendonly',
        'inactive',
        'ssrc:1 cname:x',
        'candidate:1 1 UDP 1 192.0.2.1 4000 typ host',
      ),
    )
    const line = fc.tuple(fc.constantFrom(...kinds), value).map(([k, v]) => `${k}=${v}`)
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.constantFrom('\r\n', '\n', '\r'), fc.nat(2_000), (lines, eol, cut) => {
        const text = lines.join(eol)
        const offer = readAudio(text)
        readAudio(text.slice(0, cut))
        if (offer) {
          expect(typeof offer.address).toBe('string')
          expect(typeof offer.port).toBe('number')
          for (const c of offer.codecs) expect(['PCMU', 'PCMA']).toContain(c)
        }
      }),
      { numRuns: 2_000 },
    )
  })
})
