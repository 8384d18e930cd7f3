/**
 * The routing engine's write-time check, handed to the routing services (src/
 * may not import machines/, so they take it as a parameter). Here the compiler
 * checks that the services' rows fit the engine's input.
 */
import { buildRoutingConfig, validateChange } from '../../actors/client'
import type { RoutingCheck } from '../../src/services/routing/config'

export const routingCheck: RoutingCheck = (before, after) => validateChange(buildRoutingConfig(before), buildRoutingConfig(after))
