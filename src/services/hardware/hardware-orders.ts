/**
 * Hardware orders: the rules a request checks before the order's actor hears of it
 * (catalog items that are sold, quantities, pre-assignment intents naming users,
 * MAC addresses and DECT bases of the account, the location), the row the actor
 * projects, and the fulfilment: each delivered desk phone, DECT base and handset
 * becomes a device of the account (accessories never do). The lifecycle itself is
 * the actor's machine (machines/hardware-order.ts, actors/hardware-orders/).
 */
import { newId } from '../../ids'
import { createHash } from 'node:crypto'
import { and, eq, inArray } from 'drizzle-orm'
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { devices, type HardwareOrderItemRow, hardwareOrders, locations } from '../../db/schema'
import { ApiError, type FieldDetails, notFound, ValidationError } from '../../errors'
import { keysetPage, type PageRequest } from '../../pagination'
import { usersOfAccount } from '../accounts/users'
import type { ActorMessages, Deps } from '../deps'
import { modelOf, normaliseMac } from '../devices/catalogue'
import { assignUser, createDevice, createHandset } from '../devices/devices'
import { type CatalogItem, catalogItem, catalogItemView, orderableItem } from './catalog'
import { type HardwareReviewer, sandboxReviewer } from './reviewer'

export type HardwareOrderRow = typeof hardwareOrders.$inferSelect
export type HardwareOrderStatusName = HardwareOrderRow['status']
type Mode = 'test' | 'live'

/** Orders still open (spec: a location with pending hardware orders cannot be deleted). */
export const PENDING: HardwareOrderStatusName[] = ['draft', 'submitted', 'approved']
const FINAL: HardwareOrderStatusName[] = ['rejected', 'fulfilled', 'cancelled']
export const isFinal = (s: HardwareOrderStatusName) => FINAL.includes(s)

/** Per line of a request, and per order. */
export const MAX_QUANTITY = 50
export const MAX_UNITS = 100
export const MAX_LINES = 20

export const newHardwareOrderId = () => newId('hardwareOrder')
const newItemId = () => newId('hardwareOrderItem')

/** The reviewer of a mode: the sandbox reviewer for sandbox accounts; live mode has none in this deployment. */
export function reviewerFor(mode: Mode): HardwareReviewer {
  if (mode === 'live') {
    throw new ApiError(502, 'No hardware supplier is configured for live accounts in this deployment.', 'hardware_supplier_unavailable')
  }
  return sandboxReviewer()
}

/** How many handsets a catalog item takes (a DECT base's room; 0 for anything else). */
function baseRoomOf(catalogId: string): number {
  const c = catalogItem(catalogId)
  return c?.device_type === 'dect_base' ? (modelOf({ vendor: c.vendor!, model: c.model }).handsets ?? 0) : 0
}

/** A line of a request: `quantity` units of a catalog item, each with the same intents. */
export interface ItemRequest {
  catalog_item: string
  quantity?: number
  user?: string | null
  mac_address?: string | null
  base?: string | null
}

export interface IntentRequest {
  user?: string | null
  mac_address?: string | null
  base?: string | null
}

/** Facts of the account the intents are checked against, read once per request. */
interface AccountFacts {
  users: Set<string>
  /** DECT bases of the account: vendor, handsets present, room. */
  bases: Map<string, { vendor: string; present: number; room: number }>
  /** MACs of the request already used by a device (service-wide). */
  takenMacs: Set<string>
}

async function accountFacts(db: Db, accountId: string, users: string[], bases: string[], macs: string[]): Promise<AccountFacts> {
  const found = await usersOfAccount(db, accountId, users)
  const baseRows = bases.length
    ? await db
        .select()
        .from(devices)
        .where(and(eq(devices.accountId, accountId), inArray(devices.id, [...new Set(bases)]), eq(devices.type, 'dect_base')))
    : []
  const baseMap = new Map<string, { vendor: string; present: number; room: number }>()
  for (const b of baseRows) {
    const present = await db.select({ id: devices.id }).from(devices).where(eq(devices.baseId, b.id))
    baseMap.set(b.id, { vendor: b.vendor, present: present.length, room: modelOf(b).handsets ?? 0 })
  }
  const taken = macs.length
    ? await db
        .select({ mac: devices.macAddress })
        .from(devices)
        .where(inArray(devices.macAddress, [...new Set(macs)]))
    : []
  return { users: found, bases: baseMap, takenMacs: new Set(taken.map((t) => t.mac!)) }
}

