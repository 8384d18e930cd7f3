/**
 * SIP registrations of device lines: what the registrar reads to authenticate a
 * REGISTER, the shape of a binding as it travels to the device actor, and the
 * account's view of who is registered (GET /v1/quality/device-registrations).
 *
 * The device actor holds the bindings (machines/device.ts `registrations`, keyed
 * by `bindingKey`) and, beside them in its persisted context, what the registrar
 * saw of each (`registration_details`: line, users, transport, source, User-Agent).
 * No table of its own: the list reads the device actors' snapshots, so there is
 * one record of a binding, written in the actor's step.
 */
import { sql } from 'drizzle-orm'
import { type Db, queryRows } from '../../db/client'
import { devices } from '../../db/schema'
import { pgArray, statement } from '../../db/statements'
import type { Clock } from '../../clock'
import { keysetPage, type PageRequest } from '../../pagination'
import type { RegisteredDevice, RegisteredDevices } from '../calls/registered-devices'
import { DEVICE_ACTOR, type DeviceRow } from './records'
import { credentialSealer } from './sip-credentials'

// ---------------------------------------------------------------- bindings

export type SipTransportName = 'udp' | 'tcp' | 'ws' | 'wss' | 'tls'

/** What the registrar tells the device actor about one binding (REGISTER's `binding` field). */
export interface BindingDetails {
  line: string
  /** The line's own device: the phone, or the DECT handset whose base registers for it. */
  line_device: string
  username: string
  /** Whose presence this binding makes reachable: the line's user and the users the phone is assigned to. */
  user_ids: string[]
  /** The Contact URI as the phone gave it. */
  contact: string
  transport: SipTransportName
  source_address: string
  source_port: number
  user_agent: string | null
}

/** A binding as the device actor keeps it: the details plus when it was made and last refreshed. */
export interface StoredBinding extends BindingDetails {
  registered_at: string
  refreshed_at: string
}

/**
 * The device machine's key of a binding. RFC 3261 bindings belong to an address of
 * record (here a line), so two lines of one phone giving the same Contact are two
 * bindings, and `Contact: *` on one line leaves the other's alone.
 */
export const bindingKey = (username: string, contact: string) => `${username}|${contact}`

/** The device actor's context as far as registrations go (machines/device.ts plus the details the actor keeps). */
export interface RegistrationContext {
  registrations: { contact: string; expires_at: string }[]
  registration_details?: Record<string, StoredBinding>
}

/** The live bindings of a device (expires_at after `now`), with their details; a binding without details is left out. */
export function liveBindings(c: RegistrationContext | null | undefined, now: Date): (StoredBinding & { expires_at: string })[] {
  if (!c?.registrations) return []
  const out: (StoredBinding & { expires_at: string })[] = []
  for (const r of c.registrations) {
    const d = c.registration_details?.[r.contact]
    if (d && Date.parse(r.expires_at) > now.getTime()) out.push({ ...d, expires_at: r.expires_at })
  }
  return out
}

// ---------------------------------------------------------------- the registrar's reads

/** The line a REGISTER authenticates as: its credentials, its device actor, and the users it makes reachable. */
export interface RegistrarLine {
  line: string
  /** The line's own device (a handset for a DECT line). */
  lineDevice: string
  /** The device whose actor holds the binding: the phone, or a handset's base. */
  device: string
  account: string
  username: string
  password: string
  domain: string
  userIds: string[]
}

interface LineRow {
  id: string
  device_id: string
  actor_device: string
  account_id: string
  sip_username: string
  sip_password_sealed: string
  sip_domain: string
  user_ids: string[] | null
}

// The registrar's hot path: the lines of every REGISTER (and INVITE) that arrived together, one statement.
const LINES_BY_USERNAME = statement<LineRow>(
  `select l.id, l.device_id, coalesce(d.base_id, d.id) as actor_device, l.account_id, l.sip_username, l.sip_password_sealed, l.sip_domain,
      array(select l.user_id where l.user_id is not null
            union select du.user_id from device_users du where du.device_id = l.device_id order by 1) as user_ids
    from device_lines l join devices d on d.id = l.device_id
    where l.sip_username = any($1::text[])`,
)

