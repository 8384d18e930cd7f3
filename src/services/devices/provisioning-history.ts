/**
 * What the device actor writes with each device.* event, in the event's own step:
 * the device row's provisioning fields and one entry of its provisioning history.
 *
 * Requests that change a device's configuration set it back to pending_sync (and
 * its updated_at) in their own transaction. A fetch that happened before such a
 * change must not mark the device synced again when its step runs after it, so a
 * fetch moves the status only when the configuration is not newer than the fetch.
 * A device deleted meanwhile is left alone (its history went with it).
 */
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { statement } from '../../db/statements'
import { newId } from '../../ids'

const MARK_FETCHED = statement(
  `update devices set
     status = case when $2::boolean and updated_at <= $3::timestamptz then 'synced' else status end,
     provisioned_at = case when $2::boolean then $3::timestamptz else provisioned_at end,
     last_fetched_at = $3::timestamptz,
     ip_address = coalesce($4, ip_address)
   where id = $1`,
)

const INSERT_HISTORY = statement(
  `insert into provisioning_events (id, account_id, device_id, type, error_code, ip_address, user_agent, created_at)
   select $1, $2, $3, $4, $5, $6, null, $7::timestamptz
   where exists (select 1 from devices where id = $3)`,
)

/** A device.* event as the device machine emits it (machines/device.ts: DeviceEmitted). */
export type ProvisioningEvent =
  | { type: 'device.provisioned'; data: { device: string; ip_address: string | null; provisioned_at: string } }
  | { type: 'device.config_fetched'; data: { device: string; ip_address: string | null; fetched_at: string } }
  | { type: 'device.provisioning_failed'; data: { device: string; error_code: string; failed_at: string } }

export async function recordProvisioned(tx: Db, clock: Clock, accountId: string, e: ProvisioningEvent): Promise<void> {
  const d = e.data
  if (e.type === 'device.provisioned' || e.type === 'device.config_fetched') {
    const at = e.type === 'device.provisioned' ? e.data.provisioned_at : e.data.fetched_at
    const ip = e.data.ip_address
    await MARK_FETCHED.rows(tx, [d.device, e.type === 'device.provisioned', at, ip])
    await INSERT_HISTORY.rows(tx, [newId('provisioningEvent'), accountId, d.device, e.type.slice('device.'.length), null, ip, at])
    return
  }
  await INSERT_HISTORY.rows(tx, [
    newId('provisioningEvent'),
    accountId,
    d.device,
    'provisioning_failed',
    e.data.error_code,
    null,
    e.data.failed_at ?? clock.now().toISOString(),
  ])
}
