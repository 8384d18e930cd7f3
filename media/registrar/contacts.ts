/**
 * What a REGISTER asks for (RFC 3261 §10.2, §10.3 steps 6 and 7), read from a parsed
 * request: the contacts with the expiry each asks for, or `*` to remove them all.
 * Pure: no clock, no state; the registrar applies the interval limits.
 */
import type { SipRequest } from '../sip/handler'

export interface ContactRequest {
  /** The Contact URI as the phone gave it (params other than the URI's own dropped). */
  uri: string
  /** Seconds asked for: the contact's `expires` param, else the Expires header, else undefined (the registrar's default). */
  expires: number | undefined
}

export type RegisterAsk =
  /** No Contact: a query for the current bindings. */
  | { kind: 'query' }
  | { kind: 'bind'; contacts: ContactRequest[] }
  /** `Contact: *` with `Expires: 0`. */
  | { kind: 'remove_all' }
  | { kind: 'invalid'; reason: string }

/** Delta-seconds: digits only; larger values are capped later, so a huge one is simply "long". */
function deltaSeconds(value: string | undefined): number | undefined | 'invalid' {
  if (value === undefined) return undefined
  const v = value.trim()
  if (!/^\d{1,10}$/.test(v)) return 'invalid'
  return Number(v)
}

export function readRegister(request: SipRequest): RegisterAsk {
  const header = deltaSeconds(request.getHeader('expires'))
  if (header === 'invalid') return { kind: 'invalid', reason: 'Expires is not a number of seconds' }
  const raw = request.getHeaders('contact')
  if (raw.length === 0) return { kind: 'query' }
  if (raw.some((v) => v.trim() === '*')) {
    // RFC 3261 §10.3 step 6: `*` only alone and only with Expires: 0.
    if (raw.length !== 1 || header !== 0) return { kind: 'invalid', reason: 'Contact: * needs Expires: 0 and no other contact' }
    return { kind: 'remove_all' }
  }
  const contacts: ContactRequest[] = []
  for (let i = 0; i < raw.length; i++) {
    const parsed = request.parseHeader('contact', i) as { uri?: { toString(): string }; getParam?(name: string): string | undefined } | undefined
    if (!parsed?.uri) return { kind: 'invalid', reason: 'a Contact cannot be read' }
    const param = deltaSeconds(parsed.getParam?.('expires') ?? undefined)
    if (param === 'invalid') return { kind: 'invalid', reason: 'a Contact expires parameter is not a number of seconds' }
    contacts.push({ uri: parsed.uri.toString(), expires: param ?? header })
  }
  return { kind: 'bind', contacts }
}

/** The Request-URI exactly as sent: a digest `uri` must name it, and the parser's URI object re-serialises it. */
export function requestTarget(request: SipRequest): string {
  const firstLine = request.data.slice(0, request.data.indexOf('\r\n') >>> 0)
  return firstLine.split(' ')[1] ?? ''
}
