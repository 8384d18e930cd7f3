/** Rows and the unit of work shared by the parts of webhook delivery. */
import type { webhookDeliveries, webhookEndpoints } from '../../db/schema'

export type EndpointRow = typeof webhookEndpoints.$inferSelect
export type DeliveryRow = typeof webhookDeliveries.$inferSelect

/** One delivery to attempt, with the exact body (the event's envelope) that is signed and sent. */
export interface Job {
  delivery: DeliveryRow
  body: string
}
