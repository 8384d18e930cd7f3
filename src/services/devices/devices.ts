/**
 * Devices of an account: desk phones, DECT bases and their handsets. A device
 * starts pending_sync and goes back to it whenever its configuration changes (or
 * check-sync asks the phone to reload); the phone's fetch of its file moves it on.
 */
import { and, asc, eq, inArray } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { accounts, devices, deviceUsers, locations, provisioningEvents } from '../../db/schema'
import { conflict, notFound, ValidationError, type FieldDetails } from '../../errors'
import { checkPlainText } from './plain-text'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { isUserOfAccount } from '../accounts/users'
import type { Deps } from '../deps'
import { templateForDevice } from './buttons'
import { type DeviceType, modelOf, normaliseMac, phoneModel } from './catalogue'
import { checkDeskphoneLines, insertLines, type LineInput } from './lines'
import { credentialSealer, newProvisioningCredentials } from './sip-credentials'
import { DEVICE_ACTOR, type DeviceRow, type DeviceUserRow, getDevice, markConfigChanged, PENDING_SYNC, tellDevice } from './records'

export interface DeviceInput {
  vendor: string
  model: string
  mac_address?: string
  name?: string | null
  location?: string | null
  /** Omitted: the account's default_button_template when it fits; null: none. */
  button_template?: string | null
  lines?: LineInput[]
}

const macTaken = (mac: string) => conflict(`A device with MAC address ${mac} is already registered.`, 'mac_address_taken')

async function isLocationOfAccount(db: Db, accountId: string, id: string) {
  const [row] = await db
    .select({ id: locations.id })
    .from(locations)
    .where(and(eq(locations.accountId, accountId), eq(locations.id, id)))
  return row !== undefined
}

async function accountDefaultTemplate(db: Db, accountId: string): Promise<string | null> {
  const [row] = await db.select({ t: accounts.defaultButtonTemplate }).from(accounts).where(eq(accounts.id, accountId))
  return row?.t ?? null
}

/**
 * Creates a device of `type`. Everything is checked before anything is written:
 * vendor and model (catalogue), MAC (form, then uniqueness), location, template,
 * lines; all field problems are reported together.
 */
