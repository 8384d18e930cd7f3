/**
 * A hand-written fast path for the header values phones actually send, in front of
 * sip.js's generated grammar (Grammar.parse, which decodes its whole bytecode again
 * on every call: some 300 µs a header, whatever the input).
 *
 * `fastParse(value, rule)` answers exactly what `Grammar.parse(value, rule)` would
 * (the same sip.js NameAddrHeader / URI objects, built by the same constructors with
 * the same arguments), or undefined when it is not certain of that: the caller then
 * asks the grammar. It covers the rules SIP_URI, From, To, Contact and Record_Route
 * for sip: and sips: URIs:
 *
 *   "Display Name" <sip:user:password@host:port;uri-params?headers>;header-params
 *   Display Name <sips:host>;header-params        (token display name)
 *   sip:user@host;header-params                   (addr-spec: From, To, Contact)
 *
 * with hostnames, IPv4 and bracketed IPv6 hosts, %HH escapes in the user part, and
 * token or quoted header-parameter values. It mirrors the grammar's quirks rather
 * than RFC 3261: the PEG's ordered choices commit, so `;user=ipx`, `;lrx`,
 * `;transport=udpx` make the whole grammar fail (here: undefined, and the grammar
 * answers its -1); a Contact's q becomes parseFloat of at most 3 decimals and its
 * expires parseInt of the digits; From/To put tag last; a hostname may not end in a
 * dot; the grammar's own IPv6 alternatives are replayed as written.
 *
 * Everything else falls back (answers undefined): any other scheme (tel:, urn:),
 * the wildcard Contact, backslash escapes in quoted strings, leading whitespace
 * (but before a bare <), a line fold (CR/LF), non-ASCII outside quoted strings,
 * an empty port (the grammar answers port NaN), the uri-params method=, ttl= and
 * maddr= (the grammar files ttl among the header params and lets maddr overwrite
 * the host), a header-param value that is an IPv6 reference, a header parameter
 * named twice, a name that is an Object.prototype member (constructor,
 * __proto__), and every input the grammar rejects. The property tests in
 * fast-headers.test.ts hold it to the grammar.
 *
 * With `asCopy`, the result is what `clone()` of the grammar's result gives (the
 * form message.ts hands out from its cache): the only difference is that a URI
 * without a user part gets user "" instead of undefined.
 */
import { NameAddrHeader } from 'sip.js/lib/grammar/name-addr-header.js'
import { URI } from 'sip.js/lib/grammar/uri.js'

/** The start rules the fast path knows; for any other it answers undefined. */
export type FastRule = 'SIP_URI' | 'From' | 'To' | 'Contact' | 'Record_Route'

// Character classes of the grammar (ASCII only; a code unit >= 128 belongs to none).
const ALNUM = 1
const MARK = 2 // - _ . ! ~ * ' ( )
const USER_X = 4 // user_unreserved: & = + $ , ; ? /
const PASS_X = 8 // password: & = + $ ,
const PARAM_X = 16 // param_unreserved: [ ] / : & + $
const HNV_X = 32 // hnv_unreserved: [ ] / ? : + $
const TOKEN = 64 // alphanum - . ! % * _ + ` ' ~
const HEX = 128
const HOST = 256 // hostname characters: alphanum - _ .
const DIGIT = 512

const UNRESERVED = ALNUM | MARK
const USER = UNRESERVED | USER_X
const PASSWORD = UNRESERVED | PASS_X
const PARAMCHAR = UNRESERVED | PARAM_X
const HNVCHAR = UNRESERVED | HNV_X

const CLASS = new Uint16Array(128)
const mark = (chars: string, bit: number) => {
  for (const ch of chars) CLASS[ch.charCodeAt(0)] = CLASS[ch.charCodeAt(0)]! | bit
}
const DIGITS = '0123456789'
const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
mark(DIGITS + LETTERS, ALNUM | TOKEN | HOST)
mark(DIGITS, DIGIT | HEX)
mark('abcdefABCDEF', HEX)
mark("-_.!~*'()", MARK)
mark('&=+$,;?/', USER_X)
mark('&=+$,', PASS_X)
mark('[]/:&+$', PARAM_X)
mark('[]/?:+$', HNV_X)
mark("-.!%*_+`'~", TOKEN)
mark('-_.', HOST)

