/**
 * What a phone's configuration file is generated from. The device services build a
 * `ProvisioningConfig` from the device, its lines, its effective buttons and the
 * account's settings; the generators never read the database, so they stay pure and
 * a test can hand them any configuration.
 */
import { normaliseMac } from '../../src/services/devices/catalogue'

export type Vendor = 'yealink' | 'polycom'
export const SUPPORTED_VENDORS: readonly Vendor[] = ['yealink', 'polycom']

export type SipTransport = 'udp' | 'tcp' | 'tls'

export interface ProvisioningLine {
  /** The phone's account slot (Yealink `account.N`, Polycom `reg.N`); default: position in `lines` + 1. */
  number?: number
  /** SIP user (the registration's user part). */
  sipUsername: string
  /** Digest user name when it differs from `sipUsername`. */
  authUsername?: string
  sipPassword: string
  /** SIP domain / registrar host and port. */
  registrarHost: string
  registrarPort: number
  transport?: SipTransport
  displayName: string
  /** Extension number shown on the line key (the label falls back to it). */
  extension?: string | null
  label?: string | null
}

/**
 * Button types, as the button templates name them. `line` shows a line (its number in
 * `line`, or else in `value`); `speed_dial` dials and `blf` watches `value`; `park`
 * parks into (and watches) slot `value`, or anywhere without one; `voicemail` calls
 * `value` (the voicemail number); `dnd` and `transfer` need no value; `none` leaves
 * the key blank.
 */
export type ButtonType = 'line' | 'speed_dial' | 'blf' | 'park' | 'voicemail' | 'dnd' | 'transfer' | 'none'
export const BUTTON_TYPES: readonly ButtonType[] = ['line', 'speed_dial', 'blf', 'park', 'voicemail', 'dnd', 'transfer', 'none']
const VALUE_REQUIRED: readonly ButtonType[] = ['speed_dial', 'blf']

export interface ProvisioningButton {
  /** Programmable key number on the phone, from 1. */
  key: number
  type: ButtonType
  value?: string | null
  label?: string | null
  /** The line the key acts on (a line `number`); default: the first line. */
  line?: number
}

export interface AccountProvisioningSettings {
  /** IANA time zone, e.g. `America/New_York`. */
  timeZone: string
  /** BCP 47 language tag, e.g. `en-US`, `fr`. Unknown languages fall back to English. */
  language: string
  /** The account's `provisioning_base_url`: written into the file so the phone keeps coming back there. */
  provisioningBaseUrl?: string
  ntpServer?: string
}

/** A DECT handset as its base knows it: its number on the base and the lines (line `number`s) it rings for and dials out on. */
export interface ProvisioningHandset {
  /** The handset's number on the base (Yealink `handset.N`), from 1. */
  number: number
  name: string
  /** The base's lines that are this handset's; the first is the one it dials out on. */
  lines: number[]
}

export interface ProvisioningConfig {
  deviceId: string
  vendor: string
  model?: string
  /** The device's MAC, in any spelling `normalizeMac` accepts. */
  mac: string
  lines: ProvisioningLine[]
  buttons: ProvisioningButton[]
  /** DECT bases: which handset uses which lines. */
  handsets?: ProvisioningHandset[]
  account: AccountProvisioningSettings
}

/** The spec's provisioning error codes, with their statuses. */
export const PROVISIONING_CODES = {
  unsupported_vendor: 400,
  invalid_configuration: 400,
  credentials_not_found: 404,
  generation_failed: 500,
} as const
export type ProvisioningCode = keyof typeof PROVISIONING_CODES

/** A configuration the generators refuse; `details` maps the offending field to its reason. */
export class ProvisioningError extends Error {
  constructor(
    readonly code: ProvisioningCode,
    message: string,
    readonly details?: Record<string, string>,
  ) {
    super(message)
  }

  get status(): number {
    return PROVISIONING_CODES[this.code]
  }
}

/**
 * A MAC in any spelling the API accepts (src/services/devices/catalogue: normaliseMac,
 * which also refuses Polycom's all-zero master-file name and group addresses), in the
 * lowercase bare form phones put in their file names and User-Agents; undefined otherwise.
 */
export function normalizeMac(text: string): string | undefined {
  return normaliseMac(text)?.toLowerCase()
}

