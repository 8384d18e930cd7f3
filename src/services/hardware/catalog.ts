/**
 * The hardware catalog (GET /v1/catalog): the phones this service provisions
 * (src/services/devices/catalogue.ts: every model there is sold here, none else) and
 * the accessories that ship with them. It is part of the service, not of an
 * account: the same list for everyone, versioned with the code; an item is never
 * removed, only made inactive (no longer sold, still provisioned), so that orders
 * naming it keep their meaning. Prices are list prices per unit in US cents.
 */
import type { Page, PageRequest } from '../../pagination'
import { PHONE_MODELS, type PhoneModel } from '../devices/catalogue'

export type CatalogDeviceType = 'deskphone' | 'dect_base' | 'dect_handset' | 'accessory'

export interface CatalogItem {
  id: string
  manufacturer: string
  model: string
  sku: string | null
  device_type: CatalogDeviceType
  active: boolean
  /** Price of one unit, US cents. */
  unit_price: number
  description: string
  /** The provisioning vendor and model a unit becomes (phones only). */
  vendor: string | null
  createdAt: Date
  updatedAt: Date
}

const LAUNCH = new Date('2025-01-06T00:00:00.000Z')
const W73H_ADDED = new Date('2025-06-02T00:00:00.000Z')

const MANUFACTURER: Record<string, string> = { yealink: 'Yealink', polycom: 'Polycom' }

/** What the catalog says of each provisioned model (keyed vendor/model as in PHONE_MODELS). */
const PHONES: Record<string, { sku: string | null; price: number; description: string; active?: boolean; added?: Date; changed?: Date }> = {
  'yealink/T54W': { sku: 'SIP-T54W', price: 21900, description: 'Color touch-screen desk phone, 16 lines, Wi-Fi and Bluetooth' },
  'yealink/T46U': { sku: 'SIP-T46U', price: 16900, description: 'Color-screen desk phone, 16 lines, dual USB' },
  'yealink/T33G': { sku: 'SIP-T33G', price: 8900, description: 'Entry color-screen desk phone, 4 lines, gigabit' },
  'yealink/T31P': { sku: 'SIP-T31P', price: 6900, description: 'Entry desk phone, 2 lines, PoE' },
  'yealink/W60B': { sku: 'W60B', price: 8900, description: 'DECT base station: up to 8 handsets, 8 simultaneous calls (handsets sold separately)' },
  'yealink/W56H': {
    sku: 'W56H',
    price: 7900,
    description: 'DECT handset for the W60B (discontinued: succeeded by the W73H; still provisioned)',
    active: false,
    changed: W73H_ADDED,
  },
  'yealink/W73H': { sku: 'W73H', price: 6900, description: 'DECT handset for the W60B, color screen', added: W73H_ADDED, changed: W73H_ADDED },
  'polycom/VVX 450': { sku: '2200-48840-025', price: 24900, description: 'Color desk phone, 12 lines, gigabit' },
  'polycom/VVX 350': { sku: '2200-48830-025', price: 17900, description: 'Color desk phone, 6 lines, gigabit' },
  'polycom/VVX 250': { sku: '2200-48820-025', price: 12900, description: 'Color desk phone, 4 lines, gigabit' },
  'polycom/VVX 150': { sku: '2200-48810-025', price: 8900, description: 'Entry desk phone, 2 lines' },
}

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '_')

function phoneItem(p: PhoneModel): CatalogItem {
  const info = PHONES[`${p.vendor}/${p.model}`]
  if (!info) throw new Error(`catalog: no entry for the provisioned model ${p.vendor} ${p.model}`)
  return {
    id: `hw_${slug(p.vendor)}_${slug(p.model)}`,
    manufacturer: MANUFACTURER[p.vendor] ?? p.vendor,
    model: p.model,
    sku: info.sku,
    device_type: p.type,
    active: info.active ?? true,
    unit_price: info.price,
    description: info.description,
    vendor: p.vendor,
    createdAt: info.added ?? LAUNCH,
    updatedAt: info.changed ?? info.added ?? LAUNCH,
  }
}

