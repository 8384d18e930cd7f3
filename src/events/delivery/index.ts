/**
 * Webhook delivery from the outbox (see engine.ts for how the parts fit together).
 * The import path `src/events/delivery` is this module.
 */
export { createDeliveryEngine, type DeliveryEngine } from './engine'
export { matchesEndpoint } from './dispatch'
export { MAX_RETRIES } from './retries'
export { UNHEALTHY_AFTER } from './health'
