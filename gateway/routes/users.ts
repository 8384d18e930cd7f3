/** Users (team members) of an account. */
import { Elysia, t } from 'elysia'
import { Deleted, Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/accounts'
import { createUser, deleteUser, extensionsOfUsers, getUser, listUsers, updateUser, userView } from '../../src/services/accounts/users'
import { withBillableUserEvent } from '../../src/services/accounts/billable-counts'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

const TAG = 'Users'
const params = t.Object({ user_id: Id() })
const rule = accountLevel()

export function userRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/users' })
    .use(base)
    .get(
      '/v1/users',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const accountId = auth.account!.id
        const page = await listUsers(deps.db, accountId, { search: query.search }, pageRequest(ctx))
        const exts = query['expand[]']?.includes('extensions')
          ? await extensionsOfUsers(
              deps.db,
              accountId,
              page.rows.map((r) => r.id),
            )
          : undefined
        return listEnvelope(ctx, page, (row) => userView(row, exts && { extensions: exts.get(row.id) }))
      },
      {
        query: t.Object(
          {
            ...listQuery,
            search: t.Optional(t.String({ maxLength: 200, description: 'matches name or email, case-insensitive' })),
            'expand[]': expandQuery('extensions'),
          },
          { additionalProperties: false },
        ),
        detail: op('listUsers', { summary: 'List users', tag: TAG, auth: rule, list: S.User }),
      },
    )
    .post(
      '/v1/users',
      ({ auth, body, mutate }) =>
        mutate(async (tx, ctx) => {
          const row = await withBillableUserEvent(tx, deps.clock, auth.account!, 'user.created', ctx.requestId, async () => {
            const created = await createUser(tx, deps.clock, auth.account!.id, body)
            return { userId: created.id, result: created }
          })
          return { resource: row.id, body: userView(row) }
        }),
      {
        body: S.CreateUserRequest,
        detail: op('createUser', { summary: 'Create a user', tag: TAG, auth: rule, response: S.User, errors: { 409: ['user_email_taken'] } }),
      },
    )
    .get(
      '/v1/users/:user_id',
      async ({ auth, params, query }) => {
        const accountId = auth.account!.id
        const row = await getUser(deps.db, accountId, params.user_id)
        const exts = query['expand[]']?.includes('extensions') ? await extensionsOfUsers(deps.db, accountId, [row.id]) : undefined
        return userView(row, exts && { extensions: exts.get(row.id) })
      },
      {
        params,
        query: t.Object({ 'expand[]': expandQuery('extensions') }, { additionalProperties: false }),
        detail: op('getUser', { summary: 'Get a user', tag: TAG, auth: rule, response: S.User, errors: { 404: ['user_not_found'] } }),
      },
    )
    .post(
      '/v1/users/:user_id',
      ({ auth, params, body, mutate }) =>
        mutate(async (tx) => {
          const row = await updateUser(tx, deps.clock, auth.account!.id, params.user_id, body)
          return { resource: row.id, body: userView(row) }
        }),
      {
        params,
        body: S.UpdateUserRequest,
        detail: op('updateUser', {
          summary: 'Update a user',
          tag: TAG,
          auth: rule,
          response: S.User,
          errors: { 404: ['user_not_found'], 409: ['user_email_taken'] },
        }),
      },
    )
    .delete(
      '/v1/users/:user_id',
      ({ auth, params, mutate }) =>
        mutate(async (tx, ctx) => {
          await withBillableUserEvent(tx, deps.clock, auth.account!, 'user.deleted', ctx.requestId, async () => {
            await deleteUser(tx, auth.account!.id, params.user_id)
            return { userId: params.user_id, result: undefined }
          })
          return { resource: params.user_id, body: { id: params.user_id, object: 'user', deleted: true } }
        }),
      {
        params,
        detail: op('deleteUser', {
          summary: 'Delete a user',
          description: 'Also removes the extensions that target the user, and ends the user’s sessions.',
          tag: TAG,
          auth: rule,
          response: Deleted('user'),
          errors: { 404: ['user_not_found'] },
        }),
      },
    )
}