const accessory = (id: string, manufacturer: string, model: string, sku: string | null, price: number, description: string): CatalogItem => ({
  id: `hw_${id}`,
  manufacturer,
  model,
  sku,
  device_type: 'accessory',
  active: true,
  unit_price: price,
  description,
  vendor: null,
  createdAt: LAUNCH,
  updatedAt: LAUNCH,
})

/** Newest first (created_at, then id, descending), as every list. */
export const CATALOG: readonly CatalogItem[] = [
  ...PHONE_MODELS.map(phoneItem),
  accessory('yealink_exp50', 'Yealink', 'EXP50', 'EXP50', 11900, 'Expansion module for the T54W and T46U: 60 more programmable keys'),
  accessory('yealink_yhs36', 'Yealink', 'YHS36', 'YHS36', 3900, 'Wired mono headset (RJ9) for Yealink desk phones'),
  accessory('yealink_psu_5v2a', 'Yealink', 'Power adapter 5V 2A', null, 1200, 'Power supply for Yealink desk phones where the network has no PoE'),
  accessory('polycom_em50', 'Polycom', 'VVX EM50', null, 19900, 'Expansion module for the VVX 450: 30 more keys, color screen'),
  accessory('polycom_psu_48v', 'Polycom', 'Power supply 48V', null, 1900, 'Power supply for Polycom VVX desk phones where the network has no PoE'),
  accessory('poe_injector', 'TP-Link', 'TL-PoE150S', 'TL-POE150S', 2900, 'Gigabit PoE injector (802.3af) for one phone'),
].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))

const BY_ID = new Map(CATALOG.map((c) => [c.id, c]))

export const catalogItem = (id: string): CatalogItem | undefined => BY_ID.get(id)

export function catalogItemView(c: CatalogItem) {
  return {
    id: c.id,
    object: 'catalog_item' as const,
    manufacturer: c.manufacturer,
    model: c.model,
    sku: c.sku,
    device_type: c.device_type,
    active: c.active,
    unit_price: c.unit_price,
    currency: 'usd' as const,
    description: c.description,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  }
}

/** One page of the catalog, with the keyset positions every list uses (the list is in memory). */
export function catalogPage(req: PageRequest, filters: { device_type?: CatalogDeviceType; active?: boolean } = {}): Page<CatalogItem> {
  const all = CATALOG.filter(
    (c) => (filters.device_type === undefined || c.device_type === filters.device_type) && (filters.active === undefined || c.active === filters.active),
  )
  const key = (c: CatalogItem) => [c.createdAt.getTime(), c.id] as const
  const before = (c: CatalogItem, t: number, id: string) => {
    const [ct, cid] = key(c)
    return ct < t || (ct === t && cid < id)
  }
  const after = (c: CatalogItem, t: number, id: string) => {
    const [ct, cid] = key(c)
    return ct > t || (ct === t && cid > id)
  }
  const pos = req.position
  const at = (c: CatalogItem, direction: 'next' | 'previous') => ({ direction, createdAt: c.createdAt.getTime(), id: c.id })
  if (pos?.direction === 'previous') {
    const newer = all.filter((c) => after(c, pos.createdAt, pos.id))
    const rows = newer.slice(Math.max(0, newer.length - req.limit))
    const page: Page<CatalogItem> = { rows }
    if (newer.length > rows.length && rows[0]) page.previous = at(rows[0], 'previous')
    const last = rows[rows.length - 1]
    page.next = last ? at(last, 'next') : { ...pos, direction: 'next' }
    return page
  }
  const older = pos ? all.filter((c) => before(c, pos.createdAt, pos.id)) : all
  const rows = older.slice(0, req.limit)
  const page: Page<CatalogItem> = { rows }
  const last = rows[rows.length - 1]
  if (older.length > rows.length && last) page.next = at(last, 'next')
  if (pos) page.previous = rows[0] ? at(rows[0], 'previous') : { ...pos, direction: 'previous' }
  return page
}

/** The catalog item a request names, or the field's problem. */
export function orderableItem(id: string, field: string, problems: Record<string, string>): CatalogItem | undefined {
  const c = catalogItem(id)
  if (!c) problems[field] = 'is not an item of the catalog (GET /v1/catalog)'
  else if (!c.active) problems[field] = `${c.manufacturer} ${c.model} is no longer sold (active false)`
  else return c
  return undefined
}