const is = (c: number, bits: number) => c < 128 && (CLASS[c]! & bits) !== 0

/** End of the run of characters of `bits` from i; with `escapes`, "%" HEX HEX counts as one. */
function scan(s: string, i: number, bits: number, escapes: boolean): number {
  const n = s.length
  while (i < n) {
    const c = s.charCodeAt(i)
    if (is(c, bits)) i++
    else if (escapes && c === 37 && is(s.charCodeAt(i + 1), HEX) && is(s.charCodeAt(i + 2), HEX)) i += 3
    else break
  }
  return i
}

/** SWS: optional spaces and tabs (a line fold never reaches here: any CR or LF falls back). */
function sws(s: string, i: number): number {
  for (let c = s.charCodeAt(i); c === 32 || c === 9; c = s.charCodeAt(++i));
  return i
}

/** Whether s at i starts with `lower`, compared case-insensitively (`lower` is lower-case ASCII). */
function startsCi(s: string, i: number, lower: string): boolean {
  if (i + lower.length > s.length) return false
  for (let k = 0; k < lower.length; k++) {
    const c = s.charCodeAt(i + k)
    const l = lower.charCodeAt(k)
    if (c !== l && !(l >= 97 && l <= 122 && c === l - 32)) return false
  }
  return true
}

/** A quoted string without backslashes from the '"' at i: the index after its closing quote, or -1. */
function quoted(s: string, i: number): number {
  const n = s.length
  for (let k = i + 1; k < n; k++) {
    const c = s.charCodeAt(k)
    if (c === 34) return k + 1
    // qdtext: LWS (here spaces and tabs), %x21, %x23-5B, %x5D-7E, UTF8-NONASCII.
    if (!(c === 32 || c === 9 || c === 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e) || c >= 0x80)) return -1
  }
  return -1
}

const isDigit = (c: number) => c >= 48 && c <= 57

// ---- IPv6, replaying the grammar's ordered alternatives (PEG: the first that matches wins, no backtracking into it).

function h16(s: string, i: number): number {
  let e = i
  while (e < i + 4 && is(s.charCodeAt(e), HEX)) e++
  return e > i ? e : -1
}

function decOctet(s: string, i: number): number {
  const a = s.charCodeAt(i)
  const b = s.charCodeAt(i + 1)
  const c = s.charCodeAt(i + 2)
  if (a === 50 && b === 53 && c >= 48 && c <= 53) return i + 3 // "25" [0-5]
  if (a === 50 && b >= 48 && b <= 52 && isDigit(c)) return i + 3 // "2" [0-4] DIGIT
  if (a === 49 && isDigit(b) && isDigit(c)) return i + 3 // "1" DIGIT DIGIT
  if (a >= 49 && a <= 57 && isDigit(b)) return i + 2 // [1-9] DIGIT
  if (isDigit(a)) return i + 1
  return -1
}

function ipv4(s: string, i: number): number {
  let p = decOctet(s, i)
  for (let k = 0; k < 3 && p >= 0; k++) p = s.charCodeAt(p) === 46 ? decOctet(s, p + 1) : -1
  return p
}

function ls32(s: string, i: number): number {
  const e = h16(s, i)
  if (e >= 0 && s.charCodeAt(e) === 58) {
    const f = h16(s, e + 1)
    if (f >= 0) return f
  }
  return ipv4(s, i)
}

// h: h16, ':' literal, D: "::", L: ls32, o: (":" h16)?
const IPV6_ALTERNATIVES = [
  'h:h:h:h:h:h:L',
  'Dh:h:h:h:h:L',
  'Dh:h:h:h:L',
  'Dh:h:h:L',
  'Dh:h:L',
  'Dh:L',
  'DL',
  'Dh',
  'hDh:h:h:h:L',
  'hoDh:h:h:L',
  'hooDh:h:L',
  'hoooDh:L',
  'hooooDL',
  'hoooooDh',
  'hooooooD',
]