/**
 * What a SIP username can be: we issue `u`/`p` and 11 letters and digits. Anything
 * else (a phone's garbage, a scanner's NUL byte, which PostgreSQL would refuse and
 * take the batch's other lookups down with it) names no line, without a query.
 */
const POSSIBLE_USERNAME = /^[A-Za-z0-9._~-]{1,64}$/

/** The lines with these SIP usernames, passwords opened; a username no line has is absent from the map. */
export async function registrarLines(db: Db, usernames: readonly string[]): Promise<Map<string, RegistrarLine>> {
  const asked = [...new Set(usernames.filter((u) => POSSIBLE_USERNAME.test(u)))]
  const found = new Map<string, RegistrarLine>()
  if (asked.length === 0) return found
  const rows = await LINES_BY_USERNAME.rows(db, [pgArray(asked)])
  if (rows.length === 0) return found
  const sealer = await credentialSealer(db)
  for (const row of rows)
    found.set(row.sip_username, {
      line: row.id,
      lineDevice: row.device_id,
      device: row.actor_device,
      account: row.account_id,
      username: row.sip_username,
      password: sealer.open(row.sip_password_sealed),
      domain: row.sip_domain,
      userIds: row.user_ids ?? [],
    })
  return found
}

/** The line with this SIP username; undefined when no line has it. */
export async function registrarLine(db: Db, username: string): Promise<RegistrarLine | undefined> {
  return (await registrarLines(db, [username])).get(username)
}

const DEVICE_CONTEXT = statement<{ context: RegistrationContext | null }>(
  `select snapshot->'context' as context from actor_snapshots where kind = $1 and id = $2 and status = 'active'`,
)

/** A device's bindings as its actor last committed them (what a registrar that just started knows of them). */
export async function deviceBindings(db: Db, deviceId: string, now: Date) {
  const [row] = await DEVICE_CONTEXT.rows(db, [DEVICE_ACTOR, deviceId])
  const context = typeof row?.context === 'string' ? (JSON.parse(row.context) as RegistrationContext) : row?.context
  return liveBindings(context, now)
}

// ---------------------------------------------------------------- GET /v1/quality/device-registrations

export interface RegistrationFilters {
  device?: string
  user?: string
  type?: 'deskphone' | 'dect_base'
}

/**
 * A page of the account's devices with at least one live binding (newest device
 * first), with their bindings. A binding past its expiry is not shown even if the
 * actor has not dropped it yet.
 */
export async function deviceRegistrationsPage(db: Db, accountId: string, f: RegistrationFilters, now: Date, page: PageRequest) {
  const where = sql`${devices.accountId} = ${accountId}
    ${f.device === undefined ? sql`` : sql` and ${devices.id} = ${f.device}`}
    ${f.type === undefined ? sql`` : sql` and ${devices.type} = ${f.type}`}
    and ${hasLiveBinding(now, f.user)}`
  const result = await keysetPage<DeviceRow>(db, devices, where, page)
  const contexts = await deviceContexts(
    db,
    result.rows.map((r) => r.id),
  )
  return { ...result, rows: result.rows.map((device) => ({ device, bindings: liveBindings(contexts.get(device.id), now) })) }
}

/** The device (`devices` row in the query) has a live binding, of this user when given. */
function hasLiveBinding(now: Date, user?: string) {
  const ofUser =
    user === undefined ? sql`` : sql` and (s.snapshot->'context'->'registration_details'->(b->>'contact')->'user_ids') @> ${JSON.stringify([user])}::jsonb`
  return sql`exists (select 1 from actor_snapshots s, jsonb_array_elements(s.snapshot->'context'->'registrations') b
      where s.kind = ${DEVICE_ACTOR} and s.id = ${devices.id} and s.status = 'active'
        and (b->>'expires_at')::timestamptz > ${now.toISOString()}::timestamptz${ofUser})`
}

