/** The spec's "User Profile" group: user-token routes about the signed-in user (/v1/me...). */
import { Elysia, t } from 'elysia'
import * as S from '../../src/schemas/accounts'
import { CallLog, DirectionFilter } from '../../src/schemas/calls'
import { DateBound } from '../../src/schemas/common'
import { callLogPage } from '../../src/services/calls/call-log'
import { directoryEntry, extensionsOfUsers, getUser, listDirectory } from '../../src/services/accounts/users'
import type { GatewayDeps } from '../context'
import { op, userLevel } from '../docs'
import { listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'

export function userProfileRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/user-profile' })
    .use(base)
    .get(
      '/v1/me',
      async ({ auth }) => {
        const p = auth.principal
        if (p.kind !== 'user_session') throw new Error('unreachable: /v1/me admits user tokens only')
        const user = await getUser(deps.db, p.accountId, p.userId)
        const exts = (await extensionsOfUsers(deps.db, p.accountId, [user.id])).get(user.id) ?? []
        return {
          id: user.id,
          object: 'user_profile',
          name: user.name,
          email: user.email,
          account: user.accountId,
          extensions: exts.map((e) => ({ number: e.number, status: e.status })),
          created_at: user.createdAt.toISOString(),
          updated_at: user.updatedAt.toISOString(),
        }
      },
      { detail: op('getMe', { summary: 'The signed-in user’s profile', tag: 'User Profile', auth: userLevel(), response: S.UserProfile }) },
    )
    .get(
      '/v1/me/calls',
      async ({ auth, query, listContext }) => {
        const p = auth.principal
        if (p.kind !== 'user_session') throw new Error('unreachable: /v1/me/calls admits user tokens only')
        const ctx = listContext(query)
        return listEnvelope(ctx, await callLogPage(deps.db, p.accountId, { ...query, user_id: p.userId }, pageRequest(ctx)), (v) => v)
      },
      {
        query: t.Object(
          { ...listQuery, direction: DirectionFilter, from_date: DateBound('calls started at or after'), to_date: DateBound('calls started up to') },
          { additionalProperties: false },
        ),
        detail: op('listMyCalls', { summary: 'The signed-in user’s calls', tag: 'User Profile', auth: userLevel(), list: CallLog }),
      },
    )
    .get(
      '/v1/me/directory',
      async ({ auth, query, listContext }) => {
        const p = auth.principal
        if (p.kind !== 'user_session') throw new Error('unreachable: /v1/me/directory admits user tokens only')
        const ctx = listContext(query)
        return listEnvelope(ctx, await listDirectory(deps.db, p.accountId, p.userId, pageRequest(ctx)), directoryEntry)
      },
      {
        query: t.Object(listQuery, { additionalProperties: false }),
        detail: op('listMyDirectory', {
          summary: 'Every other user of the account',
          description: 'DirectoryEntry records only (user and display_name), so that a softphone can show colleagues without reading their profiles.',
          tag: 'User Profile',
          auth: userLevel(),
          list: S.DirectoryEntry,
        }),
      },
    )
}
