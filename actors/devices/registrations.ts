/**
 * What the device actor does with SIP bindings besides holding them (the machine's
 * `registrations`): it keeps what the registrar saw of each binding, schedules the
 * next expiry with the durable scheduler, and tells the presence actor of every user
 * a binding makes reachable when that set of users changes.
 *
 * The machine applies every registration-bearing event (REGISTER, UNREGISTER,
 * EXPIRE) in one named action, `applyRegistrations`; the kind runs it unchanged and
 * then `afterRegistrations`, which computes the same next bindings with the
 * machine's own `nextRegistrations`. Presence follows the bindings, not only the
 * machine's registered flag, so that a refresh naming other users (a line given to
 * someone else) moves presence too. REMOVE clears the bindings without that action:
 * `registrationChanged` covers it.
 */
import { enqueueActions, type EventObject } from 'xstate'
import { type DeviceContext, type DeviceMachineEvent, deviceMachine, nextExpiry, nextRegistrations, type RegistrationChange } from '../../machines/device'
import type { BindingDetails, StoredBinding } from '../../src/services/devices/registrations'
import { PRESENCE_KIND, presenceMessages } from '../presence/messages'
import type { Effects } from '../runtime/kinds'

/** The durable timer that sends EXPIRE when the earliest binding runs out. */
export const EXPIRY_TIMER = 'registration_expiry'

export type DeviceActorContext = DeviceContext & { registration_details?: Record<string, StoredBinding> }

type Details = Record<string, StoredBinding>

/** The details after an event: only bindings still held, a REGISTER's own refreshed (its first registration kept). */
export function nextDetails(details: Details, bindings: { contact: string }[], event: DeviceMachineEvent): Details {
  const out: Details = {}
  for (const b of bindings) {
    const previous = details[b.contact]
    if (event.type === 'REGISTER' && event.contact === b.contact) {
      const given = (event as { binding?: BindingDetails }).binding
      if (given) {
        out[b.contact] = { ...given, registered_at: previous?.registered_at ?? event.at, refreshed_at: event.at }
        continue
      }
    }
    if (previous) out[b.contact] = previous
  }
  return out
}

/** The users whose presence these bindings make reachable. */
export function usersOf(details: Details): Set<string> {
  const users = new Set<string>()
  for (const d of Object.values(details)) for (const u of d.user_ids) users.add(u)
  return users
}

/** The presence actors' messages for a change of reachable users (a spawn with the change, then the change: either may land first). */
export function tellPresence(fx: Effects, deviceId: string, before: Set<string>, after: Set<string>, at: string) {
  const send = (userId: string, type: 'DEVICE_REGISTERED' | 'DEVICE_UNREGISTERED') => {
    const m = presenceMessages(userId, { type, device_id: deviceId }, at)
    fx.spawnActor(PRESENCE_KIND, userId, m.input)
    fx.tell(PRESENCE_KIND, userId, m.event as unknown as EventObject & Record<string, unknown>)
  }
  for (const u of after) if (!before.has(u)) send(u, 'DEVICE_REGISTERED')
  for (const u of before) if (!after.has(u)) send(u, 'DEVICE_UNREGISTERED')
}

/** The kind's actions for registrations: `applyRegistrations` (the machine's, then ours) and `registrationChanged`. */
export function registrationActions(fx: Effects) {
  const applyByMachine = deviceMachine.implementations.actions.applyRegistrations
  const afterRegistrations = enqueueActions(({ context, event, enqueue }) => {
    // Runs after the machine's own assign: `registrations` is already the new set
    // (nextRegistrations is idempotent), while the details still describe the old one.
    const c = context as DeviceActorContext
    const e = event as DeviceMachineEvent
    const before = c.registration_details ?? {}
    const bindings = nextRegistrations(c.registrations, e)
    const details = nextDetails(before, bindings, e)
    enqueue.assign({ registration_details: details } as never)
    const deviceId = c.device.device_id
    const expiry = nextExpiry({ registrations: bindings })
    enqueue(() => {
      tellPresence(fx, deviceId, usersOf(before), usersOf(details), e.at)
      if (expiry) fx.schedule({ name: EXPIRY_TIMER, at: expiry, event: { type: 'EXPIRE', at: expiry } })
      else fx.cancelTimer(EXPIRY_TIMER)
    })
  })
  return {
    applyRegistrations: enqueueActions(({ enqueue }) => {
      enqueue(applyByMachine as never)
      enqueue(afterRegistrations as never)
    }),
    registrationChanged: ({ context, event }: { context: unknown; event: EventObject }, params: RegistrationChange) => {
      // Bindings that REGISTER, UNREGISTER and EXPIRE change were reported by applyRegistrations.
      if (event.type !== 'REMOVE' || params.registered) return
      const c = context as DeviceActorContext
      tellPresence(fx, params.device_id, usersOf(c.registration_details ?? {}), new Set(), params.at)
    },
  }
}