function ipv6Alternative(s: string, i: number, alternative: string): number {
  let p = i
  for (let k = 0; k < alternative.length && p >= 0; k++) {
    switch (alternative.charCodeAt(k)) {
      case 104: // h
        p = h16(s, p)
        break
      case 58: // :
        p = s.charCodeAt(p) === 58 ? p + 1 : -1
        break
      case 68: // D
        p = s.charCodeAt(p) === 58 && s.charCodeAt(p + 1) === 58 ? p + 2 : -1
        break
      case 76: // L
        p = ls32(s, p)
        break
      default: {
        // o
        if (s.charCodeAt(p) === 58) {
          const e = h16(s, p + 1)
          if (e >= 0) p = e
        }
      }
    }
  }
  return p
}

function ipv6(s: string, i: number): number {
  for (const alternative of IPV6_ALTERNATIVES) {
    const e = ipv6Alternative(s, i, alternative)
    if (e >= 0) return e
  }
  return -1
}

/** hostname = *(domainlabel ".") toplabel, matched whole (the grammar's greedy loop leaves no other way to succeed). */
const HOSTNAME = /^(?:[A-Za-z0-9_-]+\.)*[A-Za-z][A-Za-z0-9-]*$/
/** IPv4address with the grammar's dec-octet (no leading zeros, 0-255), matched whole. */
const IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]\d|\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]\d|\d)){3}$/

/** Names that would reach Object.prototype members when the grammar files them in a plain object. */
const unsafeName = (name: string) => name in Object.prototype

/** Where the last successful sub-parse ended. */
let end = 0

/**
 * SIP-URI (`full`) or SIP-URI-noparams (an addr-spec) from s at i; sets `end`.
 * Undefined when the grammar might see it otherwise.
 */
