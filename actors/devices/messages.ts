/**
 * What the device actor is spawned with and what it is told: the part of the
 * device actor its senders (device routes, the provisioning handler) need, with no
 * dependency on how the actor runs.
 *
 * One actor per phone that fetches a configuration file (desk phones and DECT
 * bases; a handset reaches the network through its base). Its machine
 * (machines/device.ts) holds the provisioning state and the SIP registrations.
 * Everything reaches it as a durable message (src/services/deps: ActorMessages),
 * written in the transaction of whatever caused it (the spawn with the device, in
 * src/services/devices; bindings by the registrar):
 *
 *   UPDATE            the configuration changed (lines, buttons, template, device)
 *   CHECK_SYNC        POST /v1/devices/{id}/status/check-sync
 *   CONFIG_FETCHED    the phone fetched its file (the provisioning handler)
 *   PROVISIONING_FAILED  an identified phone's fetch failed
 *   REMOVE            the device was deleted
 *   REGISTER          the registrar accepted a binding (media/registrar), with its
 *                     details in `binding`; `contact` is the binding's key
 *                     (src/services/devices/registrations: bindingKey)
 *   UNREGISTER        a binding removed (Expires: 0, or each binding for `Contact: *`)
 *   EXPIRE            the actor's own durable timer: the earliest binding ran out
 */
import { deviceMachine, type DeviceInput } from '../../machines/device'
import { DEVICE_ACTOR } from '../../src/services/devices/records'

/** The services write this actor's messages themselves (src/services/devices/records.ts names the kind). */
export const DEVICE_KIND = DEVICE_ACTOR
/** The device machine's registered versions; new devices start on the first. */
export const DEVICE_MACHINES = [deviceMachine] as const

export interface DeviceOwner {
  platformId: string
  accountId: string
  mode: 'test' | 'live'
}

/** What the device actor is spawned with: the machine input plus who owns the device. */
export interface DeviceActorInput extends DeviceInput {
  owner: DeviceOwner
}
