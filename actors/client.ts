/**
 * The client side of actors/: everything a gateway may use of it, and nothing
 * else (ARCHITECTURE.md: "gateway/ may import actors/ (client side only)"; the
 * rule is checked by test/architecture.test.ts, which allows gateway/ this one
 * module of actors/). A gateway reads an actor's persisted state, asks the actor's
 * machine whether it takes a command, and writes durable commands and spawns in
 * its own transaction; it never runs an actor.
 */
export { isConnected, type CallCommand, type CallCommandRefusal, type CallSnapshot } from '../machines/call'
export { CALL_KIND, admitCall, callSnapshotOf, recordingToggled, type CallActorInput, type CallCommandMessage, type CallOwner } from './calls/messages'
export { planSimulation, SIM_OUTCOMES, type Plan, type Scenario, type SimulateRequest } from './calls/simulation'
export { ActorDone, ActorError, ActorNotFound, type ActorClient, type ActorState } from './runtime/client'
export type { TimerRow } from '../src/scheduler/durable-timers'
export { COMMAND_MESSAGE, readActorState, sendCommand, spawnInTx } from './runtime/commands'
export { buildRoutingConfig } from '../machines/routing'
export { admitPresence, PRESENCE_KIND, presenceActivity, presenceMessages, presenceStatusOf, type PresenceCommandMessage } from './presence/messages'
export { route, type Plan as RoutePlan } from '../machines/routing'
export { SIM_KIND } from './calls/messages'
export { planRoutedCall, routeSimulated, USER_OUTCOMES, type UserOutcome } from './calls/routed-simulation'
export { admitPortOrder, PORT_ORDER_KIND, portOrderSnapshotOf, type PortOrderActorInput, type PortOrderCommandMessage } from './port-orders/messages'
export {
  admitHardwareOrder,
  HARDWARE_ORDER_KIND,
  hardwareOrderSnapshotOf,
  type HardwareOrderActorInput,
  type HardwareOrderCommandMessage,
} from './hardware-orders/messages'
export { admitFax, FAX_KIND, faxSnapshotOf, type FaxActorInput, type FaxCommandMessage } from './faxes/messages'
