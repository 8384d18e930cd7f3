/**
 * Which devices of a user are registered right now (desk phones, DECT handsets,
 * softphones with a live SIP registration or app session).
 *
 * Click-to-call (POST /v1/calls) rings the caller's own registered devices first;
 * a user with none gets nothing (spec: "If the user has no registered device nothing
 * happens"). The service's driver reads the registrar's bindings as the device
 * actors hold them (services/devices/registrations.ts: registeredDevicesFromBindings,
 * handed to the gateway as GatewayDeps.registeredDevices by src/server.ts);
 * `noRegisteredDevices()` answers none, for a gateway started without it.
 */

import type { Db } from '../../db/client'

export interface RegisteredDevice {
  /** The device (endpoint) id. */
  id: string
  /** What kind of endpoint it is, when the registrar knows. */
  kind?: 'deskphone' | 'dect_handset' | 'softphone' | 'mobile_app'
}

export interface RegisteredDevices {
  /** The devices of this user registered right now; empty when none is. */
  /**
   * `db`: the caller's transaction, when it has one open (an embedded database has a
   * single connection: a read outside the open transaction would wait for it forever).
   */
  ofUser(accountId: string, userId: string, db?: Db): Promise<readonly RegisteredDevice[]>
}

const NONE: readonly RegisteredDevice[] = Object.freeze([])

/** A driver for a gateway without a registrar: nobody has a registered device. */
export function noRegisteredDevices(): RegisteredDevices {
  return { ofUser: async () => NONE }
}