export async function createDevice(tx: Db, deps: Deps, accountId: string, type: DeviceType, input: DeviceInput, base?: DeviceRow) {
  const model = phoneModel(base && !input.vendor ? base.vendor : input.vendor, input.model, type)
  const details: FieldDetails = {}
  let mac: string | null = null
  if (type === 'dect_handset') {
    if (input.mac_address !== undefined) details.mac_address = 'a DECT handset has no MAC address of its own; it reaches the network through its base'
    if (base && model.vendor !== base.vendor) details.vendor = `must be ${base.vendor}, the vendor of the base`
  } else if (input.mac_address === undefined) details.mac_address = 'is required'
  else {
    mac = normaliseMac(input.mac_address) ?? null
    if (mac === null) details.mac_address = 'must be a unicast MAC address: 12 hex digits, optionally separated by colons or dashes'
  }
  checkPlainText(details, { name: input.name })
  if (input.location && !(await isLocationOfAccount(tx, accountId, input.location))) details.location = 'is not a location of this account'
  let templateId: string | null = null
  const shape = { type, vendor: model.vendor, model: model.model }
  if (input.button_template) {
    const r = await templateForDevice(tx, accountId, input.button_template, shape, 'button_template')
    if (r.error) Object.assign(details, r.error)
    else templateId = r.template.id
  } else if (input.button_template === undefined && type !== 'dect_base') {
    // New compatible deskphones and handsets inherit the account default; an incompatible one is left without.
    const dflt = await accountDefaultTemplate(tx, accountId)
    if (dflt) templateId = (await templateForDevice(tx, accountId, dflt, shape, 'button_template')).template?.id ?? null
  }
  const lines = input.lines ?? []
  if (lines.length > 0 && type !== 'deskphone') details.lines = 'only deskphones take lines here; a DECT handset gets its lines from its extensions'
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  if (type === 'deskphone') await checkDeskphoneLines(tx, { accountId, ...shape }, [], lines, (i) => `lines[${i}].`, 'lines')

  const now = deps.clock.now()
  // A handset fetches nothing itself: its base's file carries it.
  const login = type === 'dect_handset' ? undefined : newProvisioningCredentials()
  const sealer = login ? await credentialSealer(tx) : undefined
  const rows = await tx
    .insert(devices)
    .values({
      id: newId('device'),
      accountId,
      type,
      vendor: model.vendor,
      model: model.model,
      macAddress: mac,
      name: input.name ?? null,
      locationId: input.location ?? null,
      baseId: base?.id ?? null,
      buttonTemplateId: templateId,
      status: PENDING_SYNC,
      provisioningUsername: login?.username ?? null,
      provisioningPasswordSealed: login ? sealer!.seal(login.password) : null,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing()
    .returning()
  if (rows.length === 0) throw macTaken(mac!)
  const device = rows[0]!
  await insertLines(tx, deps, device, lines)
  if (base) await markConfigChanged(tx, deps, base)
  else await spawnDeviceActor(tx, deps, device)
  return device
}

/** A phone that fetches its file (a deskphone or a DECT base) gets its actor with the device, in the same transaction. */
async function spawnDeviceActor(tx: Db, deps: Deps, device: DeviceRow) {
  if (!deps.actorMessages) return
  const [owner] = await tx.select({ platformId: accounts.platformId, mode: accounts.mode }).from(accounts).where(eq(accounts.id, device.accountId))
  await deps.actorMessages.spawn(tx, DEVICE_ACTOR, device.id, {
    device_id: device.id,
    device_type: device.type,
    mac_address: device.macAddress,
    vendor: device.vendor,
    model: device.model,
    owner: { platformId: owner!.platformId, accountId: device.accountId, mode: owner!.mode },
  })
}

/** A handset joins a base while the base has room (its model's handset count). */
export async function createHandset(tx: Db, deps: Deps, accountId: string, baseId: string, input: Omit<DeviceInput, 'vendor'> & { vendor?: string }) {
  const base = await getDevice(tx, accountId, baseId, 'dect_base')
  // Lock the base: two concurrent additions must not both take its last handset slot.
  await tx.select({ id: devices.id }).from(devices).where(eq(devices.id, base.id)).for('update')
  const room = modelOf(base).handsets ?? 0
  const present = await tx.select({ id: devices.id }).from(devices).where(eq(devices.baseId, base.id))
  if (present.length >= room) throw new ValidationError({ model: `a ${base.vendor} ${base.model} takes ${room} handsets; it has ${present.length}` })
  return createDevice(tx, deps, accountId, 'dect_handset', { ...input, vendor: input.vendor ?? base.vendor }, base)
}

/** POST /v1/devices: any type; a handset names its base as a body field, so a bad base is that field's problem. */
export async function createAnyDevice(tx: Db, deps: Deps, accountId: string, input: DeviceInput & { type: DeviceType; base?: string }) {
  const { type, base, ...rest } = input
  if (type === 'dect_handset' && !base) throw new ValidationError({ base: 'is required for a DECT handset' })
  if (type !== 'dect_handset' && base) throw new ValidationError({ base: 'only DECT handsets have a base' })
  if (type !== 'dect_handset') return createDevice(tx, deps, accountId, type, rest)
  const [b] = await tx
    .select({ id: devices.id })
    .from(devices)
    .where(and(eq(devices.accountId, accountId), eq(devices.id, base!), eq(devices.type, 'dect_base')))
  if (!b) throw new ValidationError({ base: 'is not a DECT base of this account' })
  return createHandset(tx, deps, accountId, b.id, rest)
}

export function listDevices(db: Db, accountId: string, filters: { type?: DeviceType; base?: string }, page: PageRequest) {
  const conds = [eq(devices.accountId, accountId)]
  if (filters.type) conds.push(eq(devices.type, filters.type))
  if (filters.base) conds.push(eq(devices.baseId, filters.base))
  return keysetPage<DeviceRow>(db, devices, and(...conds), page)
}

export interface DeviceUpdate {
  name?: string | null
  location?: string | null
  button_template?: string | null
  status?: typeof PENDING_SYNC
}

/** Any change of a device's configuration sets it back to pending_sync: the phone has to fetch its file again. */
export async function updateDevice(tx: Db, deps: Deps, accountId: string, id: string, input: DeviceUpdate, type?: DeviceType) {
  const device = await getDevice(tx, accountId, id, type)
  const details: FieldDetails = {}
  const set: Partial<typeof devices.$inferInsert> = { updatedAt: deps.clock.now(), status: PENDING_SYNC }
  checkPlainText(details, { name: input.name })
  if (input.name !== undefined) set.name = input.name
  if (input.location !== undefined) {
    if (input.location !== null && !(await isLocationOfAccount(tx, accountId, input.location))) details.location = 'is not a location of this account'
    else set.locationId = input.location
  }
  if (input.button_template !== undefined) {
    if (input.button_template === null) set.buttonTemplateId = null
    else if (device.type === 'dect_base') details.button_template = 'a DECT base has no keys; give templates to its handsets'
    else {
      const r = await templateForDevice(tx, accountId, input.button_template, device, 'button_template')
      if (r.error) Object.assign(details, r.error)
      else set.buttonTemplateId = r.template.id
    }
  }
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const [row] = await tx.update(devices).set(set).where(eq(devices.id, id)).returning()
  await markConfigChanged(tx, deps, row!)
  return row!
}

/** Deleting a base deletes its handsets; lines, overrides and assignments go with their device. */
export async function deleteDevice(tx: Db, deps: Pick<Deps, 'clock' | 'actorMessages'>, accountId: string, id: string, type?: DeviceType) {
  const device = await getDevice(tx, accountId, id, type)
  await tx.delete(devices).where(eq(devices.id, device.id))
  if (device.baseId) await markConfigChanged(tx, deps, { id: device.baseId, baseId: null })
  // A base's handsets went with it (cascade); their actor is the base's.
  else await tellDevice(tx, deps, device.id, { type: 'REMOVE', at: deps.clock.now().toISOString() }, '$remove')
  return device
}

/**
 * check-sync asks the phone to reload its configuration: the device is marked
 * pending_sync and the request recorded; the device actor (told in this transaction)
 * has the media role send a registered phone a SIP NOTIFY.
 */
export async function requestCheckSync(tx: Db, deps: Deps, accountId: string, id: string) {
  await getDevice(tx, accountId, id)
  const now = deps.clock.now()
  const [row] = await tx.update(devices).set({ status: PENDING_SYNC, checkSyncRequestedAt: now, updatedAt: now }).where(eq(devices.id, id)).returning()
  await recordProvisioningEvent(tx, deps, { accountId, deviceId: id, type: 'check_sync_requested' })
  // A handset reloads through its base.
  await tellDevice(tx, deps, row!.baseId ?? id, { type: 'CHECK_SYNC', at: now.toISOString() }, '$check_sync')
  return row!
}

export async function usersOfDevices(db: Db, deviceIds: string[]): Promise<Map<string, DeviceUserRow[]>> {
  const out = new Map<string, DeviceUserRow[]>(deviceIds.map((id) => [id, []]))
  if (deviceIds.length === 0) return out
  const rows = await db.select().from(deviceUsers).where(inArray(deviceUsers.deviceId, deviceIds)).orderBy(asc(deviceUsers.createdAt), asc(deviceUsers.id))
  for (const r of rows) out.get(r.deviceId)?.push(r)
  return out
}

export function listDeviceUsers(db: Db, deviceId: string, page: PageRequest) {
  return keysetPage<DeviceUserRow>(db, deviceUsers, eq(deviceUsers.deviceId, deviceId), page)
}

export async function assignUser(tx: Db, deps: Deps, accountId: string, deviceId: string, userId: string) {
  const device = await getDevice(tx, accountId, deviceId)
  if (device.type === 'dect_base') throw new ValidationError({ user: 'a DECT base is not anyone’s phone; assign users to its handsets' })
  if (!(await isUserOfAccount(tx, accountId, userId))) throw new ValidationError({ user: 'is not a user of this account' })
  const rows = await tx
    .insert(deviceUsers)
    .values({ id: newId('deviceUser'), accountId, deviceId, userId, createdAt: deps.clock.now() })
    .onConflictDoNothing()
    .returning()
  if (rows.length === 0) throw conflict('The user is already assigned to this device.', 'device_user_exists')
  return rows[0]!
}

export async function unassignUser(tx: Db, accountId: string, deviceId: string, userId: string) {
  await getDevice(tx, accountId, deviceId)
  const rows = await tx
    .delete(deviceUsers)
    .where(and(eq(deviceUsers.deviceId, deviceId), eq(deviceUsers.userId, userId)))
    .returning()
  if (rows.length === 0) throw notFound('device_user', userId)
  return rows[0]!
}

export type ProvisioningEventRow = typeof provisioningEvents.$inferSelect
export type ProvisioningEventType = 'provisioned' | 'config_fetched' | 'provisioning_failed' | 'check_sync_requested'

/** One entry of a device's provisioning history (provisioning records fetches and failures; check-sync its requests). */
export async function recordProvisioningEvent(
  tx: Db,
  deps: Pick<Deps, 'clock'>,
  e: { accountId: string; deviceId: string; type: ProvisioningEventType; errorCode?: string | null; ipAddress?: string | null; userAgent?: string | null },
) {
  const [row] = await tx
    .insert(provisioningEvents)
    .values({
      id: newId('provisioningEvent'),
      accountId: e.accountId,
      deviceId: e.deviceId,
      type: e.type,
      errorCode: e.errorCode ?? null,
      ipAddress: e.ipAddress ?? null,
      userAgent: e.userAgent ?? null,
      createdAt: deps.clock.now(),
    })
    .returning()
  return row!
}

export function provisioningEventView(row: ProvisioningEventRow) {
  return {
    id: row.id,
    object: 'provisioning_event' as const,
    device: row.deviceId,
    type: row.type as ProvisioningEventType,
    error_code: row.errorCode,
    ip_address: row.ipAddress,
    user_agent: row.userAgent,
    created_at: row.createdAt.toISOString(),
  }
}

export function listProvisioningEvents(db: Db, deviceId: string, page: PageRequest) {
  return keysetPage<ProvisioningEventRow>(db, provisioningEvents, eq(provisioningEvents.deviceId, deviceId), page)
}
