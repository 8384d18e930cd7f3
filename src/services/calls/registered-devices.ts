/**
 * Which devices of a user are registered right now (desk phones, DECT handsets,
 * softphones with a live SIP registration or app session).
 *
 * Click-to-call (POST /v1/calls) rings the caller's own registered devices first;
 * a user with none gets nothing (spec: "If the user has no registered device nothing
 * happens"). This codebase has no device registration yet, so the only driver is
 * `noRegisteredDevices()`, which always answers none.
 *
 * The devices issue plugs the real registrar in here: a driver reading the
 * registration state (SIP REGISTER bindings, WebRTC sessions) that answers this same
 * interface, handed to the gateway as GatewayDeps.registeredDevices.
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

/** The driver until devices exist: nobody has a registered device. */
export function noRegisteredDevices(): RegisteredDevices {
  return { ofUser: async () => NONE }
}
