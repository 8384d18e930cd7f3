/**
 * Button templates (a layout of programmable keys for one vendor, optionally a few
 * of its models), their buttons, and per-device overrides. A device's effective
 * buttons are its template's, replaced key by key by its overrides, limited to the
 * keys its model has.
 */
import { and, asc, eq, inArray, or, sql } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { isUniqueViolation } from '../../db/errors'
import { accounts, buttonOverrides, buttonTemplates, devices, templateButtons } from '../../db/schema'
import { conflict, notFound, ValidationError, type FieldDetails } from '../../errors'
import { checkPlainText } from './plain-text'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { usersOfAccount } from '../accounts/users'
import { modelOf, PHONE_MODELS, phoneModel } from './catalogue'
import { type ConfigChangeDeps, type DeviceRow, getDevice, markConfigChanged } from './records'

export type TemplateRow = typeof buttonTemplates.$inferSelect
export type ButtonRow = typeof templateButtons.$inferSelect
export type OverrideRow = typeof buttonOverrides.$inferSelect

export const BUTTON_TYPES = ['line', 'speed_dial', 'blf', 'park', 'voicemail', 'dnd', 'transfer', 'none'] as const
export type ButtonType = (typeof BUTTON_TYPES)[number]

export interface ButtonInput {
  key: number
  type: ButtonType
  value?: string | null
  label?: string | null
}

