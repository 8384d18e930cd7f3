import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { Grammar } from 'sip.js/lib/grammar/grammar.js'
import { fastParse } from './fast-headers'
import { parseSipMessage } from './message'
import { captureNames, loadCapture } from './test-fixtures'

type Rule = 'SIP_URI' | 'From' | 'To' | 'Contact' | 'Record_Route'

interface Cloneable {
  clone(): unknown
}

/** `toString()`, or the error it throws (sip.js's escapeUser decodes the user again and may throw). */
function shown(x: unknown): string {
  try {
    return String(x)
  } catch (e) {
    return `throws ${(e as Error).message}`
  }
}

/** The fields the server reads of a NameAddrHeader or URI. */
function fields(x: any) {
  const uri = x?.uri ?? x
  return {
    scheme: uri?.scheme,
    user: uri?.user,
    host: uri?.host,
    port: uri?.port,
    uriParams: uri?.parameters,
    uriHeaders: uri?.headers,
    displayName: x?.uri ? x.displayName : undefined,
    params: x?.uri ? x.parameters : undefined,
    tag: x?.uri ? x.getParam('tag') : undefined,
  }
}

/** The grammar's clone, the form message.ts hands out. */
function cloneOf(parsed: unknown): unknown {
  if (Array.isArray(parsed)) return parsed.map((e) => ({ ...e, parsed: (e.parsed as Cloneable).clone() }))
  return (parsed as Cloneable).clone()
}

/**
 * Checks the fast path against the grammar for one value: it never throws, and when
 * it answers, it answers what the grammar does (same classes, fields, serialization),
 * and with asCopy what the grammar's clone does. Returns whether it answered.
 */
function agrees(value: string, rule: Rule): boolean {
  let fast: unknown
  let copy: unknown
  expect(() => {
    fast = fastParse(value, rule)
    copy = fastParse(value, rule, true)
  }).not.toThrow()
  if (fast === undefined) {
    expect(copy).toBeUndefined()
    return false
  }
  const grammar = Grammar.parse(value, rule) as any
  if (grammar === -1) throw new Error(`fast path accepted what the grammar rejects: ${rule} ${JSON.stringify(value)}`)
  expect(fast).toStrictEqual(grammar)
  const one = (x: unknown) => (Array.isArray(x) ? x[0].parsed : x)
  expect(shown(one(fast))).toBe(shown(one(grammar)))
  expect(fields(one(fast))).toStrictEqual(fields(one(grammar)))
  const clone = cloneOf(grammar)
  expect(copy).toStrictEqual(clone)
  expect(shown(one(copy))).toBe(shown(one(clone)))
  return true
}

const accepts = (value: string, rule: Rule) => Grammar.parse(value, rule) !== -1