/**
 * The checks every vendor shares: required fields present, numbers in range, keys
 * unique, each button's line existing. Vendor-specific limits live in the generators.
 */
export function checkConfig(config: ProvisioningConfig): void {
  const problems: Record<string, string> = {}
  if (!config.deviceId) problems.device_id = 'required'
  if (normalizeMac(config.mac) === undefined) problems.mac = 'not a MAC address'
  if (config.lines.length === 0) problems.lines = 'a device needs at least one line'
  const numbers = new Set<number>()
  config.lines.forEach((line, i) => {
    const at = `lines[${i}]`
    const number = lineNumber(line, i)
    if (!Number.isInteger(number) || number < 1) problems[`${at}.number`] = 'must be a positive integer'
    else if (numbers.has(number)) problems[`${at}.number`] = `line ${number} is used twice`
    numbers.add(number)
    if (!line.sipUsername) problems[`${at}.sip_username`] = 'required'
    if (!line.sipPassword) problems[`${at}.sip_password`] = 'required'
    if (!line.registrarHost) problems[`${at}.registrar_host`] = 'required'
    if (!Number.isInteger(line.registrarPort) || line.registrarPort < 1 || line.registrarPort > 65535) problems[`${at}.registrar_port`] = 'must be 1 to 65535'
  })
  const keys = new Set<number>()
  config.buttons.forEach((button, i) => {
    const at = `buttons[${i}]`
    if (!Number.isInteger(button.key) || button.key < 1) problems[`${at}.key`] = 'must be a positive integer'
    else if (keys.has(button.key)) problems[`${at}.key`] = `key ${button.key} is used twice`
    keys.add(button.key)
    if (!BUTTON_TYPES.includes(button.type)) problems[`${at}.type`] = `must be one of ${BUTTON_TYPES.join(', ')}`
    const line = buttonLine(config, button)
    if (!numbers.has(line)) problems[`${at}.${button.type === 'line' && button.line === undefined ? 'value' : 'line'}`] = `no line ${line} on this device`
    if (VALUE_REQUIRED.includes(button.type) && !button.value) problems[`${at}.value`] = 'required'
  })
  const handsetNumbers = new Set<number>()
  config.handsets?.forEach((handset, i) => {
    const at = `handsets[${i}]`
    if (!Number.isInteger(handset.number) || handset.number < 1) problems[`${at}.number`] = 'must be a positive integer'
    else if (handsetNumbers.has(handset.number)) problems[`${at}.number`] = `handset ${handset.number} is listed twice`
    handsetNumbers.add(handset.number)
    handset.lines.forEach((line, j) => {
      if (!numbers.has(line)) problems[`${at}.lines[${j}]`] = `no line ${line} on this device`
    })
  })
  if (!isTimeZone(config.account.timeZone)) problems['account.time_zone'] = 'not an IANA time zone'
  if (Object.keys(problems).length > 0) throw new ProvisioningError('invalid_configuration', 'The device configuration is incomplete or invalid.', problems)
}

/** The phone's account slot of a line. */
export function lineNumber(line: ProvisioningLine, index: number): number {
  return line.number ?? index + 1
}

/** The line a button acts on: `line`, else (for a line key) its value, else the first line. */
export function buttonLine(config: ProvisioningConfig, button: ProvisioningButton): number {
  if (button.line !== undefined) return button.line
  if (button.type === 'line' && button.value) return Number(button.value)
  return config.lines[0] ? lineNumber(config.lines[0], 0) : 1
}

/** The line with this number. */
export function lineByNumber(config: ProvisioningConfig, number: number): ProvisioningLine | undefined {
  return config.lines.find((line, i) => lineNumber(line, i) === number)
}

const knownZones = new Map<string, boolean>()

/** Whether the runtime knows the zone; remembered, since building a formatter is slow next to generating a file. */
export function isTimeZone(name: string): boolean {
  let known = knownZones.get(name)
  if (known === undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: name })
      known = true
    } catch {
      known = false
    }
    if (knownZones.size < 1000) knownZones.set(name, known)
  }
  return known
}

/** Characters no configuration value may hold in any vendor format (control characters, except none). */
export function hasControlCharacters(value: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
  return /[\u0000-\u001f\u007f]/.test(value)
}
