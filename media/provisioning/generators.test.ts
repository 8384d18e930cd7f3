/**
 * Vendor files say what the device's configuration says: every line's SIP account
 * and every button appear in the file as the phone reads it, values survive escaping
 * exactly, and a value a format cannot carry is refused as invalid_configuration.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { type ProvisioningConfig, ProvisioningError } from './config'
import { parseXml, parseYealinkCfg, sampleConfig, type XmlElement } from './parsers.testkit'
import { polycomMasterFile, polycomPhoneFile } from './polycom'
import { zoneRules } from './time-zone'
import { yealinkCommonFile, yealinkDeviceFile } from './yealink'

const NOW = new Date('2026-06-01T12:00:00Z')
const codes = (s: string) => [...s].map((c) => c.codePointAt(0)!)
const hasControl = (s: string) => codes(s).some((n) => n < 0x20 || n === 0x7f)
/** XML 1.0's Char production: tab, line feed, carriage return, and the rest from U+0020 except U+FFFE, U+FFFF and lone surrogates. */
const xmlCanCarry = (s: string) => s.isWellFormed() && codes(s).every((n) => n === 9 || n === 10 || n === 13 || (n >= 0x20 && n !== 0xfffe && n !== 0xffff))
/** Characters that need escaping, that XML cannot carry, and ordinary ones (fast-check's "binary" unit is slow). */
const xmlTrouble = fc.oneof(
  fc.constantFrom('&', '<', '>', '"', "'", '\n', '\t', '\r', '\u0001', '\u001f', '\ud800', '\uffff', '&amp;', ']]>'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
)

function refusal(run: () => unknown): ProvisioningError {
  try {
    run()
  } catch (error) {
    if (error instanceof ProvisioningError) return error
    throw error
  }
  throw new Error('expected a ProvisioningError')
}

describe('time zones become offsets and rules', () => {
  test('New York: UTC-5, DST from the second Sunday of March to the first Sunday of November at 02:00', () => {
    expect(zoneRules('America/New_York', 2026)).toEqual({
      standardOffsetMinutes: -300,
      dst: {
        start: { month: 3, week: 2, weekday: 0, hour: 2, day: 8 },
        end: { month: 11, week: 1, weekday: 0, hour: 2, day: 1 },
        savingMinutes: 60,
      },
    })
  })

  test('London switches on the last Sunday; Kolkata has a half-hour offset and no DST', () => {
    expect(zoneRules('Europe/London', 2026).dst?.start).toEqual({ month: 3, week: 5, weekday: 0, hour: 1, day: 29 })
    expect(zoneRules('Asia/Kolkata', 2026)).toEqual({ standardOffsetMinutes: 330 })
  })
})

describe('Yealink files', () => {
  const config = sampleConfig('yealink', '001565aabbcc')

  test('the MAC file holds every line as account.N and every button as linekey.N', () => {
    const withFixedKeys: ProvisioningConfig = {
      ...config,
      buttons: [...config.buttons, { key: 8, type: 'dnd' }, { key: 9, type: 'transfer', label: 'Xfer' }],
    }
    const cfg = parseYealinkCfg(yealinkDeviceFile(withFixedKeys))
    config.lines.forEach((line, i) => {
      const n = i + 1
      expect(cfg.get(`account.${n}.enable`)).toBe('1')
      expect(cfg.get(`account.${n}.user_name`)).toBe(line.sipUsername)
      expect(cfg.get(`account.${n}.auth_name`)).toBe(line.authUsername ?? line.sipUsername)
      expect(cfg.get(`account.${n}.password`)).toBe(line.sipPassword)
      expect(cfg.get(`account.${n}.display_name`)).toBe(line.displayName)
      expect(cfg.get(`account.${n}.sip_server.1.address`)).toBe(line.registrarHost)
      expect(cfg.get(`account.${n}.sip_server.1.port`)).toBe(String(line.registrarPort))
    })
    expect(cfg.get('account.2.sip_server.1.transport_type')).toBe('2')
    expect(cfg.get('account.3.enable')).toBe('0')
    const types: Record<string, string> = { line: '15', blf: '16', speed_dial: '13', park: '10', voicemail: '12', dnd: '5', transfer: '3' }
    for (const button of withFixedKeys.buttons) {
      expect(cfg.get(`linekey.${button.key}.type`)).toBe(types[button.type]!)
      expect(cfg.get(`linekey.${button.key}.line`)).toBe(String(button.line ?? 1))
      if (button.type !== 'line') expect(cfg.get(`linekey.${button.key}.value`)).toBe(button.value ?? '')
      if (button.label) expect(cfg.get(`linekey.${button.key}.label`)).toBe(button.label)
    }
    expect(cfg.get('linekey.2.label')).toBe('Sales line')
  })

  test('the common file carries time zone, DST rule, language, NTP and the provisioning URL', () => {
    const cfg = parseYealinkCfg(yealinkCommonFile({ ...config, account: { ...config.account, language: 'fr-CA' } }, NOW))
    expect(cfg.get('local_time.time_zone')).toBe('-5')
    expect(cfg.get('local_time.summer_time')).toBe('1')
    expect(cfg.get('local_time.start_time')).toBe('3/2/7/2')
    expect(cfg.get('local_time.end_time')).toBe('11/1/7/2')
    expect(cfg.get('local_time.ntp_server1')).toBe('pool.ntp.org')
    expect(cfg.get('lang.gui')).toBe('French')
    expect(cfg.get('static.auto_provision.server.url')).toBe(config.account.provisioningBaseUrl!)
  })

  test('a value with a line break is refused as invalid_configuration, naming the field', () => {
    const bad: ProvisioningConfig = { ...config, lines: [{ ...config.lines[0]!, displayName: 'Ada\naccount.1.password = stolen' }, config.lines[1]!] }
    const error = refusal(() => yealinkDeviceFile(bad))
    expect(error.code).toBe('invalid_configuration')
    expect(error.details).toEqual({ 'lines[0].display_name': 'must not contain line breaks or control characters' })
  })

  test('any printable values round-trip; any control character is refused', () => {
    const printable = fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim() === s && !hasControl(s) && !s.includes('%'))
    fc.assert(
      fc.property(printable, printable, fc.string({ maxLength: 20 }), (name, password, label) => {
        const candidate: ProvisioningConfig = {
          ...config,
          lines: [{ ...config.lines[0]!, displayName: name, sipPassword: password }],
          buttons: [{ key: 1, type: 'blf', value: '102', label }],
        }
        const labelOk = label === '' || (!hasControl(label) && label.trim() === label && label !== '%NULL%' && label !== '%EMPTY%')
        if (!labelOk) {
          expect(refusal(() => yealinkDeviceFile(candidate)).code).toBe('invalid_configuration')
          return
        }
        const cfg = parseYealinkCfg(yealinkDeviceFile(candidate))
        expect(cfg.get('account.1.display_name')).toBe(name)
        expect(cfg.get('account.1.password')).toBe(password)
        expect(cfg.get('linekey.1.label')).toBe(label || '102')
      }),
      { numRuns: 200 },
    )
  })

  test('missing required fields are invalid_configuration with details', () => {
    const error = refusal(() => yealinkDeviceFile({ ...config, lines: [{ ...config.lines[0]!, sipPassword: '', registrarPort: 0 }], buttons: [] }))
    expect(error.code).toBe('invalid_configuration')
    expect(error.details).toEqual({ 'lines[0].sip_password': 'required', 'lines[0].registrar_port': 'must be 1 to 65535' })
  })
})