describe('fastParse on what phones send', () => {
  const handled: Array<[string, Rule]> = [
    ['<sip:1003@pbx.example.com>', 'To'],
    ['"Front Desk" <sip:1001@pbx.example.com:5060>', 'From'],
    ['"Front Desk" <sip:1001@pbx.example.com>;tag=3391587296', 'From'],
    ['sipp <sip:sipp@127.0.0.1:5061>;tag=12345SIPpTag001', 'From'],
    ['Bob  Smith\t<sips:bob@Example.COM>', 'To'],
    ['sip:alice@example.com;tag=abc;x-foo', 'From'],
    ['sip:alice@example.com', 'To'],
    ['SIP:Alice@EXAMPLE.com:05060', 'To'],
    ['<sip:pbx.example.com>', 'To'],
    ['"" <sip:a@b.c>', 'To'],
    [' <sip:a@b.c>', 'To'],
    ['"J\u00f6rg \u2603 <x>; y, z" <sip:j@b.c>', 'From'],
    ['<sip:a@[2001:db8::1]:5060;transport=TCP;lr>', 'To'],
    ['<sip:a@[::ffff:192.0.2.1]>', 'To'],
    ['<sip:%2B1%20555@b.c>', 'To'],
    ['<sip:user:secret@b.c>', 'To'],
    ['<sip:+15555550123;npdi@b.c;user=phone>', 'To'],
    ['<sip:a@b.c?subject=hi&Call-ID=x&subject=again>', 'To'],
    ['<sip:softphone-9c4e2a@172.16.5.9:38591>;expires=3600', 'Contact'],
    ['<sip:1002@10.20.30.41:5060;transport=tcp>;methods="INVITE,ACK,BYE";+sip.instance="<urn:uuid:00044f12-3456>";reg-id=1', 'Contact'],
    ['<sip:a@b.c;ob>;q=0.50;expires=0060 ; +sip.ice', 'Contact'],
    ['<sip:a@b.c>;q=1;expires=never', 'Contact'],
    ['sip:sipp@127.0.0.1:5061', 'Contact'],
    ['sip:sipp@127.0.0.1:5061;expires=60', 'Contact'],
    ['"Proxy" <sip:p1.example.com;lr>', 'Record_Route'],
    ['<sip:10.0.0.1;lr=on;ftag=abc>;x=y', 'Record_Route'],
    ['sip:pbx.example.com', 'SIP_URI'],
    ['sip:+15555550123@pbx.example.com;user=phone', 'SIP_URI'],
    ['sips:1002@pbx.example.com:5061;transport=tls', 'SIP_URI'],
  ]
  for (const [value, rule] of handled) {
    test(`${rule} ${value}`, () => {
      expect(agrees(value, rule)).toBe(true)
    })
  }

  // Left to the grammar (undefined), whatever the grammar then makes of them.
  const fallbacks: Array<[string, string]> = [
    ['sip:[fe80::1%25]', 'SIP_URI'],
    ['tel:+15555550123', 'SIP_URI'],
    ['<tel:+15555550123>', 'To'],
    ['*', 'Contact'],
    ['*foo <sip:a@b.c>', 'Contact'],
    ['"A \\"B\\"" <sip:a@b.c>', 'From'],
    ['<sip:a@b.c;maddr=10.0.0.1>', 'To'],
    ['<sip:a@b.c;ttl=5>', 'To'],
    ['<sip:a@b.c;method=INVITE>', 'To'],
    ['<sip:a@b.c:>', 'To'],
    ['<sip:a@b.c.>', 'To'],
    ['<sip:a@b.c;user=ipx>', 'To'],
    ['<sip:a@b.c;lrx>', 'To'],
    ['<sip:a@b.c;transport=udpx>', 'To'],
    ['<sip:a@b.c>;received=[::1]', 'Contact'],
    ['<sip:a@b.c>;tag=1;tag=2', 'From'],
    ['<sip:a@b.c>;x=1;X=2', 'Contact'],
    ['<sip:a@b.c>;constructor=1', 'Contact'],
    ['<sip:a@b.c?__proto__=1>', 'To'],
    ['  "Bob" <sip:a@b.c>', 'To'],
    ['<sip:a@b.c>;foo=bar ', 'To'],
    ['sip:a@b.c ', 'To'],
    ['<sip:%FF@b.c>', 'To'],
    ['sip:a@b.c', 'Record_Route'],
    ['<sip:a@256.1.1.1>', 'To'],
    ['<sip:a@1.2.3>', 'To'],
    ['<sip:a@b.c:123456>', 'To'],
    ['<sip:a@b.c>', 'Via'],
  ]
  for (const [value, rule] of fallbacks) {
    test(`falls back: ${rule} ${value}`, () => {
      expect(fastParse(value, rule)).toBeUndefined()
    })
  }

  test('the captured phones: Request-URI, From, To and Contact all take the fast path', () => {
    let checked = 0
    for (const name of captureNames()) {
      const parsed = parseSipMessage(Buffer.from(loadCapture(name)), 'udp')
      if (parsed.kind !== 'request') throw new Error(`${name}: ${parsed.kind}`)
      const message = parsed.message
      const ruri = message.data.split(' ')[1]!
      expect(agrees(ruri, 'SIP_URI')).toBe(true)
      expect(agrees(parsed.basis.from, 'From')).toBe(true)
      expect(agrees(parsed.basis.to, 'To')).toBe(true)
      for (const contact of message.getHeaders('contact')) expect(agrees(contact, 'Contact')).toBe(true)
      for (const rr of message.getHeaders('record-route')) expect(agrees(rr, 'Record_Route')).toBe(true)
      // What message.ts hands out is the grammar's clone.
      expect(message.ruri).toStrictEqual((Grammar.parse(ruri, 'SIP_URI') as Cloneable).clone() as any)
      expect(String(message.from)).toBe(String(Grammar.parse(parsed.basis.from, 'From')))
      checked++
    }
    expect(checked).toBeGreaterThan(5)
  })
})

// ---- Generators of the shapes the fast path claims.

const chars = (set: string) => fc.constantFrom(...set)
const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
const string = (set: string, minLength = 1, maxLength = 10) => fc.string({ unit: chars(set), minLength, maxLength })

const escaped = fc.constantFrom('%41', '%20', '%2B', '%40', '%3A', '%C3%A9', '%e2%98%83', '%25')
const user = fc
  .array(fc.oneof({ weight: 8, arbitrary: chars(`${ALNUM}-_.!~*'()&=+$,;?/`) }, { weight: 1, arbitrary: escaped }), { minLength: 1, maxLength: 12 })
  .map((a) => a.join(''))
