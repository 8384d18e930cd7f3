/**
 * Typed configuration, parsed once from the environment at boot.
 * Nothing else in the code base reads process.env: everything takes a Config.
 */
import ipaddr from 'ipaddr.js'
import { type MasterKey, parseMasterKey } from './auth/key-encryption'

export type Role = 'gateway' | 'worker' | 'delivery' | 'media'
export const ALL_ROLES: Role[] = ['gateway', 'worker', 'delivery', 'media']

export interface Config {
  port: number
  /** Interface to listen on. */
  host: string
  baseUrl: string
  /** True when BASE_URL was not given: it follows the port actually bound. */
  baseUrlFollowsPort: boolean
  dataDir: string
  /** The embedded database on DATA_DIR (without DATABASE_URL): a PostgreSQL server of its own, or PGlite. */
  embeddedDatabase: 'postgres' | 'pglite'
  databaseUrl: string | undefined
  /** DATABASE_POOL_SIZE: connections of this process to PostgreSQL (the embedded server or DATABASE_URL's). */
  databasePoolSize: number
  natsUrl: string | undefined
  testKey: string | undefined
  liveKey: string | undefined
  liveEnabled: boolean
  adminToken: string | undefined
  clockSpeed: number
  webhookRetryIntervalS: number
  webhookTimeoutS: number
  webhookAllowPrivateTargets: boolean
  /** SIP UDP/TCP port of the media role. */
  sipPort: number
  /** Address the media role binds and advertises in SIP and SDP. */
  sipHost: string
  /** Source addresses of carrier SIP trunks: their INVITEs to the accounts' numbers are inbound calls (no digest; carriers authenticate by address). */
  sipTrunkSources: string[]
  /** The carrier trunk live calls to the PSTN go out on (SIP_TRUNK_OUTBOUND); unset: live calls out answer 503. */
  sipTrunkOutbound: SipTrunkOutbound | undefined
  /** UDP port range of media legs (RTP on the even port, RTCP on the next). */
  rtpPortMin: number
  rtpPortMax: number
  /** smtp(s):// URL for operator mail; unset: mail is recorded in the operator mailbox. */
  smtpUrl: string | undefined
  /** From address of operator mail. */
  mailFrom: string
  /** Sustained requests per second allowed per credential; 0 turns rate limiting off. */
  rateLimitPerSecond: number
  /** Requests a credential may make in a burst above the sustained rate. */
  rateLimitBurst: number
  /** Seconds between `: heartbeat` comments on an open event stream (real time, not sped up). */
  eventStreamHeartbeatS: number
  /** Seconds between event-stream polls of the outbox when no bus wake-up came (real time). */
  eventStreamPollS: number
  logLevel: string
  /** Milliseconds a worker's shard lease lasts without renewal (how soon another worker takes over a dead one's shards). */
  shardLeaseMs: number
  roles: Role[]
  /** VOICE_MASTER_KEY: seals secrets at rest; unset: the key file in DATA_DIR (src/auth/master-key.ts). */
  masterKey: MasterKey | undefined
  /** VOICE_MASTER_KEY_PREVIOUS: during a rotation, values sealed under it are read and moved to masterKey at start. */
  masterKeyPrevious: MasterKey | undefined
  /** The STUN and TURN servers softphones are given (GET /v1/webrtc/ice-servers). */
  ice: IceConfig
}

/**
 * STUN_URLS and TURN_URLS (comma-separated stun:, stuns:, turn:, turns: URIs, RFC 7064
 * and 7065); TURN_SECRET, the TURN server's shared secret for time-limited credentials
 * (coturn's static-auth-secret), needed with TURN_URLS; TURN_CREDENTIAL_TTL_S, how long
 * a credential lasts.
 */
export interface IceConfig {
  stunUrls: string[]
  turnUrls: string[]
  turnSecret: string | undefined
  credentialTtlS: number
}

/**
 * Few connections, each carrying a pipeline of queries, cost both sides less than many
 * carrying one query each: the driver hands a query to an idle connection first, so
 * with many connections every query is its own socket write and wakes a server
 * process of its own. On 2 cores, 4 or 8 connections against 20 cut the database's CPU
 * per phone configuration fetch by a third to a half and per SIP call by a sixth;
 * webhook delivery kept its rate with 8 (not quite with 4) and its p99 fell from
 * 154-256 ms to 93 ms (README, "Latest figures").
 */
