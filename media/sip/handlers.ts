/**
 * The answers of a SIP endpoint that implements nothing yet, and the composition
 * by method that lets the registrar (and later the B2BUA) take their methods over.
 */
import type { SipRequest, SipRequestContext, SipRequestHandler, SipResponseSpec, SipSource } from './handler'

/** Methods of RFC 3261 and its common extensions: refused with 405 (and Allow) rather than 501 (§8.2.1, §21.5.2). */
const KNOWN_METHODS = new Set([
  'INVITE',
  'ACK',
  'BYE',
  'CANCEL',
  'OPTIONS',
  'REGISTER',
  'PRACK',
  'SUBSCRIBE',
  'NOTIFY',
  'PUBLISH',
  'INFO',
  'REFER',
  'MESSAGE',
  'UPDATE',
])

const withAllow = (status: number, allow: readonly string[], extra: ReadonlyArray<readonly [string, string]> = []): SipResponseSpec => ({
  status,
  headers: [['Allow', allow.join(', ')], ...extra],
})

/** A fallback answering for `allow`: OPTIONS 200, BYE and CANCEL 481 (no dialog or transaction here), known methods 405, unknown ones 501. */
export function fallbackHandler(allow: readonly string[]): SipRequestHandler {
  return (request: SipRequest) => {
    switch (request.method) {
      case 'OPTIONS':
        return withAllow(200, allow, [['Accept', 'application/sdp']])
      case 'BYE':
      case 'CANCEL':
        return { status: 481 }
      default:
        return KNOWN_METHODS.has(request.method) ? withAllow(405, allow) : { status: 501 }
    }
  }
}

/** Answers OPTIONS (a phone's or load balancer's liveness probe) and refuses the rest. */
export const defaultSipHandler: SipRequestHandler = fallbackHandler(['OPTIONS'])

/**
 * Sends each method to its handler and the rest to `fallback`. When the fallback
 * answers with an Allow header (OPTIONS, 405), the composed methods are added to
 * it, so a capability probe tells the truth about what the server now does.
 */
export function composeHandlers(byMethod: Readonly<Record<string, SipRequestHandler>>, fallback: SipRequestHandler = defaultSipHandler): SipRequestHandler {
  const own = Object.keys(byMethod).map((m) => m.toUpperCase())
  const handlers = new Map(Object.entries(byMethod).map(([m, h]) => [m.toUpperCase(), h]))
  return async (request: SipRequest, source: SipSource, context?: SipRequestContext) => {
    const handler = handlers.get(request.method)
    if (handler) return handler(request, source, context)
    const spec = await fallback(request, source, context)
    if (!spec.headers?.some(([n]) => n.toLowerCase() === 'allow')) return spec
    return {
      ...spec,
      headers: spec.headers.map(([n, v]): readonly [string, string] => {
        if (n.toLowerCase() !== 'allow') return [n, v]
        const methods = new Set([...v.split(',').map((m) => m.trim()), ...own].filter((m) => m !== ''))
        return [n, [...methods].join(', ')]
      }),
    }
  }
}
