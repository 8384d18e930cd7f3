/**
 * Click-to-call (POST /v1/calls): what a request means, decided without I/O.
 *
 * `classifyDialString` reads what the user dials against a snapshot of the account's
 * directory (its active extensions and users): an internal destination, a public
 * (PSTN) one, or something that cannot be dialled (a 400 on dial_string).
 * `planClickToCall` then decides the outcome from the caller's registered devices,
 * the destination, the account mode and the caller ID:
 *
 *   - nothing                      the user has no registered device (spec: nothing happens)
 *   - refused_public_in_sandbox    a sandbox account dialling the public network: the
 *                                  caller's phone plays an announcement, no call.* events
 *   - connect_internal             ring the caller's devices, then the internal user
 *   - dial_public                  ring the caller's devices, then dial out (live only)
 *
 * The order matters: with no registered device nobody could hear the sandbox
 * announcement, so "nothing" wins over the refusal.
 *
 * Both are pure; `planClickToCallRequest` loads what they need for one request
 * (the directory entries the dial string could name, the did, the registered
 * devices) and checks every field at once.
 */
import type { Db } from '../../db/client'
import { type FieldDetails, ValidationError } from '../../errors'
import { isE164 } from '../../schemas/common'
import { usersOfAccount } from '../accounts/users'
import { activeNumberOfAccount, outboundCallerId } from '../numbers/phone-numbers'
import { activeExtension } from '../routing/extensions'
import type { RegisteredDevice, RegisteredDevices } from './registered-devices'

/** Where a dial string leads. */
export type Destination =
  | { kind: 'internal'; to_user_id: string /** the extension dialled, when one was */; extension: string | null }
  | { kind: 'public' /** E.164, or a short service code (N11, 933) as dialled */; number: string; emergency: boolean }
  | { kind: 'invalid'; reason: string }

export type DialableDestination = Exclude<Destination, { kind: 'invalid' }>

/** What of the account the classification needs: the snapshot the route loads. */
export interface Directory {
  /** Active extensions of the account that the dial string could name: number to target. */
  extensions: ReadonlyMap<string, string>
  /** Users of the account that the dial string could name. */
  users: ReadonlySet<string>
}

/** Emergency and carrier test codes: never shadowed by an extension of the same digits. */
export const EMERGENCY_CODES: ReadonlySet<string> = new Set(['911', '933'])

const FORMATTING = /[\s().-]/g
const NANP = /^[2-9]\d{9}$/
const SERVICE_CODE = /^[2-8]11$/
const ID_LIKE = /^[a-z][a-z0-9]*_[A-Za-z0-9]+$/

const DIALABLE = 'must be an E.164 number, an extension or user id of this account, or digits (10-digit NANP, 1 + 10 digits, N11, 933)'

export function classifyDialString(raw: string, dir: Directory): Destination {
  const s = raw.trim()
  if (s.length === 0) return { kind: 'invalid', reason: DIALABLE }
  if (dir.users.has(s)) return { kind: 'internal', to_user_id: s, extension: null }
  if (ID_LIKE.test(s)) return { kind: 'invalid', reason: 'is not a user of this account' }

  const compact = s.replace(FORMATTING, '')
  if (compact.startsWith('+')) {
    return isE164(compact) ? { kind: 'public', number: compact, emergency: false } : { kind: 'invalid', reason: 'is not a valid E.164 number' }
  }
  if (!/^\d+$/.test(compact)) return { kind: 'invalid', reason: DIALABLE }

  if (EMERGENCY_CODES.has(compact)) return { kind: 'public', number: compact, emergency: true }
  const target = dir.extensions.get(compact)
  if (target !== undefined) {
    return dir.users.has(target)
      ? { kind: 'internal', to_user_id: target, extension: compact }
      : { kind: 'invalid', reason: `is extension ${compact}, whose target cannot take calls` }
  }
  if (SERVICE_CODE.test(compact)) return { kind: 'public', number: compact, emergency: false }
  if (NANP.test(compact)) return { kind: 'public', number: `+1${compact}`, emergency: false }
  if (compact.length === 11 && compact.startsWith('1') && NANP.test(compact.slice(1))) return { kind: 'public', number: `+${compact}`, emergency: false }
  return { kind: 'invalid', reason: `is not an extension of this account, nor a dialable number (${DIALABLE.replace(/^must be /, '')})` }
}