/** The intent's problems for one unit (or line) of catalog item `c`, under `prefix`. */
function intentProblems(c: CatalogItem, intent: IntentRequest, facts: AccountFacts, prefix: string, problems: FieldDetails, quantity = 1) {
  if (intent.user != null) {
    if (c.device_type === 'accessory') problems[`${prefix}user`] = 'an accessory never becomes a device, so it is meant for no user'
    else if (c.device_type === 'dect_base') problems[`${prefix}user`] = 'a DECT base is not anyone’s phone; give the user to a handset'
    else if (!facts.users.has(intent.user)) problems[`${prefix}user`] = 'is not a user of this account'
  }
  if (intent.mac_address != null) {
    const mac = normaliseMac(intent.mac_address)
    if (c.device_type !== 'deskphone' && c.device_type !== 'dect_base')
      problems[`${prefix}mac_address`] = `a ${c.device_type === 'accessory' ? 'accessory' : 'DECT handset'} has no MAC address of its own`
    else if (quantity > 1) problems[`${prefix}mac_address`] = 'names one unit: give it on a line of quantity 1, or per item afterwards'
    else if (!mac) problems[`${prefix}mac_address`] = 'must be a unicast MAC address: 12 hex digits, optionally separated by colons or dashes'
    else if (facts.takenMacs.has(mac)) problems[`${prefix}mac_address`] = `a device with MAC address ${mac} is already registered`
  }
  if (intent.base != null) {
    const b = facts.bases.get(intent.base)
    if (c.device_type !== 'dect_handset') problems[`${prefix}base`] = 'only DECT handsets join a base'
    else if (!b) problems[`${prefix}base`] = 'is not a DECT base of this account'
    else if (b.vendor !== c.vendor) problems[`${prefix}base`] = `must be a ${c.manufacturer} base`
  }
}

/**
 * Expands the request's lines into one item per unit, after every check (all
 * problems reported together, each under its field; nothing is stored on a problem):
 * catalog items that exist and are sold, at most MAX_UNITS units, intents that fit
 * the item's type and name users, bases and MACs of the account, and room on a DECT
 * base for every handset (a base of this order, or the one the line names).
 */
export async function itemsOfRequest(db: Db, accountId: string, lines: ItemRequest[]): Promise<HardwareOrderItemRow[]> {
  const problems: FieldDetails = {}
  const facts = await accountFacts(
    db,
    accountId,
    lines.flatMap((l) => (l.user ? [l.user] : [])),
    lines.flatMap((l) => (l.base ? [l.base] : [])),
    lines.flatMap((l) => (l.mac_address ? [normaliseMac(l.mac_address) ?? ''] : [])).filter(Boolean),
  )
  const units = lines.reduce((n, l) => n + (l.quantity ?? 1), 0)
  if (units > MAX_UNITS) problems.items = `at most ${MAX_UNITS} units per order; this one has ${units}`
  const items: HardwareOrderItemRow[] = []
  const macs = new Map<string, number>()
  let baseRoom = 0
  let looseHandsets = 0
  const joining = new Map<string, number>()
  lines.forEach((l, i) => {
    const prefix = `items[${i}].`
    const c = orderableItem(l.catalog_item, `${prefix}catalog_item`, problems)
    if (!c) return
    const q = l.quantity ?? 1
    intentProblems(c, l, facts, prefix, problems, q)
    const mac = l.mac_address ? normaliseMac(l.mac_address) : undefined
    if (mac) {
      if (macs.has(mac)) problems[`${prefix}mac_address`] = `repeats the MAC address of items[${macs.get(mac)}]`
      macs.set(mac, i)
    }
    baseRoom += q * baseRoomOf(c.id)
    if (c.device_type === 'dect_handset') {
      if (l.base) joining.set(l.base, (joining.get(l.base) ?? 0) + q)
      else looseHandsets += q
    }
    for (let k = 0; k < q; k++) {
      items.push({
        id: newItemId(),
        catalog_item: c.id,
        device_type: c.device_type,
        user: l.user ?? null,
        mac_address: mac ?? null,
        base: l.base ?? null,
        device: null,
      })
    }
  })
  if (looseHandsets > baseRoom) {
    const i = lines.findIndex((l) => catalogItem(l.catalog_item)?.device_type === 'dect_handset' && !l.base)
    problems[`items[${i}].base`] =
      `is required: the order's DECT bases take ${baseRoom} handsets and it has ${looseHandsets} without a base; name an existing DECT base of the account, or order a base`
  }
  for (const [base, n] of joining) {
    const b = facts.bases.get(base)
    if (b && b.present + n > b.room) {
      const i = lines.findIndex((l) => l.base === base)
      problems[`items[${i}].base`] = `the base takes ${b.room} handsets; it has ${b.present} and this order adds ${n}`
    }
  }
  if (Object.keys(problems).length > 0) throw new ValidationError(problems)
  return items
}