function sipUri(s: string, i: number, full: boolean, asCopy: boolean): URI | undefined {
  // uri-scheme: "sips"i / "sip"i, then ":"
  if (!startsCi(s, i, 'sip')) return undefined
  let p: number
  if (s.charCodeAt(i + 3) === 58) p = i + 4
  else if ((s.charCodeAt(i + 3) | 0x20) === 115 && s.charCodeAt(i + 4) === 58) p = i + 5
  else return undefined
  const scheme = s.slice(i, p - 1)

  // userinfo = user (":" password)? "@", decoded as a whole (password included) by the grammar.
  let user: string | undefined
  const userEnd = scan(s, p, USER, true)
  if (userEnd > p) {
    const k = s.charCodeAt(userEnd) === 58 ? scan(s, userEnd + 1, PASSWORD, true) : userEnd
    if (s.charCodeAt(k) === 64) {
      const raw = s.slice(p, k)
      if (raw.includes('%')) {
        try {
          user = decodeURIComponent(raw)
        } catch {
          return undefined
        }
      } else user = raw
      p = k + 1
    }
  }

  // host = hostname / IPv4address / IPv6reference
  const hostStart = p
  if (s.charCodeAt(p) === 91) {
    const e = ipv6(s, p + 1)
    if (e < 0 || s.charCodeAt(e) !== 93) return undefined
    p = e + 1
  } else {
    const e = scan(s, p, HOST, false)
    if (e === p) return undefined
    const text = s.slice(p, e)
    if (!HOSTNAME.test(text) && !IPV4.test(text)) return undefined
    p = e
  }
  const host = s.slice(hostStart, p)

  // ( ":" port ), port = 0 to 5 digits (none would give NaN: left to the grammar)
  let port: number | undefined
  if (s.charCodeAt(p) === 58) {
    let e = p + 1
    while (e < p + 6 && isDigit(s.charCodeAt(e))) e++
    if (e === p + 1 || isDigit(s.charCodeAt(e))) return undefined
    port = Number.parseInt(s.slice(p + 1, e), 10)
    p = e
  }

  if (asCopy && user === undefined) user = ''
  if (!full) {
    end = p
    // (sip.js types user as string; the grammar passes undefined when there is none.)
    return new URI(scheme, user as string, host, port)
  }

  // uri-parameters = *( ";" uri-parameter ), in the grammar's order of alternatives
  let params: Record<string, string | undefined> | undefined
  while (s.charCodeAt(p) === 59) {
    const q = p + 1
    if (startsCi(s, q, 'transport=')) {
      const v = q + 10
      let e: number
      if (startsCi(s, v, 'udp') || startsCi(s, v, 'tcp')) e = v + 3
      else if (startsCi(s, v, 'sctp')) e = v + 4
      else if (startsCi(s, v, 'tls')) e = v + 3
      else e = scan(s, v, TOKEN, false)
      if (e === v) return undefined
      ;(params ??= {}).transport = s.slice(v, e).toLowerCase()
      p = e
    } else if (startsCi(s, q, 'user=')) {
      const v = q + 5
      let e: number
      if (startsCi(s, v, 'phone')) e = v + 5
      else if (startsCi(s, v, 'ip')) e = v + 2
      else e = scan(s, v, TOKEN, false)
      if (e === v) return undefined
      ;(params ??= {}).user = s.slice(v, e).toLowerCase()
      p = e
    } else if (startsCi(s, q, 'method=') || startsCi(s, q, 'ttl=') || startsCi(s, q, 'maddr=')) {
      return undefined
    } else if (startsCi(s, q, 'lr')) {
      // lr_param = "lr"i ("=" token)?: matches the start of any parameter named lr…
      let e = q + 2
      if (s.charCodeAt(e) === 61) {
        const t = scan(s, e + 1, TOKEN, false)
        if (t > e + 1) e = t
      }
      ;(params ??= {}).lr = undefined
      p = e
    } else {
      const e = scan(s, q, PARAMCHAR, true)
      if (e === q) return undefined
      const name = s.slice(q, e).toLowerCase()
      if (unsafeName(name)) return undefined
      let value: string | undefined
      p = e
      if (s.charCodeAt(e) === 61) {
        const v = scan(s, e + 1, PARAMCHAR, true)
        if (v === e + 1) return undefined
        value = s.slice(e + 1, v)
        p = v
      }
      ;(params ??= {})[name] = value
    }
  }

  // headers = "?" header *( "&" header ), header = hname "=" hvalue
  let headers: Record<string, string[]> | undefined
  if (s.charCodeAt(p) === 63) {
    headers = {}
    do {
      const ns = p + 1
      const ne = scan(s, ns, HNVCHAR, true)
      if (ne === ns || s.charCodeAt(ne) !== 61) return undefined
      const ve = scan(s, ne + 1, HNVCHAR, true)
      const name = s.slice(ns, ne).toLowerCase()
      if (unsafeName(name)) return undefined
      const value = s.slice(ne + 1, ve)
      const list = headers[name]
      if (list) list.push(value)
      else headers[name] = [value]
      p = ve
    } while (s.charCodeAt(p) === 38)
  }

  end = p
  return new URI(scheme, user as string, host, port, params as Record<string, string>, headers)
}

type Kind = 'from' | 'contact' | 'rr'

/**
 * A whole From/To, Contact or Record-Route entry: (addr-spec / name-addr) *(SEMI param).
 * Undefined when not certain.
 */
