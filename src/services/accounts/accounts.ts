/**
 * Accounts: one customer organisation of a platform. Creating one also creates its
 * main location (from the address) and its first pricing, in one transaction.
 */
import { and, eq, inArray } from 'drizzle-orm'
import type { Db } from '../../db/client'
import { tableStatement } from '../../db/statements'
import { accounts, audioClips, buttonTemplates, deviceUsers, locations, phoneNumbers, platforms, users } from '../../db/schema'
import { forbidden, notFound, ValidationError, type FieldDetails } from '../../errors'
import { newId } from '../../ids'
import { keysetPage, type PageRequest } from '../../pagination'
import { DEFAULT_ACCOUNT_CONFIG, type AccountConfig, type AddressInput, type PricingRates, type StoredAddress } from './account-types'
import type { Deps } from '../deps'
import { scheduleAccountBlobDeletions } from '../data-lifecycle/blob-deletions'
import { accountsWithE911Number } from '../e911/location-state'
import type { Mode } from '../platform/platforms'
import { agreePricing } from './pricing'
import { TOS_VERSION } from './tos'
import { tosAcceptances } from '../../db/schema'

export type AccountRow = typeof accounts.$inferSelect

/**
 * An account by id, as a fixed statement (db/statements.ts): nearly every request
 * reads its account, and drizzle spends more CPU building a query, or mapping a
 * prepared one's parameters, than the driver spends running it.
 */
const ACCOUNT_BY_ID = tableStatement(accounts, (columns) => `select ${columns} from accounts where id = $1`)

export function accountLookup(db: Db): (id: string) => Promise<AccountRow | undefined> {
  return async (id) => (await ACCOUNT_BY_ID.rows(db, [id]))[0]
}

export interface CreateAccountInput {
  email: string | null
  primary_contact_name: string
  name?: string | null
  phone?: string | null
  config?: Partial<AccountConfig>
  address: AddressInput
  billing_address?: AddressInput | null
  pricing: PricingRates
}

export interface UpdateAccountInput {
  email?: string | null
  name?: string | null
  phone?: string | null
  primary_contact_name?: string
  config?: Partial<AccountConfig>
  default_outbound_did?: string | null
  hold_music_clip?: string | null
  main_location?: string | null
  default_button_template?: string | null
  billing_address?: AddressInput | null
}

/** Geocodes an address, reporting failures under `field.` in the details. */
export async function geocodeOrThrow(deps: Pick<Deps, 'geocoder'>, field: string, input: AddressInput): Promise<StoredAddress> {
  const result = await deps.geocoder.geocode(input)
  if (result.ok) return result.address
  const details: FieldDetails = {}
  for (const [k, v] of Object.entries(result.details)) details[`${field}.${k}`] = v
  throw new ValidationError(details, 'The address could not be validated.')
}

/** config.timezone is read by schedules (their default zone) and written into every phone's file: an unknown zone would fail them all later. */
function checkConfigTimeZone(config: Partial<AccountConfig> | undefined) {
  if (config?.timezone === undefined) return
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: config.timezone })
  } catch {
    throw new ValidationError({ 'config.timezone': 'must be an IANA time zone, such as America/New_York' })
  }
}

