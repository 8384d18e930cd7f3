/**
 * The STUN and TURN servers a softphone gets (GET /v1/webrtc/ice-servers), from the
 * operator's configuration (src/config.ts IceConfig). TURN credentials are the
 * time-limited ones of the TURN REST convention that coturn and most TURN servers
 * check without a database: username `<expiry in Unix seconds>:<user>`, credential
 * base64(HMAC-SHA1(shared secret, username)). The server refuses them after the
 * expiry, so a leaked credential is worth little; the softphone fetches new ones
 * before `expires_at`.
 */
import { createHmac } from 'node:crypto'
import type { IceConfig } from '../../config'

export interface IceServer {
  urls: string[]
  username?: string
  credential?: string
}

export interface IceServersResponse {
  ice_servers: IceServer[]
  expires_at: string
}

export function iceServersFor(config: IceConfig, userId: string, now: Date): IceServersResponse {
  const expires = Math.floor(now.getTime() / 1000) + config.credentialTtlS
  const servers: IceServer[] = []
  if (config.stunUrls.length > 0) servers.push({ urls: [...config.stunUrls] })
  if (config.turnUrls.length > 0 && config.turnSecret) {
    const username = `${expires}:${userId}`
    servers.push({ urls: [...config.turnUrls], username, credential: createHmac('sha1', config.turnSecret).update(username).digest('base64') })
  }
  return { ice_servers: servers, expires_at: new Date(expires * 1000).toISOString() }
}
