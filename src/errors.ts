/**
 * The one error type. Services throw these; the gateway's single onError turns
 * them into `{error, code?, details?}` with the status. Codes are stable API: a
 * code is one of STABLE_CODES (below), so a code missing from the list (and from
 * the OpenAPI document, which lists them) does not compile.
 */
export type FieldDetails = Record<string, string>

export type StableCode = keyof typeof STABLE_CODES
/** The resources with their own not-found code (`<resource>_not_found`). */
export type NotFoundResource = StableCode extends infer C ? (C extends `${infer R}_not_found` ? R : never) : never

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: StableCode,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message)
  }

  toBody(): { error: string; code?: string; details?: Record<string, unknown> } {
    const body: { error: string; code?: string; details?: Record<string, unknown> } = { error: this.message }
    if (this.code !== undefined) body.code = this.code
    if (this.details !== undefined) body.details = this.details
    return body
  }
}

/** 400 validation_error: `details` maps each offending field path to its reason. */
export class ValidationError extends ApiError {
  constructor(details: FieldDetails, message = 'The request failed validation.') {
    super(400, message, 'validation_error', details)
  }
}

export const badRequest = (message: string, code?: StableCode) => new ApiError(400, message, code)
export const unauthorized = (message = 'Missing or invalid credentials.', code: StableCode = 'unauthorized') => new ApiError(401, message, code)
export const forbidden = (message: string, code: StableCode = 'forbidden') => new ApiError(403, message, code)
export const notFound = (resource: NotFoundResource, id?: string) =>
  new ApiError(404, id === undefined ? `No such ${resource.replace(/_/g, ' ')}.` : `No such ${resource.replace(/_/g, ' ')}: ${id}`, `${resource}_not_found`)
export const conflict = (message: string, code?: StableCode, details?: Record<string, unknown>) => new ApiError(409, message, code, details)
export const unprocessable = (message: string, code?: StableCode) => new ApiError(422, message, code)

/** 409 call_not_active: the call has ended, is not yet answered, or its state does not admit the command. */
export class CallNotActive extends ApiError {
  constructor(callId: string, why = 'is not active') {
    super(409, `Call ${callId} ${why}.`, 'call_not_active')
  }
}

