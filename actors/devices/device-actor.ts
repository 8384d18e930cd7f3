/**
 * The device actor (`device.v1`): binds machines/device.ts to its effects. Each
 * device.* event commits in the step that caused it with its two projections: the
 * device row (status, provisioned_at, last fetch, address) and the device's
 * provisioning history (GET /v1/deskphones/{id}/provisioning-events). SIP bindings
 * stay in the actor's own state; presence and the expiry timer follow them
 * (./registrations). Check-sync on a registered phone hands its bindings to the
 * media role, which sends each a SIP NOTIFY (./check-sync).
 */
import type { DeviceContext, DeviceEmitted } from '../../machines/device'
import type { Clock } from '../../src/clock'
import { type ProvisioningRecord, recordProvisioned } from '../../src/services/devices/provisioning-history'
import { defineActorKind, type Effects } from '../runtime/kinds'
import { checkSyncActions, type NotifyCheckSync } from './check-sync'
import { DEVICE_KIND, DEVICE_MACHINES, type DeviceActorInput } from './messages'
import { registrationActions } from './registrations'

export interface DeviceKindOptions {
  clock: Clock
  /** Reaches the media role (a bus publish); unset: check-sync waits for the phone's next periodic fetch. */
  notifyCheckSync?: NotifyCheckSync
}

/** The device rows and history of every step of a transaction are written together (recordProvisioned). */
const PROVISIONING_RECORDS = 'provisioningRecords'

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
        fx.batch(PROVISIONING_RECORDS, { accountId: owner.accountId, event: params } satisfies ProvisioningRecord)
      },
      ...(registrationActions(fx) as unknown as Record<string, (args: { context: unknown; event: unknown }, params: never) => void>),
      ...checkSyncActions(fx, opts.notifyCheckSync),
    }),
    batchWriters: { [PROVISIONING_RECORDS]: (tx, items) => recordProvisioned(tx, opts.clock, items as ProvisioningRecord[]) },
  })
  return { kind }
}
