import { describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { iceServersFor } from './ice-servers'

const now = new Date('2026-11-29T12:00:00.000Z')

describe('iceServersFor', () => {
  test('nothing configured: no server, and still an expiry', () => {
    expect(iceServersFor({ stunUrls: [], turnUrls: [], turnSecret: undefined, credentialTtlS: 600 }, 'usr_1', now)).toEqual({
      ice_servers: [],
      expires_at: '2026-11-29T12:10:00.000Z',
    })
  })

  test('STUN only: no credential', () => {
    expect(iceServersFor({ stunUrls: ['stun:a'], turnUrls: [], turnSecret: undefined, credentialTtlS: 600 }, 'usr_1', now).ice_servers).toEqual([
      { urls: ['stun:a'] },
    ])
  })

  test('TURN: the TURN REST credential of the user, expiring with the response', () => {
    const r = iceServersFor({ stunUrls: [], turnUrls: ['turn:b'], turnSecret: 's'.repeat(16), credentialTtlS: 3600 }, 'usr_1', now)
    const expiry = now.getTime() / 1000 + 3600
    expect(r.ice_servers).toEqual([
      { urls: ['turn:b'], username: `${expiry}:usr_1`, credential: createHmac('sha1', 's'.repeat(16)).update(`${expiry}:usr_1`).digest('base64') },
    ])
    expect(r.expires_at).toBe(new Date(expiry * 1000).toISOString())
  })
})