/** The candidates a route has to look up for `classifyDialString`: a user id, and an extension number. */
export function directoryKeys(raw: string): { userId: string | null; extension: string | null } {
  const s = raw.trim()
  const compact = s.replace(FORMATTING, '')
  return { userId: s.length > 0 ? s : null, extension: /^\d+$/.test(compact) ? compact : null }
}

export interface ClickToCallInput {
  /** The calling user (validated: a user of the account). */
  user_id: string
  /** The calling user's devices registered right now. */
  devices: readonly RegisteredDevice[]
  destination: DialableDestination
  mode: 'test' | 'live'
  /** The request's did (validated: an active number of the account); wins over any default. */
  did?: string | null
  /** The caller ID the account would present on a public call without a did. */
  default_caller_id: string | null
}

interface Leg {
  from_user_id: string
  /** The caller's own devices, rung first; call.ringing is not emitted for them. */
  ring_devices: readonly RegisteredDevice[]
}

export type ClickToCallPlan =
  | { kind: 'nothing'; reason: 'no_registered_device' }
  | (Leg & { kind: 'refused_public_in_sandbox'; to_number: string; announcement: 'sandbox_public_destination' })
  | (Leg & { kind: 'connect_internal'; to_user_id: string; extension: string | null; caller_id: string | null })
  | (Leg & { kind: 'dial_public'; to_number: string; emergency: boolean; caller_id: string | null })

export function planClickToCall(i: ClickToCallInput): ClickToCallPlan {
  if (i.devices.length === 0) return { kind: 'nothing', reason: 'no_registered_device' }
  const leg: Leg = { from_user_id: i.user_id, ring_devices: i.devices }
  const d = i.destination
  if (d.kind === 'internal') {
    // Internal calls present the calling user; a did given explicitly is still honoured.
    return { ...leg, kind: 'connect_internal', to_user_id: d.to_user_id, extension: d.extension, caller_id: i.did ?? null }
  }
  if (i.mode === 'test') return { ...leg, kind: 'refused_public_in_sandbox', to_number: d.number, announcement: 'sandbox_public_destination' }
  return { ...leg, kind: 'dial_public', to_number: d.number, emergency: d.emergency, caller_id: i.did ?? i.default_caller_id }
}

export interface ClickToCallRequest {
  user: string
  dial_string: string
  did?: string
}

/**
 * POST /v1/calls for one account: 400 validation_error naming each offending field
 * (details.user: not a user of the account; details.dial_string: not dialable;
 * details.did: not an active number of the account), else the plan.
 */
export async function planClickToCallRequest(
  tx: Db,
  account: { id: string; mode: 'test' | 'live'; defaultOutboundDid: string | null },
  body: ClickToCallRequest,
  registrar: RegisteredDevices,
): Promise<ClickToCallPlan> {
  const keys = directoryKeys(body.dial_string)
  const ext = keys.extension ? await activeExtension(tx, account.id, keys.extension) : undefined
  const known = await usersOfAccount(
    tx,
    account.id,
    [body.user, keys.userId, ext?.target].filter((x): x is string => typeof x === 'string'),
  )
  const destination = classifyDialString(body.dial_string, { extensions: new Map(ext ? [[ext.number, ext.target]] : []), users: known })
  const details: FieldDetails = {}
  if (!known.has(body.user)) details.user = 'is not a user of this account'
  if (destination.kind === 'invalid') details.dial_string = destination.reason
  if (body.did !== undefined && !(await activeNumberOfAccount(tx, account.id, body.did))) details.did = 'is not an active phone number of this account'
  if (Object.keys(details).length > 0 || destination.kind === 'invalid') throw new ValidationError(details)

  const devices = await registrar.ofUser(account.id, body.user, tx)
  const wantsDefaultCallerId = devices.length > 0 && destination.kind === 'public' && body.did === undefined
  const default_caller_id = wantsDefaultCallerId ? ((await outboundCallerId(tx, account.id)) ?? null) : null
  return planClickToCall({ user_id: body.user, devices, destination, mode: account.mode, did: body.did ?? null, default_caller_id })
}

/**
 * A click-to-call the gateway accepted, handed to the media role, which rings the
 * user's phones and then the destination (media/b2bua/click-to-call.ts). Only the
 * plans that place something travel.
 */
export interface ClickToCallNotice {
  /** The accepted request the media process must take before placing it (click-to-call-requests.ts). */
  request_id: string
  owner: { platformId: string; accountId: string; mode: 'test' | 'live' }
  plan: Exclude<ClickToCallPlan, { kind: 'nothing' }>
  at: string
}