export const DEFAULT_DATABASE_POOL_SIZE = 8

export class ConfigError extends Error {}

/**
 * A listening socket that could not be opened, as the setting to change: a port
 * taken by another program, one below 1024 without the privilege, or a host address
 * this machine does not have. Anything else: undefined (the error stands as it is).
 */
export function portUnavailable(settings: { port: string; host: string }, host: string, port: number, err: unknown): ConfigError | undefined {
  switch ((err as { code?: unknown } | null)?.code) {
    case 'EADDRINUSE':
      return new ConfigError(`${settings.port} ${port} on ${host} is in use by another program: stop it, or choose another ${settings.port}`)
    case 'EACCES':
      return new ConfigError(`${settings.port} ${port} on ${host} needs a privilege this process lacks (ports below 1024): choose a port from 1024 up`)
    case 'EADDRNOTAVAIL':
      return new ConfigError(`${settings.host} ${host} is not an address of this machine`)
    default:
      return undefined
  }
}

/** Where live calls to the PSTN are sent, and the digest credentials the carrier may challenge for. */
export interface SipTrunkOutbound {
  address: string
  port: number
  transport: 'udp' | 'tcp'
  credentials?: { username: string; password: string }
  /** SIP_TRUNK_REGISTER: the media role registers with the trunk (its credentials), which then delivers inbound calls to it. */
  register?: boolean
}

type Env = Record<string, string | undefined>

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)
  }
  return n
}

function positive(env: Env, name: string, fallback: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`${name} must be a positive number, got "${raw}"`)
  return n
}

function flag(env: Env, name: string): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false
  if (raw === '1' || raw === 'true') return true
  throw new ConfigError(`${name} must be 1 or 0, got "${raw}"`)
}

function secretKey(env: Env, name: string, prefix: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (!raw.startsWith(prefix) || raw.length < prefix.length + 16 || raw.length > 255) {
    throw new ConfigError(`${name} must start with ${prefix} followed by at least 16 characters`)
  }
  return raw
}

/** The value is never echoed: a message that quoted a near-miss would leak most of a key. */
function masterKey(env: Env, name: string): MasterKey | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  const key = parseMasterKey(raw)
  if (!key) throw new ConfigError(`${name} must be 32 bytes written as 64 hex digits or in base64 (e.g. openssl rand -base64 32)`)
  return key
}

function masterKeys(env: Env): { masterKey: MasterKey | undefined; masterKeyPrevious: MasterKey | undefined } {
  const current = masterKey(env, 'VOICE_MASTER_KEY')
  const previous = masterKey(env, 'VOICE_MASTER_KEY_PREVIOUS')
  if (previous && !current) throw new ConfigError('VOICE_MASTER_KEY_PREVIOUS is read only beside VOICE_MASTER_KEY (the key it rotates to)')
  if (previous && current && previous.id === current.id) throw new ConfigError('VOICE_MASTER_KEY_PREVIOUS is the same key as VOICE_MASTER_KEY')
  return { masterKey: current, masterKeyPrevious: previous }
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name} is not a URL: "${redact(raw)}"`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got ${parsed.protocol}`)
  }
  return raw
}

/** An IP address (v4 or v6) to bind and advertise: a host name would have to be resolved, and SDP carries an address. */
/** A comma-separated list of IP addresses (empty: none). */
function ipAddresses(env: Env, name: string): string[] {
  const raw = env[name]
  if (raw === undefined || raw.trim() === '') return []
  const list = raw.split(',').map((a) => a.trim())
  const bad = list.find((a) => !ipaddr.isValid(a))
  if (bad !== undefined) throw new ConfigError(`${name} must be a comma-separated list of IPv4 or IPv6 addresses, got "${bad}"`)
  return list
}

function ipAddress(env: Env, name: string, fallback: string): string {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!ipaddr.isValid(raw)) throw new ConfigError(`${name} must be an IPv4 or IPv6 address, got "${raw}"`)
  return raw
}

