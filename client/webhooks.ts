/**
 * Verifies a webhook delivery: `X-Service-Signature: t=<unix seconds>,v1=<hex>`,
 * where v1 is the HMAC-SHA256 of `<t>.<raw body>` keyed with the endpoint's
 * secret (the scheme of src/events/signing.ts). Verify the body exactly as it was
 * received: re-serialised JSON does not match.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { WebhookEvent } from './index'

export class WebhookSignatureError extends Error {}

export interface VerifyOptions {
  /** Oldest acceptable signature time, in seconds before now (replays); default 300, 0 to skip the check. */
  toleranceSeconds?: number
  /** Unix seconds to compare with (tests); default the current time. */
  now?: number
}

/** The event of a delivery whose signature is valid; throws WebhookSignatureError otherwise. */
export function verifyWebhook(rawBody: string | Uint8Array, signatureHeader: string | null | undefined, secret: string, o: VerifyOptions = {}): WebhookEvent {
  if (!signatureHeader) throw new WebhookSignatureError('no X-Service-Signature header')
  let timestamp: number | undefined
  const candidates: string[] = []
  for (const part of signatureHeader.split(',')) {
    const at = part.indexOf('=')
    const key = part.slice(0, at).trim()
    const value = part.slice(at + 1).trim()
    if (key === 't') timestamp = Number(value)
    else if (key === 'v1') candidates.push(value)
  }
  if (timestamp === undefined || !Number.isInteger(timestamp)) throw new WebhookSignatureError('the signature header has no timestamp')
  if (candidates.length === 0) throw new WebhookSignatureError('the signature header has no v1 signature')
  const tolerance = o.toleranceSeconds ?? 300
  const now = o.now ?? Math.floor(Date.now() / 1000)
  if (tolerance > 0 && Math.abs(now - timestamp) > tolerance) throw new WebhookSignatureError('the signature is too old (or from the future)')
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody)
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest()
  const valid = candidates.some((hex) => {
    const given = /^[0-9a-f]{64}$/i.test(hex) ? Buffer.from(hex, 'hex') : undefined
    return given !== undefined && timingSafeEqual(given, expected)
  })
  if (!valid) throw new WebhookSignatureError('the signature does not match the body and secret')
  return JSON.parse(body.toString('utf8')) as WebhookEvent
}
