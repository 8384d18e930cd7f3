/**
 * What the B2BUA reads from the database to place a call: who the caller's line
 * belongs to, what the dialed digits reach in the caller's account, and where the
 * callee's phones are registered. One fixed statement each (the call set-up path).
 */
import type { Db } from '../../src/db/client'
import { statement } from '../../src/db/statements'
import { idKind } from '../../src/ids'
import { userBindings } from '../../src/services/devices/registrations'
import { type EmergencyCallInfo, emergencyInfoFor } from '../../src/services/e911/emergency-info'
import { outboundCallerId } from '../../src/services/numbers/phone-numbers'

export interface AccountOwner {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
  /** The account records its calls (config recording_enabled). */
  recording: boolean
}

/** A registered contact of the callee: where to send the INVITE (the socket the phone registered from). */
export interface CalleeContact {
  uri: string
  transport: 'udp' | 'tcp'
  address: string
  port: number
  device: string
}

/** What dialed digits reach: a user of the account (by extension), or nothing this B2BUA can ring yet. */
export type DialTarget = { kind: 'user'; userId: string; number: string } | { kind: 'unsupported'; target: string; number: string } | { kind: 'unknown' }

export interface CallDirectory {
  owner(accountId: string): Promise<AccountOwner | undefined>
  /** The number a user is called by inside the account: their first active extension. */
  extensionOf(accountId: string, userId: string): Promise<string | undefined>
  dial(accountId: string, digits: string): Promise<DialTarget>
  contactsOf(accountId: string, userId: string, now: Date): Promise<CalleeContact[]>
  /** The number an outbound call shows: the account's default outbound number, else its first active one. */
  callerIdOf(accountId: string): Promise<string | undefined>
  /** The storage key of a user's greeting of this type (8 kHz WAV), if they recorded one. */
  greetingOf(accountId: string, userId: string, type: 'unavailable' | 'busy'): Promise<string | undefined>
  /** The storage key of one of the account's audio clips (8 kHz WAV), if it exists. */
  clipOf(accountId: string, clipId: string): Promise<string | undefined>
  /** The storage key of the account's hold music clip (hold_music_clip), if it has one. */
  holdMusicOf(accountId: string): Promise<string | undefined>
  /**
   * The account a call from a carrier trunk to `number` (E.164) is for: the live
   * number's holder, else the sandbox that took it last (each platform's sandbox has
   * its own number space, so several may hold the same fake number; a sandbox
   * trunk call goes to the newest); undefined when no account holds it.
   */
  numberHolder(number: string): Promise<string | undefined>
  /** What call.emergency says of a call placed from this phone (device, location, E911 provisioning). */
  emergencyInfo(accountId: string, userId: string, deviceId: string, sourceAddress: string): Promise<EmergencyCallInfo>
}

const GREETING = statement<{ storage_key: string }>(`select storage_key from voicemail_greetings where account_id = $1 and user_id = $2 and type = $3`)
const CLIP = statement<{ storage_key: string }>(`select storage_key from audio_clips where account_id = $1 and id = $2`)
const HOLD_MUSIC = statement<{ storage_key: string }>(
  `select c.storage_key from accounts a join audio_clips c on c.id = a.hold_music_clip and c.account_id = a.id where a.id = $1`,
)
const OWNER = statement<{ platform_id: string; mode: 'test' | 'live'; recording: boolean | null }>(
  `select platform_id, mode, (config->>'recording_enabled')::boolean as recording from accounts where id = $1`,
)
const EXTENSION_OF = statement<{ number: string }>(
  `select number from extensions where account_id = $1 and target = $2 and status = 'active' order by created_at, id limit 1`,
)
const NUMBER_HOLDER = statement<{ account_id: string }>(
  `select account_id from phone_numbers where number = $1 and status = 'active' and account_id is not null
    order by (space = 'live') desc, created_at desc, id desc limit 1`,
)
const EXTENSION = statement<{ target: string }>(`select target from extensions where account_id = $1 and number = $2 and status = 'active'`)

export function callDirectory(db: Db): CallDirectory {
  return {
    async owner(accountId) {
      const [row] = await OWNER.rows(db, [accountId])
      return row ? { platformId: row.platform_id, accountId, mode: row.mode, recording: row.recording === true } : undefined
    },
    async extensionOf(accountId, userId) {
      return (await EXTENSION_OF.rows(db, [accountId, userId]))[0]?.number
    },
    async dial(accountId, digits) {
      const [row] = await EXTENSION.rows(db, [accountId, digits])
      if (!row) return { kind: 'unknown' }
      return idKind(row.target) === 'user' ? { kind: 'user', userId: row.target, number: digits } : { kind: 'unsupported', target: row.target, number: digits }
    },
    async numberHolder(number) {
      return (await NUMBER_HOLDER.rows(db, [number]))[0]?.account_id
    },
    async greetingOf(accountId, userId, type) {
      return (await GREETING.rows(db, [accountId, userId, type]))[0]?.storage_key
    },
    async clipOf(accountId, clipId) {
      return (await CLIP.rows(db, [accountId, clipId]))[0]?.storage_key
    },
    async holdMusicOf(accountId) {
      return (await HOLD_MUSIC.rows(db, [accountId]))[0]?.storage_key
    },
    async callerIdOf(accountId) {
      return outboundCallerId(db, accountId)
    },
    emergencyInfo: (accountId, userId, deviceId, sourceAddress) => emergencyInfoFor(db, accountId, userId, { deviceId, sourceIp: sourceAddress }),
    async contactsOf(accountId, userId, now) {
      const out: CalleeContact[] = []
      for (const b of await userBindings(db, accountId, userId, now)) {
        // WebSocket and TLS bindings need transports this server does not have yet.
        if (b.transport !== 'udp' && b.transport !== 'tcp') continue
        out.push({ uri: b.contact, transport: b.transport, address: b.source_address, port: b.source_port, device: b.line_device })
      }
      return out
    },
  }
}
