/**
 * Everything a configuration file is made from, read by the MAC the phone asks
 * with: the device, its account, its lines with their SIP credentials (for a DECT
 * base: the lines of all its handsets), its handsets and the effective buttons of
 * each.
 *
 * Every authenticated fetch runs this, so it is one fixed statement (one round trip,
 * prepared on PostgreSQL): the builder's seven queries cost more client CPU than
 * the rest of the fetch together (`npm run bench -- provisioning`). It reads many
 * MACs at once, so that the fetches arriving together share one statement: its
 * executor start-up (a dozen subplans) costs the database more than a device's
 * rows. The rows come back as JSON arrays beside the device; the button rules stay
 * in `mergeButtons`.
 */
import type { Db } from '../../db/client'
import { pgArray, statement } from '../../db/statements'
import type { AccountConfig } from '../accounts/account-types'
import { type ButtonRow, type EffectiveButton, mergeButtons, type OverrideRow } from './buttons'
import { type DeviceType, modelOf, normaliseMac, type PhoneModel } from './catalogue'
import { credentialSealer, type SipCredentials } from './sip-credentials'

export interface ProvisionedLine {
  id: string
  /** The device the line belongs to: the phone itself, or for a base one of its handsets. */
  device: string
  line_number: number
  /** The phone's account slot: the line number on a deskphone; on a DECT base, 1.. across its handsets in the order they got their lines. */
  slot: number
  user: string | null
  /** The user's name, for the line's display name. */
  user_name: string | null
  extension: string | null
  /** The extension's dial code, shown on the line key. */
  extension_number: string | null
  label: string | null
  credentials: SipCredentials
}

/** What of a device row a configuration file needs. */
export interface ProvisionedDevice {
  id: string
  accountId: string
  type: DeviceType
  vendor: string
  model: string
  macAddress: string | null
  name: string | null
  buttonTemplateId: string | null
}

export interface ProvisioningView {
  device: ProvisionedDevice
  /** What the phone must present to fetch its file; undefined only for a device made without (none today). */
  provisioning_credentials?: { username: string; password: string }
  model: PhoneModel
  account: { id: string; config: AccountConfig; provisioningBaseUrl: string | null }
  lines: ProvisionedLine[]
  buttons: EffectiveButton[]
  /** DECT bases: their handsets, in the order they were added (the base's handset numbers), each with its own buttons. */
  handsets: { device: ProvisionedDevice; buttons: EffectiveButton[] }[]
}

interface DeviceJson {
  id: string
  type: DeviceType
  vendor: string
  model: string
  name: string | null
  button_template_id: string | null
}

interface LineJson {
  id: string
  device_id: string
  line_number: number
  user_id: string | null
  user_name: string | null
  extension_id: string | null
  extension_number: string | null
  label: string | null
  sip_username: string
  sip_password_sealed: string
  sip_domain: string
}

interface ButtonJson {
  device_id: string
  source: 'template' | 'override'
  key: number
  type: string
  value: string | null
  label: string | null
}

type Json<T> = T | string

interface ProvisioningRow extends DeviceJson {
  account_id: string
  mac_address: string | null
  provisioning_username: string | null
  provisioning_password_sealed: string | null
  account_config: Json<AccountConfig>
  provisioning_base_url: string | null
  handsets: Json<DeviceJson[]>
  lines: Json<LineJson[]>
  buttons: Json<ButtonJson[]>
}

/**
 * The device (`d`), its account, and as JSON: its handsets (a base's, oldest first:
 * the base numbers them so), the lines of the device and its handsets (a deskphone
 * by line number; a base in the order its handsets' lines were made, which is the
 * order of its account slots) and the template buttons and overrides of each.
 *
 * Every row is reached by equality on an indexed column of `d` (or of a base's
 * handsets, in branches a deskphone skips), never by a join the planner may turn
 * into a scan: a freshly filled database has no statistics yet, and joins then
 * read whole tables (measured: device_lines, users and extensions scanned on every
 * fetch). `offset 0` keeps a handset's lookups from being flattened into such joins.
 */
const DEVICE_FOR_PROVISIONING = statement<ProvisioningRow>(
  `select d.id, d.account_id, d.type, d.vendor, d.model, d.mac_address, d.name, d.button_template_id,
     d.provisioning_username, d.provisioning_password_sealed,
     a.config as account_config, a.provisioning_base_url,
     coalesce((select json_agg(json_build_object('id', h.id, 'type', h.type, 'vendor', h.vendor, 'model', h.model, 'name', h.name,
                 'button_template_id', h.button_template_id) order by h.created_at, h.id)
               from devices h where d.type = 'dect_base' and h.base_id = d.id), '[]') as handsets,
     coalesce((select json_agg(json_build_object('id', l.id, 'device_id', l.device_id, 'line_number', l.line_number,
                 'user_id', l.user_id, 'user_name', (select u.name from users u where u.id = l.user_id),
                 'extension_id', l.extension_id, 'extension_number', (select e.number from extensions e where e.id = l.extension_id),
                 'label', l.label, 'sip_username', l.sip_username, 'sip_password_sealed', l.sip_password_sealed, 'sip_domain', l.sip_domain)
                 order by case when d.type = 'dect_base' then null else l.line_number end, l.created_at, l.id)
               from (select * from device_lines where device_id = d.id
                     union all
                     select * from device_lines
                     where d.type = 'dect_base' and device_id = any(array(select h.id from devices h where h.base_id = d.id))) l), '[]') as lines,
     coalesce((select json_agg(json_build_object('device_id', b.device_id, 'source', b.source, 'key', b.key, 'type', b.type,
                 'value', b.value, 'label', b.label))
               from (select d.id as device_id, 'template' as source, t.key, t.type, t.value, t.label
                       from template_buttons t where t.template_id = d.button_template_id
                     union all
                     select d.id, 'override', o.key, o.type, o.value, o.label from button_overrides o where o.device_id = d.id
                     union all
                     select h.id, 'template', t.key, t.type, t.value, t.label
                       from devices h cross join lateral (select * from template_buttons t where t.template_id = h.button_template_id offset 0) t
                       where d.type = 'dect_base' and h.base_id = d.id
                     union all
                     select h.id, 'override', o.key, o.type, o.value, o.label
                       from devices h cross join lateral (select * from button_overrides o where o.device_id = h.id offset 0) o
                       where d.type = 'dect_base' and h.base_id = d.id) b), '[]') as buttons
   from devices d join accounts a on a.id = d.account_id
   where d.mac_address = any($1::text[])`,
)

