/**
 * The phone-facing provisioning endpoint: a standard fetch handler the composition
 * root mounts under the account's `provisioning_base_url` path. A phone asks for a
 * file by name; the handler works out which device it claims to be (file name and
 * User-Agent), authenticates it with that device's own credentials, and answers the
 * vendor file generated from the device's configuration.
 *
 * Rules that shape it:
 * - Nothing about a device is revealed before authentication: an unknown MAC gets the
 *   same 401 challenge as a known one with wrong credentials, after the same work.
 * - Events (`recordFetch`, `recordFailure`) only once the device is identified, i.e.
 *   authenticated (spec: a request failing before that emits no event).
 * - Digest (RFC 7616, SHA-256 and MD5) always; Basic only over TLS (the password
 *   would otherwise cross the network in clear), unless `allowBasicWithoutTls`.
 */
import {
  type Authorization,
  DIGEST_ALGORITHMS,
  digestChallenges,
  issueNonce,
  NonceCounts,
  parseAuthorization,
  safeEqualText,
  verifyDigest,
} from '../../src/auth/digest'
import type { Clock } from '../../src/clock'
import { type ProvisioningCode, type ProvisioningConfig, ProvisioningError, SUPPORTED_VENDORS, type Vendor } from './config'
import { type FileKind, identifyRequest } from './detect'
import { POLYCOM_CONTENT_TYPE, polycomMasterFile, polycomPhoneFile } from './polycom'
import { YEALINK_CONTENT_TYPE, yealinkCommonFile, yealinkDeviceFile } from './yealink'

export interface DeviceCredentials {
  username: string
  password: string
}

export interface ProvisioningDirectoryEntry {
  config: ProvisioningConfig
  credentials: DeviceCredentials
}

export interface ConfigFetch {
  deviceId: string
  mac: string
  vendor: Vendor
  model: string | null
  ipAddress: string | null
  /** The file served and what it is: `device` files carry the lines and keys, `shared` ones the account's settings or a file list. */
  file: string
  kind: 'device' | 'shared'
  fetchedAt: Date
}

export interface ConfigFailure {
  deviceId: string
  mac: string
  /** The device's vendor as configured (lowercase). */
  vendor: string
  errorCode: Exclude<ProvisioningCode, 'credentials_not_found'>
  file: string
  failedAt: Date
}

export interface ProvisioningHandlerDeps {
  /** The device of this MAC; `request` lets the directory scope the lookup (e.g. to the account in the path). */
  lookupByMac(mac: string, request: Request): Promise<ProvisioningDirectoryEntry | undefined> | ProvisioningDirectoryEntry | undefined
  recordFetch(fetch: ConfigFetch): Promise<void> | void
  recordFailure(failure: ConfigFailure): Promise<void> | void
  clock: Clock
  /** Signs nonces: every process serving the same phones needs the same key. */
  nonceKey: string | Uint8Array
  realm?: string
  nonceTtlMs?: number
  /** Bound on tracked nonces (replay protection); older ones are refused as stale. */
  maxTrackedNonces?: number
  /** The phone's address for the events (e.g. Bun's `server.requestIP`). */
  clientAddress?(request: Request): string | null | undefined
  /** Told of every unexpected error behind a 500 (the phone only sees generation_failed). */
  onError?(error: unknown, during: string): void
  /** Accept Basic over plain HTTP (development only). */
  allowBasicWithoutTls?: boolean
}

const DEFAULT_REALM = 'provisioning'
const DEFAULT_NONCE_TTL_MS = 5 * 60_000
/** Compared against when the MAC is unknown, so that case costs the same as a wrong password. */
const NO_SUCH_DEVICE: DeviceCredentials = { username: '\u0000', password: '\u0000' }