describe('a Yealink DECT base file', () => {
  // A W60B with three accounts: handset 1 uses accounts 1 and 3, handset 2 account 2, handset 3 none yet.
  const sample = sampleConfig('yealink', '001565aabbdd')
  const line = (n: number) => ({ ...sample.lines[0]!, number: n, sipUsername: `u${n}`, displayName: `Line ${n}` })
  const base: ProvisioningConfig = {
    ...sample,
    model: 'W60B',
    lines: [line(1), line(2), line(3)],
    buttons: [],
    handsets: [
      { number: 1, name: 'Front desk', lines: [1, 3] },
      { number: 2, name: 'Warehouse', lines: [2] },
      { number: 3, name: 'Spare', lines: [] },
    ],
  }

  test('each handset rings for its own accounts only and dials out on its first (handset.N.*)', () => {
    const cfg = parseYealinkCfg(yealinkDeviceFile(base))
    const handsetOf = (account: string) =>
      [...cfg.keys()].filter((k) => /^handset\.\d+\.incoming_lines$/.test(k) && cfg.get(k)!.split(',').includes(account)).map((k) => k.split('.')[1])
    expect(handsetOf('1')).toEqual(['1'])
    expect(handsetOf('2')).toEqual(['2'])
    expect(handsetOf('3')).toEqual(['1'])
    expect([cfg.get('handset.1.name'), cfg.get('handset.1.dial_out_lines'), cfg.get('handset.1.dial_out_default_line')]).toEqual(['Front desk', '1,3', '1'])
    expect([cfg.get('handset.2.name'), cfg.get('handset.2.incoming_lines'), cfg.get('handset.2.dial_out_default_line')]).toEqual(['Warehouse', '2', '2'])
    // Every account a handset names is an enabled SIP account of the file.
    for (const account of ['1', '2', '3']) expect(cfg.get(`account.${account}.enable`)).toBe('1')
    // A handset without a line gets its name, and no assignment Yealink could not express.
    expect([cfg.get('handset.3.name'), cfg.has('handset.3.incoming_lines')]).toEqual(['Spare', false])
  })

  test('a desk phone file has no handset settings; the same base gives the same bytes', () => {
    expect(yealinkDeviceFile(sample)).not.toContain('handset.')
    expect(yealinkDeviceFile(base)).toBe(yealinkDeviceFile(structuredClone(base)))
  })

  test('a handset on a line the base lacks, a handset listed twice and a name with a line break are invalid_configuration', () => {
    const error = refusal(() =>
      yealinkDeviceFile({
        ...base,
        handsets: [
          { number: 1, name: 'A', lines: [4] },
          { number: 1, name: 'B\nhandset.2.name = x', lines: [1] },
        ],
      }),
    )
    expect(error.code).toBe('invalid_configuration')
    expect(error.details).toEqual({ 'handsets[0].lines[0]': 'no line 4 on this device', 'handsets[1].number': 'handset 1 is listed twice' })
    const named = refusal(() => yealinkDeviceFile({ ...base, handsets: [{ number: 1, name: 'B\nhandset.2.name = x', lines: [1] }] }))
    expect(named.details).toEqual({ 'handsets[0].name': 'must not contain line breaks or control characters' })
  })
})

