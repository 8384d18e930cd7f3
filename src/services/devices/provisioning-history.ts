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
import { pgArray, statement } from '../../db/statements'
import { newId } from '../../ids'

/**
 * The device rows of a batch of steps, one row per device: its events folded in
 * order (the last fetch, the last provisioning, the last known address), and never
 * older than what the row already says: a fetch taken after a later one (two
 * gateways, one deferring its messages during a burst) leaves the later one's. A device
 * becomes synced when one of its provisionings is not older than its configuration,
 * i.e. when the latest is not (`synced_by`). `d.id = any($2)` (the same ids) makes
 * the planner read the rows by primary key, not hash the batch against a scan of
 * every device (8 ms a batch at 10,000 devices; see calls' PATCH_CALL_LOGS).
 */
const MARK_FETCHED = statement(
  `update devices d set
     status = case when x.synced_by is not null and d.updated_at <= x.synced_by then 'synced' else d.status end,
     provisioned_at = greatest(x.provisioned_at, d.provisioned_at),
     last_fetched_at = greatest(x.fetched_at, d.last_fetched_at),
     ip_address = case when d.last_fetched_at is null or x.fetched_at >= d.last_fetched_at then coalesce(x.ip_address, d.ip_address) else d.ip_address end
   from jsonb_to_recordset($1::jsonb) as x(id text, synced_by timestamptz, provisioned_at timestamptz, fetched_at timestamptz, ip_address text)
   where d.id = x.id and d.id = any($2::text[])`,
)

/** A device deleted meanwhile gets no entry; `d.id = any($2)` as in MARK_FETCHED (it halved this statement's time). */
const INSERT_HISTORY = statement(
  `insert into provisioning_events (id, account_id, device_id, type, error_code, ip_address, user_agent, created_at)
   select x.id, x.account_id, x.device_id, x.type, x.error_code, x.ip_address, null, x.created_at
   from jsonb_to_recordset($1::jsonb)
     as x(id text, account_id text, device_id text, type text, error_code text, ip_address text, created_at timestamptz)
   where exists (select 1 from devices d where d.id = x.device_id and d.id = any($2::text[]))`,
)

/** A device.* event as the device machine emits it (machines/device.ts: DeviceEmitted). */
export type ProvisioningEvent =
  | { type: 'device.provisioned'; data: { device: string; ip_address: string | null; provisioned_at: string } }
  | { type: 'device.config_fetched'; data: { device: string; ip_address: string | null; fetched_at: string } }
  | { type: 'device.provisioning_failed'; data: { device: string; error_code: string; failed_at: string } }

/** One device.* event of a step, with the account it belongs to. */
export interface ProvisioningRecord {
  accountId: string
  event: ProvisioningEvent
}

interface DeviceFetches {
  id: string
  synced_by: string | null
  provisioned_at: string | null
  fetched_at: string
  ip_address: string | null
}

/**
 * Writes the device rows and history entries of many device.* events (every step of
 * one transaction, in step order) with two statements whatever their number: phones
 * fetch by the thousand per second, and a statement per event held the device actors
 * far behind the fetches (`npm run bench -- provisioning`).
 */
export async function recordProvisioned(tx: Db, clock: Clock, records: readonly ProvisioningRecord[]): Promise<void> {
  const devices = new Map<string, DeviceFetches>()
  const history = records.map(({ accountId, event: e }) => {
    if (e.type === 'device.provisioning_failed') {
      const at = e.data.failed_at ?? clock.now().toISOString()
      return {
        id: newId('provisioningEvent'),
        account_id: accountId,
        device_id: e.data.device,
        type: 'provisioning_failed',
        error_code: e.data.error_code,
        ip_address: null,
        created_at: at,
      }
    }
    const provisioned = e.type === 'device.provisioned'
    const at = provisioned
      ? (e as Extract<ProvisioningEvent, { type: 'device.provisioned' }>).data.provisioned_at
      : (e as Extract<ProvisioningEvent, { type: 'device.config_fetched' }>).data.fetched_at
    const ip = e.data.ip_address
    const before = devices.get(e.data.device)
    const laterOf = (a: string | null | undefined, b: string) => (a && Date.parse(a) > Date.parse(b) ? a : b)
    // The latest fetch wins, whatever order the events came in.
    const latest = !before || Date.parse(at) >= Date.parse(before.fetched_at)
    devices.set(e.data.device, {
      id: e.data.device,
      synced_by: provisioned ? laterOf(before?.synced_by, at) : (before?.synced_by ?? null),
      provisioned_at: provisioned ? laterOf(before?.provisioned_at, at) : (before?.provisioned_at ?? null),
      fetched_at: latest ? at : before.fetched_at,
      ip_address: latest ? (ip ?? before?.ip_address ?? null) : (before.ip_address ?? ip),
    })
    return {
      id: newId('provisioningEvent'),
      account_id: accountId,
      device_id: e.data.device,
      type: e.type.slice('device.'.length),
      error_code: null,
      ip_address: ip,
      created_at: at,
    }
  })
  if (devices.size > 0) await MARK_FETCHED.rows(tx, [JSON.stringify([...devices.values()]), pgArray([...devices.keys()])])
  if (history.length > 0) await INSERT_HISTORY.rows(tx, [JSON.stringify(history), pgArray([...new Set(history.map((h) => h.device_id))])])
}
