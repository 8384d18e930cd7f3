import type { CursorCodec } from '../src/pagination'
import type { Deps } from '../src/services/deps'
import type { SessionTokens } from '../src/services/sessions'
import type { Database } from '../src/db/client'
import type { DeliveryEngine } from '../src/events/delivery'
import type { MailTransport } from '../src/events/mail'
import type { EventStreams } from '../src/events/stream'

/** Everything the gateway needs, handed in by main.ts (or a test). */
export interface GatewayDeps extends Deps {
  database: Database
  tokens: SessionTokens
  cursors: CursorCodec
  /** Tells the delivery role that a transaction committed events to the outbox. */
  outboxCommitted: () => void
  mail: MailTransport
  /** Present when this process delivers webhooks (operator replay goes through it). */
  delivery?: DeliveryEngine
  /** The account event streams of this process (GET /v1/events). */
  eventStreams: EventStreams
  /** Roles of this process that must be ready before /readyz answers 200. */
  readiness: () => Promise<boolean>
}