/**
 * SIP_TRUNK_OUTBOUND: `IP[:port][;transport=tcp]` (IPv6 in brackets), port 5060 by
 * default; SIP_TRUNK_USERNAME and SIP_TRUNK_PASSWORD together, or neither;
 * SIP_TRUNK_REGISTER=1 needs them. An address, not a name: the SIP stack resolves
 * nothing. The password is never echoed.
 */
function sipTrunkOutbound(env: Env): SipTrunkOutbound | undefined {
  const raw = env.SIP_TRUNK_OUTBOUND?.trim()
  const username = env.SIP_TRUNK_USERNAME ?? ''
  const password = env.SIP_TRUNK_PASSWORD ?? ''
  const register = flag(env, 'SIP_TRUNK_REGISTER')
  if (!raw) {
    if (username || password || register) throw new ConfigError('SIP_TRUNK_USERNAME, SIP_TRUNK_PASSWORD and SIP_TRUNK_REGISTER need SIP_TRUNK_OUTBOUND')
    return undefined
  }
  const shape =
    'SIP_TRUNK_OUTBOUND must be an IP address with an optional port and ;transport=udp|tcp (e.g. 203.0.113.5:5060 or [2001:db8::1]:5060;transport=tcp)'
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+))(?::(\d{1,5}))?(?:;transport=(udp|tcp))?$/i.exec(raw)
  const address = m?.[1] ?? m?.[2]
  const port = Number(m?.[3] ?? 5060)
  if (!m || !address || !ipaddr.isValid(address) || port < 1 || port > 65535) throw new ConfigError(`${shape}, got "${raw}"`)
  if (Boolean(username) !== Boolean(password)) throw new ConfigError('SIP_TRUNK_USERNAME and SIP_TRUNK_PASSWORD go together')
  if (register && !username) throw new ConfigError('SIP_TRUNK_REGISTER needs SIP_TRUNK_USERNAME and SIP_TRUNK_PASSWORD')
  return {
    address,
    port,
    transport: (m[4]?.toLowerCase() ?? 'udp') as 'udp' | 'tcp',
    ...(username ? { credentials: { username, password } } : {}),
    ...(register ? { register } : {}),
  }
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']

function oneOf(env: Env, name: string, values: string[], fallback: string): string {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!values.includes(raw)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}"`)
  return raw
}

function iceUrls(env: Env, name: string, schemes: string[]): string[] {
  const raw = env[name]
  if (raw === undefined || raw.trim() === '') return []
  const list = raw.split(',').map((u) => u.trim())
  // stun:host[:port], turn:host[:port][?transport=udp|tcp]: no spaces, no userinfo (credentials come from TURN_SECRET).
  const bad = list.find((u) => {
    const m = /^([a-z]+):([^\s@/?]+)(\?transport=(udp|tcp))?$/.exec(u)
    return !m || !schemes.includes(m[1]!) || (m[3] !== undefined && !m[1]!.startsWith('turn'))
  })
  if (bad !== undefined)
    throw new ConfigError(`${name} must be a comma-separated list of ${schemes.map((s) => `${s}:`).join(' or ')} URIs (host[:port]), got "${redact(bad)}"`)
  return list
}

function ice(env: Env): IceConfig {
  const stunUrls = iceUrls(env, 'STUN_URLS', ['stun', 'stuns'])
  const turnUrls = iceUrls(env, 'TURN_URLS', ['turn', 'turns'])
  const turnSecret = env.TURN_SECRET || undefined
  if (turnUrls.length > 0 && !turnSecret) throw new ConfigError("TURN_URLS needs TURN_SECRET (the TURN server's shared secret for time-limited credentials)")
  if (turnSecret && turnUrls.length === 0) throw new ConfigError('TURN_SECRET is set but TURN_URLS is not')
  if (turnSecret !== undefined && turnSecret.length < 16) throw new ConfigError('TURN_SECRET must be at least 16 characters')
  return { stunUrls, turnUrls, turnSecret, credentialTtlS: int(env, 'TURN_CREDENTIAL_TTL_S', 86_400, 60, 604_800) }
}

