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
      async ({ auth, params, mutate }) => {
        let audioKeys: string[] = []
        const response = await mutate(async (tx, ctx) => {
          await withBillableUserEvent(tx, deps.clock, auth.account!, 'user.deleted', ctx.requestId, async () => {
            audioKeys = (await deleteUser(tx, deps.clock, deps.routingCheck, auth.account!.id, params.user_id, deps.actorMessages)).audioKeys
            return { userId: params.user_id, result: undefined }
          })
          return { resource: params.user_id, body: { id: params.user_id, object: 'user', deleted: true } }
        })
        // The greetings' audio is owed durably (the sweeper); removing it now only makes it go sooner.
        if (response.ok) for (const key of audioKeys) await deps.storage.delete(key)
        return response
      },
      {
        params,
        detail: op('deleteUser', {
          summary: 'Delete a user',
          description:
            'Deletes the user with what is theirs: the extensions that target the user, their ring group and queue memberships (and queue-agent standing), their place among the users of shared voicemail boxes, and their voicemail greetings with the audio; their sessions end. ' +
            'A routing object that sends calls to the user (a phone number route, a ring group no_answer_target, a queue timeout_target, a dial plan route node) is not rewritten: the delete is refused with 409 routing_object_in_use, details.referenced_by naming each such field (`phone_numbers.<id>.target`, `ring_groups.<id>.no_answer_target`, `queues.<id>.timeout_target`, `dial_plans.<id>.nodes.<node>.target`), and nothing is deleted. Point those elsewhere, then delete the user. ' +
            'The user’s voicemails and call logs are records and stay.',
          tag: TAG,
          auth: rule,
          response: Deleted('user'),
          errors: { 404: ['user_not_found'], 409: ['routing_object_in_use'] },
        }),
      },
    )
}
