import { createHmac, randomBytes } from 'node:crypto'

/** `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, over the exact bytes sent. */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const v1 = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')
  return `t=${unixSeconds},v1=${v1}`
}

export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64url')}`
