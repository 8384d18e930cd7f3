// device.v1: the lifecycle of ONE device (desk phone or DECT base), as a pure XState v5 machine.
//
// Two things live here: provisioning (is the phone running the configuration we
// last generated for it?) and SIP registrations (which contacts can we reach it
// at?), because presence follows from the second and check-sync reaches a
// registered phone as a SIP NOTIFY.
//
// No I/O, no clock reads: every event carries `at` (ISO 8601). Effects are named
// actions supplied by the caller with `.provide(...)`:
//   - `emit`                receives `{ type: 'device.*', data }` with exactly the spec's fields
//   - `registrationChanged` receives `{ device_id, registered, at }` whenever the derived
//                           `registered` flag flips (the user's presence follows it)
//   - `notifyCheckSync`     receives `{ device_id, bindings, at }` on CHECK_SYNC while bindings
//                           are live at `at`: tell the phone to fetch now (a SIP NOTIFY to
//                           each), rather than wait for its next periodic fetch
// Registration expiry arrives as an `EXPIRE` event from the durable scheduler
// (due at `nextExpiry(context)`); any REGISTER or UNREGISTER also drops the bindings
// expired by its time. `after` timers are not used.
//
// Decision: a provisioning failure never moves the provisioning state. A synced
// phone whose next fetch fails keeps running the last file it fetched, so it stays
// `synced` (the failure is recorded in `last_failure`); a pending phone stays
// pending until a fetch succeeds. Only UPDATE and CHECK_SYNC send a device back to
// pending_sync, and only a successful fetch leaves it.
import { assign, enqueueActions, setup, type SnapshotFrom } from 'xstate'

// ---------------------------------------------------------------- input

export type DeviceType = 'deskphone' | 'dect_base'
export type ProvisioningErrorCode = 'unsupported_vendor' | 'invalid_configuration' | 'generation_failed'
export const PROVISIONING_ERROR_CODES: readonly ProvisioningErrorCode[] = ['unsupported_vendor', 'invalid_configuration', 'generation_failed']

export interface DeviceInput {
  device_id: string
  device_type: DeviceType
  mac_address: string
  /** lowercase vendor name, e.g. `yealink`. */
  vendor: string
  model: string | null
  /** a device restored from storage may already be synced; new devices start pending. */
  synced?: boolean
}

// ---------------------------------------------------------------- input events

type At = { at: string }
export type DeviceMachineEvent =
  /** the phone fetched its configuration file successfully (from ip_address when known). */
  | ({ type: 'CONFIG_FETCHED'; ip_address?: string | null } & At)
  /** a fetch by an identified device failed. */
  | ({ type: 'PROVISIONING_FAILED'; error_code: ProvisioningErrorCode } & At)
  /** POST /v1/devices/{id}: its configuration changed; the phone must fetch again. */
  | ({ type: 'UPDATE'; model?: string | null; vendor?: string } & At)
  /** POST /v1/devices/{id}/status/check-sync: ask the phone to reload. */
  | ({ type: 'CHECK_SYNC' } & At)
  /** a REGISTER that the registrar accepted: binds (or refreshes) contact until expires_at; expires_at <= at removes it. */
  | ({ type: 'REGISTER'; contact: string; expires_at: string } & At)
  /** REGISTER with Expires: 0 for one contact, or `*` for all. */
  | ({ type: 'UNREGISTER'; contact: string } & At)
  /** fired by the durable scheduler: drop bindings expired at `at`. */
  | ({ type: 'EXPIRE' } & At)
  /** DELETE /v1/devices/{id}. */
  | ({ type: 'REMOVE' } & At)

// ---------------------------------------------------------------- emitted events

interface DeviceCommon {
  device: string
  device_type: DeviceType
  mac_address: string
  vendor: string
}
export interface DeviceProvisionedData extends DeviceCommon {
  model: string | null
  ip_address: string | null
  provisioned_at: string
}
export interface DeviceConfigFetchedData extends DeviceCommon {
  model: string | null
  ip_address: string | null
  fetched_at: string
}
export interface DeviceProvisioningFailedData extends DeviceCommon {
  error_code: ProvisioningErrorCode
  failed_at: string
}

export type DeviceEmitted =
  | { type: 'device.provisioned'; data: DeviceProvisionedData }
  | { type: 'device.config_fetched'; data: DeviceConfigFetchedData }
  | { type: 'device.provisioning_failed'; data: DeviceProvisioningFailedData }

export interface RegistrationChange {
  device_id: string
  registered: boolean
  at: string
}

/** A registered phone asked to fetch its configuration now: its bindings live at `at`. */
export interface CheckSyncNotify {
  device_id: string
  bindings: Registration[]
  at: string
}

// ---------------------------------------------------------------- context

export interface Registration {
  contact: string
  expires_at: string
}

