/**
 * REFER (RFC 3515) as the B2BUA takes it: the Refer-To header of a phone's blind
 * transfer, and the NOTIFYs (message/sipfrag) that report the transfer's progress
 * back in the referring dialog. Refer-To is read by hand: sip.js's grammar throws on
 * much of what phones get wrong, and all we need is the target's user part (an
 * extension or a number) and the dialog it asks to replace (RFC 3891: an attended
 * transfer; RFC 5589 §7).
 */

export interface ReferTarget {
  /** The user part of the Refer-To URI, percent-decoded: the extension or number dialled. */
  user: string
  host: string
  /** The URI carries a Replaces header (an attended transfer). */
  replaces: boolean
  /** The dialog the Replaces header names, when it is readable (RFC 3891 §6.1: call-id, to-tag, from-tag). */
  replacesDialog?: ReplacesDialog
}

export interface ReplacesDialog {
  callId: string
  toTag: string
  fromTag: string
}

/** A Replaces header value (`call-id;to-tag=a;from-tag=b`, its parameters in any order); undefined without all three. */
export function parseReplaces(value: string): ReplacesDialog | undefined {
  const [callId = '', ...params] = value.split(';').map((p) => p.trim())
  if (!callId || callId.length > 255) return undefined
  const param = (name: string) =>
    params
      .map((p) => splitOnce(p, '='))
      .find(([k]) => k.toLowerCase() === name)?.[1]
      ?.trim()
  const toTag = param('to-tag')
  const fromTag = param('from-tag')
  if (!toTag || !fromTag) return undefined
  return { callId, toTag, fromTag }
}

const MAX_REFER_TO = 1024
const USER = /^[0-9A-Za-z+*#._-]{1,64}$/

/** The target of a Refer-To value (`<sip:1002@example.com>`, `sip:+15551234567@host;user=phone`, with a display name or not); undefined when it names none. */
export function parseReferTo(value: string | undefined): ReferTarget | undefined {
  if (!value || value.length > MAX_REFER_TO) return undefined
  let uri = value.trim()
  const open = uri.indexOf('<')
  if (open >= 0) {
    const close = uri.indexOf('>', open)
    if (close < 0) return undefined
    uri = uri.slice(open + 1, close)
  } else {
    // Without angle brackets a URI has no headers and its parameters belong to the header (RFC 3261 §20).
    uri = uri.split(';')[0]!
  }
  const scheme = /^sips?:/i.exec(uri)
  if (!scheme) return undefined
  const rest = uri.slice(scheme[0].length)
  const [main = '', headers = ''] = splitOnce(rest, '?')
  const at = main.lastIndexOf('@')
  if (at <= 0) return undefined
  let user: string
  try {
    user = decodeURIComponent(main.slice(0, at).split(';')[0]!.split(':')[0]!)
  } catch {
    return undefined
  }
  const host = main.slice(at + 1).split(';')[0]!
  if (!USER.test(user) || !/^[0-9A-Za-z.:[\]-]{1,255}$/.test(host)) return undefined
  const replacesHeader = headers.split('&').find((h) => h.split('=')[0]!.toLowerCase() === 'replaces')
  if (!replacesHeader) return { user, host, replaces: false }
  let replacesDialog: ReplacesDialog | undefined
  try {
    replacesDialog = parseReplaces(decodeURIComponent(splitOnce(replacesHeader, '=')[1]))
  } catch {
    // An unreadable escape: the dialog is unknown.
  }
  return { user, host, replaces: true, ...(replacesDialog ? { replacesDialog } : {}) }
}

const splitOnce = (s: string, sep: string): [string, string] => {
  const i = s.indexOf(sep)
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)]
}

export const SIPFRAG_CONTENT_TYPE = 'message/sipfrag;version=2.0'

/** How long the implicit subscription a REFER creates lasts while the transfer runs (RFC 3515 §2.4.4 leaves it to us). */
const REFER_SUBSCRIPTION_S = 60

/**
 * The headers and body of a NOTIFY reporting a transfer's progress with a status
 * line (`SIP/2.0 100 Trying`, `SIP/2.0 200 OK`); a final status (>= 200) ends
 * the subscription.
 */
export function referNotify(status: number, reason: string): { headers: [string, string][]; body: string; contentType: string } {
  const final = status >= 200
  return {
    headers: [
      ['Event', 'refer'],
      ['Subscription-State', final ? 'terminated;reason=noresource' : `active;expires=${REFER_SUBSCRIPTION_S}`],
    ],
    body: `SIP/2.0 ${status} ${reason.replace(/[\r\n]/g, ' ')}\r\n`,
    contentType: SIPFRAG_CONTENT_TYPE,
  }
}

/** The status of a sipfrag body's status line (what a NOTIFY reports); undefined when it has none. */
export function sipfragStatus(body: string | undefined): number | undefined {
  const m = /^SIP\/2\.0 ([1-6]\d\d)(?: |\r?$)/m.exec(body ?? '')
  return m ? Number(m[1]) : undefined
}