/** The intent of one item, checked (400 with the field's problem; nothing changes on a problem); the item as it will be. */
export async function checkIntent(db: Db, accountId: string, item: HardwareOrderItemRow, order: HardwareOrderItemRow[], intent: IntentRequest) {
  const c = catalogItem(item.catalog_item)!
  const mac = intent.mac_address ? normaliseMac(intent.mac_address) : undefined
  const facts = await accountFacts(db, accountId, intent.user ? [intent.user] : [], intent.base ? [intent.base] : [], mac ? [mac] : [])
  const problems: FieldDetails = {}
  intentProblems(c, intent, facts, '', problems)
  if (mac && order.some((o) => o.id !== item.id && o.mac_address === mac)) problems.mac_address = 'is the MAC address of another item of this order'
  if (intent.base != null && intent.base !== item.base) {
    const b = facts.bases.get(intent.base)
    const already = order.filter((o) => o.id !== item.id && o.base === intent.base).length
    if (b && b.present + already + 1 > b.room) problems.base = `the base takes ${b.room} handsets; it has ${b.present} and this order adds ${already + 1}`
  }
  if (intent.base === null && item.base !== null && c.device_type === 'dect_handset') {
    const room = order.reduce((n, o) => n + baseRoomOf(o.catalog_item), 0)
    const loose = order.filter((o) => o.id !== item.id && o.device_type === 'dect_handset' && o.base === null).length + 1
    if (loose > room) problems.base = `is required: the order's DECT bases take ${room} handsets`
  }
  if (Object.keys(problems).length > 0) throw new ValidationError(problems)
  return {
    ...(intent.user !== undefined ? { user: intent.user } : {}),
    ...(mac !== undefined ? { mac_address: mac } : intent.mac_address === null ? { mac_address: null } : {}),
    ...(intent.base !== undefined ? { base: intent.base } : {}),
  }
}

/** The location of an order: one of the account's (400 under `location` otherwise). */
export async function checkLocation(db: Db, accountId: string, id: string): Promise<void> {
  const [row] = await db
    .select({ id: locations.id })
    .from(locations)
    .where(and(eq(locations.accountId, accountId), eq(locations.id, id)))
  if (!row) throw new ValidationError({ location: 'is not a location of this account' })
}

export interface HardwareOrderState {
  status: HardwareOrderStatusName
  items: HardwareOrderItemRow[]
  rejection_reason: string | null
  updated_at: string
}

export const stateOfRow = (row: HardwareOrderRow): HardwareOrderState => ({
  status: row.status,
  items: row.items,
  rejection_reason: row.rejectionReason,
  updated_at: row.updatedAt.toISOString(),
})