export interface DeviceContext {
  device: DeviceInput
  ip_address: string | null
  provisioned_at: string | null
  last_fetched_at: string | null
  /** when the device last went (back) to pending_sync, and why. */
  pending_since: string | null
  pending_reason: 'created' | 'update' | 'check_sync' | null
  last_failure: { error_code: ProvisioningErrorCode; failed_at: string } | null
  /** live bindings, unique by contact, none expired as of the last event's `at`. */
  registrations: Registration[]
}

// ---------------------------------------------------------------- pure helpers

const ms = (iso: string) => Date.parse(iso)
const validAt = (at: unknown): at is string => typeof at === 'string' && !Number.isNaN(Date.parse(at))

/** Registered means at least one live SIP binding. */
export const isRegistered = (c: Pick<DeviceContext, 'registrations'>): boolean => c.registrations.length > 0

/** When the durable scheduler should send EXPIRE next, or null with no bindings. */
export function nextExpiry(c: Pick<DeviceContext, 'registrations'>): string | null {
  let next: string | null = null
  for (const r of c.registrations) if (next === null || ms(r.expires_at) < ms(next)) next = r.expires_at
  return next
}

/** The bindings not expired at `at`. */
export const liveRegistrations = (regs: Registration[], at: string) => regs.filter((r) => ms(r.expires_at) > ms(at))

/** The bindings after an event: expired ones dropped, then the event's own change. */
export function nextRegistrations(regs: Registration[], e: DeviceMachineEvent): Registration[] {
  const kept = liveRegistrations(regs, e.at)
  switch (e.type) {
    case 'REGISTER': {
      const others = kept.filter((r) => r.contact !== e.contact)
      return ms(e.expires_at) > ms(e.at) ? [...others, { contact: e.contact, expires_at: e.expires_at }] : others
    }
    case 'UNREGISTER':
      return e.contact === '*' ? [] : kept.filter((r) => r.contact !== e.contact)
    default:
      return kept
  }
}

const common = (c: DeviceContext): DeviceCommon => ({
  device: c.device.device_id,
  device_type: c.device.device_type,
  mac_address: c.device.mac_address,
  vendor: c.device.vendor,
})

const fetchedEvent = (c: DeviceContext): DeviceEmitted => ({
  type: 'device.config_fetched',
  data: { ...common(c), model: c.device.model, ip_address: c.ip_address, fetched_at: c.last_fetched_at! },
})

// ---------------------------------------------------------------- machine

type Ev<T extends DeviceMachineEvent['type']> = Extract<DeviceMachineEvent, { type: T }>

/** the address a fetch came from; a fetch that does not say keeps the last one known. */
const fetchedFrom = (c: DeviceContext, e: Ev<'CONFIG_FETCHED'>) => (e.ip_address !== undefined ? e.ip_address : c.ip_address)