/**
 * Which devices of a user are registered now, for click-to-call (GatewayDeps
 * registeredDevices): the devices whose lines have a live binding naming the user
 * (a DECT handset when its base registers for it).
 */
export function registeredDevicesFromBindings(db: Db, clock: Clock): RegisteredDevices {
  return {
    async ofUser(accountId, userId, tx) {
      const found = new Map<string, RegisteredDevice>()
      for (const b of await userBindings(tx ?? db, accountId, userId, clock.now())) {
        const kind = b.line_device === b.device ? (b.device_type === 'deskphone' ? 'deskphone' : undefined) : 'dect_handset'
        found.set(b.line_device, kind ? { id: b.line_device, kind } : { id: b.line_device })
      }
      return [...found.values()]
    },
  }
}

/**
 * The live bindings that make a user reachable (what a call to the user rings), with
 * the device whose actor holds each: the contacts of every line of theirs and of every
 * phone assigned to them.
 */
export async function userBindings(db: Db, accountId: string, userId: string, now: Date) {
  const rows = await queryRows<{ id: string; type: string; context: RegistrationContext | string }>(
    db,
    sql`select ${devices.id} as id, ${devices.type} as type, s.snapshot->'context' as context from ${devices}
      join actor_snapshots s on s.kind = ${DEVICE_ACTOR} and s.id = ${devices.id}
      where ${devices.accountId} = ${accountId} and ${hasLiveBinding(now, userId)}`,
  )
  const out: (StoredBinding & { expires_at: string; device: string; device_type: string })[] = []
  for (const r of rows) {
    const context = typeof r.context === 'string' ? (JSON.parse(r.context) as RegistrationContext) : r.context
    for (const b of liveBindings(context, now)) if (b.user_ids.includes(userId)) out.push({ ...b, device: r.id, device_type: r.type })
  }
  return out
}

async function deviceContexts(db: Db, ids: string[]): Promise<Map<string, RegistrationContext>> {
  const out = new Map<string, RegistrationContext>()
  if (ids.length === 0) return out
  const rows = await queryRows<{ id: string; context: RegistrationContext | string }>(
    db,
    sql`select id, snapshot->'context' as context from actor_snapshots where kind = ${DEVICE_ACTOR} and id in ${ids}`,
  )
  for (const r of rows) out.set(r.id, typeof r.context === 'string' ? JSON.parse(r.context) : r.context)
  return out
}

export type RegistrationPageItem = Awaited<ReturnType<typeof deviceRegistrationsPage>>['rows'][number]

/** A DeviceRegistration: one device and its live bindings. */
export function deviceRegistrationView(item: RegistrationPageItem, now: Date) {
  const { device, bindings } = item
  const users = [...new Set(bindings.flatMap((b) => b.user_ids))].sort()
  return {
    object: 'device_registration' as const,
    device: device.id,
    device_type: device.type,
    vendor: device.vendor,
    model: device.model,
    mac_address: device.macAddress,
    users,
    bindings: bindings
      .slice()
      .sort((a, b) => (a.registered_at < b.registered_at ? 1 : a.registered_at > b.registered_at ? -1 : 0))
      .map((b) => ({
        line: b.line,
        line_device: b.line_device,
        username: b.username,
        users: b.user_ids,
        contact: b.contact,
        transport: b.transport,
        source_address: b.source_address,
        source_port: b.source_port,
        user_agent: b.user_agent,
        registered_at: b.registered_at,
        refreshed_at: b.refreshed_at,
        expires_at: b.expires_at,
        expires_in: Math.max(0, Math.ceil((Date.parse(b.expires_at) - now.getTime()) / 1000)),
      })),
  }
}
