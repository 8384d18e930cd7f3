/**
 * Readers of the two vendor formats, for tests only: they read a generated file the
 * way a phone would and refuse anything a phone would choke on, so a test can check
 * what the phone will actually see. (No XML parser is installed; this one is strict
 * XML 1.0 for the subset configuration files use: declaration, comments, elements,
 * attributes, text, entity and character references; no DTD, no CDATA.)
 */

/** Yealink `#!version:1.0.0.1` files: `key = value` lines, `#` comments, `%NULL%` for empty. Duplicate keys refused. */
export function parseYealinkCfg(text: string): Map<string, string> {
  const lines = text.split('\n')
  if (lines[0] !== '#!version:1.0.0.1') throw new Error('missing #!version:1.0.0.1 header')
  const settings = new Map<string, string>()
  for (const [i, raw] of lines.entries()) {
    if (i === 0 || raw.trim() === '' || raw.startsWith('#')) continue
    const m = /^([A-Za-z0-9_.]+) = (.*)$/.exec(raw)
    if (!m) throw new Error(`line ${i + 1} is not "key = value": ${JSON.stringify(raw)}`)
    if (settings.has(m[1]!)) throw new Error(`line ${i + 1}: ${m[1]} set twice`)
    settings.set(m[1]!, m[2] === '%NULL%' ? '' : m[2]!)
  }
  return settings
}

export interface XmlElement {
  name: string
  attributes: Map<string, string>
  children: XmlElement[]
  text: string
}

export class XmlError extends Error {}

const NAME = /^[A-Za-z_:][A-Za-z0-9_.:-]*/
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

export function parseXml(input: string): XmlElement {
  let i = 0
  const fail = (why: string): never => {
    throw new XmlError(`${why} at offset ${i}`)
  }
  const startsWith = (s: string) => input.startsWith(s, i)
  const space = () => {
    while (i < input.length && ' \t\r\n'.includes(input[i]!)) i++
  }
  const name = () => {
    const m = NAME.exec(input.slice(i))
    if (!m) fail('expected a name')
    i += m![0].length
    return m![0]
  }
  const reference = (): string => {
    const end = input.indexOf(';', i)
    if (end < 0 || end - i > 12) fail('unterminated reference')
    const ref = input.slice(i + 1, end)
    i = end + 1
    if (ref.startsWith('#x') && /^#x[0-9A-Fa-f]+$/.test(ref)) return String.fromCodePoint(Number.parseInt(ref.slice(2), 16))
    if (ref.startsWith('#') && /^#[0-9]+$/.test(ref)) return String.fromCodePoint(Number.parseInt(ref.slice(1), 10))
    const entity = ENTITIES[ref]
    if (entity === undefined) fail(`unknown entity &${ref};`)
    return entity!
  }
  const misc = () => {
    for (;;) {
      space()
      if (startsWith('<!--')) {
        const end = input.indexOf('-->', i + 4)
        if (end < 0) fail('unterminated comment')
        if (input.slice(i + 4, end).includes('--')) fail('"--" inside a comment')
        i = end + 3
      } else if (startsWith('<?') && !startsWith('<?xml ')) {
        const end = input.indexOf('?>', i)
        if (end < 0) fail('unterminated processing instruction')
        i = end + 2
      } else return
    }
  }
  const element = (): XmlElement => {
    if (input[i] !== '<') fail('expected an element')
    i++
    const el: XmlElement = { name: name(), attributes: new Map(), children: [], text: '' }
    for (;;) {
      const before = i
      space()
      if (startsWith('/>')) {
        i += 2
        return el
      }
      if (input[i] === '>') {
        i++
        break
      }
      if (i === before) fail('expected whitespace before an attribute')
      const attr = name()
      space()
      if (input[i] !== '=') fail('expected =')
      i++
      space()
      const quote = input[i]
      if (quote !== '"' && quote !== "'") fail('expected a quoted value')
      i++
      let value = ''
      while (input[i] !== quote) {
        if (i >= input.length) fail('unterminated attribute value')
        const c = input[i]!
        if (c === '<') fail('"<" in an attribute value')
        if (c === '&') value += reference()
        else {
          // XML attribute-value normalisation: literal whitespace characters become spaces.
          value += c === '\t' || c === '\n' || c === '\r' ? ' ' : c
          i++
        }
      }
      i++
      if (el.attributes.has(attr)) fail(`attribute ${attr} repeated`)
      el.attributes.set(attr, value)
    }
    for (;;) {
      if (i >= input.length) fail(`unclosed element ${el.name}`)
      if (startsWith('</')) {
        i += 2
        if (name() !== el.name) fail(`mismatched end tag for ${el.name}`)
        space()
        if (input[i] !== '>') fail('expected >')
        i++
        return el
      }
      if (startsWith('<!--')) misc()
      else if (input[i] === '<') el.children.push(element())
      else if (input[i] === '&') el.text += reference()
      else if (input[i] === '>' && input.slice(i - 2, i) === ']]') fail('"]]>" in text')
      else el.text += input[i++]
    }
  }

  if (startsWith('<?xml ')) {
    const end = input.indexOf('?>', i)
    if (end < 0) fail('unterminated XML declaration')
    if (!/^<\?xml version="1\.[0-9]"/.test(input)) fail('XML declaration without version')
    i = end + 2
  }
  misc()
  const root = element()
  misc()
  if (i !== input.length) fail('content after the root element')
  return root
}

/** A device with two lines and one button of each kind both vendors support. */
export function sampleConfig(vendor: 'yealink' | 'polycom', mac: string): import('./config').ProvisioningConfig {
  return {
    deviceId: `dev_${mac}`,
    vendor,
    model: vendor === 'yealink' ? 'T54W' : 'VVX450',
    mac,
    lines: [
      {
        sipUsername: `u${mac}a`,
        sipPassword: 'p&ss<word>"1',
        registrarHost: 'sip.example.test',
        registrarPort: 5060,
        displayName: 'Ada & Grace <Front desk>',
        extension: '101',
      },
      {
        sipUsername: `u${mac}b`,
        authUsername: `auth${mac}b`,
        sipPassword: "it's-secret",
        registrarHost: 'sip2.example.test',
        registrarPort: 5061,
        transport: 'tls',
        displayName: 'Sales',
        extension: '200',
        label: 'Sales line',
      },
    ],
    buttons: [
      { key: 1, type: 'line', value: '', line: 1 },
      { key: 2, type: 'line', value: '', line: 2 },
      { key: 3, type: 'blf', value: '102', label: 'Bob' },
      { key: 4, type: 'speed_dial', value: '+15005550006', label: 'Support' },
      { key: 5, type: 'park', value: '701', label: 'Park 1' },
      { key: 7, type: 'voicemail', value: '*97', label: 'Voicemail', line: 2 },
    ],
    account: { timeZone: 'America/New_York', language: 'en-US', provisioningBaseUrl: 'https://prov.example.test/p/acct_1', ntpServer: 'pool.ntp.org' },
  }
}
