/** The account's audit trail, and who a person-actor is. */
import { Elysia, t } from 'elysia'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/platform'
import { auditView, getAdminUser, listAuditLogs } from '../../src/services/platform/audit'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Audit Logs'

export function auditLogRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/audit-logs' })
    .use(base)
    .get(
      '/v1/audit-logs',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        return listEnvelope(ctx, await listAuditLogs(deps.db, auth.account!.id, query, pageRequest(ctx)), auditView)
      },
      {
        query: t.Object(
          {
            ...listQuery,
            event: t.Optional(t.String({ maxLength: 100, description: 'operationId of the mutation, e.g. createUser' })),
            resource: t.Optional(Id('ID of the resource acted on (an order ID for orders)')),
            actor: t.Optional(Id('ID of the key, account session or user that acted')),
            outcome: t.Optional(t.Union([t.Literal('success'), t.Literal('failure')])),
            ip_address: t.Optional(t.String({ maxLength: 64 })),
            request_id: t.Optional(Id('request correlation id (the X-Request-Id header; `request` on billable-count events)')),
            created_after: t.Optional(t.String({ format: 'date-time' })),
            created_before: t.Optional(t.String({ format: 'date-time' })),
          },
          { additionalProperties: false },
        ),
        detail: op('listAuditLogs', { summary: 'List audit log entries', tag: TAG, auth: accountLevel(), list: S.AuditLog }),
      },
    )
    .get('/v1/admin/users/:admin_user', async ({ auth, params }) => getAdminUser(deps.db, auth.account!.id, params.admin_user), {
      params: t.Object({ admin_user: Id() }),
      detail: op('getAdminUser', {
        summary: 'Resolve an audit actor that is a person',
        tag: TAG,
        auth: accountLevel(),
        response: S.AdminUser,
        errors: { 404: ['admin_user_not_found'] },
      }),
    })
}
