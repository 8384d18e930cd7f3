/**
 * `op(...)` declares an operation once: its operationId (as in the spec), who may
 * call it, its success schema and the errors it can return. The same declaration
 * drives authentication (route table) and the OpenAPI document.
 */
import type { TSchema } from '@sinclair/typebox'
import type { StableCode } from '../src/errors'
import type { Capability } from '../src/services/platform/principal'
import type { AuthRule } from './plugins/auth'
import { componentsGranting } from './session-components'

export interface OpDoc {
  summary: string
  tag: string
  auth: AuthRule
  /** The success body, as it is. */
  response?: TSchema
  /** A paginated list (Conventions 6): the item schema; the document wraps it in the list envelope. */
  list?: TSchema
  /** HTTP status of success when not 200. */
  status?: number
  /** Extra error statuses with the stable codes they carry (400/401/403/429/500 are implied). */
  errors?: Record<number, StableCode[]>
  description?: string
}

export function op(operationId: string, d: OpDoc) {
  return {
    operationId,
    summary: d.summary,
    tags: [d.tag],
    ...(d.description ? { description: d.description } : {}),
    'x-auth': withSessionGrants(operationId, d.auth),
    'x-success-status': d.status ?? 200,
    'x-success-schema': d.response,
    'x-success-list': d.list,
    'x-errors': d.errors ?? {},
  } as Record<string, unknown> & { operationId: string }
}

/** The rule as declared, plus the session components that grant the operation (gateway/session-components.ts). */
function withSessionGrants(operationId: string, rule: AuthRule): AuthRule {
  const sessions = [...new Set([...rule.sessions, ...componentsGranting(operationId)])]
  return { ...rule, sessions }
}

/** Secret key with no account header. */
export const platformLevel = (...sessions: Capability[]): AuthRule => ({ keys: 'platform', sessions })
/** Secret key with Service-Account, or an account session with one of these components. */
export const accountLevel = (...sessions: Capability[]): AuthRule => ({ keys: 'account', sessions })
/** A platform-level route about one account (`/v1/accounts/{account_id}/...`) that that account's sessions may reach. */
export const aboutAccount = (...sessions: Capability[]): AuthRule => ({ keys: 'platform', sessions, accountParam: 'account_id' })
/** Secret key alone (platform-wide) or with Service-Account (that account's). */
export const platformOrAccount = (): AuthRule => ({ keys: 'optional-account', sessions: [] })
/** User tokens only. */
export const userLevel = (): AuthRule => ({ keys: 'none', sessions: [], user: true })
