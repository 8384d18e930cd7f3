import { Body, DateOnly, DateTime, E164, Email, Expanded, Id, Nullable, T, Text } from './common'
import { Extension } from './routing'

export const AddressInput = Body(
  {
    address_number: T.Optional(Text(20)),
    street: T.Optional(Text(200)),
    unit: T.Optional(Text(50)),
    city: Text(100, 1),
    state: T.String({ pattern: '^[A-Za-z]{2}$', description: 'two-letter code' }),
    postal_code: Text(20, 1),
    country: T.Optional(T.String({ pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2', default: 'US' })),
  },
  'Address input; validated and geocoded before it is stored',
)

export const StoredAddress = T.Object({
  address_number: Nullable(T.String()),
  street: Nullable(T.String()),
  unit: Nullable(T.String()),
  city: T.String(),
  state: T.String(),
  postal_code: T.String(),
  country: T.String(),
  place_id: T.String(),
  latitude: T.Number(),
  longitude: T.Number(),
  formatted_address: T.String(),
})

const Rate = () => T.Integer({ minimum: 0, maximum: 1_000_000, description: 'cents per month' })

export const AccountPricing = Body({
  per_user_rate: Rate(),
  per_did_rate: Rate(),
  per_voiceai_location_rate: Rate(),
})

export const AccountPricingResponse = T.Object({
  object: T.Literal('account_pricing'),
  account: T.String(),
  per_user_rate: T.Integer(),
  per_did_rate: T.Integer(),
  per_voiceai_location_rate: T.Integer(),
  agreed_at: DateTime(),
  effective_from: DateOnly(),
})

export const EffectivePricing = T.Object({
  object: T.Literal('effective_pricing'),
  per_user_rate: T.Integer(),
  per_did_rate: T.Integer(),
  per_voiceai_location_rate: T.Integer(),
  effective_from: DateOnly(),
  next: Nullable(
    T.Object({
      per_user_rate: T.Integer(),
      per_did_rate: T.Integer(),
      per_voiceai_location_rate: T.Integer(),
      effective_from: DateOnly(),
    }),
  ),
})

/** Every field optional: on create the rest take defaults, on update the rest stay unchanged. */
export const AccountConfigInput = Body({
  region: T.Optional(Text(50, 1)),
  extension_length: T.Optional(T.Integer({ minimum: 2, maximum: 6 })),
  transcription_enabled: T.Optional(T.Boolean()),
  recording_enabled: T.Optional(T.Boolean()),
  redaction_enabled: T.Optional(T.Boolean()),
  timezone: T.Optional(Text(64, 1)),
  max_phone_numbers: T.Optional(T.Integer({ minimum: 0, maximum: 100_000 })),
  parking_timeout_seconds: T.Optional(T.Integer({ minimum: 10, maximum: 3600 })),
  fax_inbound_per_hour: T.Optional(T.Integer({ minimum: 0, maximum: 10_000 })),
  fax_outbound_per_hour: T.Optional(T.Integer({ minimum: 0, maximum: 10_000 })),
  default_agent_visible: T.Optional(T.Boolean()),
  e911_notification: T.Optional(Body({ emails: T.Array(Email(), { maxItems: 20 }) })),
})

export const AccountConfig = T.Object({
  region: T.String(),
  extension_length: T.Integer(),
  transcription_enabled: T.Boolean(),
  recording_enabled: T.Boolean(),
  redaction_enabled: T.Boolean(),
  timezone: T.String(),
  max_phone_numbers: T.Integer(),
  parking_timeout_seconds: T.Integer(),
  fax_inbound_per_hour: T.Integer(),
  fax_outbound_per_hour: T.Integer(),
  default_agent_visible: T.Boolean(),
  e911_notification: T.Object({ emails: T.Array(T.String()) }),
})

export const CreateAccountRequest = Body({
  email: Nullable(Email()),
  primary_contact_name: Text(200, 1),
  name: T.Optional(Nullable(Text(200))),
  phone: T.Optional(Nullable(E164())),
  config: T.Optional(AccountConfigInput),
  address: AddressInput,
  billing_address: T.Optional(Nullable(AddressInput)),
  pricing: AccountPricing,
})

export const UpdateAccountRequest = Body({
  email: T.Optional(Nullable(T.Union([Email(), T.Literal('')]))),
  name: T.Optional(Nullable(Text(200))),
  phone: T.Optional(Nullable(E164())),
  primary_contact_name: T.Optional(Text(200, 1)),
  config: T.Optional(AccountConfigInput),
  default_outbound_did: T.Optional(Nullable(Id())),
  hold_music_clip: T.Optional(Nullable(Id())),
  main_location: T.Optional(Nullable(Id())),
  default_button_template: T.Optional(Nullable(Id())),
  billing_address: T.Optional(Nullable(AddressInput)),
})

export const Account = T.Object(
  {
    id: T.String(),
    object: T.Literal('account'),
    livemode: T.Boolean(),
    email: Nullable(T.String()),
    name: Nullable(T.String()),
    phone: Nullable(T.String()),
    primary_contact_name: Nullable(T.String()),
    config: AccountConfig,
    default_outbound_did: Nullable(T.String()),
    hold_music_clip: Nullable(T.String()),
    main_location: Nullable(T.String()),
    default_button_template: Nullable(T.String()),
    provisioning_base_url: Nullable(T.String()),
    billing_address: Nullable(StoredAddress),
    onboarding_complete: T.Boolean(),
    tos_status: T.Union([T.Literal('signed'), T.Literal('unsigned'), T.Literal('not_required')]),
    tos_accepted_at: Nullable(DateTime()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { $id: '#/components/schemas/Account', title: 'Account' },
)

export const TosAcceptRequest = Body({ version: Text(32, 1) })

export const AccountTos = T.Object({
  object: T.Literal('account_tos'),
  account: T.String(),
  version: T.String(),
  url: T.String(),
  content: T.String(),
  body: T.String(),
  acceptance: Nullable(
    T.Object({
      version: T.String(),
      accepted_at: DateTime(),
      ip: Nullable(T.String()),
      user_agent: Nullable(T.String()),
      pricing: T.Object({ per_user_rate: T.Integer(), per_did_rate: T.Integer(), per_voiceai_location_rate: T.Integer() }),
    }),
  ),
  pricing: T.Optional(Nullable(AccountPricingResponse)),
})

export const E911Status = T.Union([T.Literal('unvalidated'), T.Literal('validated'), T.Literal('invalid'), T.Literal('provisioned')], {
  description:
    'E911 state of the location’s current address: unvalidated (never checked, or the address changed since), validated (validate-e911 passed), invalid (validate-e911 found problems, listed by the last validation), provisioned (registered for emergency dispatch by provision-e911).',
})

/** The E911 fields of a Location (services/e911: validate-e911, provision-e911). */
const LocationE911Fields = {
  e911_status: E911Status,
  e911_provisioned: T.Boolean({
    description: 'true when e911_status is provisioned: emergency calls from this location carry it (call.emergency location_id and location_name).',
  }),
  e911_validated_at: Nullable(DateTime()),
  e911_provisioned_at: Nullable(DateTime()),
}

export const Location = T.Object({
  id: T.String(),
  object: T.Literal('location'),
  account: T.String(),
  name: Nullable(T.String()),
  status: T.Union([T.Literal('active'), T.Literal('inactive')]),
  address: StoredAddress,
  ...LocationE911Fields,
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const CreateLocationRequest = Body({ name: T.Optional(Nullable(Text(200))), address: AddressInput })
export const UpdateLocationRequest = Body({
  name: T.Optional(Nullable(Text(200))),
  address: T.Optional(AddressInput),
  status: T.Optional(T.Union([T.Literal('active'), T.Literal('inactive')])),
})

// ---------------------------------------------------------------- users

export const User = T.Object({
  id: T.String(),
  object: T.Literal('user'),
  account: T.String(),
  name: Nullable(T.String()),
  email: T.String(),
  extensions: T.Optional(Expanded(Extension)),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const CreateUserRequest = Body({ name: T.Optional(Nullable(Text(200))), email: Email() })
export const UpdateUserRequest = Body({ name: T.Optional(Nullable(Text(200))), email: T.Optional(Email()) })

export const DirectoryEntry = T.Object(
  {
    user: T.String({ description: 'The user’s id.' }),
    display_name: T.String({ description: 'The user’s name; the user’s id when the user has no name.' }),
  },
  { additionalProperties: false },
)

export const UserProfile = T.Object({
  id: T.String(),
  object: T.Literal('user_profile'),
  name: Nullable(T.String()),
  email: T.String(),
  account: T.String(),
  extensions: T.Array(T.Object({ number: T.String(), status: T.Union([T.Literal('active'), T.Literal('inactive')]) })),
  created_at: DateTime(),
  updated_at: DateTime(),
})

const PRESENCE_STATUS_VALUES = ['available', 'on_call', 'dnd', 'away', 'offline'] as const

export const PresenceStatus = T.Object(
  {
    object: T.Literal('presence_status'),
    user: T.String({ description: 'The user’s id.' }),
    status: T.Union(
      PRESENCE_STATUS_VALUES.map((s) => T.Literal(s)),
      {
        description:
          'What others see, by precedence: on_call (the user is on a call: the user who placed it, or who took it once connected, until it ends), offline (no registered SIP device or WebRTC session: until devices register, every user not on a call is offline), then the manual choice dnd or away, else available.',
      },
    ),
    status_text: Nullable(T.String({ maxLength: 100 })),
    updated_at: DateTime(),
    webrtc: T.Object(
      {
        state: T.Union([T.Literal('online'), T.Literal('offline')], { description: 'online while at least one browser session is connected' }),
        sessions: T.Integer({ minimum: 0, description: 'live browser (WebRTC) sessions of the user' }),
      },
      { description: 'The user’s WebRTC softphone sessions. Until WebRTC signalling exists this is always {state: offline, sessions: 0}.' },
    ),
  },
  { description: 'A user’s presence. updated_at is when status or status_text last changed (the user’s creation while it never has).' },
)

/** The idle timeout a client asks for when it reports activity. */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 600
export const PresenceActivityRequest = Body({
  idle_timeout_seconds: T.Optional(
    T.Integer({
      minimum: 0,
      maximum: 86_400,
      description: `seconds without a report after which the user shows away (default ${DEFAULT_IDLE_TIMEOUT_SECONDS}); 0 turns the idle timeout off`,
    }),
  ),
})

export const PresenceUpdateRequest = Body(
  {
    status: T.Union(
      PRESENCE_STATUS_VALUES.map((s) => T.Literal(s)),
      { description: 'available, dnd or away; on_call and offline are set by the service (400 validation_error naming status).' },
    ),
    status_text: T.Optional(Nullable(T.String({ maxLength: 100, description: 'at most 100 characters; omitted keeps the current text, null clears it' }))),
  },
  'The user’s manual presence. It shows once the user is neither on a call nor offline.',
)
