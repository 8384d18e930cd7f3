/**
 * Polycom UC Software (VVX, SoundPoint IP) configuration: the phone first asks for
 * the master file `<mac>.cfg` (falling back to the shared `000000000000.cfg`), which
 * lists the configuration files to load: here one, `<mac>-phone.cfg`, holding every
 * setting as an attribute of `<polycomConfig>`: registrations (`reg.N.*`), keys
 * (`lineKey.N.*` with `attendant.resourceList.*` for watched extensions and park
 * orbits, enhanced feature keys `efk.*` for speed dials), time and language.
 */
import {
  buttonLine,
  checkConfig,
  lineByNumber,
  lineNumber,
  normalizeMac,
  type ProvisioningConfig,
  ProvisioningError,
  type ProvisioningLine,
  type SipTransport,
} from './config'
import { zoneRules } from './time-zone'
import { xmlAttribute } from './xml'

export const POLYCOM_CONTENT_TYPE = 'application/xml; charset=utf-8'

const TRANSPORT: Record<SipTransport, string> = { udp: 'UDPOnly', tcp: 'TCPOnly', tls: 'TLS' }

const LANGUAGES: Record<string, string> = {
  en: 'English_United_States',
  'en-gb': 'English_United_Kingdom',
  'en-ca': 'English_Canada',
  fr: 'French_France',
  'fr-ca': 'French_Canada',
  de: 'German_Germany',
  es: 'Spanish_Spain',
  it: 'Italian_Italy',
  pt: 'Portuguese_Portugal',
  nl: 'Dutch_Netherlands',
  pl: 'Polish_Poland',
  ru: 'Russian_Russia',
  sv: 'Swedish_Sweden',
  da: 'Danish_Denmark',
  no: 'Norwegian_Norway',
}

export function polycomLanguage(tag: string): string {
  const lower = tag.toLowerCase()
  return LANGUAGES[lower] ?? LANGUAGES[lower.split('-')[0]!] ?? 'English_United_States'
}

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'

/** The master file: `mac` given → `<mac>.cfg`; omitted → `000000000000.cfg`, where the phone substitutes its own MAC. */
export function polycomMasterFile(mac?: string): string {
  const phoneFile = `${mac === undefined ? '[PHONE_MAC_ADDRESS]' : normalizeMac(mac)}-phone.cfg`
  const attributes: [string, string][] = [
    ['APP_FILE_PATH', 'sip.ld'],
    ['CONFIG_FILES', phoneFile],
    ['MISC_FILES', ''],
    ['LOG_FILE_DIRECTORY', ''],
    ['OVERRIDES_DIRECTORY', ''],
    ['CONTACTS_DIRECTORY', ''],
    ['LICENSE_DIRECTORY', ''],
    ['USER_PROFILES_DIRECTORY', ''],
    ['CALL_LISTS_DIRECTORY', ''],
    ['COREFILE_DIRECTORY', ''],
  ]
  return `${XML_DECLARATION}\n<APPLICATION\n${attributes.map(([k, v]) => `  ${k}="${xmlAttribute(v)}"`).join('\n')}\n/>\n`
}

