/**
 * Reading a phone's request: vendor, model and MAC from real User-Agents and file
 * names; a path and User-Agent naming different phones are told apart; anything
 * unrecognised is unsupported_vendor or not found, and parsing never throws.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { normalizeMac } from './config'
import { identifyRequest, parseUserAgent, requestedFile } from './detect'

const YEALINK_UA = 'Yealink SIP-T54W 96.86.0.100 00:15:65:aa:bb:cc'
const POLYCOM_UA = 'FileTransport PolycomVVX-VVX_450-UA/6.4.3.5018 Type/Application'

describe('User-Agents', () => {
  test('Yealink: model, firmware and MAC', () => {
    expect(parseUserAgent(YEALINK_UA)).toEqual({ vendor: 'yealink', model: 'T54W', firmware: '96.86.0.100', mac: '001565aabbcc' })
    expect(parseUserAgent('Yealink W60B 77.83.0.85')).toEqual({ vendor: 'yealink', model: 'W60B', firmware: '77.83.0.85' })
  })

  test('Polycom: model and firmware, and the MAC when the firmware adds (SN:...)', () => {
    expect(parseUserAgent(POLYCOM_UA)).toEqual({ vendor: 'polycom', model: 'VVX450', firmware: '6.4.3.5018' })
    expect(parseUserAgent('FileTransport PolycomSoundPointIP-SPIP_335-UA/4.0.3.7562 (SN:0004F2E40A1B) Type/Application')).toEqual({
      vendor: 'polycom',
      model: 'SPIP335',
      firmware: '4.0.3.7562',
      mac: '0004f2e40a1b',
    })
  })

  test('others are not recognised', () => {
    for (const ua of ['Cisco/SPA504G-7.6.2', 'Grandstream Model HW GXP2170 SW 1.0.11.3', 'curl/8.5.0', '', undefined])
      expect(parseUserAgent(ua)).toBeUndefined()
  })
})

describe('file names', () => {
  test('the files each vendor asks for', () => {
    expect(requestedFile('/p/acct/y000000000000.cfg')).toEqual({ name: 'y000000000000.cfg', kind: 'yealink-common' })
    expect(requestedFile('/y000000000028.cfg')?.kind).toBe('yealink-common')
    expect(requestedFile('/p/001565AABBCC.cfg')).toEqual({ name: '001565AABBCC.cfg', kind: 'mac-cfg', mac: '001565aabbcc' })
    expect(requestedFile('/p/000000000000.cfg')?.kind).toBe('polycom-master')
    expect(requestedFile('/p/0004f2aabbcc-phone.cfg')).toEqual({ name: '0004f2aabbcc-phone.cfg', kind: 'polycom-phone', mac: '0004f2aabbcc' })
    for (const other of ['/p/sip.ld', '/p/0004f2aabbcc-directory.xml', '/p/../etc/passwd', '/p/', '/p/ffffffffffff.cfg'])
      expect(requestedFile(other)).toBeUndefined()
  })

  test('MACs: any case, with or without separators; not zero or broadcast', () => {
    expect(normalizeMac('00:15:65:AA:BB:CC')).toBe('001565aabbcc')
    expect(normalizeMac('00-15-65-aa-bb-cc')).toBe('001565aabbcc')
    expect(normalizeMac('00:15-65:aa:bb:cc')).toBeUndefined()
    expect(normalizeMac('000000000000')).toBeUndefined()
  })
})

describe('identifying the device a request is for', () => {
  test('Yealink asking for its own MAC file, and for the common file (MAC from the User-Agent)', () => {
    expect(identifyRequest('/p/001565aabbcc.cfg', YEALINK_UA)).toMatchObject({ outcome: 'device', mac: '001565aabbcc', vendor: 'yealink', model: 'T54W' })
    expect(identifyRequest('/p/y000000000000.cfg', YEALINK_UA)).toMatchObject({ outcome: 'device', mac: '001565aabbcc', vendor: 'yealink' })
  })

  test('Polycom asking for <mac>.cfg and <mac>-phone.cfg', () => {
    expect(identifyRequest('/p/0004f2aabbcc.cfg', POLYCOM_UA)).toMatchObject({ outcome: 'device', mac: '0004f2aabbcc', vendor: 'polycom' })
    expect(identifyRequest('/p/0004f2aabbcc-phone.cfg', POLYCOM_UA)).toMatchObject({ outcome: 'device', vendor: 'polycom' })
  })

  test('a path naming another MAC than the User-Agent is a mismatch', () => {
    expect(identifyRequest('/p/001565000001.cfg', YEALINK_UA)).toEqual({ outcome: 'mac_mismatch' })
  })

  test('a shared file without a MAC to tell whose is not found; a vendor file asked by the other vendor is unsupported', () => {
    expect(identifyRequest('/p/000000000000.cfg', POLYCOM_UA)).toEqual({ outcome: 'not_found' })
    expect(identifyRequest('/p/y000000000000.cfg', POLYCOM_UA)).toEqual({ outcome: 'unsupported_vendor' })
    expect(identifyRequest('/p/SEP001565aabbcc.cnf.xml', 'Cisco-CP8845/12.0')).toEqual({ outcome: 'unsupported_vendor' })
  })

  test('fuzz: never throws; unrecognised requests are unsupported_vendor or not found; a device always has a valid MAC', () => {
    const names = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom('y000000000000.cfg', '000000000000.cfg', '001565aabbcc.cfg', '0004f2aabbcc-phone.cfg', 'sip.ld'),
      fc.stringMatching(/^[0-9a-fA-F]{12}(-phone)?\.cfg$/),
    )
    const agents = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.constant(undefined),
      fc.constantFrom(YEALINK_UA, POLYCOM_UA),
      fc.tuple(fc.string({ maxLength: 12 }), fc.string({ maxLength: 20 })).map(([model, rest]) => `Yealink SIP-${model} ${rest}`),
      fc.tuple(fc.string({ maxLength: 12 }), fc.string({ maxLength: 20 })).map(([model, rest]) => `FileTransport PolycomVVX-${model}-UA/${rest}`),
    )
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), names, agents, (prefix, name, ua) => {
        const claim = identifyRequest(`/${prefix}/${name}`, ua)
        if (claim.outcome === 'device') expect(normalizeMac(claim.mac)).toBe(claim.mac)
        else expect(['unsupported_vendor', 'not_found', 'mac_mismatch']).toContain(claim.outcome)
        if (parseUserAgent(ua) === undefined && requestedFile(`/${prefix}/${name}`) === undefined) expect(claim.outcome).toBe('unsupported_vendor')
      }),
      { numRuns: 1000 },
    )
  })
})