export function provisioningHandler(deps: ProvisioningHandlerDeps): (request: Request) => Promise<Response> {
  const realm = deps.realm ?? DEFAULT_REALM
  const ttl = deps.nonceTtlMs ?? DEFAULT_NONCE_TTL_MS
  const counts = new NonceCounts(deps.maxTrackedNonces)

  const challenge = (request: Request, stale = false): Response => {
    const headers = new Headers({ 'Content-Type': 'application/json', 'Cache-Control': 'no-store' })
    // Nonces live in real time: the phone answers on its own clock, whatever VOICE_CLOCK_SPEED.
    const nowMs = deps.clock.wallNow().getTime()
    counts.prune(nowMs - ttl)
    for (const value of digestChallenges({ realm, nonce: issueNonce(deps.nonceKey, realm, nowMs), stale, algorithms: DIGEST_ALGORITHMS })) {
      headers.append('WWW-Authenticate', value)
    }
    if (basicAllowed(request)) headers.append('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`)
    return new Response(JSON.stringify({ error: 'Authentication required.', code: 'unauthorized' }), { status: 401, headers })
  }

  const basicAllowed = (request: Request) => deps.allowBasicWithoutTls === true || new URL(request.url).protocol === 'https:'

  /** `ok` when the request carries this device's credentials; `stale` when they were right but the nonce too old. */
  const authenticate = (request: Request, auth: Authorization, credentials: DeviceCredentials): 'ok' | 'stale' | 'refused' => {
    if (auth.scheme === 'basic') {
      if (!basicAllowed(request)) return 'refused'
      const userOk = safeEqualText(auth.username, credentials.username)
      const passwordOk = safeEqualText(auth.password, credentials.password)
      return userOk && passwordOk ? 'ok' : 'refused'
    }
    if (auth.scheme !== 'digest') return 'refused'
    const url = new URL(request.url)
    // Clients name the target as sent: usually the path, sometimes the absolute URL.
    const target = auth.params.uri === request.url ? request.url : url.pathname + url.search
    const outcome = verifyDigest({
      params: auth.params,
      method: request.method,
      uri: target,
      realm,
      username: credentials.username,
      password: credentials.password,
      key: deps.nonceKey,
      nowMs: deps.clock.wallNow().getTime(),
      nonceTtlMs: ttl,
      counts,
    })
    if (outcome.ok) return 'ok'
    return outcome.reason === 'stale_nonce' ? 'stale' : 'refused'
  }

  return async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return errorResponse(405, 'Only GET and HEAD are served here.', undefined, { Allow: 'GET, HEAD' })
    }
    const url = new URL(request.url)
    const claim = identifyRequest(url.pathname, request.headers.get('user-agent'))
    switch (claim.outcome) {
      case 'not_found':
        return errorResponse(404, 'No such provisioning file.', 'not_found')
      case 'mac_mismatch':
        return errorResponse(403, 'The file requested belongs to another phone than the one asking.', 'forbidden')
      case 'unsupported_vendor':
        return errorResponse(400, 'This phone vendor or model is not supported.', 'unsupported_vendor')
    }

    // A request without credentials gets its challenge before any lookup: the same
    // answer for every MAC, known or not, and no work for the first half of every fetch.
    const auth = parseAuthorization(request.headers.get('authorization'))
    if (auth === undefined) return challenge(request, false)

    let entry: ProvisioningDirectoryEntry | undefined
    try {
      entry = await deps.lookupByMac(claim.mac, request)
    } catch (error) {
      deps.onError?.(error, 'device lookup')
      return errorResponse(500, 'The provisioning file could not be generated; retry later.', 'generation_failed')
    }
    const verdict = authenticate(request, auth, entry?.credentials ?? NO_SUCH_DEVICE)
    if (!entry || verdict !== 'ok') return challenge(request, entry !== undefined && verdict === 'stale')

    const config = entry.config
    // Identified: from here on every outcome is recorded.
    const now = deps.clock.now()
    const fail = async (code: ConfigFailure['errorCode'], status: number, message: string, details?: Record<string, string>) => {
      // The phone gets its answer even if the event could not be written; the next attempt records again.
      await Promise.resolve()
        .then(() =>
          deps.recordFailure({
            deviceId: config.deviceId,
            mac: claim.mac,
            vendor: config.vendor.toLowerCase(),
            errorCode: code,
            file: claim.file.name,
            failedAt: now,
          }),
        )
        .catch(() => undefined)
      return errorResponse(status, message, code, undefined, details)
    }
    const vendor = config.vendor.toLowerCase() as Vendor
    if (!SUPPORTED_VENDORS.includes(vendor)) return fail('unsupported_vendor', 400, `Vendor ${config.vendor} is not supported.`)
    if (claim.vendor !== undefined && claim.vendor !== vendor) {
      return fail('unsupported_vendor', 400, `This device is configured as a ${vendor} phone; a ${claim.vendor} phone asked.`)
    }

    let generated: { body: string; contentType: string; kind: ConfigFetch['kind'] } | undefined
    try {
      generated = generate(vendor, claim.file.kind, config, now)
    } catch (error) {
      if (error instanceof ProvisioningError && error.code === 'invalid_configuration') {
        return fail('invalid_configuration', 400, error.message, error.details)
      }
      return fail('generation_failed', 500, 'The provisioning file could not be generated; retry later.')
    }
    if (!generated) return errorResponse(404, 'No such provisioning file.', 'not_found')

    const fetched: ConfigFetch = {
      deviceId: config.deviceId,
      mac: claim.mac,
      vendor,
      model: config.model ?? claim.model ?? null,
      ipAddress: deps.clientAddress?.(request) ?? null,
      file: claim.file.name,
      kind: generated.kind,
      fetchedAt: now,
    }
    try {
      // A HEAD only asks whether the file changed; it configures nothing, so it is not a fetch.
      if (request.method === 'GET') await deps.recordFetch(fetched)
    } catch (error) {
      deps.onError?.(error, 'fetch record')
      // Serving a file whose fetch was not recorded would leave the device pending-sync with a phone already configured.
      return errorResponse(500, 'The provisioning file could not be generated; retry later.', 'generation_failed')
    }
    return new Response(request.method === 'HEAD' ? null : generated.body, {
      status: 200,
      headers: { 'Content-Type': generated.contentType, 'Cache-Control': 'no-store' },
    })
  }
}

/** The file for this vendor and file kind; undefined when the vendor has no such file. */
function generate(vendor: Vendor, kind: FileKind, config: ProvisioningConfig, now: Date) {
  if (vendor === 'yealink') {
    if (kind === 'yealink-common') return { body: yealinkCommonFile(config, now), contentType: YEALINK_CONTENT_TYPE, kind: 'shared' as const }
    if (kind === 'mac-cfg') return { body: yealinkDeviceFile(config), contentType: YEALINK_CONTENT_TYPE, kind: 'device' as const }
    return undefined
  }
  if (kind === 'polycom-master') return { body: polycomMasterFile(), contentType: POLYCOM_CONTENT_TYPE, kind: 'shared' as const }
  if (kind === 'mac-cfg') return { body: polycomMasterFile(config.mac), contentType: POLYCOM_CONTENT_TYPE, kind: 'shared' as const }
  if (kind === 'polycom-phone') return { body: polycomPhoneFile(config, now), contentType: POLYCOM_CONTENT_TYPE, kind: 'device' as const }
  return undefined
}

/** The API's error shape (`{error, code, details?}`), so phones' admins and our logs read one format. */
function errorResponse(status: number, message: string, code?: string, headers?: Record<string, string>, details?: Record<string, string>): Response {
  const body: { error: string; code?: string; details?: Record<string, string> } = { error: message }
  if (code) body.code = code
  if (details) body.details = details
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers } })
}
