/**
 * The provisioning handler's view of the database: which device a MAC is, as a
 * ProvisioningConfig, and what a fetch means for the device's actor.
 *
 * Phones fetch under their account's `provisioning_base_url`
 * (`{BASE_URL}/provisioning/{account}/`): a MAC is looked up only in the account its
 * path names, so a phone configured for one account never gets another's file,
 * and an unknown pair answers exactly like a wrong password (the handler's rule).
 * A fetch or a failure is a durable message to the device actor, committed before
 * the phone gets its answer (the messages of concurrent fetches in one statement and
 * one commit: media/device-tell-batcher; during a burst of fetches, deferred until
 * it ends: ./deferred-tells); the actor emits device.* and writes the history.
 */
import type { Clock } from '../../src/clock'
import type { Config } from '../../src/config'
import type { Db } from '../../src/db/client'
import { normaliseMac } from '../../src/services/devices/catalogue'
import { devicesForProvisioning, type ProvisioningView } from '../../src/services/devices/provisioning-read'
import { releaseDeferred } from '../../src/scheduler/deferred-messages'
import { DEVICE_ACTOR } from '../../src/services/devices/records'
import type { DeviceTellWriter } from '../device-tell-batcher'
import { lookupBatcher } from '../lookup-batcher'
import type { ProvisioningConfig, ProvisioningHandset } from './config'
import { type DeferralSettings, deferredTells } from './deferred-tells'
import type { ConfigFailure, ConfigFetch, ProvisioningDirectoryEntry } from './http'

/** The path prefix phones fetch under; the account id follows it. */
export const PROVISIONING_PATH = '/provisioning/'

export interface DirectoryDeps {
  db: Db
  clock: Clock
  config: Pick<Config, 'sipPort'>
  /** Writes device actors' durable tells (actors/devices/registrar-messages: deviceTellWriter); unset: fetches are not recorded. */
  writeTells?: DeviceTellWriter
  /** When fetches' messages wait for a burst to end (./deferred-tells); the defaults otherwise. */
  deferral?: Partial<DeferralSettings>
  /** Real time in ms for the burst's rate (tests drive it). */
  nowMs?: () => number
  /** A failed release of deferred messages (they stay due at their deadline). */
  onError?: (err: unknown) => void
}

/** The account a provisioning URL names (`/provisioning/{account}/{file}`), if any. */
export function accountOfPath(pathname: string): string | undefined {
  if (!pathname.startsWith(PROVISIONING_PATH)) return undefined
  const rest = pathname.slice(PROVISIONING_PATH.length)
  const slash = rest.indexOf('/')
  return slash > 0 ? rest.slice(0, slash) : undefined
}

/** The generator's input from the device as the database knows it. */
export function provisioningConfigOf(view: ProvisioningView, sipPort: number): ProvisioningConfig {
  const settings = view.account.config as { timezone?: string }
  return {
    deviceId: view.device.id,
    vendor: view.device.vendor,
    model: view.device.model,
    mac: view.device.macAddress ?? '',
    lines: view.lines.map((l) => ({
      number: l.slot,
      sipUsername: l.credentials.username,
      sipPassword: l.credentials.password,
      registrarHost: l.credentials.domain,
      registrarPort: sipPort,
      displayName: l.user_name ?? l.label ?? l.extension_number ?? l.credentials.username,
      extension: l.extension_number,
      label: l.label,
    })),
    buttons: view.buttons.map((b) => ({ key: b.key, type: b.type, value: b.value, label: b.label })),
    ...(view.device.type === 'dect_base' ? { handsets: handsetsOf(view) } : {}),
    account: { timeZone: settings.timezone ?? 'UTC', language: 'en-US', provisioningBaseUrl: view.account.provisioningBaseUrl ?? undefined },
  }
}

/**
 * A base's handsets as it numbers them (1.., in the order they were added) with the
 * account slots of their lines: the base rings a handset for its own lines only
 * and dials out on its first.
 */
function handsetsOf(view: ProvisioningView): ProvisioningHandset[] {
  return view.handsets.map((h, i) => {
    const lines = view.lines.filter((l) => l.device === h.device.id)
    const first = lines[0]
    return {
      number: i + 1,
      name: h.device.name || (first && (first.user_name || first.label || first.extension_number)) || `Handset ${i + 1}`,
      lines: lines.map((l) => l.slot),
    }
  })
}

export function provisioningDirectory(deps: DirectoryDeps) {
  // No wake-up: the actors' timer poll takes the messages in batches, which costs less than one delivery per fetch.
  const tells = deps.writeTells
    ? deferredTells({
        db: deps.db,
        clock: deps.clock,
        write: deps.writeTells,
        release: (db, now, until) => releaseDeferred(db, DEVICE_ACTOR, now, until),
        settings: deps.deferral,
        nowMs: deps.nowMs,
        onError: deps.onError,
      })
    : undefined
  const tell = (deviceId: string, event: { type: string } & Record<string, unknown>) => (tells ? tells.tell(deviceId, event) : Promise.resolve())
  // One statement per fetch, and one for the fetches arriving together: reading the login alone first cost a
  // second round trip on every fetch, and each statement's start-up the database more than its rows (`npm run bench -- provisioning`).
  const deviceByMac = lookupBatcher((macs: string[]) => devicesForProvisioning(deps.db, macs))
  return {
    async lookupByMac(mac: string, request: Request): Promise<ProvisioningDirectoryEntry | undefined> {
      const account = accountOfPath(new URL(request.url).pathname)
      const normal = normaliseMac(mac)
      if (!account || !normal) return undefined
      const view = await deviceByMac(normal)
      if (!view?.provisioning_credentials || view.account.id !== account) return undefined
      return { credentials: view.provisioning_credentials, config: provisioningConfigOf(view, deps.config.sipPort) }
    },
    /** Only the device's own file is its configuration; shared files (common settings, file lists) are not a provisioning. */
    async recordFetch(f: ConfigFetch): Promise<void> {
      if (f.kind !== 'device') return
      await tell(f.deviceId, { type: 'CONFIG_FETCHED', ip_address: f.ipAddress, at: f.fetchedAt.toISOString() })
    },
    async recordFailure(f: ConfigFailure): Promise<void> {
      await tell(f.deviceId, { type: 'PROVISIONING_FAILED', error_code: f.errorCode, at: f.failedAt.toISOString() })
    },
    /** Whether fetches' messages are being deferred now. */
    deferring: () => tells?.deferring() ?? false,
    stop: () => tells?.stop(),
  }
}
