/**
 * The phones this service can provision, with what each can hold: SIP lines,
 * programmable keys and (DECT bases) handsets. A vendor or model outside this list
 * is `unsupported_vendor`: without its line and key counts nothing could be
 * validated, and provisioning could not generate its file.
 */
import { ApiError, ValidationError } from '../../errors'

export type DeviceType = 'deskphone' | 'dect_base' | 'dect_handset'

export interface PhoneModel {
  vendor: string
  model: string
  type: DeviceType
  /** SIP accounts the phone (for a base: all its handsets together) can register. */
  lines: number
  /** Programmable keys; 0 for a DECT base. */
  keys: number
  /** DECT bases only. */
  handsets?: number
}

const m = (vendor: string, model: string, type: DeviceType, lines: number, keys: number, handsets?: number): PhoneModel => ({
  vendor,
  model,
  type,
  lines,
  keys,
  ...(handsets !== undefined ? { handsets } : {}),
})

export const PHONE_MODELS: readonly PhoneModel[] = [
  m('yealink', 'T54W', 'deskphone', 16, 27),
  m('yealink', 'T46U', 'deskphone', 16, 27),
  m('yealink', 'T33G', 'deskphone', 4, 4),
  m('yealink', 'T31P', 'deskphone', 2, 2),
  m('yealink', 'W60B', 'dect_base', 8, 0, 8),
  m('yealink', 'W56H', 'dect_handset', 8, 10),
  m('yealink', 'W73H', 'dect_handset', 8, 10),
  m('polycom', 'VVX 450', 'deskphone', 12, 12),
  m('polycom', 'VVX 350', 'deskphone', 6, 6),
  m('polycom', 'VVX 250', 'deskphone', 4, 4),
  m('polycom', 'VVX 150', 'deskphone', 2, 2),
]

export const VENDORS: readonly string[] = [...new Set(PHONE_MODELS.map((p) => p.vendor))]

const modelKey = (s: string) => s.toLowerCase().replace(/[\s_-]+/g, '')

/**
 * The catalogue entry for a vendor and model of the expected type. Vendor and model
 * match case-insensitively (and, for the model, ignoring spaces and dashes: "vvx-450"
 * is "VVX 450"); the stored names are the catalogue's.
 */
export function phoneModel(vendor: string, model: string, type: DeviceType): PhoneModel {
  const v = vendor.toLowerCase()
  if (!VENDORS.includes(v)) {
    throw new ApiError(400, `Phone vendor ${vendor} is not supported.`, 'unsupported_vendor', { vendor: `must be one of ${VENDORS.join(', ')}` })
  }
  const found = PHONE_MODELS.find((p) => p.vendor === v && modelKey(p.model) === modelKey(model))
  const ofType = PHONE_MODELS.filter((p) => p.vendor === v && p.type === type).map((p) => p.model)
  if (!found) {
    throw new ApiError(400, `Model ${model} of ${v} is not supported.`, 'unsupported_vendor', {
      model: `is not a supported ${v} model; supported ${type} models: ${ofType.join(', ') || 'none'}`,
    })
  }
  if (found.type !== type) throw new ValidationError({ model: `is a ${found.type} model, not a ${type}; ${type} models of ${v}: ${ofType.join(', ')}` })
  return found
}

/** The catalogue entry of a stored device (its names came from the catalogue). */
export function modelOf(device: { vendor: string; model: string }): PhoneModel {
  const found = PHONE_MODELS.find((p) => p.vendor === device.vendor && p.model === device.model)
  if (!found) throw new Error(`device model ${device.vendor} ${device.model} is not in the catalogue`)
  return found
}

/**
 * MAC addresses are stored as 12 uppercase hex digits, the form phones use in their
 * file names. Accepted: that, lowercase, or separated by colons, dashes (pairs) or
 * dots (Cisco-style groups of four). Group (multicast) and all-zero addresses are no
 * phone's.
 */
export function normaliseMac(input: string): string | undefined {
  const s = input.trim()
  const plain = /^[0-9a-fA-F]{12}$/.test(s)
  const pairs = /^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2}){4}$/.test(s)
  const quads = /^[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}$/.test(s)
  if (!plain && !pairs && !quads) return undefined
  const mac = s.replace(/[:.-]/g, '').toUpperCase()
  if (mac === '000000000000' || (Number.parseInt(mac.slice(0, 2), 16) & 1) === 1) return undefined
  return mac
}