function nameAddr(s: string, kind: Kind, asCopy: boolean): NameAddrHeader | undefined {
  const n = s.length
  let uri: URI | undefined
  let displayName: string | undefined
  let p: number
  const c0 = s.charCodeAt(0)

  if (kind !== 'rr' && startsCi(s, 0, 'sip') && (s.charCodeAt(3) === 58 || ((s.charCodeAt(3) | 0x20) === 115 && s.charCodeAt(4) === 58))) {
    // addr-spec, tried first by the grammar: its ;params are the header's.
    uri = sipUri(s, 0, false, asCopy)
    if (!uri) return undefined
    p = end
  } else {
    // Contact = STAR / …: a leading * commits the grammar to the wildcard.
    if (kind === 'contact' && c0 === 42) return undefined
    p = 0
    if (c0 === 34) {
      const e = quoted(s, 0)
      if (e < 0) return undefined
      displayName = s.slice(1, e - 1)
      p = e
    } else if (is(c0, TOKEN)) {
      // token *(LWS token), trimmed
      let e = scan(s, 0, TOKEN, false)
      for (;;) {
        const w = sws(s, e)
        if (w === e || !is(s.charCodeAt(w), TOKEN)) break
        e = scan(s, w, TOKEN, false)
      }
      displayName = s.slice(0, e)
      p = e
    }
    p = sws(s, p)
    if (s.charCodeAt(p) !== 60) return undefined
    uri = sipUri(s, p + 1, true, asCopy)
    if (!uri || s.charCodeAt(end) !== 62) return undefined
    p = sws(s, end + 1)
  }

  // *( SEMI param ): SEMI = SWS ";" SWS, EQUAL = SWS "=" SWS
  let params: Record<string, string | number | undefined> | undefined
  let tag: string | undefined
  while (p < n) {
    let q = sws(s, p)
    if (s.charCodeAt(q) !== 59) return undefined
    q = sws(s, q + 1)
    const ne = scan(s, q, TOKEN, false)
    if (ne === q) return undefined
    const name = s.slice(q, ne).toLowerCase()
    if (unsafeName(name) || (params !== undefined && Object.hasOwn(params, name)) || (name === 'tag' && tag !== undefined)) return undefined
    const eq = sws(s, ne)
    const hasValue = s.charCodeAt(eq) === 61
    const v = hasValue ? sws(s, eq + 1) : ne
    if (hasValue) {
      const c = s.charCodeAt(v)
      if (kind === 'contact' && name === 'q' && c === 48) {
        // qvalue = "0" ( "." 0*3DIGIT ), as parseFloat
        let e = v + 1
        if (s.charCodeAt(e) === 46) {
          e++
          for (let k = 0; k < 3 && isDigit(s.charCodeAt(e)); k++) e++
        }
        ;(params ??= {}).q = Number.parseFloat(s.slice(v, e))
        p = e
        continue
      }
      if (kind === 'contact' && name === 'expires' && isDigit(c)) {
        let e = v + 1
        while (isDigit(s.charCodeAt(e))) e++
        ;(params ??= {}).expires = Number.parseInt(s.slice(v, e), 10)
        p = e
        continue
      }
      if (kind === 'from' && name === 'tag' && is(c, TOKEN)) {
        const e = scan(s, v, TOKEN, false)
        tag = s.slice(v, e)
        p = e
        continue
      }
    }
    // generic-param = token ( EQUAL gen-value )?, gen-value = token / host / quoted-string
    let value: string | undefined
    p = ne
    if (hasValue) {
      const c = s.charCodeAt(v)
      if (is(c, TOKEN)) p = scan(s, v, TOKEN, false)
      else if (c === 34) p = quoted(s, v)
      else return undefined // an IPv6 reference (the grammar's host) or nothing valid
      if (p < 0) return undefined
      value = s.slice(v, p)
    }
    ;(params ??= {})[name] = value
  }

  const header = new NameAddrHeader(uri, displayName as string, params as Record<string, string>)
  if (tag) header.setParam('tag', tag)
  return header
}

/**
 * What `Grammar.parse(value, rule)` answers, built without the grammar, or undefined
 * when the value is not one of the shapes handled here with certainty (then ask the
 * grammar). With `asCopy`, what `clone()` of that answer gives. Never throws.
 */
export function fastParse(value: string, rule: string, asCopy = false): unknown {
  try {
    switch (rule) {
      case 'SIP_URI': {
        const uri = sipUri(value, 0, true, asCopy)
        return uri && end === value.length ? uri : undefined
      }
      case 'From':
      case 'To':
        return nameAddr(value, 'from', asCopy)
      case 'Contact':
      case 'Record_Route': {
        const parsed = nameAddr(value, rule === 'Contact' ? 'contact' : 'rr', asCopy)
        // The grammar's multi_header entry: position is where the entry's parse ended (the whole value).
        return parsed && [{ position: value.length, offset: 0, parsed }]
      }
      default:
        return undefined
    }
  } catch {
    return undefined
  }
}
