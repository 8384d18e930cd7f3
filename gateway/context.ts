import type { CursorCodec } from '../src/pagination'
import type { Deps } from '../src/services/deps'
import type { SessionTokens } from '../src/services/sessions'
import type { Database } from '../src/db/client'
import type { DeliveryEngine } from '../src/events/delivery'
import type { MailTransport } from '../src/events/mail'
import type { EventStreams } from '../src/events/stream'
import type { CallSimulator } from '../actors/call-simulator'
import type { BlobStorage } from '../src/storage/blob-storage'
import type { RegisteredDevices } from '../src/services/registered-devices'

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
  /** Sandbox call simulator (POST /v1/test_helpers/calls), present when this process runs the worker role. */
  callSimulator?: CallSimulator
  /** Which devices of a user are registered (POST /v1/calls); absent: noRegisteredDevices(), until devices exist. */
  registeredDevices?: RegisteredDevices
  /** Recording and voicemail audio. */
  storage: BlobStorage
  /** Signs and verifies download URLs (src/services/download-urls). */
  downloadKey: string
  /** Roles of this process that must be ready before /readyz answers 200. */
  readiness: () => Promise<boolean>
}
