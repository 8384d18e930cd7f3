/**
 * Device rows and their views, shared by every device module. Deskphones, DECT
 * bases and handsets are one record, told apart by `type`; each path names the
 * type it expects, so a deskphone path given a base's id answers not found.
 */
import { and, eq, inArray } from 'drizzle-orm'
import type { Deps } from '../deps'
import type { Db } from '../../db/client'
import { type deviceLines, devices, type deviceUsers } from '../../db/schema'
import { notFound } from '../../errors'
import { releaseDeferredOf } from '../../scheduler/deferred-messages'
import type { DeviceType } from './catalogue'
import type { Sealer } from './sip-credentials'

export type DeviceRow = typeof devices.$inferSelect
export type LineRow = typeof deviceLines.$inferSelect
export type DeviceUserRow = typeof deviceUsers.$inferSelect

/** The status a device starts in and returns to whenever its configuration changes: the phone must fetch it again. */
export const PENDING_SYNC = 'pending_sync'

/** The kind of the device actor (actors/devices): one per phone that fetches a file. */
export const DEVICE_ACTOR = 'device'

/** What a write that changes a device's configuration needs: the clock and the device actors' mailbox. */
export type ConfigChangeDeps = Pick<Deps, 'clock' | 'actorMessages'>

/**
 * A device's configuration changed: it, and for a handset its base (whose file
 * carries the handsets' lines and keys), go back to pending_sync until the phone
 * fetches the file again, and the phone's actor hears it (in this transaction) so
 * that its next fetch is a new provisioning. The one place that says so.
 */
export async function markConfigChanged(tx: Db, deps: ConfigChangeDeps, device: { id: string; baseId: string | null }) {
  const ids = device.baseId ? [device.id, device.baseId] : [device.id]
  const now = deps.clock.now()
  await tx.update(devices).set({ status: PENDING_SYNC, updatedAt: now }).where(inArray(devices.id, ids))
  // A handset fetches nothing: its base does. Changes coalesce into one pending message.
  await tellDevice(tx, deps, device.baseId ?? device.id, { type: 'UPDATE', at: now.toISOString() }, '$config_changed')
}

/**
 * The API's message to a device actor (an update, a check-sync, a removal), in the
 * request's transaction. The fetches the provisioning server deferred during a
 * burst (media/provisioning/deferred-tells) are released first: they happened
 * before this request, and the actor must take them before it, or a fetch of the
 * old file would count as the new configuration's provisioning, and a removed
 * device's last fetches would never be reported.
 */
export async function tellDevice(tx: Db, deps: ConfigChangeDeps, deviceId: string, event: { type: string; at: string }, name: string) {
  if (!deps.actorMessages) return
  await releaseDeferredOf(tx, DEVICE_ACTOR, deviceId, deps.clock.now())
  await deps.actorMessages.tell(tx, DEVICE_ACTOR, deviceId, event, name)
}

const notFoundFor = { deskphone: 'deskphone', dect_base: 'dect_base', dect_handset: 'handset' } as const

export async function getDevice(db: Db, accountId: string, id: string, type?: DeviceType): Promise<DeviceRow> {
  const [row] = await db
    .select()
    .from(devices)
    .where(and(eq(devices.accountId, accountId), eq(devices.id, id)))
  if (!row || (type !== undefined && row.type !== type)) throw notFound(type ? notFoundFor[type] : 'device', id)
  return row
}

/** A handset of this base (404 handset_not_found otherwise). */
export async function getHandset(db: Db, accountId: string, baseId: string, handsetId: string): Promise<DeviceRow> {
  const row = await getDevice(db, accountId, handsetId, 'dect_handset').catch(() => undefined)
  if (!row || row.baseId !== baseId) throw notFound('handset', handsetId)
  return row
}

export function deviceUserView(row: DeviceUserRow) {
  return { id: row.id, object: 'device_user' as const, device: row.deviceId, user: row.userId, created_at: row.createdAt.toISOString() }
}

/**
 * A line. Its SIP credentials appear only when `sealer` is given: the gateway passes
 * one for platform secret keys and none for account sessions.
 */
export function lineView(row: LineRow, sealer?: Sealer) {
  return {
    id: row.id,
    object: 'device_line' as const,
    device: row.deviceId,
    line_number: row.lineNumber,
    user: row.userId,
    extension: row.extensionId,
    label: row.label,
    ...(sealer ? { sip_credentials: { username: row.sipUsername, password: sealer.open(row.sipPasswordSealed), domain: row.sipDomain } } : {}),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export interface DeviceExpansions {
  users?: DeviceUserRow[]
  lines?: LineRow[]
  /** Given for platform secret keys only: shows the provisioning and SIP credentials. */
  sealer?: Sealer
}

export function deviceView(row: DeviceRow, expanded: DeviceExpansions = {}) {
  return {
    id: row.id,
    object: 'device' as const,
    account: row.accountId,
    type: row.type,
    vendor: row.vendor,
    model: row.model,
    mac_address: row.macAddress,
    name: row.name,
    location: row.locationId,
    base: row.baseId,
    button_template: row.buttonTemplateId,
    status: row.status,
    ...(expanded.sealer && row.provisioningUsername && row.provisioningPasswordSealed
      ? { provisioning_credentials: { username: row.provisioningUsername, password: expanded.sealer.open(row.provisioningPasswordSealed) } }
      : {}),
    ip_address: row.ipAddress,
    provisioned_at: row.provisionedAt?.toISOString() ?? null,
    last_fetched_at: row.lastFetchedAt?.toISOString() ?? null,
    check_sync_requested_at: row.checkSyncRequestedAt?.toISOString() ?? null,
    ...(expanded.users ? { users: { object: 'list' as const, data: expanded.users.map(deviceUserView) } } : {}),
    ...(expanded.lines ? { lines: { object: 'list' as const, data: expanded.lines.map((l) => lineView(l, expanded.sealer)) } } : {}),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}
