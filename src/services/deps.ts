import type { Clock } from '../clock'
import type { Config } from '../config'
import type { Db } from '../db/client'
import type { Logger } from '../logger'
import type { AddressGeocoder } from './accounts/geocoding'
import type { RoutingCheck } from './routing/config'

/**
 * Durable messages to actors, written in the caller's transaction so that they
 * commit (or roll back) with the write that causes them. The actor runtime
 * implements it (actors/runtime/commands: durableActorMessages) and the composition
 * root hands it to services, since src/ imports nothing above it.
 */
export interface ActorMessages {
  /** Creates the actor after the commit (nothing happens if the id is taken). */
  spawn(tx: Db, kind: string, id: string, input: unknown): Promise<void>
  /**
   * A machine event for the actor (dropped if the actor does not exist). A `name`
   * makes it coalesce: one pending message of that name per actor, the last wins.
   */
  tell(tx: Db, kind: string, id: string, event: { type: string } & Record<string, unknown>, name?: string): Promise<void>
}

/** What every service needs, passed in rather than imported as singletons. */
export interface Deps {
  db: Db
  clock: Clock
  config: Config
  log: Logger
  geocoder: AddressGeocoder
  /** The routing engine's write-time check (loops, targets), which src/ may not import: filled in by the composition root. */
  routingCheck: RoutingCheck
  /** Absent where no actor runs behind the services (unit tests): then no message is written. */
  actorMessages?: ActorMessages
}
