import { EVENT_TYPES } from '../events/catalog'
import { Body, DateTime, Nullable, T } from './common'

const EventTypeOrStar = T.String({ minLength: 1, maxLength: 100, description: `an event type (${EVENT_TYPES.join(', ')}) or *` })

export const CreateWebhookEndpointRequest = Body({
  url: T.String({ minLength: 1, maxLength: 2048, format: 'uri', description: 'http or https URL that receives the events' }),
  enabled_events: T.Optional(T.Array(EventTypeOrStar, { minItems: 1, maxItems: EVENT_TYPES.length + 1, description: "default ['*']" })),
  description: T.Optional(Nullable(T.String({ maxLength: 500 }))),
})

export const UpdateWebhookEndpointRequest = Body({
  url: T.Optional(T.String({ minLength: 1, maxLength: 2048, format: 'uri' })),
  enabled_events: T.Optional(T.Array(EventTypeOrStar, { minItems: 1, maxItems: EVENT_TYPES.length + 1 })),
  description: T.Optional(Nullable(T.String({ maxLength: 500 }))),
  status: T.Optional(T.Union([T.Literal('enabled'), T.Literal('disabled')])),
})

export const WebhookEndpoint = T.Object({
  id: T.String(),
  object: T.Literal('webhook_endpoint'),
  account: Nullable(T.String({ description: 'null for a platform-global endpoint' })),
  url: T.String(),
  secret: T.Optional(T.String({ description: 'only in the create response' })),
  enabled_events: T.Array(T.String()),
  description: Nullable(T.String()),
  status: T.Union([T.Literal('enabled'), T.Literal('disabled')]),
  livemode: T.Boolean(),
  healthy: T.Boolean({ description: 'false after 5 consecutive failed deliveries, until one succeeds' }),
  created_at: DateTime(),
  updated_at: DateTime(),
})

/** One delivery attempt of an event to an endpoint (extension: the attempt log). */
export const WebhookAttempt = T.Object({
  id: T.String(),
  object: T.Literal('webhook_attempt'),
  webhook_endpoint: T.String(),
  delivery: T.String({ description: 'the delivery (one per event and endpoint) this attempt belongs to; the dead-letter queue names it' }),
  event_id: T.String(),
  event: T.String({ description: 'the event type' }),
  attempt: T.Integer({ minimum: 1, description: '1 for the first try of the delivery; counts on after a replay' }),
  status: T.Union([T.Literal('succeeded'), T.Literal('failed')]),
  status_code: Nullable(T.Integer({ description: 'the receiver’s HTTP status; null when it did not answer (refused, timeout, connection error)' })),
  failure_reason: Nullable(T.String({ description: 'why the attempt failed (as HTTP 500, refused: …, or the connection error); null on success' })),
  duration_ms: T.Integer({ minimum: 0, description: 'from sending to the answer or the failure' }),
  created_at: DateTime(),
})

export const WebhookAttemptFilters = {
  event: T.Optional(T.String({ minLength: 1, maxLength: 100, description: 'only attempts of events of this type' })),
  status: T.Optional(T.Union([T.Literal('succeeded'), T.Literal('failed')], { description: 'only successful or only failed attempts' })),
}

export const CreateTestEventRequest = Body({ event: T.String({ minLength: 1, maxLength: 100 }) })

export const Event = T.Object({
  id: T.String(),
  type: T.String(),
  created_at: DateTime(),
  account_id: T.Optional(T.String()),
  account: T.Optional(T.String({ description: 'instead of account_id on the four billable-count events' })),
  data: T.Record(T.String(), T.Unknown()),
})
