/**
 * Device lines: the SIP accounts a phone registers. A deskphone has up to its
 * model's line count; a DECT handset gets one line per extension it carries, and
 * the lines of all handsets of a base share the base's SIP account count. Each
 * line gets its SIP credentials when it is made.
 */
import { and, asc, count, eq, inArray } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { deviceLines, devices, extensions } from '../../db/schema'
import { conflict, notFound, ValidationError, type FieldDetails } from '../../errors'
import { checkPlainText } from './plain-text'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { isUserOfAccount } from '../accounts/users'
import type { Deps } from '../deps'
import { modelOf } from './catalogue'
import { type DeviceRow, type LineRow, markConfigChanged } from './records'
import { credentialSealer, newCredentials, type Sealer } from './sip-credentials'

export interface LineInput {
  line_number?: number
  user?: string | null
  extension?: string | null
  label?: string | null
}

async function isExtensionOfAccount(db: Db, accountId: string, id: string) {
  const [row] = await db
    .select({ id: extensions.id })
    .from(extensions)
    .where(and(eq(extensions.accountId, accountId), eq(extensions.id, id)))
  return row !== undefined
}

/** Foreign or unknown users and extensions, as field details under `prefix`. */
export async function checkLineRefs(db: Db, accountId: string, input: LineInput, prefix: string, details: FieldDetails) {
  checkPlainText(details, { [`${prefix}label`]: input.label })
  if (input.user && !(await isUserOfAccount(db, accountId, input.user))) details[`${prefix}user`] = 'is not a user of this account'
  if (input.extension && !(await isExtensionOfAccount(db, accountId, input.extension))) details[`${prefix}extension`] = 'is not an extension of this account'
}

export async function linesOf(db: Db, deviceIds: string[]): Promise<Map<string, LineRow[]>> {
  const out = new Map<string, LineRow[]>(deviceIds.map((id) => [id, []]))
  if (deviceIds.length === 0) return out
  const rows = await db.select().from(deviceLines).where(inArray(deviceLines.deviceId, deviceIds)).orderBy(asc(deviceLines.lineNumber))
  for (const r of rows) out.get(r.deviceId)?.push(r)
  return out
}

const lineTaken = (n: number) => conflict(`Line ${n} is already in use on this device.`, 'device_line_exists')

/**
 * Inserts lines already checked against the model and the account. Numbers left
 * out take the lowest free ones.
 */
export async function insertLines(tx: Db, deps: Deps, device: DeviceRow, inputs: LineInput[]): Promise<LineRow[]> {
  if (inputs.length === 0) return []
  const sealer = await credentialSealer(tx)
  const used = new Set((await tx.select({ n: deviceLines.lineNumber }).from(deviceLines).where(eq(deviceLines.deviceId, device.id))).map((r) => r.n))
  for (const i of inputs) if (i.line_number !== undefined) used.add(i.line_number)
  let next = 1
  const now = deps.clock.now()
  const values = inputs.map((i) => {
    let n = i.line_number
    if (n === undefined) {
      while (used.has(next)) next++
      n = next
      used.add(n)
    }
    const c = newCredentials(deps.config.sipHost)
    return {
      id: newId('deviceLine'),
      accountId: device.accountId,
      deviceId: device.id,
      lineNumber: n,
      userId: i.user ?? null,
      extensionId: i.extension ?? null,
      label: i.label ?? null,
      sipUsername: c.username,
      sipPasswordSealed: sealer.seal(c.password),
      sipDomain: c.domain,
      createdAt: now,
      updatedAt: now,
    }
  })
  const rows = await tx.insert(deviceLines).values(values).onConflictDoNothing().returning()
  if (rows.length !== values.length) throw lineTaken(values.find((v) => !rows.some((r) => r.id === v.id))!.lineNumber)
  return rows.sort((a, b) => a.lineNumber - b.lineNumber)
}

/** Checks a batch of new deskphone lines (create with `lines`, or one added line): count, numbers, references. */
export async function checkDeskphoneLines(
  db: Db,
  device: { accountId: string; vendor: string; model: string },
  existing: number[],
  inputs: LineInput[],
  prefix: (i: number) => string,
  countField: string,
) {
  const model = modelOf(device)
  const details: FieldDetails = {}
  if (existing.length + inputs.length > model.lines) {
    details[countField] = `a ${model.vendor} ${model.model} has ${model.lines} lines; ${existing.length + inputs.length} would be in use`
  }
  const seen = new Set(existing)
  for (const [i, input] of inputs.entries()) {
    const n = input.line_number
    if (n !== undefined) {
      if (n > model.lines) details[`${prefix(i)}line_number`] = `must be 1 to ${model.lines}: a ${model.vendor} ${model.model} has ${model.lines} lines`
      else if (seen.has(n) && !existing.includes(n)) details[`${prefix(i)}line_number`] = `line ${n} appears twice`
      seen.add(n)
    }
    await checkLineRefs(db, device.accountId, input, prefix(i), details)
  }
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const clash = inputs.find((i) => i.line_number !== undefined && existing.includes(i.line_number))
  if (clash) throw lineTaken(clash.line_number!)
}