export async function createAccount(
  tx: Db,
  deps: Deps,
  caller: { platformId: string; mode: Mode; liveEnabled: boolean },
  input: CreateAccountInput,
): Promise<AccountRow> {
  if (caller.mode === 'live') {
    // The key's identity is cached by the authenticator; the operator may have turned
    // live mode off since, so read the platform's setting itself.
    const [platform] = await tx.select({ liveEnabled: platforms.liveEnabled }).from(platforms).where(eq(platforms.id, caller.platformId))
    if (!platform?.liveEnabled) {
      throw forbidden('Live mode is not enabled on this platform; live accounts cannot be created.', 'live_mode_disabled')
    }
  }
  checkConfigTimeZone(input.config)
  const address = await geocodeOrThrow(deps, 'address', input.address)
  const billing = input.billing_address ? await geocodeOrThrow(deps, 'billing_address', input.billing_address) : null
  const now = deps.clock.now()
  const id = newId('account')
  const locationId = newId('location')
  const [row] = await tx
    .insert(accounts)
    .values({
      id,
      platformId: caller.platformId,
      mode: caller.mode,
      email: input.email,
      name: input.name ?? null,
      phone: input.phone ?? null,
      primaryContactName: input.primary_contact_name,
      config: { ...DEFAULT_ACCOUNT_CONFIG, ...input.config },
      mainLocation: locationId,
      provisioningBaseUrl: `${deps.config.baseUrl}/provisioning/${id}/`,
      billingAddress: billing,
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  await tx.insert(locations).values({ id: locationId, accountId: id, name: input.name ?? null, address, status: 'active', createdAt: now, updatedAt: now })
  await agreePricing(tx, deps.clock, id, input.pricing, true)
  return row!
}

/** The account as its platform sees it. A key of the other mode is refused: keys work on their own mode only. */
export async function getAccountFor(db: Db, caller: { platformId: string; mode: Mode }, id: string): Promise<AccountRow> {
  const [row] = await db.select().from(accounts).where(eq(accounts.id, id))
  if (!row) throw notFound('account', id)
  if (row.platformId !== caller.platformId) throw forbidden('The account does not belong to this platform.', 'account_forbidden')
  if (row.mode !== caller.mode) {
    throw forbidden(
      caller.mode === 'test' ? 'A sandbox key works on sandbox accounts only.' : 'A live key works on live accounts only.',
      'account_mode_mismatch',
    )
  }
  return row
}

export async function listAccounts(db: Db, caller: { platformId: string; mode: Mode }, page: PageRequest) {
  return keysetPage<AccountRow>(db, accounts, and(eq(accounts.platformId, caller.platformId), eq(accounts.mode, caller.mode)), page)
}

export async function updateAccount(tx: Db, deps: Deps, account: AccountRow, input: UpdateAccountInput): Promise<AccountRow> {
  const details: FieldDetails = {}
  const set: Partial<typeof accounts.$inferInsert> = {}
  if (input.email !== undefined) set.email = input.email === '' ? null : input.email
  if (input.name !== undefined) set.name = input.name
  if (input.phone !== undefined) set.phone = input.phone
  if (input.primary_contact_name !== undefined) set.primaryContactName = input.primary_contact_name
  checkConfigTimeZone(input.config)
  if (input.config !== undefined) set.config = { ...account.config, ...input.config }
  if (input.main_location !== undefined) {
    if (input.main_location === null) details.main_location = 'cannot be cleared; give another active location of the account'
    else {
      const [loc] = await tx
        .select({ status: locations.status })
        .from(locations)
        .where(and(eq(locations.id, input.main_location), eq(locations.accountId, account.id)))
      if (!loc) details.main_location = 'is not a location of this account'
      else if (loc.status !== 'active') details.main_location = 'is not an active location'
      else set.mainLocation = input.main_location
    }
  }
  // The caller ID of the account's calls out: one of its active numbers, by ID.
  if (input.default_outbound_did !== undefined) {
    const id = input.default_outbound_did
    const [number] =
      id === null
        ? [null]
        : await tx
            .select({ id: phoneNumbers.id })
            .from(phoneNumbers)
            .where(and(eq(phoneNumbers.id, id), eq(phoneNumbers.accountId, account.id), eq(phoneNumbers.status, 'active')))
    if (number === undefined) details.default_outbound_did = 'is not an active phone number of this account'
    else set.defaultOutboundDid = id
  }
  if (input.hold_music_clip !== undefined) {
    const id = input.hold_music_clip
    const [clip] =
      id === null
        ? [null]
        : await tx
            .select({ id: audioClips.id })
            .from(audioClips)
            .where(and(eq(audioClips.id, id), eq(audioClips.accountId, account.id)))
    if (clip === undefined) details.hold_music_clip = 'is not an audio clip of this account'
    else set.holdMusicClip = id
  }
  if (input.default_button_template !== undefined) {
    const id = input.default_button_template
    const [tpl] =
      id === null
        ? [null]
        : await tx
            .select({ id: buttonTemplates.id })
            .from(buttonTemplates)
            .where(and(eq(buttonTemplates.id, id), eq(buttonTemplates.accountId, account.id)))
    if (tpl === undefined) details.default_button_template = 'is not a button template of this account'
    else set.defaultButtonTemplate = id
  }
  if (input.billing_address !== undefined) {
    set.billingAddress = input.billing_address === null ? null : await geocodeOrThrow(deps, 'billing_address', input.billing_address)
  }
  if (Object.keys(details).length > 0) throw new ValidationError(details)
  set.updatedAt = deps.clock.now()
  const [row] = await tx.update(accounts).set(set).where(eq(accounts.id, account.id)).returning()
  if (!row) throw notFound('account', account.id)
  return row
}

/**
 * Irreversible: the account's users, locations, pricing and other data go with it
 * (foreign keys cascade). Its recordings', voicemails' and uploads' blobs are owed a
 * deletion recorded in this same transaction, which the data-lifecycle sweeper carries out.
 */
export async function deleteAccount(tx: Db, id: string): Promise<void> {
  await scheduleAccountBlobDeletions(tx, id)
  await tx.delete(accounts).where(eq(accounts.id, id))
}

/**
 * Onboarding is complete when: a business profile with a location exists, a team
 * member exists, an active number with E911 exists, and a device is assigned to a
 * user. The E911 number: an active phone number whose E911 location (the main
 * location, numbers having none of their own) is provisioned (services/e911).
 */
export interface OnboardingChecks {
  business_profile: boolean
  team_member: boolean
  e911_number: boolean
  device_assigned: boolean
}

export interface AccountExtras {
  onboarding: OnboardingChecks
  tosAcceptedAt: Date | null
}

/** What an account view needs beyond its row, for a whole page of accounts in two queries. */
export async function accountExtras(db: Db, rows: AccountRow[]): Promise<Map<string, AccountExtras>> {
  const out = new Map<string, AccountExtras>()
  if (rows.length === 0) return out
  const ids = rows.map((r) => r.id)
  const accepted = await db
    .select({ accountId: tosAcceptances.accountId, acceptedAt: tosAcceptances.acceptedAt })
    .from(tosAcceptances)
    .where(and(inArray(tosAcceptances.accountId, ids), eq(tosAcceptances.version, TOS_VERSION)))
  const acceptedAt = new Map(accepted.map((a) => [a.accountId, a.acceptedAt]))
  const withMembers = await db.selectDistinct({ accountId: users.accountId }).from(users).where(inArray(users.accountId, ids))
  const hasMember = new Set(withMembers.map((m) => m.accountId))
  const withAssigned = await db.selectDistinct({ accountId: deviceUsers.accountId }).from(deviceUsers).where(inArray(deviceUsers.accountId, ids))
  const hasAssignedDevice = new Set(withAssigned.map((m) => m.accountId))
  const hasE911Number = await accountsWithE911Number(db, ids)
  for (const row of rows) {
    out.set(row.id, {
      onboarding: {
        business_profile: row.name !== null && row.mainLocation !== null,
        team_member: hasMember.has(row.id),
        e911_number: hasE911Number.has(row.id),
        device_assigned: hasAssignedDevice.has(row.id),
      },
      tosAcceptedAt: acceptedAt.get(row.id) ?? null,
    })
  }
  return out
}

export function accountView(row: AccountRow, extras: AccountExtras) {
  return {
    id: row.id,
    object: 'account' as const,
    livemode: row.mode === 'live',
    email: row.email,
    name: row.name,
    phone: row.phone,
    primary_contact_name: row.primaryContactName,
    config: row.config,
    default_outbound_did: row.defaultOutboundDid,
    hold_music_clip: row.holdMusicClip,
    main_location: row.mainLocation,
    default_button_template: row.defaultButtonTemplate,
    provisioning_base_url: row.provisioningBaseUrl,
    billing_address: row.billingAddress ?? null,
    onboarding_complete: Object.values(extras.onboarding).every(Boolean),
    // Sandbox accounts do not need the agreement; they may still sign it.
    tos_status: extras.tosAcceptedAt ? ('signed' as const) : row.mode === 'test' ? ('not_required' as const) : ('unsigned' as const),
    tos_accepted_at: extras.tosAcceptedAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

export async function accountResource(db: Db, row: AccountRow) {
  const extras = await accountExtras(db, [row])
  return accountView(row, extras.get(row.id)!)
}