const password = fc.array(fc.oneof(chars(`${ALNUM}-_.!~*'()&=+$,`), escaped), { maxLength: 6 }).map((a) => a.join(''))
const userinfo = fc.option(
  fc.tuple(user, fc.option(password, { nil: undefined })).map(([u, p]) => (p === undefined ? `${u}@` : `${u}:${p}@`)),
  {
    nil: '',
  },
)

const label = string(`${ALNUM}_-`, 1, 8)
const topLabel = fc.tuple(chars('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'), string(`${ALNUM}-`, 0, 6)).map(([a, b]) => a + b)
const hostname = fc.oneof(
  fc.tuple(fc.array(label, { maxLength: 3 }), topLabel).map(([ls, t]) => [...ls, t].join('.')),
  fc.domain(),
)
const host = fc.oneof(
  { weight: 4, arbitrary: hostname },
  { weight: 3, arbitrary: fc.ipV4() },
  { weight: 3, arbitrary: fc.ipV6().map((a) => `[${a}]`) },
  { weight: 1, arbitrary: fc.ipV4Extended() },
)
const port = fc.option(
  fc.oneof(
    fc.integer({ min: 0, max: 99999 }).map(String),
    fc.integer({ min: 0, max: 9999 }).map((p) => `0${p}`),
  ),
  { nil: undefined },
)

const paramchars = `${ALNUM}-_.!~*'()[]/:&+$`
const SPECIAL = /^(method|ttl|maddr|lr.*|constructor|__proto__|transport|user)$/i
const uriParam = fc.oneof(
  fc.tuple(fc.constantFrom('transport', 'Transport'), fc.constantFrom('udp', 'tcp', 'TLS', 'sctp', 'ws', 'wss', 'x-y')).map(([n, v]) => `${n}=${v}`),
  fc.tuple(fc.constantFrom('user', 'USER'), fc.constantFrom('phone', 'ip', 'IP', 'dialstring')).map(([n, v]) => `${n}=${v}`),
  fc.constantFrom('lr', 'LR', 'lr=on', 'ob'),
  fc
    .tuple(
      fc.array(fc.oneof({ weight: 6, arbitrary: chars(paramchars) }, { weight: 1, arbitrary: escaped }), { minLength: 1, maxLength: 8 }).map((a) => a.join('')),
      fc.option(
        fc.array(fc.oneof(chars(paramchars), escaped), { minLength: 1, maxLength: 8 }).map((a) => a.join('')),
        { nil: undefined },
      ),
    )
    .filter(([n]) => !SPECIAL.test(n))
    .map(([n, v]) => (v === undefined ? n : `${n}=${v}`)),
)
const hchars = `${ALNUM}-_.!~*'()[]/?:+$`
const uriHeaders = fc.option(
  fc
    .array(
      fc.tuple(string(hchars, 1, 6), string(hchars, 0, 6)).filter(([n]) => !SPECIAL.test(n)),
      { minLength: 1, maxLength: 3 },
    )
    .map((hs) => `?${hs.map(([n, v]) => `${n}=${v}`).join('&')}`),
  { nil: '' },
)
const scheme = fc.constantFrom('sip', 'sips', 'SIP', 'Sips')

const fullUri = fc
  .tuple(scheme, userinfo, host, port, fc.array(uriParam, { maxLength: 4 }), uriHeaders)
  .map(([s, ui, h, p, ps, hs]) => `${s}:${ui}${h}${p === undefined ? '' : `:${p}`}${ps.map((x) => `;${x}`).join('')}${hs}`)
const bareUri = fc.tuple(scheme, userinfo, host, port).map(([s, ui, h, p]) => `${s}:${ui}${h}${p === undefined ? '' : `:${p}`}`)

const tokenchars = `${ALNUM}-.!%*_+\`'~`
const token = string(tokenchars, 1, 8)
const qdtext = fc.oneof(
  { weight: 6, arbitrary: chars(`${ALNUM} \t!#$%&'()*+,-./:;<=>?@[]^_\`{|}~`) },
  { weight: 1, arbitrary: fc.constantFrom('\u00e9', '\u2603', '\ud83d\ude00', '\u00a0') },
)
const quotedString = fc.array(qdtext, { maxLength: 12 }).map((a) => `"${a.join('')}"`)
const ws = fc.constantFrom('', '', ' ', '\t', '  ')
const displayName = fc.oneof(
  fc.constant(''),
  quotedString.map((q) => `${q}`),
  fc.tuple(fc.array(token, { minLength: 1, maxLength: 3 }), fc.constantFrom(' ', '  ', '\t')).map(([ts, sep]) => ts.join(sep)),
)

