/**
 * The device actor (`device.v1`): binds machines/device.ts to its effects. Each
 * device.* event commits in the step that caused it with its two projections: the
 * device row (status, provisioned_at, last fetch, address) and the device's
 * provisioning history (GET /v1/deskphones/{id}/provisioning-events).
 */
import type { DeviceContext, DeviceEmitted } from '../../machines/device'
import type { Clock } from '../../src/clock'
import { recordProvisioned } from '../../src/services/devices/provisioning-history'
import { defineActorKind, type Effects } from '../runtime/kinds'
import { DEVICE_KIND, DEVICE_MACHINES, type DeviceActorInput } from './messages'

export interface DeviceKindOptions {
  clock: Clock
}

export function createDeviceKind(opts: DeviceKindOptions) {
  const kind = defineActorKind({
    kind: DEVICE_KIND,
    machines: DEVICE_MACHINES,
    actions: (fx: Effects) => ({
      emit: ({ context }: { context: unknown }, params: DeviceEmitted) => {
        const c = context as DeviceContext & { device: DeviceActorInput }
        const owner = c.device.owner
        fx.emit({
          platformId: owner.platformId,
          accountId: owner.accountId,
          mode: owner.mode,
          type: params.type,
          data: params.data as unknown as Record<string, unknown>,
        })
        fx.write((tx) => recordProvisioned(tx, opts.clock, owner.accountId, params))
      },
      // Registrations arrive with the media plane; presence will follow them from here.
      registrationChanged: () => {},
    }),
  })
  return { kind }
}
