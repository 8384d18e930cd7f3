/**
 * The device actor's `notifyCheckSync`: the machine names the bindings live when
 * check-sync was asked (machines/device.ts); the actor adds what the registrar saw
 * of each (transport, source address and port) and hands them to the media role,
 * which holds the SIP sockets and sends each a NOTIFY (media/registrar/
 * check-sync-notify.ts). The two may run in different processes, so the
 * composition root binds `notify` to a bus publish.
 *
 * Best effort, not durable: the notice is handed over from the step's last write,
 * inside its transaction (the runtime has no after-commit effect). A step that rolls
 * back after it (a stale fire, a lost shard) may have sent a NOTIFY anyway, and a
 * retried one sends it again: the phone only fetches once more. A notice lost on
 * the bus costs nothing either: the device stays pending_sync until the phone's next
 * periodic fetch, as for a phone that is not registered.
 */
import type { CheckSyncNotify } from '../../machines/device'
import type { BindingDetails } from '../../src/services/devices/registrations'
import type { Effects } from '../runtime/kinds'
import type { DeviceActorContext } from './registrations'

/** One binding to notify, as the registrar recorded it. */
export type CheckSyncTarget = Pick<BindingDetails, 'username' | 'contact' | 'transport' | 'source_address' | 'source_port'>

export interface CheckSyncNotice {
  device: string
  at: string
  targets: CheckSyncTarget[]
}

/** Hands a notice to the media role (a bus publish); must not throw. */
export type NotifyCheckSync = (notice: CheckSyncNotice) => void

/** The targets of the machine's live bindings; a binding whose details are unknown (held before details were kept) is left out. */
export function checkSyncTargets(c: Pick<DeviceActorContext, 'registration_details'>, bindings: CheckSyncNotify['bindings']): CheckSyncTarget[] {
  const targets: CheckSyncTarget[] = []
  for (const b of bindings) {
    const d = c.registration_details?.[b.contact]
    if (d) targets.push({ username: d.username, contact: d.contact, transport: d.transport, source_address: d.source_address, source_port: d.source_port })
  }
  return targets
}

/** The kind's `notifyCheckSync`; without `notify` (no media role reachable) check-sync only waits for the phone's fetch. */
export function checkSyncActions(fx: Effects, notify: NotifyCheckSync | undefined) {
  return {
    notifyCheckSync: ({ context }: { context: unknown }, params: CheckSyncNotify) => {
      if (!notify) return
      const targets = checkSyncTargets(context as DeviceActorContext, params.bindings)
      if (targets.length === 0) return
      const notice: CheckSyncNotice = { device: params.device_id, at: params.at, targets }
      // The last thing the step's transaction does: as close to its commit as an effect gets.
      fx.write(async () => {
        try {
          notify(notice)
        } catch {
          // A bus that cannot take it (a closed connection) must not fail the step: the phone fetches at its next periodic check.
        }
      })
    },
  }
}