export async function addDeskphoneLine(tx: Db, deps: Deps, device: DeviceRow, input: LineInput): Promise<LineRow> {
  // Lock the phone: concurrent additions must not both take its last line, or the same free number.
  await tx.select({ id: devices.id }).from(devices).where(eq(devices.id, device.id)).for('update')
  const existing = (await tx.select({ n: deviceLines.lineNumber }).from(deviceLines).where(eq(deviceLines.deviceId, device.id))).map((r) => r.n)
  await checkDeskphoneLines(tx, device, existing, [input], () => '', 'line_number')
  const [row] = await insertLines(tx, deps, device, [input])
  await markConfigChanged(tx, deps, device)
  return row!
}

export function listLines(db: Db, deviceId: string, page: PageRequest) {
  return keysetPage<LineRow>(db, deviceLines, eq(deviceLines.deviceId, deviceId), page)
}

export async function getLine(db: Db, deviceId: string, id: string): Promise<LineRow> {
  const [row] = await db
    .select()
    .from(deviceLines)
    .where(and(eq(deviceLines.deviceId, deviceId), eq(deviceLines.id, id)))
  if (!row) throw notFound('device_line', id)
  return row
}

export async function updateLine(tx: Db, deps: Deps, device: DeviceRow, id: string, input: Omit<LineInput, 'line_number'>) {
  await getLine(tx, device.id, id)
  const details: FieldDetails = {}
  await checkLineRefs(tx, device.accountId, input, '', details)
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const set: Partial<typeof deviceLines.$inferInsert> = { updatedAt: deps.clock.now() }
  if (input.user !== undefined) set.userId = input.user
  if (input.extension !== undefined) set.extensionId = input.extension
  if (input.label !== undefined) set.label = input.label
  const [row] = await tx.update(deviceLines).set(set).where(eq(deviceLines.id, id)).returning()
  await markConfigChanged(tx, deps, device)
  return row!
}

export async function deleteLine(tx: Db, deps: Pick<Deps, 'clock' | 'actorMessages'>, device: DeviceRow, id: string) {
  await getLine(tx, device.id, id)
  await tx.delete(deviceLines).where(eq(deviceLines.id, id))
  await markConfigChanged(tx, deps, device)
}

export function handsetExtensionView(base: string, row: LineRow, sealer?: Sealer) {
  return {
    id: row.id,
    object: 'handset_extension' as const,
    base,
    handset: row.deviceId,
    extension: row.extensionId,
    line_number: row.lineNumber,
    label: row.label,
    ...(sealer ? { sip_credentials: { username: row.sipUsername, password: sealer.open(row.sipPasswordSealed), domain: row.sipDomain } } : {}),
    created_at: row.createdAt.toISOString(),
  }
}

/** A handset carries an extension as one of its lines; the base's SIP account count bounds all its handsets' lines together. */
export async function addHandsetExtension(tx: Db, deps: Deps, base: DeviceRow, handset: DeviceRow, input: { extension: string; label?: string | null }) {
  const details: FieldDetails = {}
  checkPlainText(details, { label: input.label })
  if (!(await isExtensionOfAccount(tx, base.accountId, input.extension))) details.extension = 'is not an extension of this account'
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const baseModel = modelOf(base)
  // Lock the base so that two concurrent additions cannot both take its last SIP account.
  await tx.select({ id: devices.id }).from(devices).where(eq(devices.id, base.id)).for('update')
  const [inUse] = await tx.select({ n: count() }).from(deviceLines).innerJoin(devices, eq(devices.id, deviceLines.deviceId)).where(eq(devices.baseId, base.id))
  if ((inUse?.n ?? 0) >= baseModel.lines) {
    throw new ValidationError({
      extension: `a ${baseModel.vendor} ${baseModel.model} has ${baseModel.lines} SIP accounts for all its handsets; all are in use`,
    })
  }
  const [dup] = await tx
    .select({ id: deviceLines.id })
    .from(deviceLines)
    .where(and(eq(deviceLines.deviceId, handset.id), eq(deviceLines.extensionId, input.extension)))
  if (dup) throw conflict('The extension is already on this handset.', 'device_line_exists')
  const [row] = await insertLines(tx, deps, handset, [{ extension: input.extension, label: input.label ?? null }])
  await markConfigChanged(tx, deps, handset)
  return row!
}

export async function handsetLineForExtension(db: Db, handsetId: string, extensionId: string): Promise<LineRow> {
  const [row] = await db
    .select()
    .from(deviceLines)
    .where(and(eq(deviceLines.deviceId, handsetId), eq(deviceLines.extensionId, extensionId)))
  if (!row) throw notFound('handset_extension', extensionId)
  return row
}
