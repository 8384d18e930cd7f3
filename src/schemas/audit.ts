import { DateTime, Nullable, T } from './common'

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