/** The per-phone file with every setting of the device. */
export function polycomPhoneFile(config: ProvisioningConfig, generatedAt: Date): string {
  checkConfig(config)
  const settings = new Map<string, string>()
  const problems: Record<string, string> = {}
  const set = (key: string, value: string | number, field?: string) => {
    if (settings.has(key)) throw new Error(`setting ${key} written twice`) // a generator bug, not the caller's
    const text = String(value)
    const escaped = xmlAttribute(text)
    if (escaped === undefined) problems[field ?? key] = 'contains characters XML cannot carry'
    settings.set(key, escaped ?? '')
  }

  config.lines.forEach((line, i) => {
    const n = lineNumber(line, i)
    const at = `lines[${i}]`
    set(`reg.${n}.address`, line.sipUsername, `${at}.sip_username`)
    set(`reg.${n}.auth.userId`, line.authUsername ?? line.sipUsername, `${at}.auth_username`)
    set(`reg.${n}.auth.password`, line.sipPassword, `${at}.sip_password`)
    set(`reg.${n}.displayName`, line.displayName, `${at}.display_name`)
    set(`reg.${n}.label`, lineLabel(line), `${at}.label`)
    set(`reg.${n}.server.1.address`, line.registrarHost, `${at}.registrar_host`)
    set(`reg.${n}.server.1.port`, line.registrarPort)
    set(`reg.${n}.server.1.transport`, TRANSPORT[line.transport ?? 'udp'])
    set(`reg.${n}.server.1.register`, 1)
    set(`reg.${n}.server.1.expires`, 3600)
    // Line keys are placed explicitly below (lineKey.N), so each registration claims one.
    set(`reg.${n}.lineKeys`, 1)
  })

  if (config.buttons.length > 0) set('lineKey.reassignment.enabled', 1)
  let resources = 0
  let featureKeys = 0
  for (const button of [...config.buttons].sort((a, b) => a.key - b.key)) {
    const at = `buttons[${config.buttons.indexOf(button)}]`
    const k = button.key
    const line = buttonLine(config, button)
    const value = button.value ?? ''
    const label = button.label || (button.type === 'line' ? lineLabel(lineByNumber(config, line)!) : value)
    switch (button.type) {
      case 'none':
        set(`lineKey.${k}.category`, 'Unassigned')
        set(`lineKey.${k}.index`, 0)
        break
      case 'line':
        set(`lineKey.${k}.category`, 'Line')
        set(`lineKey.${k}.index`, line)
        break
      case 'blf':
      case 'park': {
        // A Polycom park key is a watched park orbit, so it needs the slot.
        if (!value) {
          problems[`${at}.value`] = 'a park key on a Polycom phone needs its slot'
          break
        }
        const r = ++resources
        set(`attendant.resourceList.${r}.address`, value, `${at}.value`)
        set(`attendant.resourceList.${r}.label`, label, `${at}.label`)
        // "automata" is Polycom's resource type for a park orbit: pressing it retrieves the parked call.
        set(`attendant.resourceList.${r}.type`, button.type === 'park' ? 'automata' : 'normal')
        set(`lineKey.${k}.category`, 'BLF')
        set(`lineKey.${k}.index`, r)
        break
      }
      case 'speed_dial':
      case 'voicemail': {
        if (!value) {
          problems[`${at}.value`] = 'a voicemail key on a Polycom phone needs the number to call'
          break
        }
        // `$` starts a macro in an enhanced feature key's action string.
        if (value.includes('$')) problems[`${at}.value`] = 'must not contain $ on a Polycom phone'
        const e = ++featureKeys
        set(`efk.efklist.${e}.mname`, `key${k}`)
        set(`efk.efklist.${e}.status`, 1)
        set(`efk.efklist.${e}.label`, label, `${at}.label`)
        set(`efk.efklist.${e}.action.string`, `${value}$Tinvite$`, `${at}.value`)
        set(`lineKey.${k}.category`, 'EFK')
        set(`lineKey.${k}.index`, e)
        break
      }
      case 'dnd':
      case 'transfer':
        // These are fixed keys or soft keys on Polycom phones, not line keys.
        problems[`${at}.type`] = `Polycom phones have no ${button.type} line key`
        break
    }
  }
  if (featureKeys > 0) set('feature.enhancedFeatureKeys.enabled', 1)

  const account = config.account
  const rules = zoneRules(account.timeZone, generatedAt.getUTCFullYear())
  if (account.ntpServer) {
    set('tcpIpApp.sntp.address', account.ntpServer, 'account.ntp_server')
    set('tcpIpApp.sntp.address.overrideDHCP', 1)
  }
  set('tcpIpApp.sntp.gmtOffset', rules.standardOffsetMinutes * 60)
  set('tcpIpApp.sntp.gmtOffset.overrideDHCP', 1)
  if (rules.dst) {
    set('tcpIpApp.sntp.daylightSavings.enable', 1)
    set('tcpIpApp.sntp.daylightSavings.fixedDayEnable', 0)
    for (const [name, t] of [
      ['start', rules.dst.start],
      ['stop', rules.dst.end],
    ] as const) {
      set(`tcpIpApp.sntp.daylightSavings.${name}.month`, t.month)
      set(`tcpIpApp.sntp.daylightSavings.${name}.time`, t.hour)
      // Polycom counts weekdays from 1 = Sunday; "date" is the first day of the counted week.
      set(`tcpIpApp.sntp.daylightSavings.${name}.dayOfWeek`, t.weekday + 1)
      set(`tcpIpApp.sntp.daylightSavings.${name}.dayOfWeek.lastInMonth`, t.week === 5 ? 1 : 0)
      set(`tcpIpApp.sntp.daylightSavings.${name}.date`, t.week === 5 ? 1 : (t.week - 1) * 7 + 1)
    }
  } else {
    set('tcpIpApp.sntp.daylightSavings.enable', 0)
  }
  set('lcl.ml.lang', polycomLanguage(account.language))
  if (account.provisioningBaseUrl) {
    set('device.set', 1)
    set('device.prov.serverName.set', 1)
    set('device.prov.serverName', account.provisioningBaseUrl, 'account.provisioning_base_url')
  }

  if (Object.keys(problems).length > 0)
    throw new ProvisioningError('invalid_configuration', 'The device configuration cannot be written as a Polycom file.', problems)
  const body = [...settings].map(([k, v]) => `  ${k}="${v}"`).join('\n')
  return `${XML_DECLARATION}\n<!-- Device ${xmlComment(config.deviceId)}; generated by the provisioning service. -->\n<polycomConfig\n${body}\n/>\n`
}

function lineLabel(line: ProvisioningLine): string {
  return line.label || line.extension || line.displayName
}

/** A comment may not contain `--`; device ids never do, but a stray one must not break the file. */
function xmlComment(text: string): string {
  return (xmlAttribute(text) ?? '').replace(/-{2,}/g, '-')
}
