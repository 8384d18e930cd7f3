import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { serializeRequest } from './client'
import { parseSipMessage } from './message'
import { parseReferTo, referNotify, SIPFRAG_CONTENT_TYPE, sipfragStatus } from './refer'

describe('Refer-To (RFC 3515 §2.1)', () => {
  test.each([
    ['<sip:1002@example.com>', { user: '1002', host: 'example.com', replaces: false }],
    ['"Carol" <sip:1002@example.com;transport=udp>', { user: '1002', host: 'example.com', replaces: false }],
    ['sip:+15551234567@10.0.0.1;user=phone', { user: '+15551234567', host: '10.0.0.1', replaces: false }],
    ['<sips:%2B15551234567@example.com:5061>', { user: '+15551234567', host: 'example.com:5061', replaces: false }],
    // A Polycom's attended transfer names the dialog to replace (RFC 3891) in the URI's headers.
    [
      '<sip:1003@10.0.0.1?Replaces=abc%40host%3Bto-tag%3D1%3Bfrom-tag%3D2>',
      { user: '1003', host: '10.0.0.1', replaces: true, replacesDialog: { callId: 'abc@host', toTag: '1', fromTag: '2' } },
    ],
    [
      '<sip:1003@10.0.0.1?Replaces=abc%40host%3Bfrom-tag%3D2%3Bto-tag%3D1%3Bearly-only>',
      { user: '1003', host: '10.0.0.1', replaces: true, replacesDialog: { callId: 'abc@host', toTag: '1', fromTag: '2' } },
    ],
    ['<sip:1003@10.0.0.1?Replaces=abc%40host%3Bto-tag%3D1>', { user: '1003', host: '10.0.0.1', replaces: true }],
  ])('%s names %o', (value, target) => {
    expect(parseReferTo(value)).toEqual(target)
  })

  test.each([
    '',
    '<>',
    'tel:+15551234567',
    '<sip:example.com>',
    '<sip:10 02@example.com>',
    '<sip:1002@example.com',
    'sip:%ZZ@example.com',
    `<sip:${'1'.repeat(65)}@h>`,
  ])('%p names no target', (value) => {
    expect(parseReferTo(value)).toBeUndefined()
  })

  test('any Replaces value: no throw, and a dialog it reads has all three parts, non-empty', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 120 }), fc.stringMatching(/^[^;]{0,10}(;(to|from)-tag=[^;]{0,5}){0,3}$/)), (raw) => {
        const target = parseReferTo(`<sip:1003@10.0.0.1?Replaces=${encodeURIComponent(raw)}>`)
        expect(target?.replaces).toBe(true)
        const d = target?.replacesDialog
        if (d) for (const part of [d.callId, d.toTag, d.fromTag]) expect(part.length).toBeGreaterThan(0)
      }),
      { numRuns: 2000 },
    )
  })

  test('it throws on no input, and what it accepts is a dialable user part', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 200 }),
          fc.string({ unit: 'grapheme', maxLength: 80 }),
          fc.stringMatching(/^<?sips?:[^@]{0,20}@[^>]{0,20}>?$/),
          fc.constant(undefined),
        ),
        (value) => {
          const target = parseReferTo(value)
          if (target) expect(target.user).toMatch(/^[0-9A-Za-z+*#._-]{1,64}$/)
        },
      ),
      { numRuns: 2000 },
    )
  })

  test('any extension or number written as a SIP URI, with or without a name and parameters, is read back', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^\+?[0-9]{3,15}$/),
        fc.constantFrom('example.com', '127.0.0.1', 'pbx.example.com:5070'),
        fc.boolean(),
        fc.constantFrom('', ';transport=udp', ';user=phone'),
        (user, host, named, params) => {
          const uri = `sip:${user}@${host}${params}`
          expect(parseReferTo(named ? `"Someone" <${uri}>` : uri)).toEqual({ user, host, replaces: false })
        },
      ),
    )
  })
})

describe('NOTIFY of a transfer’s progress (RFC 3515 §2.4.5)', () => {
  const notify = (status: number, reason: string) => {
    const n = referNotify(status, reason)
    const bytes = serializeRequest(
      {
        method: 'NOTIFY',
        uri: 'sip:bob@127.0.0.1:5070',
        headers: [['From', '<sip:b2bua@127.0.0.1>;tag=a'], ['To', '<sip:bob@127.0.0.1>;tag=b'], ['Call-ID', 'c1'], ['CSeq', '2 NOTIFY'], ...n.headers],
        body: n.body,
        contentType: n.contentType,
      },
      'SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKx;rport',
    )
    const parsed = parseSipMessage(bytes, 'udp')
    if (parsed.kind !== 'request') throw new Error(parsed.kind)
    return parsed.message
  }

  test('progress keeps the subscription active; a final status terminates it; the body is a sipfrag status line', () => {
    const trying = notify(100, 'Trying')
    expect(trying.getHeader('event')).toBe('refer')
    expect(trying.getHeader('subscription-state')).toStartWith('active;expires=')
    expect(trying.getHeader('content-type')).toBe(SIPFRAG_CONTENT_TYPE)
    expect(sipfragStatus(trying.body)).toBe(100)
    const done = notify(200, 'OK')
    expect(done.getHeader('subscription-state')).toBe('terminated;reason=noresource')
    expect(done.body).toBe('SIP/2.0 200 OK\r\n')
    expect(sipfragStatus(notify(603, 'Declined').body)).toBe(603)
  })

  test('a reason phrase cannot break the body into more lines', () => {
    expect(referNotify(503, 'Service\r\nUnavailable').body).toBe('SIP/2.0 503 Service  Unavailable\r\n')
  })

  test('sipfragStatus reads only a status line', () => {
    fc.assert(fc.property(fc.string({ maxLength: 100 }), (body) => sipfragStatus(body) === undefined || /SIP\/2\.0 [1-6]/.test(body)))
  })
})