describe('Polycom files', () => {
  const config = sampleConfig('polycom', '0004f2aabbcc')
  const settingsOf = (xml: string): Map<string, string> => {
    const root = parseXml(xml)
    expect(root.name).toBe('polycomConfig')
    return root.attributes
  }

  test('the master files list the per-phone file', () => {
    expect(parseXml(polycomMasterFile('0004F2AABBCC')).attributes.get('CONFIG_FILES')).toBe('0004f2aabbcc-phone.cfg')
    const shared: XmlElement = parseXml(polycomMasterFile())
    expect(shared.name).toBe('APPLICATION')
    expect(shared.attributes.get('CONFIG_FILES')).toBe('[PHONE_MAC_ADDRESS]-phone.cfg')
  })

  test('the per-phone file holds every line as reg.N and every button as a line key', () => {
    const s = settingsOf(polycomPhoneFile(config, NOW))
    config.lines.forEach((line, i) => {
      const n = i + 1
      expect(s.get(`reg.${n}.address`)).toBe(line.sipUsername)
      expect(s.get(`reg.${n}.auth.userId`)).toBe(line.authUsername ?? line.sipUsername)
      expect(s.get(`reg.${n}.auth.password`)).toBe(line.sipPassword)
      expect(s.get(`reg.${n}.displayName`)).toBe(line.displayName)
      expect(s.get(`reg.${n}.server.1.address`)).toBe(line.registrarHost)
      expect(s.get(`reg.${n}.server.1.port`)).toBe(String(line.registrarPort))
    })
    expect(s.get('reg.2.server.1.transport')).toBe('TLS')
    for (const button of config.buttons) {
      const category = s.get(`lineKey.${button.key}.category`)
      const index = s.get(`lineKey.${button.key}.index`)!
      if (button.type === 'line') {
        expect([category, index]).toEqual(['Line', String(button.line)])
      } else if (button.type === 'blf' || button.type === 'park') {
        expect(category).toBe('BLF')
        expect(s.get(`attendant.resourceList.${index}.address`)).toBe(button.value!)
        expect(s.get(`attendant.resourceList.${index}.label`)).toBe(button.label!)
        expect(s.get(`attendant.resourceList.${index}.type`)).toBe(button.type === 'park' ? 'automata' : 'normal')
      } else {
        expect(category).toBe('EFK')
        expect(s.get(`efk.efklist.${index}.action.string`)).toBe(`${button.value}$Tinvite$`)
        expect(s.get(`efk.efklist.${index}.label`)).toBe(button.label!)
      }
    }
    expect(s.get('tcpIpApp.sntp.gmtOffset')).toBe('-18000')
    expect(s.get('tcpIpApp.sntp.daylightSavings.start.month')).toBe('3')
    expect(s.get('lcl.ml.lang')).toBe('English_United_States')
    expect(s.get('device.prov.serverName')).toBe(config.account.provisioningBaseUrl!)
  })

  test('any value XML can carry survives escaping exactly, line breaks included', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 30, unit: xmlTrouble }), (text) => {
        const candidate: ProvisioningConfig = { ...config, lines: [{ ...config.lines[0]!, displayName: text, sipPassword: text }], buttons: [] }
        const representable = xmlCanCarry(text)
        if (!representable) {
          expect(refusal(() => polycomPhoneFile(candidate, NOW)).code).toBe('invalid_configuration')
          return
        }
        const s = settingsOf(polycomPhoneFile(candidate, NOW))
        expect(s.get('reg.1.displayName')).toBe(text)
        expect(s.get('reg.1.auth.password')).toBe(text)
      }),
      { numRuns: 300 },
    )
  })

  test('keys Polycom cannot place on a line key are invalid_configuration, naming each', () => {
    const error = refusal(() =>
      polycomPhoneFile(
        {
          ...config,
          buttons: [
            { key: 3, type: 'dnd' },
            { key: 4, type: 'park', value: null },
          ],
        },
        NOW,
      ),
    )
    expect(error.details).toEqual({
      'buttons[0].type': 'Polycom phones have no dnd line key',
      'buttons[1].value': 'a park key on a Polycom phone needs its slot',
    })
  })

  test('lines keep their numbers when some are missing; line keys follow them', () => {
    const gappy: ProvisioningConfig = {
      ...config,
      lines: [{ ...config.lines[0]!, number: 3 }],
      buttons: [
        { key: 1, type: 'line', value: '3' },
        { key: 2, type: 'none' },
      ],
    }
    const s = settingsOf(polycomPhoneFile(gappy, NOW))
    expect(s.get('reg.3.address')).toBe(config.lines[0]!.sipUsername)
    expect(s.has('reg.1.address')).toBe(false)
    expect([s.get('lineKey.1.category'), s.get('lineKey.1.index'), s.get('lineKey.2.category')]).toEqual(['Line', '3', 'Unassigned'])
    const cfg = parseYealinkCfg(yealinkDeviceFile({ ...gappy, vendor: 'yealink' }))
    expect([cfg.get('account.3.enable'), cfg.get('account.1.enable'), cfg.get('linekey.1.line'), cfg.get('linekey.2.type')]).toEqual(['1', '0', '3', '0'])
  })

  test('a button on a line the device lacks is invalid_configuration', () => {
    const error = refusal(() => polycomPhoneFile({ ...config, buttons: [{ key: 1, type: 'line', value: '9' }] }, NOW))
    expect(error.details).toEqual({ 'buttons[0].value': 'no line 9 on this device' })
  })
})