/** Header params with distinct names; `kind` adds the rule's special ones. */
const headerParams = (kind: 'from' | 'contact' | 'rr') =>
  fc
    .uniqueArray(
      fc.oneof(
        fc.tuple(
          token.filter((n) => !SPECIAL.test(n)),
          fc.option(fc.oneof(token, quotedString), { nil: undefined }),
        ),
        ...(kind === 'from' ? [fc.tuple(fc.constantFrom('tag', 'TAG'), token)] : []),
        ...(kind === 'contact'
          ? [
              fc.tuple(fc.constantFrom('q', 'Q'), fc.constantFrom('0', '0.', '0.5', '0.50', '0.123', '1', '1.0')),
              fc.tuple(fc.constantFrom('expires', 'Expires'), fc.oneof(fc.nat().map(String), fc.constantFrom('0060', '99999999999999999999'))),
            ]
          : []),
      ),
      { selector: ([n]) => n.toLowerCase(), maxLength: 4 },
    )
    .chain((ps) =>
      fc
        .array(fc.tuple(ws, ws, ws, ws), { minLength: ps.length, maxLength: ps.length })
        .map((spaces) =>
          ps.map(([n, v], i) => `${spaces[i]![0]};${spaces[i]![1]}${n}${v === undefined ? '' : `${spaces[i]![2]}=${spaces[i]![3]}${v}`}`).join(''),
        ),
    )

const header = (kind: 'from' | 'contact' | 'rr') =>
  fc.oneof(
    fc
      .tuple(displayName, ws, fullUri, fc.constantFrom('', ' '), headerParams(kind))
      .filter(([d]) => !(kind === 'contact' && d.startsWith('*')))
      .map(([d, w, u, after, ps]) => `${d}${d === '' ? '' : w}<${u}>${after}${ps}`),
    ...(kind === 'rr' ? [] : [fc.tuple(bareUri, headerParams(kind)).map(([u, ps]) => `${u}${ps}`)]),
  )

const RUNS = Number(process.env.FAST_HEADERS_RUNS ?? 300)

describe('fastParse property tests: the generated shapes', () => {
  const rules: Array<[Rule, fc.Arbitrary<string>]> = [
    ['SIP_URI', fullUri],
    ['From', header('from')],
    ['To', header('from')],
    ['Contact', header('contact')],
    ['Record_Route', header('rr')],
  ]
  for (const [rule, arbitrary] of rules) {
    test(`${rule}: answered exactly as the grammar, and answered whenever the grammar accepts`, () => {
      let answered = 0
      fc.assert(
        fc.property(arbitrary, (value) => {
          const fast = agrees(value, rule)
          if (!fast && accepts(value, rule)) throw new Error(`fell back on a supported shape: ${JSON.stringify(value)}`)
          if (fast) answered++
        }),
        { numRuns: RUNS },
      )
      // Most generated values are valid (ipV4Extended, %25 users, … are not).
      expect(answered).toBeGreaterThan(RUNS / 2)
    })
  }
})

describe('fastParse property tests: anything else', () => {
  const anyRule = fc.constantFrom<Rule>('SIP_URI', 'From', 'To', 'Contact', 'Record_Route')
  test('arbitrary strings: never throws, falls back or agrees with the grammar', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.string({ unit: chars(`${tokenchars}<>"\\;:@[]?&=,. \t`) }), fc.string({ unit: 'binary' })),
        anyRule,
        (value, rule) => {
          agrees(value, rule)
        },
      ),
      { numRuns: RUNS },
    )
  })

  test('mutated valid headers (a character inserted, deleted or replaced): falls back or agrees', () => {
    const mutation = fc.tuple(
      fc.nat(),
      fc.constantFrom('insert', 'delete', 'replace'),
      fc.oneof(chars(`${tokenchars}<>"\\;:@[]?&=,.%* \t\r\n`), fc.string({ maxLength: 1 })),
    )
    fc.assert(
      fc.property(
        fc.oneof(
          header('from').map((v) => [v, 'From'] as const),
          header('contact').map((v) => [v, 'Contact'] as const),
          header('rr').map((v) => [v, 'Record_Route'] as const),
          fullUri.map((v) => [v, 'SIP_URI'] as const),
        ),
        fc.array(mutation, { minLength: 1, maxLength: 3 }),
        ([value, rule], mutations) => {
          let v: string = value
          for (const [at, op, ch] of mutations) {
            const i = v.length === 0 ? 0 : at % (v.length + (op === 'insert' ? 1 : 0))
            if (op === 'insert') v = v.slice(0, i) + ch + v.slice(i)
            else if (op === 'delete') v = v.slice(0, i) + v.slice(i + 1)
            else v = v.slice(0, i) + ch + v.slice(i + 1)
          }
          agrees(v, rule)
        },
      ),
      { numRuns: RUNS * 3 },
    )
  })
})
