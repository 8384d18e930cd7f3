/**
 * Resource IDs: a type prefix and a time-ordered random part, e.g. `usr_01JD...`.
 * Clients must treat them as opaque; the time order only helps index locality.
 */

export const ID_PREFIX = {
  platform: 'plat',
  webhookAttempt: 'wha',
  apiKey: 'key',
  account: 'acct',
  location: 'loc',
  pricing: 'prc',
  user: 'usr',
  extension: 'ext',
  auditLog: 'audit',
  accountSession: 'acss',
  userSession: 'uss',
  request: 'req',
  event: 'evt',
  webhookEndpoint: 'we',
  webhookDelivery: 'whd',
  operatorMail: 'mail',
  phoneNumber: 'pn',
  phoneNumberOrder: 'pno',
  call: 'call',
  timer: 'tmr',
  recording: 'rec',
  voicemail: 'vm',
  listener: 'lst',
  command: 'cmd',
  device: 'dev',
  deviceLine: 'line',
  deviceUser: 'dusr',
  buttonTemplate: 'btpl',
  templateButton: 'btn',
  buttonOverride: 'bovr',
  provisioningEvent: 'pev',
  ringGroup: 'rg',
  ringGroupMember: 'rgm',
  schedule: 'sch',
  dialPlan: 'dp',
  sharedVoicemailBox: 'svb',
  voiceApp: 'va',
  aiAgent: 'aia',
  queue: 'que',
  queueMember: 'qm',
  file: 'file',
  audioClip: 'clip',
  voicemailGreeting: 'vmg',
  pushSubscription: 'psub',
  emergencyAddress: 'ea',
  hardwareOrder: 'hwo',
  hardwareOrderItem: 'hwi',
  fax: 'fax',
  portOrder: 'po',
  portOrderEvent: 'poev',
} as const

export type IdKind = keyof typeof ID_PREFIX

/*
 * IDs end in a lowercase ULID, as the `ulid` package's monotonic factory makes them:
 * monotonic within the process, IDs minted in the same millisecond (or after the
 * clock stepped back) increment the previous random part, so they still sort in
 * creation order (newest-first lists break ties on id). Written out because the
 * package's takes about 2 µs an id (a one-byte getRandomValues per character, the
 * time encoded anew each time), and a simulated call mints some twenty (npm run
 * bench -- calls: 3 % of the service's CPU); this one 0.1-0.5 µs.
 */
const ENCODING = '0123456789abcdefghjkmnpqrstvwxyz' // Crockford's base32, as ULID spells it, lowercase
const pool = new Uint8Array(4096)
let poolAt = pool.length

/** 16 random base32 digits (80 bits) into `digits`. */
function freshDigits(digits: Uint8Array) {
  if (poolAt + 16 > pool.length) {
    crypto.getRandomValues(pool)
    poolAt = 0
  }
  // 256 is a multiple of 32: each digit is uniform.
  for (let i = 0; i < 16; i++) digits[i] = pool[poolAt++]! & 31
}

function incrementDigits(digits: Uint8Array) {
  for (let i = 15; i >= 0; i--) {
    if (digits[i]! < 31) {
      digits[i]!++
      return
    }
    digits[i] = 0
  }
  throw new Error('cannot mint another id in this millisecond: the random part overflowed')
}

function encodeTime(ms: number): string {
  let out = ''
  for (let i = 0; i < 10; i++) {
    const d = ms % 32
    out = ENCODING[d]! + out
    ms = (ms - d) / 32
  }
  return out
}

/** A generator of lowercase ULIDs, each greater than the one before (its own sequence). */
export function monotonicUlids(): (now?: number) => string {
  let lastMs = -1
  let timePart = ''
  const digits = new Uint8Array(16)
  return (now = Date.now()) => {
    if (now > lastMs) {
      lastMs = now
      timePart = encodeTime(now)
      freshDigits(digits)
    } else incrementDigits(digits)
    let out = timePart
    for (let i = 0; i < 16; i++) out += ENCODING[digits[i]!]!
    return out
  }
}

/** The process's ULIDs: the random part of every id, and of names that are not ids (storage keys). */
export const newUlid = monotonicUlids()

export function newId(kind: IdKind): string {
  return `${ID_PREFIX[kind]}_${newUlid()}`
}

export function idKind(id: string): IdKind | undefined {
  const prefix = id.slice(0, id.indexOf('_'))
  return (Object.keys(ID_PREFIX) as IdKind[]).find((k) => ID_PREFIX[k] === prefix)
}

export const MAX_ID_LENGTH = 255
