import { createHmac, randomBytes } from 'node:crypto'

/** `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, over the exact bytes sent. */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const v1 = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')
  return `t=${unixSeconds},v1=${v1}`
}

export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64url')}`

/** The headers of one webhook delivery of `body`: what delivery sends, and what `cli listen` forwards. */
export function deliveryHeaders(secret: string, accountId: string, body: string, unixSeconds: number): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Service-Webhook/1.0',
    'x-service-signature': signatureHeader(secret, body, unixSeconds),
    'x-service-account-id': accountId,
  }
}
