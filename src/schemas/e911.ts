/** E911 request and response schemas: location E911 validation and the users' emergency addresses. */
import { E911Status, StoredAddress } from './accounts'
import { Body, DateTime, Nullable, T, Text } from './common'

const Reasons = T.Record(T.String(), T.String(), { description: 'Field path to reason; empty when the address is valid.' })

export const E911Validation = T.Object({
  object: T.Literal('e911_validation'),
  location: T.String({ description: 'The location’s ID.' }),
  valid: T.Boolean({ description: 'true when the address can be provisioned as it is.' }),
  address: StoredAddress,
  suggested_address: Nullable(
    T.Object(StoredAddress.properties, {
      description:
        'When the only problem is the city: the same address with the city the ZIP code belongs to (its USPS preferred name). Update the location with it (POST /v1/locations/{id} with address), then provision.',
    }),
  ),
  details: Reasons,
  e911_status: E911Status,
  validated_at: DateTime(),
})

export const EmergencyAddressDetails = T.Object({
  address_number: Nullable(T.String()),
  street: Nullable(T.String()),
  unit: Nullable(T.String()),
  city: T.String(),
  state: T.String(),
  postal_code: T.String(),
  country: T.String(),
  formatted_address: T.String(),
  latitude: Nullable(T.Number()),
  longitude: Nullable(T.Number()),
})

export const EmergencyAddress = T.Object({
  id: T.String(),
  object: T.Literal('emergency_address'),
  address: EmergencyAddressDetails,
  registered_ip: Nullable(
    T.String({ description: 'The network the address is bound to: set when a softphone presents the address on connect; null when unbound.' }),
  ),
  created_at: DateTime(),
})

export const CreateEmergencyAddressRequest = Body(
  {
    address_number: T.Optional(Text(20, 1)),
    street: Text(200, 1),
    unit: T.Optional(Text(50, 1)),
    city: Text(100, 1),
    state: T.String({ pattern: '^[A-Za-z]{2}$', description: 'two-letter US state or territory code' }),
    postal_code: Text(10, 1),
    country: T.Optional(T.String({ pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2; default US (the one supported)', default: 'US' })),
  },
  'EmergencyAddressRequest: validated before it is stored',
)
