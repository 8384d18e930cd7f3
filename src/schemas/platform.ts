/** The platform layer: account and user sessions, the audit log. */
import { Body, DateTime, Id, Nullable, T } from './common'

export const SESSION_COMPONENTS = ['call_logs', 'voicemails', 'account_onboarding', 'agreement_acceptance'] as const
export type SessionComponent = (typeof SESSION_COMPONENTS)[number]

export const CreateAccountSessionRequest = Body({
  account: Id(),
  components: T.Object(Object.fromEntries(SESSION_COMPONENTS.map((c) => [c, T.Optional(Body({ enabled: T.Boolean() }))])), {
    additionalProperties: false,
    description: 'at least one component must be enabled',
  }),
})

export const AccountSession = T.Object({
  object: T.Literal('account_session'),
  account: T.String(),
  client_secret: T.String({ description: 'JWT; send as Authorization: Bearer' }),
  expires_at: DateTime(),
  components: T.Record(T.String(), T.Object({ enabled: T.Boolean() })),
})

export const USER_SESSION_MAX_TTL_S = 7 * 24 * 3600
export const USER_SESSION_DEFAULT_TTL_S = 24 * 3600

export const CreateUserSessionRequest = Body({
  user: Id(),
  ttl_seconds: T.Optional(T.Integer({ minimum: 60, maximum: USER_SESSION_MAX_TTL_S, description: 'lifetime; default 86400 (24 h), at most 604800 (7 days)' })),
})

export const UserSession = T.Object({
  object: T.Literal('user_session'),
  account: T.String(),
  user: T.String(),
  client_secret: T.String({ description: 'JWT scoped to one user' }),
  expires_at: DateTime(),
})

export const RevokeSessionsResponse = T.Object({
  object: T.Literal('user_session_revocation'),
  user: T.String(),
  revoked_at: DateTime(),
})

// ---------------------------------------------------------------- audit log

export const AuditLog = T.Object({
  id: T.String(),
  object: T.Literal('audit_log'),
  account: Nullable(T.String()),
  event: T.String({ description: 'operationId of the mutation, e.g. createUser' }),
  resource: Nullable(T.String()),
  actor: T.String({ description: 'ID of the key, account session or user that acted' }),
  credential: T.Union([T.Literal('secret_key'), T.Literal('account_session'), T.Literal('user_session')]),
  outcome: T.Union([T.Literal('success'), T.Literal('failure')]),
  status_code: T.Integer(),
  ip_address: Nullable(T.String()),
  request_id: T.String(),
  created_at: DateTime(),
})

export const AdminUser = T.Object({
  id: T.String(),
  object: T.Literal('admin_user'),
  account: T.String(),
  name: Nullable(T.String()),
  email: T.String(),
  created_at: DateTime(),
})
