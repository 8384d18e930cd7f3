/** Shapes stored in JSON columns and shared by services and schemas. */
export interface AccountConfig {
  region: string
  extension_length: number
  transcription_enabled: boolean
  recording_enabled: boolean
  redaction_enabled: boolean
  timezone: string
  max_phone_numbers: number
  parking_timeout_seconds: number
  fax_inbound_per_hour: number
  fax_outbound_per_hour: number
  default_agent_visible: boolean
  e911_notification: { emails: string[] }
}

export const DEFAULT_ACCOUNT_CONFIG: AccountConfig = {
  region: 'us-east',
  extension_length: 3,
  transcription_enabled: true,
  recording_enabled: false,
  redaction_enabled: false,
  timezone: 'America/New_York',
  max_phone_numbers: 25,
  parking_timeout_seconds: 60,
  fax_inbound_per_hour: 25,
  fax_outbound_per_hour: 25,
  default_agent_visible: true,
  e911_notification: { emails: [] },
}

export interface AddressInput {
  address_number?: string
  street?: string
  unit?: string
  city: string
  state: string
  postal_code: string
  country?: string
}

export interface StoredAddress {
  address_number: string | null
  street: string | null
  unit: string | null
  city: string
  state: string
  postal_code: string
  country: string
  place_id: string
  latitude: number
  longitude: number
  formatted_address: string
}

export interface PricingRates {
  per_user_rate: number
  per_did_rate: number
  per_voiceai_location_rate: number
}