export const deviceMachine = setup({
  types: {
    context: {} as DeviceContext,
    events: {} as DeviceMachineEvent,
    input: {} as DeviceInput,
  },
  actions: {
    emit: (_: unknown, _params: DeviceEmitted) => {},
    registrationChanged: (_: unknown, _params: RegistrationChange) => {},
    notifyCheckSync: (_: unknown, _params: CheckSyncNotify) => {},
    /** every registration-bearing event: apply it, and report a flip of `registered`. */
    applyRegistrations: enqueueActions(({ context, event, enqueue }) => {
      const registrations = nextRegistrations(context.registrations, event)
      enqueue.assign({ registrations })
      if (isRegistered(context) !== registrations.length > 0)
        enqueue({ type: 'registrationChanged', params: { device_id: context.device.device_id, registered: registrations.length > 0, at: event.at } })
    }),
  },
  guards: {
    validAt: ({ event }) => validAt(event.at),
    startsSynced: ({ context }) => !!context.device.synced,
    validFailure: ({ event }) => event.type === 'PROVISIONING_FAILED' && validAt(event.at) && PROVISIONING_ERROR_CODES.includes(event.error_code),
    validRegister: ({ event }) => event.type === 'REGISTER' && validAt(event.at) && !!event.contact && validAt(event.expires_at),
    validUnregister: ({ event }) => event.type === 'UNREGISTER' && validAt(event.at) && !!event.contact,
  },
}).createMachine({
  id: 'device.v1',
  context: ({ input }) => ({
    device: input,
    ip_address: null,
    provisioned_at: null,
    last_fetched_at: null,
    pending_since: null,
    pending_reason: input.synced ? null : 'created',
    last_failure: null,
    registrations: [],
  }),
  initial: 'start',
  states: {
    start: { always: [{ guard: 'startsSynced', target: 'active.synced' }, { target: 'active.pending_sync' }] },
    active: {
      initial: 'pending_sync',
      states: {
        /** waiting for the phone to fetch its (new) configuration. */
        pending_sync: {
          on: {
            CONFIG_FETCHED: {
              guard: 'validAt',
              target: 'synced',
              actions: [
                assign(({ context, event }) => ({
                  provisioned_at: event.at,
                  last_fetched_at: event.at,
                  ip_address: fetchedFrom(context, event as Ev<'CONFIG_FETCHED'>),
                  pending_since: null,
                  pending_reason: null,
                })),
                {
                  type: 'emit',
                  params: ({ context }) => ({
                    type: 'device.provisioned' as const,
                    data: { ...common(context), model: context.device.model, ip_address: context.ip_address, provisioned_at: context.provisioned_at! },
                  }),
                },
                { type: 'emit', params: ({ context }) => fetchedEvent(context) },
              ],
            },
          },
        },
        /** the phone runs the configuration last generated for it. */
        synced: {
          on: {
            CONFIG_FETCHED: {
              guard: 'validAt',
              actions: [
                assign(({ context, event }) => ({ last_fetched_at: event.at, ip_address: fetchedFrom(context, event as Ev<'CONFIG_FETCHED'>) })),
                { type: 'emit', params: ({ context }) => fetchedEvent(context) },
              ],
            },
          },
        },
      },
      on: {
        PROVISIONING_FAILED: {
          guard: 'validFailure',
          actions: [
            assign(({ event }) => ({ last_failure: { error_code: (event as Ev<'PROVISIONING_FAILED'>).error_code, failed_at: event.at } })),
            {
              type: 'emit',
              params: ({ context }) => ({
                type: 'device.provisioning_failed' as const,
                data: { ...common(context), error_code: context.last_failure!.error_code, failed_at: context.last_failure!.failed_at },
              }),
            },
          ],
        },
        UPDATE: {
          guard: 'validAt',
          target: '.pending_sync',
          actions: assign(({ context, event }) => {
            const e = event as Ev<'UPDATE'>
            return {
              device: { ...context.device, model: e.model !== undefined ? e.model : context.device.model, vendor: e.vendor ?? context.device.vendor },
              pending_since: event.at,
              pending_reason: 'update' as const,
            }
          }),
        },
        CHECK_SYNC: {
          guard: 'validAt',
          target: '.pending_sync',
          // An unregistered phone is not told: it leaves pending_sync at its next periodic fetch.
          actions: enqueueActions(({ context, event, enqueue }) => {
            enqueue.assign({ pending_since: event.at, pending_reason: 'check_sync' as const })
            const bindings = liveRegistrations(context.registrations, event.at)
            if (bindings.length > 0) enqueue({ type: 'notifyCheckSync', params: { device_id: context.device.device_id, bindings, at: event.at } })
          }),
        },
        REGISTER: { guard: 'validRegister', actions: 'applyRegistrations' },
        UNREGISTER: { guard: 'validUnregister', actions: 'applyRegistrations' },
        EXPIRE: { guard: 'validAt', actions: 'applyRegistrations' },
        REMOVE: {
          guard: 'validAt',
          target: 'removed',
          actions: enqueueActions(({ context, event, enqueue }) => {
            enqueue.assign({ registrations: [] })
            if (isRegistered(context))
              enqueue({ type: 'registrationChanged', params: { device_id: context.device.device_id, registered: false, at: event.at } })
          }),
        },
      },
    },
    /** final: the device was deleted; its bindings are gone. */
    removed: { type: 'final' },
  },
})

// ---------------------------------------------------------------- commands

/** What the API can ask of a device's provisioning. */
export type DeviceCommand = { command: 'update'; model?: string | null; vendor?: string } | { command: 'check_sync' }

export interface DeviceCommandRefusal {
  code: 'device_removed'
  reason: string
}

export type DeviceSnapshot = SnapshotFrom<typeof deviceMachine>

export function deviceCommandEvent(c: DeviceCommand, at: string): DeviceMachineEvent {
  if (c.command === 'check_sync') return { type: 'CHECK_SYNC', at }
  const e: DeviceMachineEvent = { type: 'UPDATE', at }
  if (c.model !== undefined) e.model = c.model
  if (c.vendor !== undefined) e.vendor = c.vendor
  return e
}

/**
 * Whether the device takes the command now. The machine decides (snapshot.can);
 * this only names the refusal. Both commands are accepted in either provisioning
 * state (a pending device asked to check-sync again stays pending, and the request
 * is recorded), so the only refusal is a removed device.
 */
export function admitDeviceCommand(snapshot: DeviceSnapshot, c: DeviceCommand, at: string): { event: DeviceMachineEvent } | { refused: DeviceCommandRefusal } {
  const event = deviceCommandEvent(c, at)
  if (snapshot.status === 'active' && snapshot.can(event)) return { event }
  if (snapshot.status !== 'active') return { refused: { code: 'device_removed', reason: 'has been removed' } }
  return { refused: { code: 'device_removed', reason: 'does not take this command now' } }
}

/** The provisioning status as the API shows it. */
export function provisioningStatus(snapshot: DeviceSnapshot): 'pending-sync' | 'synced' | 'removed' {
  if (snapshot.status !== 'active') return 'removed'
  return snapshot.matches({ active: 'synced' }) ? 'synced' : 'pending-sync'
}
