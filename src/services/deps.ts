import type { Clock } from '../clock'
import type { Config } from '../config'
import type { Db } from '../db/client'
import type { Logger } from '../logger'
import type { AddressGeocoder } from './accounts/geocoding'

/** What every service needs, passed in rather than imported as singletons. */
export interface Deps {
  db: Db
  clock: Clock
  config: Config
  log: Logger
  geocoder: AddressGeocoder
}
