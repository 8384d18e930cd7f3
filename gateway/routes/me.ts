/** User-token routes: the signed-in user's own profile. */
import { Elysia } from 'elysia'
import * as S from '../../src/schemas/users'
import { extensionsOfUsers, getUser } from '../../src/services/users'
import type { GatewayDeps } from '../context'
import { op, userLevel } from '../docs'
import type { requestContext } from '../plugins/request-context'

export function meRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/me' }).use(base).get(
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
}