/** RTP_PORT_MIN..RTP_PORT_MAX: an even first port (RTP even, RTCP odd) and room for at least one pair. */
function rtpPorts(env: Env): { rtpPortMin: number; rtpPortMax: number } {
  const rtpPortMin = int(env, 'RTP_PORT_MIN', 20000, 1024, 65534)
  const rtpPortMax = int(env, 'RTP_PORT_MAX', 29999, 1025, 65535)
  if (rtpPortMin % 2 !== 0) throw new ConfigError(`RTP_PORT_MIN must be even (RTP on even ports, RTCP on the next), got "${rtpPortMin}"`)
  if (rtpPortMax < rtpPortMin + 1)
    throw new ConfigError(`RTP_PORT_MAX (${rtpPortMax}) must leave room for at least one port pair above RTP_PORT_MIN (${rtpPortMin})`)
  return { rtpPortMin, rtpPortMax }
}

function redact(raw: string): string {
  return raw.replace(/\/\/[^@/]*@/, '//***@')
}

export function parseRoles(args: string[]): Role[] {
  const i = args.indexOf('--role')
  if (i === -1) return [...ALL_ROLES]
  const value = args[i + 1] ?? ''
  if (value === 'all') return [...ALL_ROLES]
  const roles = value.split(',')
  for (const r of roles) {
    if (!ALL_ROLES.includes(r as Role)) throw new ConfigError(`--role must be one of ${ALL_ROLES.join(', ')} or all, got "${r}"`)
  }
  return roles as Role[]
}

export function loadConfig(env: Env = process.env, args: string[] = []): Config {
  const port = int(env, 'PORT', 8080, 0, 65535)
  const givenBaseUrl = url(env, 'BASE_URL', ['http:', 'https:'])
  const baseUrl = (givenBaseUrl ?? `http://localhost:${port}`).replace(/\/+$/, '')
  const adminToken = env.VOICE_ADMIN_TOKEN || undefined
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('VOICE_ADMIN_TOKEN must be at least 16 characters')
  }
  return {
    port,
    host: env.HOST || '0.0.0.0',
    baseUrl,
    baseUrlFollowsPort: givenBaseUrl === undefined,
    dataDir: env.DATA_DIR || './data',
    embeddedDatabase: oneOf(env, 'EMBEDDED_DATABASE', ['postgres', 'pglite'], 'postgres') as 'postgres' | 'pglite',
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', DEFAULT_DATABASE_POOL_SIZE, 1, 200),
    natsUrl: url(env, 'NATS_URL', ['nats:', 'tls:', 'ws:', 'wss:']),
    testKey: secretKey(env, 'VOICE_TEST_KEY', 'sk_test_'),
    liveKey: secretKey(env, 'VOICE_LIVE_KEY', 'sk_live_'),
    liveEnabled: flag(env, 'VOICE_LIVE_ENABLED'),
    adminToken,
    clockSpeed: positive(env, 'VOICE_CLOCK_SPEED', 1),
    webhookRetryIntervalS: positive(env, 'WEBHOOK_RETRY_INTERVAL_S', 60),
    webhookTimeoutS: positive(env, 'WEBHOOK_TIMEOUT_S', 30),
    webhookAllowPrivateTargets: flag(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS'),
    sipPort: int(env, 'SIP_PORT', 5060, 0, 65535),
    sipHost: ipAddress(env, 'SIP_HOST', '127.0.0.1'),
    sipTrunkSources: ipAddresses(env, 'SIP_TRUNK_SOURCES'),
    sipTrunkOutbound: sipTrunkOutbound(env),
    ...rtpPorts(env),
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: env.MAIL_FROM || 'Business Voice <no-reply@localhost>',
    rateLimitPerSecond: int(env, 'RATE_LIMIT_PER_SECOND', 50, 0, 1_000_000),
    rateLimitBurst: int(env, 'RATE_LIMIT_BURST', 100, 1, 1_000_000),
    eventStreamHeartbeatS: positive(env, 'EVENT_STREAM_HEARTBEAT_S', 15),
    // Bus wake-ups reach every stream of every process when NATS carries them; the poll
    // is then only a safety net. Without NATS, processes sharing a database see each
    // other's commits only by polling.
    eventStreamPollS: positive(env, 'EVENT_STREAM_POLL_S', env.NATS_URL ? 1 : 0.25),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    shardLeaseMs: int(env, 'SHARD_LEASE_MS', 10_000, 500, 600_000),
    roles: parseRoles(args),
    ...masterKeys(env),
    ice: ice(env),
  }
}
