/**
 * Everything a configuration file is made from, read by the MAC the phone asks
 * with: the device, its account, its lines with their SIP credentials (for a DECT
 * base: the lines of all its handsets) and its effective buttons.
 */
import { asc, eq, inArray } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { statement } from '../../db/statements'
import { accounts, deviceLines, devices, extensions, users } from '../../db/schema'
import { effectiveButtons, type EffectiveButton } from './buttons'
import { modelOf, normaliseMac, type PhoneModel } from './catalogue'
import type { DeviceRow } from './records'
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

export interface ProvisioningView {
  device: DeviceRow
  /** What the phone must present to fetch its file; undefined only for a device made without (none today). */
  provisioning_credentials?: { username: string; password: string }
  model: PhoneModel
  account: typeof accounts.$inferSelect
  lines: ProvisionedLine[]
  buttons: EffectiveButton[]
  /** DECT bases: their handsets, each with its own buttons. */
  handsets: { device: DeviceRow; buttons: EffectiveButton[] }[]
}

const LOGIN_BY_MAC = statement<{ id: string; account_id: string; provisioning_username: string | null; provisioning_password_sealed: string | null }>(
  'select id, account_id, provisioning_username, provisioning_password_sealed from devices where mac_address = $1',
)

/**
 * What a phone asking for its file must prove: the device's provisioning login, and
 * its account (phones fetch under their account's URL). One statement, because
 * every authenticated fetch starts here.
 */
export async function provisioningLogin(db: Db, mac: string) {
  const normal = normaliseMac(mac)
  if (!normal) return undefined
  const [row] = await LOGIN_BY_MAC.rows(db, [normal])
  if (!row?.provisioning_username || !row.provisioning_password_sealed) return undefined
  const sealer = await credentialSealer(db)
  return {
    deviceId: row.id,
    accountId: row.account_id,
    credentials: { username: row.provisioning_username, password: sealer.open(row.provisioning_password_sealed) },
  }
}

/** The device with this MAC (any accepted spelling), or undefined when none is registered. */
export async function deviceForProvisioning(db: Db, mac: string): Promise<ProvisioningView | undefined> {
  const normal = normaliseMac(mac)
  if (!normal) return undefined
  const [device] = await db.select().from(devices).where(eq(devices.macAddress, normal))
  if (!device) return undefined
  const [account] = await db.select().from(accounts).where(eq(accounts.id, device.accountId))
  const handsets =
    device.type === 'dect_base' ? await db.select().from(devices).where(eq(devices.baseId, device.id)).orderBy(asc(devices.createdAt), asc(devices.id)) : []
  const lineRows = await db
    .select()
    .from(deviceLines)
    .where(inArray(deviceLines.deviceId, [device.id, ...handsets.map((h) => h.id)]))
    .orderBy(...(device.type === 'dect_base' ? [asc(deviceLines.createdAt), asc(deviceLines.id)] : [asc(deviceLines.lineNumber)]))
  const sealer = await credentialSealer(db)
  const userIds = [...new Set(lineRows.flatMap((l) => (l.userId ? [l.userId] : [])))]
  const extIds = [...new Set(lineRows.flatMap((l) => (l.extensionId ? [l.extensionId] : [])))]
  const names = new Map(
    userIds.length ? (await db.select({ id: users.id, name: users.name }).from(users).where(inArray(users.id, userIds))).map((u) => [u.id, u.name]) : [],
  )
  const numbers = new Map(
    extIds.length
      ? (await db.select({ id: extensions.id, number: extensions.number }).from(extensions).where(inArray(extensions.id, extIds))).map((e) => [e.id, e.number])
      : [],
  )
  return {
    device,
    ...(device.provisioningUsername && device.provisioningPasswordSealed
      ? { provisioning_credentials: { username: device.provisioningUsername, password: sealer.open(device.provisioningPasswordSealed) } }
      : {}),
    model: modelOf(device),
    account: account!,
    lines: lineRows.map((l, i) => ({
      id: l.id,
      device: l.deviceId,
      line_number: l.lineNumber,
      slot: device.type === 'dect_base' ? i + 1 : l.lineNumber,
      user: l.userId,
      user_name: l.userId ? (names.get(l.userId) ?? null) : null,
      extension: l.extensionId,
      extension_number: l.extensionId ? (numbers.get(l.extensionId) ?? null) : null,
      label: l.label,
      credentials: { username: l.sipUsername, password: sealer.open(l.sipPasswordSealed), domain: l.sipDomain },
    })),
    buttons: await effectiveButtons(db, device),
    handsets: await Promise.all(handsets.map(async (h) => ({ device: h, buttons: await effectiveButtons(db, h) }))),
  }
}
