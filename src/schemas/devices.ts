/** Devices (deskphones, DECT bases and handsets), their lines and users, button templates and overrides. */
import { Body, DateTime, Expanded, Id, Nullable, T, Text } from './common'

export const DeviceTypeSchema = T.Union([T.Literal('deskphone'), T.Literal('dect_base'), T.Literal('dect_handset')])

const SipCredentials = T.Object(
  { username: T.String(), password: T.String(), domain: T.String() },
  { description: 'SIP account the phone registers with; present only for platform secret keys, never for account sessions' },
)

export const DeviceLine = T.Object({
  id: T.String(),
  object: T.Literal('device_line'),
  device: T.String(),
  line_number: T.Integer({ minimum: 1, description: 'line key on the phone, 1 to the model’s line count' }),
  user: Nullable(T.String()),
  extension: Nullable(T.String({ description: 'extension ID' })),
  label: Nullable(T.String()),
  sip_credentials: T.Optional(SipCredentials),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const DeviceUser = T.Object({
  id: T.String(),
  object: T.Literal('device_user'),
  device: T.String(),
  user: T.String(),
  created_at: DateTime(),
})

export const Device = T.Object(
  {
    id: T.String(),
    object: T.Literal('device'),
    account: T.String(),
    type: DeviceTypeSchema,
    vendor: T.String({ description: 'lowercase vendor name (yealink, polycom)' }),
    model: T.String(),
    mac_address: Nullable(T.String({ pattern: '^[0-9A-F]{12}$', description: '12 uppercase hex digits; null for DECT handsets' })),
    name: Nullable(T.String()),
    location: Nullable(T.String({ description: 'location ID; a device created without one stays unset' })),
    base: Nullable(T.String({ description: 'DECT handsets: their base' })),
    button_template: Nullable(T.String()),
    status: T.String({ description: 'pending_sync until the phone fetches its configuration, then synced (or a provisioning state)' }),
    provisioning_credentials: T.Optional(
      T.Object(
        { username: T.String(), password: T.String() },
        {
          description:
            'what the phone presents (HTTP digest, or basic over TLS) to fetch its file under provisioning_base_url; deskphones and DECT bases, shown to platform secret keys only',
        },
      ),
    ),
    ip_address: Nullable(T.String()),
    provisioned_at: Nullable(DateTime()),
    last_fetched_at: Nullable(DateTime()),
    check_sync_requested_at: Nullable(DateTime()),
    users: T.Optional(Expanded(DeviceUser)),
    lines: T.Optional(Expanded(DeviceLine)),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { description: 'A deskphone, DECT base or DECT handset: one record, told apart by type' },
)

const Mac = () =>
  T.String({
    minLength: 1,
    maxLength: 32,
    description: 'MAC address: 12 hex digits, optionally separated by colons or dashes; stored as 12 uppercase hex digits',
  })

const LineInput = Body({
  line_number: T.Optional(T.Integer({ minimum: 1, maximum: 99, description: 'default: the lowest free line' })),
  user: T.Optional(Nullable(Id('user of the account'))),
  extension: T.Optional(Nullable(Id('extension ID of the account'))),
  label: T.Optional(Nullable(Text(64))),
})

const common = {
  name: T.Optional(Nullable(Text(100))),
  location: T.Optional(Nullable(Id('location of the account; omitted: unset'))),
}

const template = {
  button_template: T.Optional(
    Nullable(Id('button template of the account that fits the device; omitted: the account default_button_template when it fits; null: none')),
  ),
}

export const CreateDeskphoneRequest = Body({
  vendor: Text(40, 1),
  model: Text(40, 1),
  mac_address: Mac(),
  ...common,
  ...template,
  lines: T.Optional(T.Array(LineInput, { maxItems: 99, description: 'at most the model’s line count' })),
})

export const CreateDectBaseRequest = Body({ vendor: Text(40, 1), model: Text(40, 1), mac_address: Mac(), ...common })

export const CreateHandsetRequest = Body({ vendor: T.Optional(Text(40, 1)), model: Text(40, 1), ...common, ...template })

export const CreateDeviceRequest = Body({
  type: DeviceTypeSchema,
  vendor: Text(40, 1),
  model: Text(40, 1),
  mac_address: T.Optional(Mac()),
  base: T.Optional(Id('DECT handsets: the base, required')),
  ...common,
  ...template,
  lines: T.Optional(T.Array(LineInput, { maxItems: 99, description: 'deskphones only' })),
})

export const UpdateDeviceRequest = Body({
  ...common,
  ...template,
  status: T.Optional(T.Literal('pending_sync', { description: 'sets the device back to pending_sync (any update does)' })),
})

export const CreateLineRequest = LineInput
export const UpdateLineRequest = Body({
  user: T.Optional(Nullable(Id('user of the account'))),
  extension: T.Optional(Nullable(Id('extension ID of the account'))),
  label: T.Optional(Nullable(Text(64))),
})

export const HandsetExtension = T.Object({
  id: T.String({ description: 'the handset line carrying the extension' }),
  object: T.Literal('handset_extension'),
  base: T.String(),
  handset: T.String(),
  extension: Nullable(T.String()),
  line_number: T.Integer(),
  label: Nullable(T.String()),
  sip_credentials: T.Optional(SipCredentials),
  created_at: DateTime(),
})

export const CreateHandsetExtensionRequest = Body({ extension: Id('extension ID of the account'), label: T.Optional(Nullable(Text(64))) })

export const AssignDeviceUserRequest = Body({ user: Id('user of the account') })

export const ProvisioningEvent = T.Object({
  id: T.String(),
  object: T.Literal('provisioning_event'),
  device: T.String(),
  type: T.Union([T.Literal('provisioned'), T.Literal('config_fetched'), T.Literal('provisioning_failed'), T.Literal('check_sync_requested')]),
  error_code: Nullable(T.String()),
  ip_address: Nullable(T.String()),
  user_agent: Nullable(T.String()),
  created_at: DateTime(),
})

const BUTTON_TYPES = ['line', 'speed_dial', 'blf', 'park', 'voicemail', 'dnd', 'transfer', 'none'] as const

export const ButtonTypeSchema = T.Union(
  BUTTON_TYPES.map((v) => T.Literal(v)),
  {
    description:
      'line (value: line number), speed_dial and blf (value: number, extension or user ID), park (value: optional slot), voicemail, dnd, transfer (no value); none blanks a key in an override',
  },
)

const buttonFields = {
  key: T.Integer({ minimum: 1, maximum: 200, description: 'programmable key, 1 to the model’s key count' }),
  type: ButtonTypeSchema,
  value: T.Optional(Nullable(Text(64))),
  label: T.Optional(Nullable(Text(64))),
}

export const ButtonInput = Body(buttonFields)
export const UpdateButtonRequest = Body({
  key: T.Optional(buttonFields.key),
  type: T.Optional(ButtonTypeSchema),
  value: T.Optional(Nullable(Text(64))),
  label: T.Optional(Nullable(Text(64))),
})

export const Button = T.Object({
  id: T.String(),
  object: T.Literal('button'),
  template: T.String(),
  key: T.Integer(),
  type: ButtonTypeSchema,
  value: Nullable(T.String()),
  label: Nullable(T.String()),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const ButtonOverride = T.Object({
  id: T.String(),
  object: T.Literal('button_override'),
  device: T.String(),
  key: T.Integer(),
  type: ButtonTypeSchema,
  value: Nullable(T.String()),
  label: Nullable(T.String()),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const EffectiveButton = T.Object({
  key: T.Integer(),
  type: ButtonTypeSchema,
  value: Nullable(T.String()),
  label: Nullable(T.String()),
  source: T.Union([T.Literal('template'), T.Literal('override')]),
})

export const EffectiveButtons = T.Object({ object: T.Literal('device_buttons'), device: T.String(), data: T.Array(EffectiveButton) })

export const ButtonTemplate = T.Object({
  id: T.String(),
  object: T.Literal('button_template'),
  account: T.String(),
  name: T.String(),
  vendor: T.String(),
  models: T.Array(T.String(), { description: 'models the template fits; empty: every keyed model of the vendor' }),
  compatible: T.Optional(T.Boolean({ description: 'with for_device: whether that device can take the template' })),
  buttons: T.Optional(Expanded(Button)),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const CreateButtonTemplateRequest = Body({
  name: Text(100, 1),
  vendor: Text(40, 1),
  models: T.Optional(T.Array(Text(40, 1), { maxItems: 20 })),
  buttons: T.Optional(T.Array(ButtonInput, { maxItems: 200 })),
})

export const UpdateButtonTemplateRequest = Body({
  name: T.Optional(Text(100, 1)),
  models: T.Optional(T.Array(Text(40, 1), { maxItems: 20 })),
})