/** Users named by the items that still exist (an intent for a user deleted since shows null). */
export async function liveUsers(db: Db, accountId: string, rows: { items: HardwareOrderItemRow[] }[]): Promise<Set<string>> {
  return usersOfAccount(
    db,
    accountId,
    rows.flatMap((r) => r.items.flatMap((i) => (i.user ? [i.user] : []))),
  )
}

export function hardwareOrderView(
  row: Pick<HardwareOrderRow, 'id' | 'createdAt' | 'locationId' | 'reference'>,
  state: HardwareOrderState,
  users: Set<string>,
  expand: { catalog_items?: boolean } = {},
) {
  const ids = [...new Set(state.items.map((i) => i.catalog_item))]
  return {
    id: row.id,
    object: 'hardware_order' as const,
    status: state.status,
    rejection_reason: state.status === 'rejected' ? state.rejection_reason : null,
    location: row.locationId,
    reference: row.reference,
    items: state.items.map((i) => {
      const c = catalogItem(i.catalog_item)
      return {
        id: i.id,
        object: 'hardware_order_item' as const,
        catalog_item: i.catalog_item,
        device_type: i.device_type,
        manufacturer: c?.manufacturer ?? null,
        model: c?.model ?? null,
        unit_price: c?.unit_price ?? null,
        user: i.user && users.has(i.user) ? i.user : null,
        mac_address: i.mac_address,
        base: i.base,
        device: i.device,
      }
    }),
    total_price: state.items.reduce((n, i) => n + (catalogItem(i.catalog_item)?.unit_price ?? 0), 0),
    currency: 'usd' as const,
    ...(expand.catalog_items
      ? { catalog_items: { object: 'list' as const, data: ids.flatMap((id) => (catalogItem(id) ? [catalogItemView(catalogItem(id)!)] : [])) } }
      : {}),
    created_at: row.createdAt.toISOString(),
    updated_at: state.updated_at,
  }
}

export interface NewHardwareOrder {
  id: string
  accountId: string
  mode: Mode
  locationId: string
  reference: string | null
  items: HardwareOrderItemRow[]
  at: Date
}

/** The order's row, submitted. The actor is spawned beside it (the gateway). */
export async function insertHardwareOrder(tx: Db, o: NewHardwareOrder): Promise<HardwareOrderRow> {
  const [row] = await tx
    .insert(hardwareOrders)
    .values({
      id: o.id,
      accountId: o.accountId,
      mode: o.mode,
      status: 'submitted',
      locationId: o.locationId,
      reference: o.reference,
      rejectionReason: null,
      items: o.items,
      createdAt: o.at,
      updatedAt: o.at,
    })
    .returning()
  return row!
}

export async function getHardwareOrder(db: Db, accountId: string, id: string): Promise<HardwareOrderRow> {
  const [row] = await db
    .select()
    .from(hardwareOrders)
    .where(and(eq(hardwareOrders.accountId, accountId), eq(hardwareOrders.id, id)))
  if (!row) throw notFound('hardware_order', id)
  return row
}

export function listHardwareOrders(db: Db, accountId: string, filters: { status?: HardwareOrderStatusName }, page: PageRequest) {
  const where = and(eq(hardwareOrders.accountId, accountId), filters.status ? eq(hardwareOrders.status, filters.status) : undefined)
  return keysetPage<HardwareOrderRow>(db, hardwareOrders, where, page)
}

/** Whether a location has orders still open (the locations service refuses to delete it). */
export async function locationHasPendingHardwareOrders(db: Db, accountId: string, locationId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: hardwareOrders.id })
    .from(hardwareOrders)
    .where(and(eq(hardwareOrders.accountId, accountId), eq(hardwareOrders.locationId, locationId), inArray(hardwareOrders.status, PENDING)))
    .limit(1)
  return row !== undefined
}

// ---------------------------------------------------------------- the actor's writes

/** The order as its machine now holds it (the actor's `project` effect). */
export async function projectHardwareOrder(tx: Db, id: string, state: HardwareOrderState): Promise<void> {
  await tx
    .update(hardwareOrders)
    .set({ status: state.status, items: state.items, rejectionReason: state.rejection_reason, updatedAt: new Date(state.updated_at) })
    .where(eq(hardwareOrders.id, id))
}