/** Every stable code this service emits, with its status: the OpenAPI document lists them. */
export const STABLE_CODES = {
  validation_error: { status: 400, meaning: 'body, query or path failed validation; details has field reasons' },
  invalid_json: { status: 400, meaning: 'the body is not valid JSON' },
  invalid_pagination: { status: 400, meaning: 'cursor malformed, tampered with, expired or used with other filters' },
  unauthorized: { status: 401, meaning: 'missing or invalid credentials' },
  session_expired: { status: 401, meaning: 'the session token has expired or was revoked' },
  forbidden: { status: 403, meaning: 'the credential may not call this operation' },
  account_forbidden: { status: 403, meaning: 'the account does not belong to this platform' },
  account_mode_mismatch: { status: 403, meaning: 'sandbox keys work on sandbox accounts only, live keys on live accounts only' },
  live_mode_disabled: { status: 403, meaning: 'live mode is not enabled on this platform' },
  missing_capability: { status: 403, meaning: 'the session lacks the component this operation needs' },
  account_header_required: { status: 400, meaning: 'the operation needs the Service-Account header' },
  not_found: { status: 404, meaning: 'no such route' },
  method_not_allowed: { status: 405, meaning: 'the path exists, but not with this method (the Allow header lists those it has)' },
  account_not_found: { status: 404, meaning: 'no such account' },
  user_not_found: { status: 404, meaning: 'no such user in the account' },
  extension_not_found: { status: 404, meaning: 'no such extension in the account' },
  location_not_found: { status: 404, meaning: 'no such location in the account' },
  phone_number_not_found: { status: 404, meaning: 'no such phone number in the account' },
  phone_number_order_not_found: { status: 404, meaning: 'no such number order in the account' },
  invalid_sandbox_phone_number: { status: 400, meaning: 'not a valid sandbox number (+15005550000 to +15005559999, simulator destinations excluded)' },
  phone_number_limit_exceeded: {
    status: 409,
    meaning: 'the request would exceed config.max_phone_numbers; the message states held count, cap and count attempted',
  },
  phone_numbers_already_claimed: {
    status: 409,
    meaning: 'numbers already live; details.already_on_account and details.in_service_elsewhere, both always present',
  },
  carrier_unavailable: { status: 502, meaning: 'no carrier is reachable: live numbers cannot be searched or ordered in this deployment' },
  admin_user_not_found: { status: 404, meaning: 'the audit actor is not a person of the account' },
  platform_not_found: { status: 404, meaning: 'no such platform (operator API)' },
  api_key_not_found: { status: 404, meaning: 'no such key on this platform (operator API)' },
  extension_exists: { status: 409, meaning: 'the extension number is already used in the account' },
  user_email_taken: { status: 409, meaning: 'another user of the account has this email' },
  location_in_use: { status: 409, meaning: 'the location is the account main location, devices are placed at it, or hardware orders still pending ship to it' },
  device_not_found: { status: 404, meaning: 'no such device in the account' },
  deskphone_not_found: { status: 404, meaning: 'no such deskphone in the account' },
  dect_base_not_found: { status: 404, meaning: 'no such DECT base in the account' },
  handset_not_found: { status: 404, meaning: 'no such handset on this DECT base' },
  handset_extension_not_found: { status: 404, meaning: 'the extension is not on this handset' },
  device_line_not_found: { status: 404, meaning: 'no such line on this deskphone' },
  device_user_not_found: { status: 404, meaning: 'the user is not assigned to this device' },
  button_template_not_found: { status: 404, meaning: 'no such button template in the account' },
  button_not_found: { status: 404, meaning: 'no such button in this template' },
  button_override_not_found: { status: 404, meaning: 'no such button override on this device' },
  mac_address_taken: { status: 409, meaning: 'a device with this MAC address is already registered' },
  device_line_exists: { status: 409, meaning: 'the line number (or, on a handset, the extension) is already in use on this device' },
  device_user_exists: { status: 409, meaning: 'the user is already assigned to this device' },
  button_key_taken: { status: 409, meaning: 'the template already has a button on this key' },
  button_template_in_use: { status: 409, meaning: 'devices or the account default use this template, or would no longer fit it' },
  unsupported_vendor: { status: 400, meaning: 'phone vendor or model not supported; details name the field' },
  credentials_not_found: { status: 404, meaning: 'no SIP credentials for the endpoint' },
  tos_version_stale: { status: 409, meaning: 'the agreement version is not the current one' },
  idempotency_key_in_use: { status: 409, meaning: 'a request with this Idempotency-Key is still running' },
  idempotency_key_reused: { status: 422, meaning: 'the Idempotency-Key was used with a different request' },
  pricing_required: { status: 422, meaning: 'pricing must be agreed before the agreement can be accepted' },
  sandbox_only: { status: 400, meaning: 'the operation exists in sandbox mode only' },
  unsupported_event_type: { status: 400, meaning: 'not a supported test event type; details.supported lists them' },
  call_not_found: { status: 404, meaning: 'no such call in the account' },
  voicemail_not_found: { status: 404, meaning: 'no such voicemail in the account' },
  audio_clip_not_found: { status: 404, meaning: 'no such audio clip in the account' },
  audio_clip_in_use: { status: 409, meaning: 'the account’s hold music or a dial plan plays this audio clip' },
  voicemail_greeting_not_found: { status: 404, meaning: 'the owner has no greeting of this type' },
  voicemail_owner_not_found: { status: 404, meaning: 'the greeting owner is neither a user nor a shared voicemail box of the account' },
  recording_not_found: { status: 404, meaning: 'the call has no recording' },
  call_transfer_not_allowed: { status: 409, meaning: 'a transfer of the consultation call of a warm transfer, or complete_transfer on a call that is not one' },
  pricing_not_found: { status: 404, meaning: 'no pricing has been agreed for the account yet' },
  dead_letter_not_found: { status: 404, meaning: 'no dead-lettered delivery with this id (operator API)' },
  call_not_active: { status: 409, meaning: 'the call has ended, is still ringing, or its state does not admit the command (e.g. resume when not held)' },
  recording_not_active: { status: 409, meaning: 'the call is not recording, or its recording is already paused' },
  recording_not_paused: { status: 409, meaning: 'the call recording is not paused' },
  listener_not_found: { status: 404, meaning: 'no such listener on the call' },
  no_phone_number: { status: 400, meaning: 'the account has no active phone number (the call simulator uses the first one as the account side)' },
  download_expired: { status: 410, meaning: 'the signed download URL has expired; ask for a new one' },
  call_simulator_unavailable: { status: 503, meaning: 'this process cannot reach the call actors (no worker role, and no NATS to reach workers)' },
  webhook_endpoint_not_found: { status: 404, meaning: 'no such webhook endpoint in this scope' },
  payload_too_large: { status: 413, meaning: 'the body is larger than the service accepts' },
  unsupported_media_type: { status: 415, meaning: 'bodies must be application/json' },
  rate_limited: { status: 429, meaning: 'too many requests for this credential; wait Retry-After seconds' },
  ring_group_not_found: { status: 404, meaning: 'no such ring group in the account' },
  ring_group_member_not_found: { status: 404, meaning: 'no such member in this ring group' },
  schedule_not_found: { status: 404, meaning: 'no such schedule in the account' },
  dial_plan_not_found: { status: 404, meaning: 'no such dial plan in the account' },
  shared_voicemail_box_not_found: { status: 404, meaning: 'no such shared voicemail box in the account' },
  voice_app_not_found: { status: 404, meaning: 'no such voice app in the account' },
  ai_agent_not_found: { status: 404, meaning: 'no such AI agent in the account' },
  queue_not_found: { status: 404, meaning: 'no such call queue in the account' },
  queue_member_not_found: { status: 404, meaning: 'no such member in this queue' },
  queue_validation_failed: {
    status: 400,
    meaning:
      'QueueValidationFailed: a timeout target not in the account, or a change forming a routing loop through ring groups, dial plans or queues; details name each offending field',
  },
  ring_group_member_conflict: { status: 409, meaning: 'the user is already a member of the ring group' },
  queue_member_conflict: { status: 409, meaning: 'QueueMemberConflict: the user is already a member of the queue' },
  routing_object_in_use: {
    status: 409,
    meaning: 'an extension, phone number route or other routing object still routes to it; details.referenced_by lists them',
  },
  port_order_not_found: { status: 404, meaning: 'no such port order in the account' },
  port_order_document_not_found: { status: 404, meaning: 'the port order has no document of this type yet' },
  port_order_invalid_state: { status: 409, meaning: 'port order status does not allow the action; the message names the status and action' },
  port_order_approval_required: { status: 422, meaning: 'the port order must be approved (POST .../approve) before it is submitted' },
  emergency_address_not_found: { status: 404, meaning: 'no such emergency address of the signed-in user' },
  emergency_address_invalid: {
    status: 422,
    meaning:
      'the location’s address cannot be provisioned for E911 (unknown ZIP code, ZIP code of another state, a city that is not the ZIP code’s, no street); details name each field',
  },
  location_inactive: { status: 409, meaning: 'the location is inactive and cannot be provisioned for E911' },
  hardware_order_not_found: { status: 404, meaning: 'no such hardware order in the account' },
  hardware_order_item_not_found: { status: 404, meaning: 'no such item (unit) in this hardware order' },
  hardware_order_invalid_state: { status: 409, meaning: 'hardware order status does not allow the action; the message names the status and action' },
  hardware_supplier_unavailable: { status: 502, meaning: 'no hardware supplier is configured for live accounts in this deployment' },
  fax_not_found: { status: 404, meaning: 'no such fax in the account' },
  fax_limit_exceeded: {
    status: 429,
    meaning: 'the account sent (or received) fax_outbound_per_hour (fax_inbound_per_hour) faxes in the last hour; Retry-After gives the wait in seconds',
  },
  fax_carrier_unavailable: { status: 502, meaning: 'no fax carrier is configured for live accounts in this deployment' },
  internal_error: { status: 500, meaning: 'unexpected server error; safe to retry with backoff' },
} as const satisfies Record<string, { status: number; meaning: string }>