export function templateView(row: TemplateRow, extra: { buttons?: ButtonRow[]; compatible?: boolean } = {}) {
  return {
    id: row.id,
    object: 'button_template' as const,
    account: row.accountId,
    name: row.name,
    vendor: row.vendor,
    models: row.models,
    ...(extra.compatible !== undefined ? { compatible: extra.compatible } : {}),
    ...(extra.buttons ? { buttons: { object: 'list' as const, data: extra.buttons.map(buttonView) } } : {}),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export function buttonView(row: ButtonRow) {
  return {
    id: row.id,
    object: 'button' as const,
    template: row.templateId,
    key: row.key,
    type: row.type as ButtonType,
    value: row.value,
    label: row.label,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export function overrideView(row: OverrideRow) {
  return {
    id: row.id,
    object: 'button_override' as const,
    device: row.deviceId,
    key: row.key,
    type: row.type as ButtonType,
    value: row.value,
    label: row.label,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

/** What a button's value must be, by type; `prefix` names the field path in details. */
function checkButton(b: ButtonInput, maxKeys: number, where: string, details: FieldDetails) {
  checkPlainText(details, { [`${where}label`]: b.label })
  if (b.key > maxKeys)
    details[`${where}key`] = maxKeys === 0 ? 'this device has no programmable keys' : `must be 1 to ${maxKeys}: the model has ${maxKeys} keys`
  const value = b.value ?? null
  switch (b.type) {
    case 'line':
      if (value === null || !/^[1-9][0-9]?$/.test(value)) details[`${where}value`] = 'a line button needs the line number (1, 2, ...)'
      break
    case 'speed_dial':
    case 'blf':
      if (value === null || !/^(\+?[0-9*#]{1,20}|usr_[0-9a-z]{1,40})$/.test(value))
        details[`${where}value`] = `a ${b.type} button needs a number, an extension or a user ID`
      break
    case 'park':
      if (value !== null && !/^[0-9]{1,10}$/.test(value)) details[`${where}value`] = 'a park button takes an optional slot number'
      break
    default:
      if (value !== null) details[`${where}value`] = `a ${b.type} button takes no value`
  }
}

/** A speed dial or BLF naming a user must name one of the account's. */
async function checkUserValues(db: Db, accountId: string, items: { b: ButtonInput; where: string }[], details: FieldDetails) {
  const named = items.filter((i) => i.b.value?.startsWith('usr_'))
  if (named.length === 0) return
  const known = await usersOfAccount(
    db,
    accountId,
    named.map((i) => i.b.value!),
  )
  for (const i of named) if (!known.has(i.b.value!)) details[`${i.where}value`] = 'is not a user of this account'
}

/** Keys of the largest model a template fits (a button beyond them would exist on no phone). */
function templateKeys(t: { vendor: string; models: string[] }): number {
  const fits = PHONE_MODELS.filter((p) => p.vendor === t.vendor && p.keys > 0 && (t.models.length === 0 || t.models.includes(p.model)))
  return Math.max(0, ...fits.map((p) => p.keys))
}

/** Catalogue names of the given models, each checked to be a keyed model of the vendor. */
function resolveModels(vendor: string, models: string[], details: FieldDetails): string[] {
  const out: string[] = []
  models.forEach((name, i) => {
    for (const type of ['deskphone', 'dect_handset'] as const) {
      try {
        out.push(phoneModel(vendor, name, type).model)
        return
      } catch {}
    }
    details[`models[${i}]`] = `is not a ${vendor} deskphone or DECT handset model`
  })
  return [...new Set(out)]
}

/** A device takes a template when it has keys and is of the template's vendor and (when the template names models) one of its models. */
export function templateFits(t: { vendor: string; models: string[] }, d: { type: string; vendor: string; model: string }): boolean {
  return d.type !== 'dect_base' && t.vendor === d.vendor && (t.models.length === 0 || t.models.includes(d.model))
}

export async function getTemplate(db: Db, accountId: string, id: string): Promise<TemplateRow> {
  const [row] = await db
    .select()
    .from(buttonTemplates)
    .where(and(eq(buttonTemplates.accountId, accountId), eq(buttonTemplates.id, id)))
  if (!row) throw notFound('button_template', id)
  return row
}

/** A template named in a request field: a template of the account that fits the device, or a 400 naming the field. */
export async function templateForDevice(db: Db, accountId: string, id: string, device: { type: string; vendor: string; model: string }, field: string) {
  const [row] = await db
    .select()
    .from(buttonTemplates)
    .where(and(eq(buttonTemplates.accountId, accountId), eq(buttonTemplates.id, id)))
  if (!row) return { error: { [field]: 'is not a button template of this account' } }
  if (!templateFits(row, device))
    return {
      error: { [field]: `is a ${row.vendor} template for ${row.models.join(', ') || 'every model'}; it does not fit a ${device.vendor} ${device.model}` },
    }
  return { template: row }
}

export async function buttonsOf(db: Db, templateId: string): Promise<ButtonRow[]> {
  return db.select().from(templateButtons).where(eq(templateButtons.templateId, templateId)).orderBy(asc(templateButtons.key))
}

/** GET of a template: with `forDevice`, whether that device can take it, and the expanded buttons limited to the keys its model has. */
export async function templateForRequest(db: Db, accountId: string, id: string, o: { forDevice?: string; withButtons: boolean }) {
  const template = await getTemplate(db, accountId, id)
  const device = o.forDevice ? await getDevice(db, accountId, o.forDevice).catch(() => undefined) : undefined
  if (o.forDevice && !device) throw new ValidationError({ for_device: 'is not a device of this account' })
  let buttons = o.withButtons ? await buttonsOf(db, template.id) : undefined
  if (device && buttons) buttons = buttons.filter((b) => b.key <= modelOf(device).keys)
  return { template, buttons, compatible: device ? templateFits(template, device) : undefined }
}

const keyTaken = (key: number) => conflict(`The template already has a button on key ${key}.`, 'button_key_taken')

export async function createTemplate(
  tx: Db,
  clock: Clock,
  accountId: string,
  input: { name: string; vendor: string; models?: string[]; buttons?: ButtonInput[] },
) {
  const vendor = input.vendor.toLowerCase()
  // An unknown vendor is unsupported_vendor; checked through the catalogue's own refusal.
  if (!PHONE_MODELS.some((p) => p.vendor === vendor)) phoneModel(input.vendor, '', 'deskphone')
  const details: FieldDetails = {}
  const models = resolveModels(vendor, input.models ?? [], details)
  const keys = templateKeys({ vendor, models })
  const buttons = input.buttons ?? []
  const seen = new Set<number>()
  buttons.forEach((b, i) => {
    checkButton(b, keys, `buttons[${i}].`, details)
    if (seen.has(b.key)) details[`buttons[${i}].key`] = `key ${b.key} appears twice`
    seen.add(b.key)
  })
  await checkUserValues(
    tx,
    accountId,
    buttons.map((b, i) => ({ b, where: `buttons[${i}].` })),
    details,
  )
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const now = clock.now()
  const [row] = await tx
    .insert(buttonTemplates)
    .values({ id: newId('buttonTemplate'), accountId, name: input.name, vendor, models, createdAt: now, updatedAt: now })
    .returning()
  const inserted = buttons.length
    ? await tx
        .insert(templateButtons)
        .values(
          buttons.map((b) => ({
            id: newId('templateButton'),
            templateId: row!.id,
            key: b.key,
            type: b.type,
            value: b.value ?? null,
            label: b.label ?? null,
            createdAt: now,
            updatedAt: now,
          })),
        )
        .returning()
    : []
  return { template: row!, buttons: inserted.sort((a, b) => a.key - b.key) }
}

export function listTemplates(db: Db, accountId: string, page: PageRequest) {
  return keysetPage<TemplateRow>(db, buttonTemplates, eq(buttonTemplates.accountId, accountId), page)
}

/** Devices using the template that a change of its models would no longer fit. */
async function devicesUsing(db: Db, templateId: string) {
  return db.select().from(devices).where(eq(devices.buttonTemplateId, templateId))
}

export async function updateTemplate(tx: Db, clock: Clock, accountId: string, id: string, input: { name?: string; models?: string[] }) {
  const current = await getTemplate(tx, accountId, id)
  const set: Partial<typeof buttonTemplates.$inferInsert> = { updatedAt: clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.models !== undefined) {
    const details: FieldDetails = {}
    const models = resolveModels(current.vendor, input.models, details)
    if (Object.keys(details).length > 0) throw new ValidationError(details)
    const next = { vendor: current.vendor, models }
    const misfits = (await devicesUsing(tx, id)).filter((d) => !templateFits(next, d))
    if (misfits.length > 0) {
      throw conflict(`Devices using this template would no longer fit it: ${misfits.map((d) => d.id).join(', ')}.`, 'button_template_in_use')
    }
    const keys = templateKeys(next)
    const beyond = (await buttonsOf(tx, id)).filter((b) => b.key > keys)
    if (beyond.length > 0)
      throw new ValidationError({ models: `these models have ${keys} keys; the template has buttons on keys ${beyond.map((b) => b.key).join(', ')}` })
    set.models = models
  }
  const [row] = await tx.update(buttonTemplates).set(set).where(eq(buttonTemplates.id, id)).returning()
  return row!
}

/** A template in use (by a device, or as the account default) is kept: deleting it would silently change phones' keys. */
export async function deleteTemplate(tx: Db, accountId: string, id: string) {
  await getTemplate(tx, accountId, id)
  const [usedBy] = await tx.select({ id: devices.id }).from(devices).where(eq(devices.buttonTemplateId, id)).limit(1)
  if (usedBy) throw conflict(`Devices use this template (${usedBy.id}); give them another first.`, 'button_template_in_use')
  const [dflt] = await tx
    .select({ id: accounts.id })
    .from(accounts)
    .where(and(eq(accounts.id, accountId), eq(accounts.defaultButtonTemplate, id)))
  if (dflt) throw conflict('This template is the account default_button_template; change the default first.', 'button_template_in_use')
  await tx.delete(buttonTemplates).where(eq(buttonTemplates.id, id))
}

export function listButtons(db: Db, templateId: string, page: PageRequest) {
  return keysetPage<ButtonRow>(db, templateButtons, eq(templateButtons.templateId, templateId), page)
}

export async function getButton(db: Db, templateId: string, id: string): Promise<ButtonRow> {
  const [row] = await db
    .select()
    .from(templateButtons)
    .where(and(eq(templateButtons.templateId, templateId), eq(templateButtons.id, id)))
  if (!row) throw notFound('button', id)
  return row
}

export async function createButton(tx: Db, deps: ConfigChangeDeps, accountId: string, templateId: string, input: ButtonInput) {
  const t = await getTemplate(tx, accountId, templateId)
  const details: FieldDetails = {}
  checkButton(input, templateKeys(t), '', details)
  await checkUserValues(tx, accountId, [{ b: input, where: '' }], details)
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const now = deps.clock.now()
  const rows = await tx
    .insert(templateButtons)
    .values({
      id: newId('templateButton'),
      templateId,
      key: input.key,
      type: input.type,
      value: input.value ?? null,
      label: input.label ?? null,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing()
    .returning()
  if (rows.length === 0) throw keyTaken(input.key)
  await touchTemplateDevices(tx, deps, templateId)
  return rows[0]!
}

export async function updateButton(tx: Db, deps: ConfigChangeDeps, accountId: string, templateId: string, id: string, input: Partial<ButtonInput>) {
  const t = await getTemplate(tx, accountId, templateId)
  const current = await getButton(tx, templateId, id)
  const next: ButtonInput = {
    key: input.key ?? current.key,
    type: input.type ?? (current.type as ButtonType),
    // A new type brings its own value rules: the old value is not carried over to it.
    value: input.value !== undefined ? input.value : input.type !== undefined && input.type !== current.type ? null : current.value,
    label: input.label !== undefined ? input.label : current.label,
  }
  const details: FieldDetails = {}
  checkButton(next, templateKeys(t), '', details)
  await checkUserValues(tx, accountId, [{ b: next, where: '' }], details)
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  try {
    const [row] = await tx
      .update(templateButtons)
      .set({ key: next.key, type: next.type, value: next.value ?? null, label: next.label ?? null, updatedAt: deps.clock.now() })
      .where(eq(templateButtons.id, id))
      .returning()
    await touchTemplateDevices(tx, deps, templateId)
    return row!
  } catch (e) {
    if (isUniqueViolation(e)) throw keyTaken(next.key)
    throw e
  }
}

export async function deleteButton(tx: Db, deps: ConfigChangeDeps, accountId: string, templateId: string, id: string) {
  await getTemplate(tx, accountId, templateId)
  await getButton(tx, templateId, id)
  await tx.delete(templateButtons).where(eq(templateButtons.id, id))
  await touchTemplateDevices(tx, deps, templateId)
}

/** Phones using a changed template (and the bases of handsets using it) must fetch their configuration again. */
async function touchTemplateDevices(tx: Db, deps: ConfigChangeDeps, templateId: string) {
  const using = await tx.select({ id: devices.id, baseId: devices.baseId }).from(devices).where(eq(devices.buttonTemplateId, templateId))
  for (const d of using) await markConfigChanged(tx, deps, d)
}

export function listOverrides(db: Db, deviceId: string, page: PageRequest) {
  return keysetPage<OverrideRow>(db, buttonOverrides, eq(buttonOverrides.deviceId, deviceId), page)
}

/** An override replaces whatever the template puts on its key; a second override of the same key replaces the first. */
export async function putOverride(tx: Db, deps: ConfigChangeDeps, device: DeviceRow, input: ButtonInput) {
  const details: FieldDetails = {}
  checkButton(input, modelOf(device).keys, '', details)
  await checkUserValues(tx, device.accountId, [{ b: input, where: '' }], details)
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  const now = deps.clock.now()
  const [row] = await tx
    .insert(buttonOverrides)
    .values({
      id: newId('buttonOverride'),
      deviceId: device.id,
      key: input.key,
      type: input.type,
      value: input.value ?? null,
      label: input.label ?? null,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoUpdate({
      target: [buttonOverrides.deviceId, buttonOverrides.key],
      set: { type: input.type, value: input.value ?? null, label: input.label ?? null, updatedAt: now },
    })
    .returning()
  await markConfigChanged(tx, deps, device)
  return row!
}

export async function deleteOverride(tx: Db, deps: ConfigChangeDeps, accountId: string, deviceId: string, id: string) {
  const device = await getDevice(tx, accountId, deviceId)
  const rows = await tx
    .delete(buttonOverrides)
    .where(and(eq(buttonOverrides.deviceId, deviceId), eq(buttonOverrides.id, id)))
    .returning()
  if (rows.length === 0) throw notFound('button_override', id)
  await markConfigChanged(tx, deps, device)
}

export interface EffectiveButton {
  key: number
  type: ButtonType
  value: string | null
  label: string | null
  source: 'template' | 'override'
}

/** Template buttons, overridden per key, on the keys the model has; an override of type `none` blanks its key. */
export function mergeButtons(keys: number, template: ButtonRow[], overrides: OverrideRow[]): EffectiveButton[] {
  const byKey = new Map<number, EffectiveButton>()
  for (const b of template) byKey.set(b.key, { key: b.key, type: b.type as ButtonType, value: b.value, label: b.label, source: 'template' })
  for (const o of overrides) byKey.set(o.key, { key: o.key, type: o.type as ButtonType, value: o.value, label: o.label, source: 'override' })
  return [...byKey.values()].filter((b) => b.key <= keys && b.type !== 'none').sort((a, b) => a.key - b.key)
}

export async function effectiveButtons(db: Db, device: DeviceRow): Promise<EffectiveButton[]> {
  const template = device.buttonTemplateId ? await buttonsOf(db, device.buttonTemplateId) : []
  const overrides = await db.select().from(buttonOverrides).where(eq(buttonOverrides.deviceId, device.id))
  return mergeButtons(modelOf(device).keys, template, overrides)
}

/** Templates of the account the device can take (its vendor; its model or every model). */
export function listCompatibleTemplates(db: Db, accountId: string, device: DeviceRow, page: PageRequest) {
  const fits =
    device.type === 'dect_base'
      ? sql`false`
      : and(
          eq(buttonTemplates.accountId, accountId),
          eq(buttonTemplates.vendor, device.vendor),
          or(sql`cardinality(${buttonTemplates.models}) = 0`, sql`${device.model} = any(${buttonTemplates.models})`),
        )
  return keysetPage<TemplateRow>(db, buttonTemplates, fits, page)
}

/** Template buttons of several templates at once (list expansion). */
export async function buttonsOfTemplates(db: Db, ids: string[]): Promise<Map<string, ButtonRow[]>> {
  const out = new Map<string, ButtonRow[]>(ids.map((id) => [id, []]))
  if (ids.length === 0) return out
  const rows = await db.select().from(templateButtons).where(inArray(templateButtons.templateId, ids)).orderBy(asc(templateButtons.key))
  for (const r of rows) out.get(r.templateId)?.push(r)
  return out
}