/** A sandbox unit's MAC: locally administered unicast (02:...), derived from the item, so a redelivery gives the same. */
export function sandboxMac(itemId: string, attempt = 0): string {
  const h = createHash('sha256').update(`${itemId}#${attempt}`).digest('hex').slice(0, 10).toUpperCase()
  return `02${h}`
}

async function macFree(tx: Db, mac: string) {
  const [row] = await tx.select({ id: devices.id }).from(devices).where(eq(devices.macAddress, mac))
  return row === undefined
}

export interface FulfilDeps {
  clock: Clock
  actorMessages?: ActorMessages
}

/**
 * The order was delivered (the actor's `fulfil` effect): every desk phone and DECT
 * base becomes a device at the order's location, with the item's MAC address (or,
 * when none was given or it was registered meanwhile, the sandbox's generated one);
 * then every handset joins its base (the one it names, else the order's bases in
 * item order while they have room); each phone and handset is assigned its intended
 * user (a user deleted since is skipped). Accessories never become devices. A unit
 * that cannot become a device any more (its base deleted or full meanwhile) stays
 * with device null; the others are not held back. The items are written back with
 * their devices and MACs. An order whose account is gone does nothing.
 */
export async function fulfilHardwareOrder(tx: Db, deps: FulfilDeps, orderId: string): Promise<number> {
  const [order] = await tx.select().from(hardwareOrders).where(eq(hardwareOrders.id, orderId))
  if (!order) return 0
  // No lines are given, so createDevice reads no config; the clock and the actor messages are all it uses.
  const d = deps as unknown as Deps
  const items = order.items.map((i) => ({ ...i }))
  const users = await usersOfAccount(
    tx,
    order.accountId,
    items.flatMap((i) => (i.user ? [i.user] : [])),
  )
  const orderBases: string[] = []
  let created = 0
  const attempt = async (fn: (sp: Db) => Promise<void>) => {
    try {
      await tx.transaction(async (sp) => fn(sp as unknown as Db))
    } catch {
      // The unit stays with device null (see above).
    }
  }
  for (const item of items) {
    if (item.device_type !== 'deskphone' && item.device_type !== 'dect_base') continue
    const c = catalogItem(item.catalog_item)!
    let mac = item.mac_address && (await macFree(tx, item.mac_address)) ? item.mac_address : null
    for (let n = 0; mac === null; n++) {
      const candidate = sandboxMac(item.id, n)
      if (await macFree(tx, candidate)) mac = candidate
    }
    await attempt(async (sp) => {
      const device = await createDevice(sp, d, order.accountId, item.device_type as 'deskphone' | 'dect_base', {
        vendor: c.vendor!,
        model: c.model,
        mac_address: mac!,
        location: order.locationId,
      })
      item.device = device.id
      item.mac_address = mac
      created++
      if (device.type === 'dect_base') orderBases.push(device.id)
      if (item.user && users.has(item.user) && device.type === 'deskphone') await assignUser(sp, d, order.accountId, device.id, item.user)
    })
  }
  const room = new Map<string, number>(orderBases.map((b) => [b, baseRoomOf(items.find((i) => i.device === b)!.catalog_item)]))
  for (const item of items) {
    if (item.device_type !== 'dect_handset') continue
    const c = catalogItem(item.catalog_item)!
    let base = item.base
    if (!base) {
      base = orderBases.find((b) => (room.get(b) ?? 0) > 0) ?? null
      if (base) room.set(base, room.get(base)! - 1)
    }
    if (!base) continue
    await attempt(async (sp) => {
      const device = await createHandset(sp, d, order.accountId, base, { model: c.model, vendor: c.vendor!, location: order.locationId })
      item.device = device.id
      created++
      if (item.user && users.has(item.user)) await assignUser(sp, d, order.accountId, device.id, item.user)
    })
  }
  await tx.update(hardwareOrders).set({ items }).where(eq(hardwareOrders.id, orderId))
  return created
}