/** PostgreSQL's json comes back parsed from one driver and as text from another. */
const parsed = <T>(value: Json<T>): T => (typeof value === 'string' ? (JSON.parse(value) as T) : value)

const deviceOf = (j: DeviceJson, accountId: string, macAddress: string | null): ProvisionedDevice => ({
  id: j.id,
  accountId,
  type: j.type,
  vendor: j.vendor,
  model: j.model,
  macAddress,
  name: j.name,
  buttonTemplateId: j.button_template_id,
})

/** The device's effective buttons (template, overridden key by key, on the keys its model has). */
function buttonsOf(device: ProvisionedDevice, all: ButtonJson[]): EffectiveButton[] {
  const mine = all.filter((b) => b.device_id === device.id)
  // mergeButtons reads key, type, value and label of each row, which is what was selected.
  const rows = (source: ButtonJson['source']) => mine.filter((b) => b.source === source) as unknown as (ButtonRow & OverrideRow)[]
  return mergeButtons(modelOf(device).keys, rows('template'), rows('override'))
}

/** The device with this MAC (any accepted spelling), or undefined when none is registered. */
export async function deviceForProvisioning(db: Db, mac: string): Promise<ProvisioningView | undefined> {
  const normal = normaliseMac(mac)
  return normal ? (await devicesForProvisioning(db, [normal])).get(normal) : undefined
}

/**
 * PostgreSQL plans a prepared statement anew on every run until a plan for any
 * parameters (generic) looks no costlier than those made for the actual ones, and it
 * costs the generic plan of `= any($1)` as if the array held 10 elements: batches of
 * 2 or 3 MACs kept it planning this statement (0.5 ms, more than running it) on every
 * fetch. Filled up to 16 with '' (no MAC), the first runs cost what the generic plan
 * does, and the connection keeps the generic plan from then on.
 */
const GENERIC_PLAN_ARRAY = 16
const padded = (macs: string[]) => (macs.length >= GENERIC_PLAN_ARRAY ? macs : [...macs, ...Array<string>(GENERIC_PLAN_ARRAY - macs.length).fill('')])

/** The devices with these MACs (normalised by normaliseMac), by MAC; a MAC no device has is absent. */
export async function devicesForProvisioning(db: Db, macs: string[]): Promise<Map<string, ProvisioningView>> {
  const found = new Map<string, ProvisioningView>()
  if (macs.length === 0) return found
  const rows = await DEVICE_FOR_PROVISIONING.rows(db, [pgArray(padded(macs))])
  if (rows.length === 0) return found
  const sealer = await credentialSealer(db)
  for (const row of rows) if (row.mac_address) found.set(row.mac_address, viewOf(row, sealer))
  return found
}

function viewOf(row: ProvisioningRow, sealer: Awaited<ReturnType<typeof credentialSealer>>): ProvisioningView {
  const device = deviceOf(row, row.account_id, row.mac_address)
  const handsets = parsed(row.handsets).map((h) => deviceOf(h, row.account_id, null))
  const buttons = parsed(row.buttons)
  const isBase = device.type === 'dect_base'
  return {
    device,
    ...(row.provisioning_username && row.provisioning_password_sealed
      ? { provisioning_credentials: { username: row.provisioning_username, password: sealer.open(row.provisioning_password_sealed) } }
      : {}),
    model: modelOf(device),
    account: { id: row.account_id, config: parsed(row.account_config), provisioningBaseUrl: row.provisioning_base_url },
    lines: parsed(row.lines).map((l, i) => ({
      id: l.id,
      device: l.device_id,
      line_number: l.line_number,
      slot: isBase ? i + 1 : l.line_number,
      user: l.user_id,
      user_name: l.user_name,
      extension: l.extension_id,
      extension_number: l.extension_number,
      label: l.label,
      credentials: { username: l.sip_username, password: sealer.open(l.sip_password_sealed), domain: l.sip_domain },
    })),
    buttons: buttonsOf(device, buttons),
    handsets: handsets.map((h) => ({ device: h, buttons: buttonsOf(h, buttons) })),
  }
}
