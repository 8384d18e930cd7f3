/** Settings are read once and checked: a bad value is a ConfigError naming the setting and the value. */
import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from './config'

const bad = (env: Record<string, string>, message: RegExp) => expect(() => loadConfig(env)).toThrow(message)

describe('media settings (SIP_HOST, SIP_PORT, RTP_PORT_MIN, RTP_PORT_MAX)', () => {
  test('defaults', () => {
    expect(loadConfig({})).toMatchObject({ sipHost: '127.0.0.1', sipPort: 5060, rtpPortMin: 20000, rtpPortMax: 29999 })
  })

  test('an IPv4 or IPv6 address for SIP_HOST; anything else is refused', () => {
    expect(loadConfig({ SIP_HOST: '10.0.0.7' }).sipHost).toBe('10.0.0.7')
    expect(loadConfig({ SIP_HOST: '::1' }).sipHost).toBe('::1')
    bad({ SIP_HOST: 'pbx.example.com' }, /SIP_HOST must be an IPv4 or IPv6 address, got "pbx.example.com"/)
    bad({ SIP_HOST: '300.1.1.1' }, /SIP_HOST must be an IPv4 or IPv6 address/)
  })

  test('SIP_TRUNK_SOURCES: a comma-separated list of IP addresses, none by default', () => {
    expect(loadConfig({}).sipTrunkSources).toEqual([])
    expect(loadConfig({ SIP_TRUNK_SOURCES: '203.0.113.5, 2001:db8::1' }).sipTrunkSources).toEqual(['203.0.113.5', '2001:db8::1'])
    bad(
      { SIP_TRUNK_SOURCES: '203.0.113.5,carrier.example' },
      /SIP_TRUNK_SOURCES must be a comma-separated list of IPv4 or IPv6 addresses, got "carrier.example"/,
    )
  })

  test('SIP_TRUNK_OUTBOUND: an IP address with an optional port and transport, credentials together, registration with them; none by default', () => {
    expect(loadConfig({}).sipTrunkOutbound).toBeUndefined()
    expect(loadConfig({ SIP_TRUNK_OUTBOUND: '203.0.113.5' }).sipTrunkOutbound).toEqual({ address: '203.0.113.5', port: 5060, transport: 'udp' })
    expect(
      loadConfig({ SIP_TRUNK_OUTBOUND: '[2001:db8::1]:5080;transport=tcp', SIP_TRUNK_USERNAME: 'acme', SIP_TRUNK_PASSWORD: 's3cret' }).sipTrunkOutbound,
    ).toEqual({ address: '2001:db8::1', port: 5080, transport: 'tcp', credentials: { username: 'acme', password: 's3cret' } })
    bad({ SIP_TRUNK_OUTBOUND: 'carrier.example:5060' }, /SIP_TRUNK_OUTBOUND must be an IP address/)
    bad({ SIP_TRUNK_OUTBOUND: '203.0.113.5:70000' }, /SIP_TRUNK_OUTBOUND must be an IP address/)
    bad({ SIP_TRUNK_OUTBOUND: '203.0.113.5;transport=tls' }, /SIP_TRUNK_OUTBOUND must be an IP address/)
    bad({ SIP_TRUNK_OUTBOUND: '203.0.113.5', SIP_TRUNK_USERNAME: 'acme' }, /go together/)
    bad({ SIP_TRUNK_PASSWORD: 'secret-pass' }, /need SIP_TRUNK_OUTBOUND/)
    // SIP_TRUNK_REGISTER: with the trunk's credentials only.
    expect(
      loadConfig({ SIP_TRUNK_OUTBOUND: '203.0.113.5', SIP_TRUNK_USERNAME: 'acme', SIP_TRUNK_PASSWORD: 's3cret', SIP_TRUNK_REGISTER: '1' }).sipTrunkOutbound,
    ).toEqual({ address: '203.0.113.5', port: 5060, transport: 'udp', credentials: { username: 'acme', password: 's3cret' }, register: true })
    bad({ SIP_TRUNK_OUTBOUND: '203.0.113.5', SIP_TRUNK_REGISTER: '1' }, /SIP_TRUNK_REGISTER needs SIP_TRUNK_USERNAME/)
    bad({ SIP_TRUNK_REGISTER: '1' }, /need SIP_TRUNK_OUTBOUND/)
    bad({ SIP_TRUNK_OUTBOUND: '203.0.113.5', SIP_TRUNK_USERNAME: 'acme', SIP_TRUNK_PASSWORD: 's3cret', SIP_TRUNK_REGISTER: 'yes' }, /must be 1 or 0/)
    // The password is never in a message.
    expect(() => loadConfig({ SIP_TRUNK_OUTBOUND: 'x', SIP_TRUNK_USERNAME: 'acme', SIP_TRUNK_PASSWORD: 'secret-pass' })).toThrow(/^(?!.*secret-pass)/)
  })

  test('STUN and TURN servers: stun:/turn: URIs, TURN with its shared secret, a bounded credential lifetime', () => {
    expect(loadConfig({}).ice).toEqual({ stunUrls: [], turnUrls: [], turnSecret: undefined, credentialTtlS: 86_400 })
    expect(
      loadConfig({
        STUN_URLS: 'stun:stun.example.com, stuns:[2001:db8::1]:5349',
        TURN_URLS: 'turn:turn.example.com?transport=tcp',
        TURN_SECRET: 'a'.repeat(16),
        TURN_CREDENTIAL_TTL_S: '600',
      }).ice,
    ).toEqual({
      stunUrls: ['stun:stun.example.com', 'stuns:[2001:db8::1]:5349'],
      turnUrls: ['turn:turn.example.com?transport=tcp'],
      turnSecret: 'a'.repeat(16),
      credentialTtlS: 600,
    })
    bad({ STUN_URLS: 'turn:turn.example.com' }, /STUN_URLS must be a comma-separated list of stun: or stuns: URIs/)
    bad({ STUN_URLS: 'stun:stun.example.com?transport=udp' }, /STUN_URLS must be/)
    bad({ TURN_URLS: 'https://turn.example.com', TURN_SECRET: 'a'.repeat(16) }, /TURN_URLS must be/)
    bad({ TURN_URLS: 'turn:user:pw@turn.example.com', TURN_SECRET: 'a'.repeat(16) }, /TURN_URLS must be/)
    bad({ TURN_URLS: 'turn:turn.example.com' }, /TURN_URLS needs TURN_SECRET/)
    bad({ TURN_SECRET: 'a'.repeat(16) }, /TURN_SECRET is set but TURN_URLS is not/)
    bad({ TURN_URLS: 'turn:turn.example.com', TURN_SECRET: 'short' }, /TURN_SECRET must be at least 16/)
    bad({ TURN_CREDENTIAL_TTL_S: '10' }, /TURN_CREDENTIAL_TTL_S must be an integer from 60 to 604800/)
    // The secret is never in a message.
    expect(() => loadConfig({ TURN_URLS: 'turn:x', TURN_SECRET: 'short-secret' })).toThrow(/^(?!.*short-secret)/)
  })

  test('DATABASE_POOL_SIZE: a few connections by default, 1 to 200', () => {
    expect(loadConfig({}).databasePoolSize).toBe(8)
    expect(loadConfig({ DATABASE_POOL_SIZE: '1' }).databasePoolSize).toBe(1)
    bad({ DATABASE_POOL_SIZE: '0' }, /DATABASE_POOL_SIZE must be an integer from 1 to 200/)
    bad({ DATABASE_POOL_SIZE: 'many' }, /DATABASE_POOL_SIZE must be an integer/)
  })

  test('the RTP range starts even and holds at least one pair', () => {
    expect(loadConfig({ RTP_PORT_MIN: '40000', RTP_PORT_MAX: '40001' })).toMatchObject({ rtpPortMin: 40000, rtpPortMax: 40001 })
    bad({ RTP_PORT_MIN: '40001' }, /RTP_PORT_MIN must be even/)
    bad({ RTP_PORT_MIN: '40000', RTP_PORT_MAX: '40000' }, /RTP_PORT_MAX \(40000\) must leave room for at least one port pair/)
    bad({ RTP_PORT_MIN: '80' }, /RTP_PORT_MIN must be an integer from 1024 to 65534, got "80"/)
    bad({ RTP_PORT_MAX: 'lots' }, /RTP_PORT_MAX must be an integer/)
    bad({ SIP_PORT: '70000' }, /SIP_PORT must be an integer from 0 to 65535/)
  })
})

