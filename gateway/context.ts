import type { CursorCodec } from '../src/pagination'
import type { Deps } from '../src/services/deps'
import type { SessionTokens } from '../src/services/platform/sessions'
import type { Database } from '../src/db/client'
import type { DeliveryEngine } from '../src/events/delivery'
import type { MailTransport } from '../src/events/mail'
import type { EventStreams } from '../src/events/stream'
import type { ActorClient } from '../actors/client'
import type { BlobStorage } from '../src/storage/blob-storage'
import type { RegisteredDevices } from '../src/services/calls/registered-devices'
import type { ClickToCallNotice } from '../src/services/calls/click-to-call'
import type { AudioConverter } from '../src/services/media/telephony-audio'
import type { SpendChannel } from './plugins/rate-limit'

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
  /**
   * How this process reaches actors synchronously (request/reply: a recording toggle,
   * a wake-up after a commit); absent when it can reach none. Commands and spawns do
   * not need it: they are durable rows written with the request (actors/client).
   */
  actors?: ActorClient
  /** Hands an accepted click-to-call to the media role (a bus publish); absent: no media role reachable, nothing is placed. */
  placeClickToCall?: (notice: ClickToCallNotice) => void
  /** Which devices of a user are registered (POST /v1/calls); absent: noRegisteredDevices() (src/server.ts gives the registrar's). */
  registeredDevices?: RegisteredDevices
  /** Recording and voicemail audio. */
  storage: BlobStorage
  /** Uploaded audio to telephony WAV (media/audio-convert.ts); absent: audio uploads answer 503. */
  audio?: AudioConverter
  /** Signs and verifies download URLs (src/storage/download-urls). */
  downloadKey: string
  /** The installation's VAPID public key, base64url (src/services/webrtc/push-subscriptions.ts). */
  webPushKey: string
  /** Phones' configuration files (media/provisioning, mounted at /provisioning/); absent: not served here. */
  provisioning?: (request: Request, clientAddress: string | null) => Promise<Response>
  /** Distributed mode: where this gateway shares what its credentials spent with the other gateways (rate limits). */
  rateLimitShare?: SpendChannel
  /** Roles of this process that must be ready before /readyz answers 200. */
  readiness: () => Promise<boolean>
}