describe('LOG_LEVEL', () => {
  test("one of pino's levels", () => {
    expect(loadConfig({ LOG_LEVEL: 'debug' }).logLevel).toBe('debug')
    expect(loadConfig({}).logLevel).toBe('info')
    bad({ LOG_LEVEL: 'verbose' }, /LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "verbose"/)
  })

  test('the errors are ConfigErrors (main.ts prints them as "configuration error: ...")', () => {
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow(ConfigError)
  })
})

describe('VOICE_MASTER_KEY, VOICE_MASTER_KEY_PREVIOUS', () => {
  const hex = 'ab'.repeat(32)
  const base64 = Buffer.alloc(32, 7).toString('base64')

  test('32 bytes as hex or base64; unset by default (the key file in DATA_DIR then)', () => {
    expect(loadConfig({}).masterKey).toBeUndefined()
    const c = loadConfig({ VOICE_MASTER_KEY: hex, VOICE_MASTER_KEY_PREVIOUS: base64 })
    expect(c.masterKey?.id).toMatch(/^[0-9a-f]{8}$/)
    expect(c.masterKeyPrevious?.id).not.toBe(c.masterKey?.id)
  })

  test('anything else is a ConfigError that does not echo the value', () => {
    const value = `${hex.slice(0, 60)}zzzz`
    expect(() => loadConfig({ VOICE_MASTER_KEY: value })).toThrow(ConfigError)
    bad({ VOICE_MASTER_KEY: value }, /VOICE_MASTER_KEY must be 32 bytes written as 64 hex digits or in base64/)
    expect(() => loadConfig({ VOICE_MASTER_KEY: value })).not.toThrow(value.slice(0, 16))
    bad({ VOICE_MASTER_KEY: hex, VOICE_MASTER_KEY_PREVIOUS: 'short' }, /VOICE_MASTER_KEY_PREVIOUS must be 32 bytes/)
  })

  test('the previous key only beside a new one, and not the same key', () => {
    bad({ VOICE_MASTER_KEY_PREVIOUS: hex }, /VOICE_MASTER_KEY_PREVIOUS is read only beside VOICE_MASTER_KEY/)
    bad({ VOICE_MASTER_KEY: hex, VOICE_MASTER_KEY_PREVIOUS: Buffer.from(hex, 'hex').toString('base64') }, /the same key/)
  })

  test('the parsed config shows key ids, never key bytes', () => {
    const text = JSON.stringify(loadConfig({ VOICE_MASTER_KEY: base64 }))
    expect(text).not.toContain(base64)
    expect(text).toContain('[master key ')
  })
})
